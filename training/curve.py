"""``python -m training.curve``: runs :func:`training.exploitability.training_curve.main`."""

import sys

from training.exploitability.training_curve import main

if __name__ == "__main__":
    main(sys.argv[1:])
