"""Uniform random decks for N games, without sorting.

The construction is :mod:`loveletter_env.core.decks`: three uniform integers per game
pick the deck, which on CPU is several times cheaper than argsorting 16 random keys per
game. :func:`deck_draws` draws those integers from the env's generator; the torch path
turns them into decks here, the compiled core in its kernels (the same decks).
"""

from __future__ import annotations

from functools import cache

import torch

from ..cards import DECK_SIZE, FULL_DECK
from ..core.decks import HALF, deck_tables


@cache
def _tables(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(orders of 8 cards [8!, 8], position lists [C(16,8), 16], sorted deck halves [2, 8])."""
    orders, placements = (torch.tensor(t, dtype=torch.long) for t in deck_tables())
    halves = torch.tensor(FULL_DECK, dtype=torch.int8).view(2, HALF)
    return orders.to(device), placements.to(device), halves.to(device)


def deck_draws(num: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """long [num, 3]: per game, the rows of the first half's order, the second half's
    order and the placement that make its deck (see :mod:`loveletter_env.core.decks`)."""
    orders, placements = deck_tables()
    draw = lambda high: torch.randint(high, (num,), generator=generator, device=device)  # noqa: E731
    return torch.stack([draw(orders.shape[0]), draw(orders.shape[0]), draw(placements.shape[0])], 1)


def shuffled_decks(num: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """int8 [num, 16]: independent uniformly shuffled decks (index 0 = top)."""
    orders, placements, halves = _tables(torch.device(device))
    draws = deck_draws(num, generator, device)
    first = halves[0][orders.index_select(0, draws[:, 0])]
    second = halves[1][orders.index_select(0, draws[:, 1])]
    positions = placements.index_select(0, draws[:, 2])
    decks = torch.empty(num, DECK_SIZE, dtype=torch.int8, device=device)
    return decks.scatter_(1, positions, torch.cat([first, second], 1))
