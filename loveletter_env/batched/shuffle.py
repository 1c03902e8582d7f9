"""Uniform random decks for N games, without sorting.

A permutation of 16 cards is, exactly once each: which 8 of the 16 positions receive
the first 8 cards of the sorted deck (one of C(16, 8) = 12,870 subsets), the order of
those 8 cards among themselves and the order of the other 8 (8! = 40,320 each). So
drawing the three uniformly and independently draws the permutation uniformly
(12,870 x 40,320 x 40,320 = 16!). Each draw is one integer per game and a row lookup,
which on CPU is several times cheaper than argsorting 16 random keys per game.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations, permutations

import torch

from ..cards import DECK_SIZE, FULL_DECK

HALF = DECK_SIZE // 2


@lru_cache(maxsize=None)
def _tables(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(orders of 8 cards [8!, 8], position lists [C(16,8), 16], sorted deck halves [2, 8])."""
    orders = torch.tensor(list(permutations(range(HALF))), dtype=torch.long)
    placements = torch.tensor(
        [list(chosen) + [p for p in range(DECK_SIZE) if p not in chosen] for chosen in combinations(range(DECK_SIZE), HALF)],
        dtype=torch.long,
    )
    halves = torch.tensor(FULL_DECK, dtype=torch.int8).view(2, HALF)
    return orders.to(device), placements.to(device), halves.to(device)


def shuffled_decks(num: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """int8 [num, 16]: independent uniformly shuffled decks (index 0 = top)."""
    orders, placements, halves = _tables(torch.device(device))
    draw = lambda high: torch.randint(high, (num,), generator=generator, device=device)  # noqa: E731
    first = halves[0][orders.index_select(0, draw(orders.shape[0]))]
    second = halves[1][orders.index_select(0, draw(orders.shape[0]))]
    positions = placements.index_select(0, draw(placements.shape[0]))
    decks = torch.empty(num, DECK_SIZE, dtype=torch.int8, device=device)
    return decks.scatter_(1, positions, torch.cat([first, second], 1))
