"""``python -m training.curve``: runs :func:`training.exploitability.training_curve.main`."""

import sys

from training.exploitability.training_curve import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
