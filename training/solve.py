"""``python -m training.solve``: runs :func:`training.exploitability.solver.main`."""

import sys

from training.exploitability.solver import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
