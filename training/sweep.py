"""``python -m training.sweep``: runs :func:`training.exploitability.sweep_study.main`."""

import sys

from training.exploitability.sweep_study import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
