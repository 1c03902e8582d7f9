"""Where a run executes and how its random streams are seeded.

- :func:`pick_device`: the torch device a config's ``device`` names;
- :func:`derive_seed`: independent seeds for every random stream of a run (acting, minibatch
  order, opponent draws, bots, evaluations...), mixed from the run's seed and a stream id,
  so no code touches a global random state.
"""

from __future__ import annotations

import numpy as np
import torch

from .config import ConfigError


def pick_device(name: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' was requested but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(name)


def derive_seed(*parts: int) -> int:
    """A 63-bit seed mixed from several integers (run seed, stream id, update...)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))
