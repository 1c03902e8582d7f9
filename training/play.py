"""``python -m training.play``: runs :func:`training.apps.terminal.main`."""

import sys

from training.apps.terminal import main

if __name__ == "__main__":
    sys.exit(main())
