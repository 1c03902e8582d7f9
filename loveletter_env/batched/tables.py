"""Constant lookup tables of the batched engine, built from the scalar engine's tables.

The action layout comes from :mod:`loveletter_env.actions`, the deck from
:mod:`loveletter_env.cards`. The legal-action tables restate the two rules that shape the mask (targets, the Countess)
once, as lookups by hand and by who can be chosen. Tables are built once per device and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from ..actions import ACTION_CARD, ACTION_GUESS, ACTION_OFFSET, NO_TARGET, NUM_ACTIONS
from ..cards import BARON, CARD_COUNTS, CARD_VALUES, COUNTESS, FULL_DECK, GUARD, KING, NUM_CARD_TYPES, PRIEST, PRINCE

MAX_SEATS = 4
#: Cards that must choose *another* player, and are played with no effect when none can be.
OTHER_PLAYER_CARDS = (GUARD, PRIEST, BARON, KING)

#: Rows of ``Tables.target_actions``: bit ``t - 1`` set when the other player at offset
#: ``t`` can be chosen, for most cards (low 3 bits) and for the King (high 3 bits).
TARGET_CODES = 1 << (2 * (MAX_SEATS - 1))


def _target_allowed(action: int, choosable: int, king_choosable: int) -> bool:
    """Whether ``action``'s choice of target is allowed, given the bit masks of the
    other players that can be chosen (``king_choosable`` for the King, which a rule
    may let ignore the Handmaid)."""
    card, offset = ACTION_CARD[action], ACTION_OFFSET[action]
    if card not in OTHER_PLAYER_CARDS and (card != PRINCE or offset == 0):
        return True  # no target, or the Prince on yourself: always allowed
    bits = king_choosable if card == KING else choosable
    if offset == NO_TARGET:
        return bits == 0  # "no effect" only when nobody else can be chosen
    return bool(bits >> (offset - 1) & 1)


def _hand_allows(action: int, a: int, b: int) -> bool:
    """Whether a player holding cards ``a`` and ``b`` may play ``action``'s card."""
    held = (a, b)
    if COUNTESS in held and (KING in held or PRINCE in held):
        return ACTION_CARD[action] == COUNTESS  # the Countess must be played
    return ACTION_CARD[action] in held


@dataclass(frozen=True)
class Tables:
    """Device-resident constants (all indexed by action, card value or slot)."""

    action_fields: torch.Tensor  # long [41, 3]: (card, offset, guess), one lookup per step
    hand_actions: torch.Tensor  # bool [81, 41]: row 9a + b: actions a hand (a, b) allows
    target_actions: torch.Tensor  # bool [64, 41]: row = target code: actions whose target is allowed
    target_code_bits: torch.Tensor  # long [6]: weights turning (choosable, king-choosable) flags into a code
    full_deck: torch.Tensor  # int8 [16]: the 16 cards, sorted
    card_values: torch.Tensor  # int8 [8]: the values 1..8 (weights of discard sums)
    card_counts: torch.Tensor  # float32 [8]: copies of each value in the deck
    value_bits: torch.Tensor  # uint8 [8]: bit of value v in a ruled-out mask is 1 << (v - 1)
    card_one_hot: torch.Tensor  # float32 [9, 8]: row v is the one-hot of value v; row 0 is zeros


@lru_cache(maxsize=None)
def tables_for(device: torch.device) -> Tables:
    """The lookup tables on ``device`` (cached)."""
    long = dict(dtype=torch.long, device=device)
    return Tables(
        action_fields=torch.tensor(list(zip(ACTION_CARD, ACTION_OFFSET, ACTION_GUESS)), **long),
        hand_actions=torch.tensor(
            [[_hand_allows(i, a, b) for i in range(NUM_ACTIONS)] for a in range(9) for b in range(9)],
            dtype=torch.bool, device=device,
        ),
        target_actions=torch.tensor(
            [[_target_allowed(i, code & 7, code >> 3) for i in range(NUM_ACTIONS)] for code in range(TARGET_CODES)],
            dtype=torch.bool, device=device,
        ),
        target_code_bits=torch.tensor([1 << i for i in range(2 * (MAX_SEATS - 1))], **long),
        full_deck=torch.tensor(FULL_DECK, dtype=torch.int8, device=device),
        card_values=torch.tensor(CARD_VALUES, dtype=torch.int8, device=device),
        card_counts=torch.tensor([CARD_COUNTS[v] for v in CARD_VALUES], dtype=torch.float32, device=device),
        value_bits=torch.tensor([1 << (v - 1) for v in CARD_VALUES], dtype=torch.uint8, device=device),
        card_one_hot=torch.cat([torch.zeros(1, NUM_CARD_TYPES), torch.eye(NUM_CARD_TYPES)]).to(device),
    )

