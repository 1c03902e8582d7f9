"""``python -m training.replay``: runs :func:`training.apps.narration.main`."""

import sys

from training.apps.narration import main

if __name__ == "__main__":
    sys.exit(main())
