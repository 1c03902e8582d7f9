"""``python -m training.replay``: runs :func:`training.apps.narration.main`."""

import sys

from training.apps.narration import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
