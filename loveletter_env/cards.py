"""Card values, names and the composition of the 16-card deck."""

from __future__ import annotations

import operator

from .validation import shown

GUARD, PRIEST, BARON, HANDMAID, PRINCE, KING, COUNTESS, PRINCESS = range(1, 9)

#: Card values in order; 0 is never a card and stands for "no card" / "unknown".
CARD_VALUES: tuple[int, ...] = (GUARD, PRIEST, BARON, HANDMAID, PRINCE, KING, COUNTESS, PRINCESS)
NUM_CARD_TYPES = 8

CARD_NAMES: dict[int, str] = {
    GUARD: "Guard",
    PRIEST: "Priest",
    BARON: "Baron",
    HANDMAID: "Handmaid",
    PRINCE: "Prince",
    KING: "King",
    COUNTESS: "Countess",
    PRINCESS: "Princess",
}

#: How many copies of each value the deck holds.
CARD_COUNTS: dict[int, int] = {
    GUARD: 5,
    PRIEST: 2,
    BARON: 2,
    HANDMAID: 2,
    PRINCE: 2,
    KING: 1,
    COUNTESS: 1,
    PRINCESS: 1,
}

#: The 16 cards in a canonical (sorted) order.
FULL_DECK: tuple[int, ...] = tuple(v for v in CARD_VALUES for _ in range(CARD_COUNTS[v]))
DECK_SIZE = len(FULL_DECK)
_SORTED_DECK = sorted(FULL_DECK)


def card_name(value: int) -> str:
    """Return the English name of a card value (``"?"`` for 0 = unknown)."""
    if value == 0:
        return "?"
    try:
        return CARD_NAMES[value]
    except KeyError:
        raise ValueError(f"{value!r} is not a card value (expected 1..8)") from None


def validate_deck(deck) -> tuple[int, ...]:
    """Check that ``deck`` is a permutation of the 16 cards and return it as a tuple.

    Raises ``ValueError`` naming what is wrong (length, non-card values, wrong counts).
    """
    try:
        # operator.index accepts Python and numpy integers but refuses 1.5 or "3" (and numpy bools).
        items = list(deck)
        cards = tuple(map(operator.index, items))
    except TypeError:
        raise ValueError(f"deck must be a sequence of 16 integer card values 1..8, got {shown(deck)}") from None
    if any(isinstance(card, bool) for card in items):  # True would pass as a Guard
        raise ValueError(f"deck must hold integer card values 1..8, not booleans, got {shown(items)}")
    if len(cards) == DECK_SIZE and sorted(cards) == _SORTED_DECK:
        return cards  # the common case, settled in one comparison
    if len(cards) != DECK_SIZE:
        raise ValueError(f"deck must hold exactly {DECK_SIZE} cards, got {len(cards)}")
    bad = sorted({c for c in cards if c not in CARD_NAMES})
    if bad:
        raise ValueError(f"deck holds values that are not cards: {bad} (card values are 1..8)")
    wrong = [
        f"{CARD_NAMES[v]}: {cards.count(v)} instead of {CARD_COUNTS[v]}"
        for v in CARD_VALUES
        if cards.count(v) != CARD_COUNTS[v]
    ]
    if wrong:
        raise ValueError("deck is not a permutation of the 16 cards: " + ", ".join(wrong))
    return cards
