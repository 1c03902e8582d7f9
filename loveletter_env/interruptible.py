"""Compiled functions run so that Ctrl-C stops them cleanly: :func:`run_interruptibly`.

The tree builder and the solver run compiled walks for seconds to minutes; a Ctrl-C in
the middle must end them without killing the process (see the function for why it can).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np


def run_interruptibly(
    kernel: Callable[..., Any],
    *args: Any,
    stop: np.ndarray | None = None,
    poll: Callable[[], None] | None = None,
) -> Any:
    """``kernel(*args)``, a compiled function, run in a worker thread so that Ctrl-C stops it cleanly.

    Why a thread: a SIGINT that arrives while compiled code runs is raised as
    ``KeyboardInterrupt`` by the next Python code to run, and numba runs some while it
    turns the arrays a function returns into Python objects (it unpickles their dtypes);
    the exception then lands halfway through the returned tuple, which numba does not
    check, and the process dies of a segmentation fault. Python handles signals in the
    main thread only, so the worker's results are built undisturbed while the main thread
    waits here and takes the ``KeyboardInterrupt``. It then sets ``stop[0]``, which a kernel
    compiled with ``nogil=True`` checks now and then to return early, waits for the worker
    and raises the ``KeyboardInterrupt``. A kernel that holds the GIL delays the signal until
    it returns. Exceptions of the kernel (``MemoryError``, a tree's ``TreeError``) are raised
    here. ``poll()``, if given, is called about five times a second while the kernel runs.
    """
    outcome: dict[str, Any] = {}
    # Not Thread.join: on Python 3.11 a join that Ctrl-C interrupts marks the thread as
    # ended while it still runs, so a later join returns at once instead of waiting.
    finished = threading.Event()

    def call() -> None:
        try:
            outcome["value"] = kernel(*args)
        except BaseException as err:  # handed to the waiting thread, which raises it
            outcome["error"] = err
        finally:
            finished.set()

    worker = threading.Thread(target=call, name=f"compiled {getattr(kernel, '__name__', 'kernel')}", daemon=True)
    worker.start()
    try:
        while not finished.is_set():
            finished.wait(0.2)
            if poll is not None:
                poll()
    except KeyboardInterrupt:
        if stop is not None:
            stop[0] = 1
        finished.wait()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
