"""Constant lookup tables of the batched engine, built from the scalar engine's tables.

Nothing here restates a rule: the action layout comes from :mod:`loveletter_env.actions`,
the deck from :mod:`loveletter_env.cards`. Tables are built once per device and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from ..actions import ACTION_CARD, ACTION_GUESS, ACTION_OFFSET, NO_TARGET, NUM_ACTIONS
from ..cards import BARON, CARD_COUNTS, CARD_VALUES, FULL_DECK, GUARD, KING, NUM_CARD_TYPES, PRIEST
from ..engine import FACE_UP_CARDS_2P
from ..observation import SLICES

MAX_SEATS = 4
#: Cards that must choose *another* player, and are played with no effect when none can be.
OTHER_PLAYER_CARDS = (GUARD, PRIEST, BARON, KING)

# Columns of the per-game "target condition" table that ``legal_mask`` builds; every
# action reads exactly one column (``Tables.action_condition``).
COND_ALWAYS = 0  # Handmaid, Countess, Princess, Prince on yourself
COND_NOBODY = 1  # "no target" version of Guard / Priest / Baron
COND_OFFSET = 2  # 2, 3, 4: another player at offset 1, 2, 3 can be chosen
COND_KING_NOBODY = 5  # King with no target (may ignore Handmaid, by rule)
COND_KING_OFFSET = 6  # 6, 7, 8: the King may choose offset 1, 2, 3
NUM_CONDITIONS = 9


def _action_condition(card: int, offset: int) -> int:
    king = card == KING
    if offset == NO_TARGET:
        if card not in OTHER_PLAYER_CARDS:
            return COND_ALWAYS
        return COND_KING_NOBODY if king else COND_NOBODY
    if offset == 0:
        return COND_ALWAYS
    return (COND_KING_OFFSET if king else COND_OFFSET) + offset - 1


def _observation_card_blocks() -> list[int]:
    """Flat observation position of value 1 for each one-hot card entry, in the order
    :func:`~loveletter_env.batched.observe.encode_observations` lists them: own hand (2),
    discards (4 seats x 16 slots), face-up cards (3), known cards (3 other seats)."""
    hand, discards = SLICES["hand"].start, SLICES["discards"].start
    face_up, known = SLICES["face_up"].start, SLICES["known_card"].start
    return (
        [hand, hand]
        + [discards + slot * NUM_CARD_TYPES for slot in range(MAX_SEATS * len(FULL_DECK))]
        + [face_up] * FACE_UP_CARDS_2P
        + [known + k * NUM_CARD_TYPES for k in range(MAX_SEATS - 1)]
    )


@dataclass(frozen=True)
class Tables:
    """Device-resident constants (all indexed by action, card value or slot)."""

    action_card: torch.Tensor  # long [41]: card value each action plays
    action_offset: torch.Tensor  # long [41]: target seat offset, -1 = no target
    action_guess: torch.Tensor  # long [41]: value a Guard names, else 0
    action_condition: torch.Tensor  # long [41]: column of the target-condition table
    action_fields: torch.Tensor  # long [41, 3]: (card, offset, guess), one lookup per step
    held_cards: torch.Tensor  # bool [81, 8]: row 9 * a + b: which values a hand (a, b) holds
    full_deck: torch.Tensor  # int8 [16]: the 16 cards, sorted
    card_values: torch.Tensor  # int8 [8]: 1..8, for one-hot comparisons
    card_counts: torch.Tensor  # float32 [8]: copies of each value in the deck
    value_bits: torch.Tensor  # uint8 [8]: bit of value v in a ruled-out mask is 1 << (v - 1)
    card_blocks: torch.Tensor  # long [72]: observation position of value 1 per one-hot card entry
    seat_ids: torch.Tensor  # long [4]
    slot_ids: torch.Tensor  # long [16]: discard slots


@lru_cache(maxsize=None)
def tables_for(device: torch.device) -> Tables:
    """The lookup tables on ``device`` (cached)."""
    long = dict(dtype=torch.long, device=device)
    return Tables(
        action_card=torch.tensor(ACTION_CARD, **long),
        action_offset=torch.tensor(ACTION_OFFSET, **long),
        action_guess=torch.tensor(ACTION_GUESS, **long),
        action_condition=torch.tensor(
            [_action_condition(c, o) for c, o in zip(ACTION_CARD, ACTION_OFFSET)], **long
        ),
        action_fields=torch.tensor(list(zip(ACTION_CARD, ACTION_OFFSET, ACTION_GUESS)), **long),
        held_cards=torch.tensor(
            [[v in (a, b) for v in CARD_VALUES] for a in range(9) for b in range(9)], dtype=torch.bool, device=device
        ),
        full_deck=torch.tensor(FULL_DECK, dtype=torch.int8, device=device),
        card_values=torch.tensor(CARD_VALUES, dtype=torch.int8, device=device),
        card_counts=torch.tensor([CARD_COUNTS[v] for v in CARD_VALUES], dtype=torch.float32, device=device),
        value_bits=torch.tensor([1 << (v - 1) for v in CARD_VALUES], dtype=torch.uint8, device=device),
        card_blocks=torch.tensor(_observation_card_blocks(), **long),
        seat_ids=torch.arange(MAX_SEATS, **long),
        slot_ids=torch.arange(len(FULL_DECK), **long),
    )


assert NUM_ACTIONS == len(ACTION_CARD)
