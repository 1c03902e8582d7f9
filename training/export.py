"""``python -m training.export``: runs :func:`training.apps.onnx.main`."""

import sys

from training.learn.interrupt import loading_command, run_command

with loading_command(__name__):  # Ctrl-C while main loads (seconds): a message, not a traceback
    from training.apps.onnx import main

if __name__ == "__main__":
    run_command(main, sys.argv[1:])
