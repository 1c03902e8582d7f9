"""What people use: the terminal game, the browser app, replay narration and ONNX export."""
