"""How the batched env builds and launches its CUDA kernels: the choices ``scripts/gpu_check.py`` times.

Every kernel variant and both launchers play the same games bit for bit
(``tests/core/test_cuda.py``, ``tests/batched/test_batched.py``), so these settings choose
speed alone, and no env takes them as an argument: the defaults are the measured best, and
only a measurement changes them, for the envs made inside :func:`cuda_tuning`::

    with cuda_tuning(variant=KernelVariant(128, False, True), launcher="numba"):
        env = BatchedLoveLetter(65536, device="cuda")  # built and launched that way
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: ``"direct"``: :class:`~loveletter_env.core.gpu.DirectLaunch` (where this numba-cuda allows
#: it); ``"numba"``: numba's own launch, which converts every argument at every launch.
LAUNCHERS = ("direct", "numba")


@dataclass(frozen=True)
class CudaTuning:
    """``variant``: a :class:`~loveletter_env.core.gpu.KernelVariant` (None: ``DEFAULT_VARIANT``);
    ``launcher``: one of :data:`LAUNCHERS`."""

    variant: Any = None
    launcher: str = "direct"

    def __post_init__(self) -> None:
        if self.launcher not in LAUNCHERS:
            raise ValueError(f"launcher must be one of {', '.join(LAUNCHERS)}, got {self.launcher!r}")
        if self.variant is not None:
            # Checked here, not where a CUDA env builds its kernels (where anything else failed
            # as an AttributeError). Imported only now: without numba-cuda, nothing is a variant.
            try:
                from ..core.gpu import KernelVariant

                is_variant = isinstance(self.variant, KernelVariant)
            except ImportError:
                is_variant = False
            if not is_variant:
                raise TypeError(
                    f"variant must be a loveletter_env.core.gpu.KernelVariant (or None), got {self.variant!r}"
                )


_current = CudaTuning()


def current_tuning() -> CudaTuning:
    """The settings a CUDA env made now uses."""
    return _current


@contextlib.contextmanager
def cuda_tuning(variant: Any = None, launcher: str = "direct") -> Iterator[CudaTuning]:
    """CUDA envs made inside build ``variant`` and launch through ``launcher``; the
    previous settings come back on leaving, however it is left."""
    global _current
    previous, _current = _current, CudaTuning(variant, launcher)
    try:
        yield _current
    finally:
        _current = previous
