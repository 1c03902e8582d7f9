"""``python -m training.export``: runs :func:`training.apps.onnx.main`."""

import sys

from training.apps.onnx import main
from training.learn.interrupt import run_command

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
