"""``python -m training.play``: runs :func:`training.apps.terminal.main`."""

import sys

from training.apps.terminal import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
