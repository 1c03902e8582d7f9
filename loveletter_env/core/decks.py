"""The tables of the uniform deck construction shared by the batched engine's shufflers.

A permutation of 16 cards is, exactly once each: which 8 of the 16 positions receive
the first 8 cards of the sorted deck (one of C(16, 8) = 12,870 subsets), the order of
those 8 cards among themselves and the order of the other 8 (8! = 40,320 each). So
drawing the three uniformly and independently draws the permutation uniformly
(12,870 x 40,320 x 40,320 = 16!). Each draw is one integer per game and a row lookup.
"""

from __future__ import annotations

from functools import cache
from itertools import combinations, permutations

import numpy as np

from ..cards import DECK_SIZE

HALF = DECK_SIZE // 2


@cache
def deck_tables() -> tuple[np.ndarray, np.ndarray]:
    """(orders of 8 cards int64 [8!, 8], position lists int64 [C(16,8), 16]): row ``i`` of
    ``orders`` is the ``i``-th permutation of 0..7 in lexicographic order; a row of
    ``placements`` lists 8 chosen positions (ascending) then the other 8 (ascending)."""
    orders = np.array(list(permutations(range(HALF))), dtype=np.int64)
    subsets = combinations(range(DECK_SIZE), HALF)
    placements = np.array([list(c) + [p for p in range(DECK_SIZE) if p not in c] for c in subsets], dtype=np.int64)
    orders.flags.writeable = False
    placements.flags.writeable = False
    return orders, placements
