"""``python -m training.solve``: runs :func:`training.exploitability.solver.main`."""

import sys

from training.learn.interrupt import loading_command, run_command

with loading_command(__name__):  # Ctrl-C while main loads (seconds): a message, not a traceback
    from training.exploitability.solver import main

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
