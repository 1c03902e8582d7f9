"""``python -m training.solve``: runs :func:`training.exploitability.solver.main`."""

import sys

from training.exploitability.solver import main

if __name__ == "__main__":
    main(sys.argv[1:])
