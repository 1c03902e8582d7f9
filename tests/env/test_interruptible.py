"""loveletter_env.interruptible: a compiled call that Ctrl-C stops without killing the process."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest

from loveletter_env.interruptible import run_interruptibly


def test_run_interruptibly_waits_for_the_kernel_after_ctrl_c():
    # On Python 3.11, Thread.join interrupted by Ctrl-C marks a running thread as ended, so
    # waiting with join let the command go on (and exit) while the kernel still ran.
    main_thread = threading.main_thread().ident
    assert main_thread is not None
    stop = np.zeros(1, np.uint8)
    finished = threading.Event()

    def kernel(stop: np.ndarray) -> None:
        time.sleep(0.3)  # the main thread is waiting by now
        signal.pthread_kill(main_thread, signal.SIGINT)
        deadline = time.monotonic() + 30
        while not stop[0] and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # a kernel takes a moment to return once stopped
        finished.set()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_interruptibly(kernel, stop, stop=stop)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert stop[0] == 1
    assert finished.is_set(), "run_interruptibly raised before the kernel returned"


def test_the_kernels_result_and_errors_come_back_to_the_caller():
    assert run_interruptibly(lambda a, b: a + b, 2, 3) == 5
    polled = []

    def slow() -> str:
        time.sleep(0.5)
        return "done"

    assert run_interruptibly(slow, poll=lambda: polled.append(1)) == "done"
    assert polled, "poll() is called while the kernel runs"

    def failing() -> None:
        raise MemoryError("no room for the tree")

    with pytest.raises(MemoryError, match="no room for the tree"):
        run_interruptibly(failing)
