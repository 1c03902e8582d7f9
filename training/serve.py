"""``python -m training.serve``: runs :func:`training.apps.server.main`."""

import sys

from training.apps.server import main

if __name__ == "__main__":
    sys.exit(main())
