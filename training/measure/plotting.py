"""Matplotlib for the figures every tool writes: one way to load it, on the file-only backend."""

from __future__ import annotations

from typing import Any


def load_plotting() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend, imported on first use (matplotlib
    takes a second or more to import, which a command that draws nothing need not pay).

    A command that takes over Ctrl-C (:class:`~training.learn.interrupt.StopRequest`) and
    draws inside that window calls this before it: a second Ctrl-C that lands while one of
    matplotlib's C extensions initializes (its first import, seconds on a loaded machine)
    turns into an ``ImportError`` instead of a ``KeyboardInterrupt``, and the half-built
    module then crashes the interpreter as it shuts down."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
