"""``python -m training.serve``: runs :func:`training.apps.server.main`."""

import sys

from training.apps.server import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
