"""Observation vectors: a game state seen from one seat, and back into a readable view.

The vector has one fixed shape for 2, 3 and 4 players. Seats in it are *relative* to
the observer: offset 0 is the observer, offset 1 the next seat in turn order, and so on;
offsets past the table are zero padding. Every entry is a small whole number stored as
float32, so the batched engine can reproduce it bit for bit with array operations.

The layout is :data:`LAYOUT`, a list of named fields; the README's table is generated
from the same list (``python -m loveletter_env.observation``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .cards import CARD_COUNTS, CARD_VALUES, DECK_SIZE
from .engine import MAX_PLAYERS, GameState
from .rules import Rules

#: A seat never discards more than the 16 cards in play, so 16 slots can never overflow.
MAX_DISCARDS = DECK_SIZE
OBSERVATION_VERSION = 1


class Field(NamedTuple):
    name: str
    shape: tuple[int, ...]
    description: str


LAYOUT: tuple[Field, ...] = (
    # Fields that change from turn to turn (kept together so they can be refreshed as one block).
    Field("hand", (8,), "own hand: count of each value 1..8 (two cards while acting)"),
    Field(
        "known_card", (MAX_PLAYERS - 1, 8), "per other seat (offsets 1..3): one-hot card the observer knows they hold"
    ),
    Field("ruled_out", (MAX_PLAYERS - 1, 8), "per other seat: 1 for each value a failed Guard proved they lack"),
    Field("seen_by", (MAX_PLAYERS - 1,), "per other seat: 1 if the observer can tell that player knows its card"),
    Field("out", (MAX_PLAYERS,), "per seat offset: 1 if out of the round"),
    Field("protected", (MAX_PLAYERS,), "per seat offset: 1 if protected by a Handmaid"),
    Field("to_act", (MAX_PLAYERS,), "one-hot seat offset of the player to act (zeros once the round is over)"),
    Field("deck_size", (1,), "cards left in the draw pile"),
    Field("unseen", (8,), "per value: copies whose place the observer cannot name (deck, set-aside, unknown hands)"),
    # Fields fixed for a whole round.
    Field("face_up", (8,), "2-player face-up cards: count of each value"),
    Field("present", (MAX_PLAYERS,), "per seat offset: 1 if the seat exists at this table"),
    Field("tokens", (MAX_PLAYERS,), "per seat offset: tokens of affection"),
    Field("tokens_to_win", (1,), "tokens needed to win the game"),
    Field("num_players", (3,), "one-hot table size: 2, 3, 4"),
    Field("rules", (2,), "rule flags: discard-sum tie-break, King ignores Handmaid"),
    # Fields that only grow as cards are discarded.
    Field("discard_counts", (MAX_PLAYERS, 8), "per seat offset: count of each value discarded"),
    Field("discards", (MAX_PLAYERS, MAX_DISCARDS, 8), "per seat offset, per discard in order: one-hot value"),
)


def _offsets() -> dict[str, slice]:
    out, start = {}, 0
    for f in LAYOUT:
        size = int(np.prod(f.shape))
        out[f.name] = slice(start, start + size)
        start += size
    return out


SLICES: dict[str, slice] = _offsets()
OBSERVATION_SIZE: int = max(s.stop for s in SLICES.values())

# Start index of each field, used to compute flat indices on the hot path.
_HAND = SLICES["hand"].start - 1  # value v (1..8) sits at _HAND + v
_DISC = SLICES["discards"].start - 1
_DCNT = SLICES["discard_counts"].start - 1
_FACE = SLICES["face_up"].start - 1
_KNOWN = SLICES["known_card"].start - 1
_RULED = SLICES["ruled_out"].start - 1
_SEEN = SLICES["seen_by"].start
_PRESENT = SLICES["present"].start
_OUT = SLICES["out"].start
_PROT = SLICES["protected"].start
_TOKENS = SLICES["tokens"].start
_TO_ACT = SLICES["to_act"].start
_DECK = SLICES["deck_size"].start
_TARGET = SLICES["tokens_to_win"].start
_NPLAYERS = SLICES["num_players"].start
_RULES = SLICES["rules"].start
_UNSEEN = SLICES["unseen"].start - 1


def encode_observation(state: GameState, observer: int) -> np.ndarray:
    """The observation vector of seat ``observer`` (float32, shape ``(OBSERVATION_SIZE,)``).

    It depends only on what ``observer`` has seen: never another player's hand, the
    set-aside card or the order of the deck.
    """
    n = state.num_players
    obs = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    unseen = [0] + [CARD_COUNTS[v] for v in CARD_VALUES]  # indexed by value
    idx: list[int] = []  # flat positions that get +1 (repeats accumulate)

    for card in state.hand_of(observer):
        idx.append(_HAND + card)
        unseen[card] -= 1
    if n == 2:
        for card in state.face_up:
            idx.append(_FACE + card)
            unseen[card] -= 1

    known_row = state.known[observer]
    for k in range(n):
        seat = (observer + k) % n
        base = _DISC + k * MAX_DISCARDS * 8
        for j, card in enumerate(state.discards[seat]):
            idx.append(base + j * 8 + card)
            idx.append(_DCNT + k * 8 + card)
            unseen[card] -= 1
        if k:
            card = known_row[seat]
            if card:
                idx.append(_KNOWN + (k - 1) * 8 + card)
                unseen[card] -= 1
            mask = state.ruled_out[seat]
            if mask:
                idx.extend(_RULED + (k - 1) * 8 + v for v in CARD_VALUES if mask >> v & 1)
            if state.seen[seat][observer]:
                idx.append(_SEEN + k - 1)
        idx.append(_PRESENT + k)
        if state.out[seat]:
            idx.append(_OUT + k)
        if state.protected[seat]:
            idx.append(_PROT + k)
    if not state.round_over:
        idx.append(_TO_ACT + (state.current - observer) % n)
    idx.append(_NPLAYERS + n - 2)
    idx.extend(_RULES + i for i, flag in enumerate(rule_flags(state.rules)) if flag)

    np.add.at(obs, idx, 1.0)
    for k in range(n):
        obs[_TOKENS + k] = state.tokens[(observer + k) % n]
    obs[_DECK] = state.deck_remaining
    obs[_TARGET] = state.tokens_to_win
    obs[_UNSEEN + 1 : _UNSEEN + 9] = unseen[1:]
    return obs


def rule_flags(rules: Rules) -> tuple[bool, bool]:
    """The rule options an observation's ``rules`` field shows, in its order."""
    return (rules.discard_sum_tiebreak, rules.king_ignores_handmaid)


def view_rule_fields(rules: Rules) -> dict[str, bool]:
    """The :class:`ObservationView` fields that show ``rules``' options."""
    return dict(zip(_VIEW_RULE_FIELDS, rule_flags(rules)))


@dataclass(frozen=True)
class ObservationView:
    """A readable, typed view of an observation vector. Seats are offsets from the
    observer (0 = the observer); tuples indexed by offset have ``num_players`` entries.

    ``known_cards[k]`` is the card the observer knows offset ``k`` holds (0 = unknown,
    and always 0 for ``k = 0``); ``ruled_out[k]`` the values a failed Guard proved
    offset ``k`` does not hold; ``seen_by[k]`` whether offset ``k`` knows the observer's card.
    """

    num_players: int
    hand: tuple[int, ...]
    discards: tuple[tuple[int, ...], ...]
    face_up: tuple[int, ...]
    known_cards: tuple[int, ...]
    ruled_out: tuple[frozenset, ...]
    seen_by: tuple[bool, ...]
    out: tuple[bool, ...]
    protected: tuple[bool, ...]
    tokens: tuple[int, ...]
    to_act: int | None
    deck_size: int
    tokens_to_win: int
    discard_sum_tiebreak: bool
    king_ignores_handmaid: bool
    unseen: dict[int, int]

    @property
    def my_turn(self) -> bool:
        return self.to_act == 0

    def in_round(self, offset: int) -> bool:
        """Whether seat ``offset`` is still in the round."""
        return offset < self.num_players and not self.out[offset]

    def rules(self, name: str = "observed", in_play: tuple[int, ...] | None = None) -> Rules:
        """Rules that play as the ones this view shows (every table size needing
        ``tokens_to_win``); ``in_play`` as a ladder rung's, which a view does not show."""
        options = {field: getattr(self, field) for field in _VIEW_RULE_FIELDS}
        return Rules(name=name, tokens_to_win=(self.tokens_to_win,) * 3, in_play=in_play, **options)


#: The view's fields for the rule options, in the order of :func:`rule_flags`.
_VIEW_RULE_FIELDS = ("discard_sum_tiebreak", "king_ignores_handmaid")


def _values(counts: np.ndarray) -> tuple[int, ...]:
    return tuple(v for v in CARD_VALUES for _ in range(int(counts[v - 1])))


def decode_observation(vector) -> ObservationView:
    """Turn an observation vector (or the env's observation dict) into an :class:`ObservationView`."""
    if isinstance(vector, dict):
        vector = vector["observation"]
    v = np.asarray(vector)
    if v.shape != (OBSERVATION_SIZE,):
        raise ValueError(f"an observation vector has shape ({OBSERVATION_SIZE},), got {v.shape}")
    f = {name: v[s].reshape(field.shape) for field, (name, s) in zip(LAYOUT, SLICES.items())}
    n = int(np.argmax(f["num_players"])) + 2
    discards = tuple(tuple(int(np.argmax(row)) + 1 for row in f["discards"][k] if row.any()) for k in range(n))
    known = (0,) + tuple(
        int(np.argmax(f["known_card"][k - 1])) + 1 if f["known_card"][k - 1].any() else 0 for k in range(1, n)
    )
    ruled: tuple[frozenset[int], ...] = (frozenset(),) + tuple(
        frozenset(int(i) + 1 for i in np.flatnonzero(f["ruled_out"][k - 1])) for k in range(1, n)
    )
    to_act = int(np.argmax(f["to_act"])) if f["to_act"].any() else None
    return ObservationView(
        num_players=n,
        hand=_values(f["hand"]),
        discards=discards,
        face_up=_values(f["face_up"]),
        known_cards=known,
        ruled_out=ruled,
        seen_by=(False,) + tuple(bool(x) for x in f["seen_by"][: n - 1]),
        out=tuple(bool(x) for x in f["out"][:n]),
        protected=tuple(bool(x) for x in f["protected"][:n]),
        tokens=tuple(int(x) for x in f["tokens"][:n]),
        to_act=to_act,
        deck_size=int(f["deck_size"][0]),
        tokens_to_win=int(f["tokens_to_win"][0]),
        **dict(zip(_VIEW_RULE_FIELDS, (bool(x) for x in f["rules"]))),
        unseen={val: int(f["unseen"][val - 1]) for val in CARD_VALUES},
    )


def layout_table() -> str:
    """The observation layout as a Markdown table (for the README)."""
    rows = ["| field | indices | shape | meaning |", "| --- | --- | --- | --- |"]
    for field in LAYOUT:
        s = SLICES[field.name]
        rows.append(f"| `{field.name}` | {s.start}–{s.stop - 1} | {field.shape} | {field.description} |")
    rows.append(f"\nTotal size: {OBSERVATION_SIZE} (`OBSERVATION_SIZE`), version {OBSERVATION_VERSION}.")
    return "\n".join(rows)


if __name__ == "__main__":
    print(layout_table())
