"""Where each field of a game lives in a core record, and the constant tables the kernels read.

A *record* is one game as a row of ``RECORD_SIZE`` unsigned bytes; N games are a
``uint8 [N, RECORD_SIZE]`` array. One flat row per game makes a game cheap to copy
(search clones states by copying rows) and lets a compiled kernel take one array
argument per batch instead of one per field. Every value fits a byte: cards are 0..8,
seats 0..3, counters at most 16, tokens at most 16 (the largest target a ``Rules`` object takes).

Conventions are the reference engine's (:class:`loveletter_env.engine.GameState`):
card value 0 means "no card" / "unknown", ``deck`` index 0 is the top (the set-aside
card), ``known[observer * 4 + player]`` is the card ``observer`` knows ``player``
holds. Two differences of representation: seats are padded to 4, a padding seat being
permanently out; and ``ruled_out`` keeps value ``v`` at bit ``v - 1`` (the reference
uses bit ``v``) so that 8 values fit a byte.

Offsets are computed from the order in which the fields are declared below, so a field
can be resized or inserted without renumbering the others. The kernels bake these values
in when they compile; their on-disk cache is keyed on them (:mod:`.cache`), so a change
here recompiles the kernels by itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..actions import ACTION_CARD, ACTION_GUESS, ACTION_OFFSET, NUM_ACTIONS
from ..cards import CARD_COUNTS, CARD_VALUES, DECK_SIZE, FULL_DECK
from ..engine import legal_actions_holding
from ..observation import MAX_DISCARDS, MAX_MOVES, MOVE_SIZE, MOVE_SLICES, OBSERVATION_SIZE, SLICES
from ..validation import MAX_PLAYERS

MAX_SEATS = MAX_PLAYERS


class _Fields:
    """The record's fields declared in order, each at the offset after the previous one:
    offsets are computed, never numbered by hand, so a field can change size or be
    inserted without renumbering the others."""

    def __init__(self) -> None:
        self.fields: list[tuple[str, int, int]] = []  # (name, offset, size), in order
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.size = 0

    def field(self, name: str, size: int) -> int:
        """Declare the next field, of ``size`` bytes, and return its offset."""
        self.fields.append((name, self.size, size))
        self.shapes[name] = (size,)
        self.size += size
        return self.fields[-1][1]

    def array(self, name: str, *shape: int) -> tuple[int, Any]:
        """Declare the next field, an array of ``shape`` (1 or 2 dimensions, row-major), and
        return its offset and its index function (see :func:`_index_function`)."""
        offset = self.field(name, int(np.prod(shape)))
        self.shapes[name] = shape
        return offset, _index_function(name, offset, shape)


def _index_function(name: str, offset: int, shape: tuple[int, ...]) -> Any:
    """The compiled function ``<name>_at(i)`` or ``<name>_at(i, j)`` that gives the position in
    a record of entry ``[i]`` or ``[i, j]`` of field ``name``, so that the kernels read
    ``r[known_at(observer, player)]`` where they would spell ``r[KNOWN + observer * 4 + player]``.

    A position, not a getter and a setter: one name serves reads, stores and ``+=``/``|=``.
    The offset and row width are constants of the closure, which numba compiles as
    constants, and a kernel that calls the function inlines it, so the position costs what
    the spelled-out sum did (``python -m loveletter_env.bench --batched``, docs/architecture.md)."""
    if len(shape) == 1:
        at = _entry_position(offset)
    elif len(shape) == 2:
        at = _table_position(offset, shape[1])
    else:
        raise ValueError(f"{name}: a record field has 1 or 2 dimensions, got shape {shape}")
    at.__name__ = at.__qualname__ = f"{name.lower()}_at"
    at.__doc__ = f"The position of an entry of ``{name}`` {list(shape)} in a record."
    return njit(at)


def _entry_position(offset: int) -> Any:
    def at(i):
        return offset + i

    return at


def _table_position(offset: int, width: int) -> Any:
    def at(i, j):
        return offset + i * width + j

    return at


_record = _Fields()
# Scalars.
NUM_PLAYERS = _record.field("NUM_PLAYERS", 1)
TOKENS_TO_WIN = _record.field("TOKENS_TO_WIN", 1)
RULE_DISCARD_SUM = _record.field("RULE_DISCARD_SUM", 1)  # 1: a showdown tie goes to the highest sum of discards
RULE_KING_IGNORES_HANDMAID = _record.field("RULE_KING_IGNORES_HANDMAID", 1)  # 1: the King may choose a protected player
CURRENT = _record.field("CURRENT", 1)  # seat to act (kept after the round ends, as the reference does)
DRAWN = _record.field("DRAWN", 1)  # the second card of the player to act (0 once the round is over)
NEXT_CARD = _record.field("NEXT_CARD", 1)  # index of the next card to draw (16 = empty)
ROUND_OVER = _record.field("ROUND_OVER", 1)
GAME_OVER = _record.field("GAME_OVER", 1)
SET_ASIDE_DRAWN = _record.field("SET_ASIDE_DRAWN", 1)
TURN = _record.field("TURN", 1)  # turns played this round
ROUND = _record.field("ROUND", 1)  # rounds dealt this game
# Per seat. A new round zeroes HANDS up to GAME_WINNERS in one slice: keep them together.
TOKENS, tokens_at = _record.array("TOKENS", MAX_SEATS)
HANDS, hands_at = _record.array("HANDS", MAX_SEATS)  # the card each seat keeps (0 = none)
OUT, out_at = _record.array("OUT", MAX_SEATS)
PROTECTED, protected_at = _record.array("PROTECTED", MAX_SEATS)
NUM_DISCARDS, num_discards_at = _record.array("NUM_DISCARDS", MAX_SEATS)
RULED_OUT, ruled_out_at = _record.array("RULED_OUT", MAX_SEATS)  # bit v - 1 set: a failed Guard proved value v absent
ROUND_WINNERS, round_winners_at = _record.array("ROUND_WINNERS", MAX_SEATS)
GAME_WINNERS, game_winners_at = _record.array("GAME_WINNERS", MAX_SEATS)
# Larger blocks.
DECK, deck_at = _record.array("DECK", DECK_SIZE)  # top first
# A new round zeroes KNOWN up to FACE_UP in one slice: every field between is the round's.
KNOWN, known_at = _record.array("KNOWN", MAX_SEATS, MAX_SEATS)  # [observer, player]
# [observer, player]: the player can tell that observer knows its card
SEEN, seen_at = _record.array("SEEN", MAX_SEATS, MAX_SEATS)
# [seat, value - 1]: copies of each value discarded this round
DISCARDED, discarded_at = _record.array("DISCARDED", MAX_SEATS, 8)
DISCARDS, discards_at = _record.array("DISCARDS", MAX_SEATS, MAX_DISCARDS)  # [seat, slot]: discards in order
DEALT, dealt_at = _record.array("DEALT", MAX_SEATS)  # the card each seat was dealt this round

# The move log: one entry of MOVE_BYTES per move this round (TURN of them), hidden parts
# included; observations show each seat its own view of it (the move record).
_move = _Fields()
M_ACTOR = _move.field("M_ACTOR", 1)  # seat that moved
M_CARD = _move.field("M_CARD", 1)  # card played
M_TARGET = _move.field("M_TARGET", 1)  # seat chosen + 1 (0 = no one)
M_GUESS = _move.field("M_GUESS", 1)  # a Guard's named card (0 otherwise)
M_ACTOR_CARD = _move.field("M_ACTOR_CARD", 1)  # Baron, King: the mover's compared or given card
M_TARGET_CARD = _move.field("M_TARGET_CARD", 1)  # Priest, Baron, King: the target's card; Prince: the card it discarded
M_OUT = _move.field("M_OUT", 1)  # bit s set: seat s went out on this move
M_DISCARDED = _move.field("M_DISCARDED", 1)  # the card forced face up besides the one played (0 if none)
M_DRAWN = _move.field("M_DRAWN", 1)  # the card the mover drew to begin the turn
M_REPLACEMENT = _move.field("M_REPLACEMENT", 1)  # the card a Prince's target drew (0 if none)
MOVE_BYTES = _move.size
MOVE_LOG, move_log_at = _record.array("MOVE_LOG", MAX_MOVES, MOVE_BYTES)  # [move, M_* byte]

# Fixed for the game, after every round field.
FACE_UP = _record.field("FACE_UP", 1)  # cards a round lays face up after the set-aside one
FACE_UP_FIXED = _record.field(
    "FACE_UP_FIXED", 1
)  # 1 on a ladder rung: the face-up cards stay; a deal shuffles the others
RECORD_SIZE = _record.size

#: ``(name, offset, size)`` of each field of a record, and of a move log entry, in order.
RECORD_FIELDS = tuple(_record.fields)
MOVE_FIELDS = tuple(_move.fields)
#: ``(name, shape)`` of each record field, in order: ``(size,)``, or the two dimensions of a
#: table (``KNOWN``: ``(MAX_SEATS, MAX_SEATS)``, indexed ``[observer, player]``). A tuple, so
#: that the kernels' cache key (:mod:`.cache`) covers the row widths the index functions bake in.
RECORD_SHAPES = tuple(_record.shapes.items())

assert MAX_DISCARDS == DECK_SIZE

# Observation positions (from the one layout in loveletter_env.observation).
OBS_SIZE = OBSERVATION_SIZE
OBS_HAND = SLICES["hand"].start
OBS_KNOWN = SLICES["known_card"].start
OBS_RULED = SLICES["ruled_out"].start
OBS_SEEN = SLICES["seen_by"].start
OBS_OUT = SLICES["out"].start
OBS_PROTECTED = SLICES["protected"].start
OBS_TO_ACT = SLICES["to_act"].start
OBS_DECK = SLICES["deck_size"].start
OBS_UNSEEN = SLICES["unseen"].start
OBS_FACE_UP = SLICES["face_up"].start
OBS_PRESENT = SLICES["present"].start
OBS_TOKENS = SLICES["tokens"].start
OBS_TARGET = SLICES["tokens_to_win"].start
OBS_NUM_PLAYERS = SLICES["num_players"].start
OBS_RULES = SLICES["rules"].start
OBS_DISCARD_COUNTS = SLICES["discard_counts"].start
OBS_DISCARDS = SLICES["discards"].start
OBS_DEALT = SLICES["dealt"].start
OBS_DRAWN = SLICES["drawn"].start
OBS_MOVES = SLICES["moves"].start
OBS_MOVE_SIZE = MOVE_SIZE
OBS_M_ACTOR = MOVE_SLICES["actor"].start
OBS_M_CARD = MOVE_SLICES["card"].start
OBS_M_TARGET = MOVE_SLICES["target"].start
OBS_M_GUESS = MOVE_SLICES["guess"].start
OBS_M_OUT = MOVE_SLICES["out"].start
OBS_M_DISCARDED = MOVE_SLICES["discarded"].start
OBS_M_SAW = MOVE_SLICES["saw"].start
OBS_M_DREW = MOVE_SLICES["drew"].start
OBS_M_REPLACEMENT = MOVE_SLICES["replacement"].start

# Action tables. The core's legal mask is ``HAND_ACTIONS[hand] & TARGET_ACTIONS[code]``: the
# engine's rule (:func:`~loveletter_env.engine.legal_actions_holding`) split into what the two
# cards held allow and what the other players' states allow, read off the engine so that the
# rule is stated once. ``tests/core/test_action_tables.py`` checks that the split loses nothing; a
# change to the engine's rule reaches the kernels only once ``kernels.py`` compiles afresh.
#: Rows of ``TARGET_ACTIONS``: bit ``t - 1`` set when the other player at offset ``t`` can
#: be chosen, for most cards (low 3 bits) and for the King (high 3 bits).
TARGET_CODES = 1 << (2 * (MAX_SEATS - 1))


def engine_legal(a: int, b: int, code: int) -> np.ndarray:
    """The engine's legal actions holding cards ``a`` and ``b`` (1..8) in the target situation
    ``code`` (see ``TARGET_CODES``), as a bool row of ``NUM_ACTIONS``."""
    others, king = (code & 7) << 1, (code >> 3) << 1  # the engine keeps offset t at bit t
    row = np.zeros(NUM_ACTIONS, dtype=np.bool_)
    row[list(legal_actions_holding(a, b, others, king))] = True
    return row


def _action_tables() -> tuple[np.ndarray, np.ndarray]:
    values = range(1, 9)
    legal = np.array([[[engine_legal(a, b, code) for code in range(TARGET_CODES)] for b in values] for a in values])
    hands = np.zeros((9, 9, NUM_ACTIONS), dtype=np.bool_)
    hands[1:, 1:] = legal.any(axis=2)  # every action some target situation allows
    # A single card (value 0 is "no card") allows its own actions: those of a pair of it,
    # which the Countess rule, needing two different cards, leaves alone.
    cards = np.arange(1, 9)
    hands[0, 1:] = hands[1:, 0] = hands[cards, cards]
    return hands.reshape(81, NUM_ACTIONS), np.asarray(legal.any(axis=(0, 1)))


#: ``HAND_ACTIONS[9 * a + b]``: the actions a hand of cards ``a`` and ``b`` allows.
#: ``TARGET_ACTIONS[code]``: the actions whose target is allowed (see ``TARGET_CODES``).
HAND_ACTIONS, TARGET_ACTIONS = _action_tables()
#: The same two tables as bit sets: bit ``a`` set for action ``a`` (41 actions fit 64 bits).
HAND_ACTION_BITS = (HAND_ACTIONS.astype(np.uint64) << np.arange(NUM_ACTIONS, dtype=np.uint64)).sum(1, dtype=np.uint64)
TARGET_ACTION_BITS = (TARGET_ACTIONS.astype(np.uint64) << np.arange(NUM_ACTIONS, dtype=np.uint64)).sum(
    1, dtype=np.uint64
)
#: ``BYTE_BITS[b]``: the 8 bits of byte ``b`` as 8 bytes of 0/1, lowest bit first. Masks are
#: written a byte of bits at a time from it: 6 lookups of 8 bytes instead of 41 shifts.
BYTE_BITS = np.array([[(b >> k) & 1 for k in range(8)] for b in range(256)], dtype=np.uint8)
CARD_OF_ACTION = np.array(ACTION_CARD, dtype=np.int64)
OFFSET_OF_ACTION = np.array(ACTION_OFFSET, dtype=np.int64)
GUESS_OF_ACTION = np.array(ACTION_GUESS, dtype=np.int64)
#: Copies of each value, indexed by value (index 0 unused).
COPIES = np.array([0] + [CARD_COUNTS[v] for v in CARD_VALUES], dtype=np.int64)
#: The sorted deck in two halves of 8 (the deck construction of :func:`deal_shuffled`).
DECK_HALVES = np.array(FULL_DECK, dtype=np.uint8).reshape(2, DECK_SIZE // 2)
