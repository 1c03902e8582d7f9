"""Uniform random decks for N games, without sorting.

The construction is :mod:`loveletter_env.core.decks`: three uniform integers per game
pick the deck, which on CPU is several times cheaper than argsorting 16 random keys per
game. :func:`deck_draws` draws those integers from the env's generator; the compiled core
turns them into decks (:func:`~loveletter_env.core.kernels.shuffle_in_play_batch` here, the
same placement inside its deals), so the construction is written once.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import torch

from ..cards import FULL_DECK
from ..core import kernels
from ..core.decks import deck_tables
from ..validation import check_int, shown


@cache
def _uint8_tables() -> tuple[np.ndarray, np.ndarray]:
    """The deck tables as the compiled deals take them (uint8: a quarter of int64's cache footprint)."""
    orders, placements = (t.astype(np.uint8) for t in deck_tables())
    return orders, placements


def deck_draws(num: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """long [num, 3]: per game, the rows of the first half's order, the second half's
    order and the placement that make its deck (see :mod:`loveletter_env.core.decks`).

    Raises:
        TypeError: ``generator`` is not a ``torch.Generator`` (torch would take ``None`` as
            its global generator: decks that ``torch.manual_seed`` moves, not the caller's seed).
        ValueError: ``num`` is not a non-negative integer."""
    check_int("num", num, 0)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {shown(generator)}")
    orders, placements = deck_tables()
    draw = lambda high: torch.randint(high, (num,), generator=generator, device=device)  # noqa: E731
    return torch.stack([draw(orders.shape[0]), draw(orders.shape[0]), draw(placements.shape[0])], 1)


def shuffled_decks(num: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """int8 [num, 16]: independent uniformly shuffled decks (index 0 = top), on ``device``.

    The draws come from ``generator`` on ``device``; the decks are built by the compiled
    core on the CPU (a CUDA env deals inside its kernels and never calls this)."""
    draws = deck_draws(num, generator, device).T.contiguous().cpu().numpy()
    decks = np.tile(np.array(FULL_DECK, dtype=np.uint8), (num, 1))
    # Every card of the full deck is in play: no face-up cards stay put.
    kernels.shuffle_in_play_batch(decks, 0, *_uint8_tables(), draws)
    return torch.from_numpy(decks.astype(np.int8)).to(device)
