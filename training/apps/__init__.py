"""Playing and showing games to people: the terminal game, the browser app, replay narration and ONNX export."""
