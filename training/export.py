"""``python -m training.export``: runs :func:`training.apps.onnx.main`."""

from training.apps.onnx import main

if __name__ == "__main__":
    main()
