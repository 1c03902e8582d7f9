"""The machine's load, reported beside a benchmark's timings (``python -m loveletter_env.bench``,
``python -m loveletter_env.agents.ismcts_bench``): absolute rates move with it, ratios measured
in the same run much less."""

from __future__ import annotations

import os


def machine_load() -> float | None:
    """The machine's 1-minute load average, where the system reports one (``None`` elsewhere)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def load_line(start: float | None, end: float | None) -> str:
    """The report's line on the machine's load over a run: absolute rates move with it (the
    docs quote it beside each run), ratios measured in the same run much less."""
    if start is None or end is None:
        return "machine load: not reported by this system"
    return f"machine load (1-minute average): {start:.2f} at the start, {end:.2f} at the end, on {os.cpu_count()} CPUs"
