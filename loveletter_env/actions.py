"""The 41-action layout shared by every table size: encode, decode, describe.

Targets are seat offsets from the acting player (0 = yourself, 1 = next seat in turn
order, ...). ``NO_TARGET`` marks the "played with no effect" actions.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

from .cards import BARON, COUNTESS, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS, card_name
from .validation import check_int, check_num_players, check_seat, is_int, shown

NUM_ACTIONS = 41
NO_TARGET = -1

GUARD_NO_TARGET = 21
PRIEST_BASE, PRIEST_NO_TARGET = 21, 25  # Priest on offset t is PRIEST_BASE + t
BARON_BASE, BARON_NO_TARGET = 25, 29
HANDMAID_ACTION = 30
PRINCE_BASE = 31  # Prince on offset t (0 = yourself) is PRINCE_BASE + t
KING_BASE, KING_NO_TARGET = 34, 38
COUNTESS_ACTION = 39
PRINCESS_ACTION = 40


class Action(NamedTuple):
    """A decoded action: the card played, the target seat offset (or ``NO_TARGET``),
    and for a Guard the value named (else 0)."""

    card: int
    offset: int = NO_TARGET
    guess: int = 0


def guard_action(offset: int, guess: int) -> int:
    """Index of "Guard on seat offset ``offset`` (1..3) naming ``guess`` (2..8)".

    Raises ``ValueError`` for anything else (a bool, a Guard, a value past the Princess):
    the arithmetic would turn them into some other action.
    """
    offset = check_int("Guard target offset", offset, 1, 3)
    guess = check_int("Guard guess", guess, PRIEST, PRINCESS)
    return (offset - 1) * 7 + (guess - PRIEST)


def _build_table() -> tuple[Action, ...]:
    table: list[Action] = []
    for offset in (1, 2, 3):
        for guess in range(2, 9):
            table.append(Action(GUARD, offset, guess))
    table.append(Action(GUARD))
    table += [Action(PRIEST, t) for t in (1, 2, 3)] + [Action(PRIEST)]
    table += [Action(BARON, t) for t in (1, 2, 3)] + [Action(BARON)]
    table.append(Action(HANDMAID))
    table += [Action(PRINCE, t) for t in (0, 1, 2, 3)]
    table += [Action(KING, t) for t in (1, 2, 3)] + [Action(KING)]
    table.append(Action(COUNTESS))
    table.append(Action(PRINCESS))
    assert len(table) == NUM_ACTIONS
    return tuple(table)


#: ACTIONS[i] is the decoded form of action index i.
ACTIONS: tuple[Action, ...] = _build_table()
_INDEX = {a: i for i, a in enumerate(ACTIONS)}

# Flat per-field tables: the engine's hot path and the batched engine read these.
ACTION_CARD: tuple[int, ...] = tuple(a.card for a in ACTIONS)
ACTION_OFFSET: tuple[int, ...] = tuple(a.offset for a in ACTIONS)
ACTION_GUESS: tuple[int, ...] = tuple(a.guess for a in ACTIONS)


def action_index(value: Any) -> int | None:
    """``value`` as an ``int`` if it holds one integer: a Python or numpy integer, or a 0-d
    integer array (all of which ``Discrete(41).contains`` admits); ``None`` for anything else.
    The range is not checked. Bools are no actions (``True`` is no action 1), and ``int()``
    would truncate ``np.array(3.5)`` into action 3.

    The one test of "is this an action?" for the engine, the env and :func:`decode_action`.
    """
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # refuses floats, strings, numpy bools and arrays of other shapes
    except TypeError:
        return None


def decode_action(index: int) -> Action:
    """Decode an action index into an :class:`Action`.

    Raises ``ValueError`` for anything but an integer in 0..40 (see :func:`action_index`).
    """
    i = action_index(index)
    if i is None:
        raise ValueError(f"action must be an integer in [0, {NUM_ACTIONS}), got {shown(index)}")
    if not 0 <= i < NUM_ACTIONS:
        raise ValueError(f"action {shown(i)} is out of range: actions are 0..{NUM_ACTIONS - 1}")
    return ACTIONS[i]


def encode_action(card: int, offset: int = NO_TARGET, guess: int = 0) -> int:
    """Encode a card play into its action index. Raises ``ValueError`` if no such action,
    and for arguments that are no integers (``1.0`` and ``True`` equal 1 as table keys)."""
    for name, value in (("card", card), ("offset", offset), ("guess", guess)):
        if not is_int(value):
            raise ValueError(f"encode_action's {name} must be an integer, got {shown(value)}")
    try:
        return _INDEX[Action(int(card), int(offset), int(guess))]
    except KeyError:
        raise ValueError(f"no action plays {card_name(card)} with offset {offset} and guess {guess}") from None


def describe_action(index: int, actor: int | None = None, num_players: int | None = None) -> str:
    """Describe an action in words, e.g. ``"Guard on player_1, naming Priest"``.

    With ``actor`` and ``num_players`` (given together, and checked) the target is named
    as a seat (``player_k``); an offset past the table is named as such, never wrapped
    onto a seat it does not point at (illegal actions are described in error messages).
    Without them it is named by its offset (``"next player"``, ``"+2"``).
    """
    a = decode_action(index)
    if (actor is None) != (num_players is None):
        raise ValueError(
            f"describe_action takes actor and num_players together, got actor={shown(actor)} and "
            f"num_players={shown(num_players)}"
        )
    if actor is not None and num_players is not None:
        num_players = check_num_players(num_players)
        actor = check_seat("actor", actor, num_players)
    text = card_name(a.card)
    if a.offset == NO_TARGET:
        if a.card in (GUARD, PRIEST, BARON, KING):
            text += " (no one can be chosen: no effect)"
        return text
    if actor is not None and num_players is not None:
        if a.offset >= num_players:
            target = f"seat +{a.offset}, past the {num_players}-player table"
        else:
            target = f"player_{(actor + a.offset) % num_players}"
        if a.offset == 0:
            target += " (yourself)"
    else:
        target = "yourself" if a.offset == 0 else ("the next player" if a.offset == 1 else f"seat +{a.offset}")
    text += f" on {target}"
    if a.guess:
        text += f", naming {card_name(a.guess)}"
    return text
