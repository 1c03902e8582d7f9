"""Whether the compiled copy of torch's CPU generator (:mod:`loveletter_env.core.mt19937`)
draws what the installed torch draws: the check the batched CPU env makes before it deals
with the copy.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ..core import mt19937


@functools.cache
def compiled_draws_match_torch() -> bool:
    """Whether the compiled copy of the generator draws what this torch draws, checked once a
    process on a throwaway generator across several refills of its state.

    The copy knows torch's generator by the layout of its state bytes; a torch release that
    kept the size but changed the algorithm would otherwise deal other games without a sound.
    On a mismatch the env draws through torch itself (slower, same games)."""
    highs = np.array([40320, 12870, 7], np.int64)
    games = 700  # 2,800 words: four refills of the 624-word state
    ours, theirs = torch.Generator().manual_seed(20261126), torch.Generator().manual_seed(20261126)
    state = ours.get_state()
    if state.numel() != mt19937.STATE_BYTES:
        return False
    uniforms, draws = np.empty(games, np.float32), np.empty((len(highs), games), np.int64)
    mt19937.deal_draws(state.numpy(), uniforms, draws, highs, np.empty((len(highs) + 1) * games, np.uint32))
    ours.set_state(state)
    same = np.array_equal(uniforms, torch.rand(games, generator=theirs, dtype=torch.float32).numpy())
    for row, high in zip(draws, highs.tolist()):
        same = same and np.array_equal(row, torch.randint(high, (games,), generator=theirs).numpy())
    return bool(same and torch.equal(ours.get_state(), theirs.get_state()))
