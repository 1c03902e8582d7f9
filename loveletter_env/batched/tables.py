"""Constant lookup tables of the batched engine, built from the scalar engine's tables.

The action layout comes from :mod:`loveletter_env.actions`, the deck from
:mod:`loveletter_env.cards`, the legal-action tables (lookups by hand and by who can be
chosen) from :mod:`loveletter_env.core.layout`, shared with the compiled core. Tables
are built once per device and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

from ..actions import ACTION_CARD, ACTION_GUESS, ACTION_OFFSET
from ..cards import CARD_COUNTS, CARD_VALUES, FULL_DECK, NUM_CARD_TYPES
from ..core import layout
from ..core.layout import MAX_SEATS


@dataclass(frozen=True)
class Tables:
    """Device-resident constants (all indexed by action, card value or slot)."""

    action_fields: torch.Tensor  # long [41, 3]: (card, offset, guess), one lookup per step
    hand_actions: torch.Tensor  # bool [81, 41]: row 9a + b: actions a hand (a, b) allows
    target_actions: torch.Tensor  # bool [64, 41]: row = target code (layout.TARGET_CODES): targets allowed
    target_code_bits: torch.Tensor  # long [6]: weights turning (choosable, king-choosable) flags into a code
    full_deck: torch.Tensor  # int8 [16]: the 16 cards, sorted
    card_values: torch.Tensor  # int8 [8]: the values 1..8 (weights of discard sums)
    card_counts: torch.Tensor  # float32 [8]: copies of each value in the deck
    value_bits: torch.Tensor  # uint8 [8]: bit of value v in a ruled-out mask is 1 << (v - 1)
    card_one_hot: torch.Tensor  # float32 [9, 8]: row v is the one-hot of value v; row 0 is zeros


@cache
def tables_for(device: torch.device) -> Tables:
    """The lookup tables on ``device`` (cached)."""
    long: dict[str, Any] = dict(dtype=torch.long, device=device)
    return Tables(
        action_fields=torch.tensor(list(zip(ACTION_CARD, ACTION_OFFSET, ACTION_GUESS)), **long),
        hand_actions=torch.from_numpy(layout.HAND_ACTIONS).to(device),
        target_actions=torch.from_numpy(layout.TARGET_ACTIONS).to(device),
        target_code_bits=torch.tensor([1 << i for i in range(2 * (MAX_SEATS - 1))], **long),
        full_deck=torch.tensor(FULL_DECK, dtype=torch.int8, device=device),
        card_values=torch.tensor(CARD_VALUES, dtype=torch.int8, device=device),
        card_counts=torch.tensor([CARD_COUNTS[v] for v in CARD_VALUES], dtype=torch.float32, device=device),
        value_bits=torch.tensor([1 << (v - 1) for v in CARD_VALUES], dtype=torch.uint8, device=device),
        card_one_hot=torch.cat([torch.zeros(1, NUM_CARD_TYPES), torch.eye(NUM_CARD_TYPES)]).to(device),
    )

