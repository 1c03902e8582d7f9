"""``python -m training.evaluate``: runs :func:`training.measure.evaluation.main`."""

import sys

from training.measure.evaluation import main

if __name__ == "__main__":
    sys.exit(main())
