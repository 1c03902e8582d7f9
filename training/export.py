"""``python -m training.export``: runs :func:`training.apps.onnx.main`."""

import sys

from training.apps.onnx import main

if __name__ == "__main__":
    main()
