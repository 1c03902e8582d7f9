"""Seconds spent in named parts of a training update (the ``*_s`` columns of ``metrics.csv``)."""

from __future__ import annotations

import time
from typing import Any

import torch


class Stopwatch:
    """Seconds spent in named parts of the work (``with watch("env"): ...``); parts may nest.

    On CUDA a part is timed by two CUDA events on the device's stream, so its kernels count
    in it without the host waiting for the device at every part: :meth:`take` waits once
    and reads the events. (Waiting at each part's edges would stop the host from queueing
    the next kernels while the device works, and slow the very loop being measured.)
    On the CPU a part is wall-clock time.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.seconds: dict[str, float] = {}
        self.events: list[tuple[str, Any, Any]] = []  # (part, start, end) not yet read

    def __call__(self, part: str) -> Stopwatch._Part:
        return Stopwatch._Part(self, part)

    def take(self) -> dict[str, float]:
        """The seconds per part since the last ``take``, as ``{part}_s`` metrics."""
        if self.events:
            torch.cuda.synchronize(self.device)
            for part, start, end in self.events:
                self.seconds[part] = self.seconds.get(part, 0.0) + start.elapsed_time(end) / 1000
            self.events = []
        taken, self.seconds = self.seconds, {}
        return {f"{part}_s": round(seconds, 4) for part, seconds in taken.items()}

    def _mark(self) -> Any:
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    class _Part:
        def __init__(self, watch: Stopwatch, part: str):
            self.watch, self.part = watch, part

        def __enter__(self) -> None:
            self.start = self.watch._mark() if self.watch.cuda else time.perf_counter()

        def __exit__(self, *exc: object) -> None:
            watch = self.watch
            if watch.cuda:
                watch.events.append((self.part, self.start, watch._mark()))
            else:
                seconds = time.perf_counter() - self.start
                watch.seconds[self.part] = watch.seconds.get(self.part, 0.0) + seconds
