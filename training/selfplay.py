"""``python -m training.selfplay``: runs :func:`training.learn.selfplay_command.main`."""

import sys

from training.learn.interrupt import run_command
from training.learn.selfplay_command import main

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
