"""Observation vectors: a game state seen from one seat, and back into a readable view.

The vector is the player's *information state* (observation version 2): everything a
player at the table knows about the current round, and nothing more. At a table every
move is announced (who moved, the card, its target, the card a Guard named, hit or
miss), so besides the summary fields of version 1 the vector holds the *move record*:
every move of the round in order, what it made public, and what it showed the observer
in private, with the observer's own cards as it received them. Two histories of a round
give a seat the same vector exactly when a player in that seat could not tell them
apart (perfect recall), so an agent without memory can play the printed game.

The vector has one fixed shape for 2, 3 and 4 players. Seats in it are *relative* to
the observer: offset 0 is the observer, offset 1 the next seat in turn order, and so on;
offsets past the table are zero padding. Every entry is a small whole number in 0..16 (the
bound of the env's observation space, ``loveletter_env.aec.OBSERVATION_HIGH``): the AEC env
hands it out as float32, the batched engine stores it one byte per entry. The move record
has 12 slots (:data:`MAX_MOVES`), the most moves a round can hold, so it never overflows.

The layout is :data:`LAYOUT`, a list of named fields (the move record's slots are laid
out by :data:`MOVE_LAYOUT`); the docs' table is generated from the same lists
(``python -m loveletter_env.observation``). Version 1's fields come first, at the same
places and with the same meanings, so a network trained on version 1 reads the first
:data:`V1_OBSERVATION_SIZE` entries (:func:`observation_for_layout`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..cards import BARON, CARD_COUNTS, CARD_VALUES, DECK_SIZE, KING, PRIEST
from ..engine import MAX_PLAYERS, GameState, TurnEvent
from ..rules import MAX_TURNS, Rules
from ..validation import check_seat, is_int, shown

#: A seat never discards more than the 16 cards in play, so 16 slots can never overflow.
MAX_DISCARDS = DECK_SIZE
#: The most moves a round can hold: one per turn (:data:`~loveletter_env.rules.MAX_TURNS`).
MAX_MOVES = MAX_TURNS
OBSERVATION_VERSION = 2


class Field(NamedTuple):
    name: str
    shape: tuple[int, ...]
    description: str


#: The fields of version 1, the first entries of every later version: its networks read these alone.
V1_LAYOUT: tuple[Field, ...] = (
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
    Field("face_up", (8,), "face-up cards (2 players, or a ladder rung): count of each value"),
    Field("present", (MAX_PLAYERS,), "per seat offset: 1 if the seat exists at this table"),
    Field("tokens", (MAX_PLAYERS,), "per seat offset: tokens of affection"),
    Field("tokens_to_win", (1,), "tokens needed to win the game"),
    Field("num_players", (3,), "one-hot table size: 2, 3, 4"),
    Field("rules", (2,), "rule flags: discard-sum tie-break, King ignores Handmaid"),
    # Fields that only grow as cards are discarded.
    Field("discard_counts", (MAX_PLAYERS, 8), "per seat offset: count of each value discarded"),
    Field("discards", (MAX_PLAYERS, MAX_DISCARDS, 8), "per seat offset, per discard in order: one-hot value"),
)

#: One slot of the move record: one move, as the observer heard and saw it.
MOVE_LAYOUT: tuple[Field, ...] = (
    Field("actor", (MAX_PLAYERS,), "one-hot seat offset of the player who moved"),
    Field("card", (8,), "one-hot value of the card played"),
    Field("target", (MAX_PLAYERS,), "one-hot seat offset of the player chosen (zeros: no one)"),
    Field("guess", (8,), "Guard: one-hot value named, hit or miss"),
    Field("out", (MAX_PLAYERS,), "per seat offset: 1 if this move put that player out"),
    Field(
        "discarded",
        (8,),
        "one-hot value the move forced face up besides the card played (a Guard's hit, a Baron's loser, "
        "a Prince's target, the Princess player's other card)",
    ),
    Field("saw", (8,), "private: one-hot value the observer was shown (its Priest; either side of a Baron or King)"),
    Field("drew", (8,), "private: one-hot value the observer drew to begin this move, when it moved"),
    Field("replacement", (8,), "private: one-hot value the observer drew after its Prince discard"),
)


def _offsets(fields: tuple[Field, ...]) -> dict[str, slice]:
    """Each field's place when ``fields`` are laid end to end."""
    out, start = {}, 0
    for f in fields:
        size = int(np.prod(f.shape))
        out[f.name] = slice(start, start + size)
        start += size
    return out


#: Each slot field's place within a slot of the move record.
MOVE_SLICES: dict[str, slice] = _offsets(MOVE_LAYOUT)
MOVE_SIZE: int = MOVE_SLICES[MOVE_LAYOUT[-1].name].stop

#: The layout: version 1's fields, then the ones version 2 added after them.
LAYOUT: tuple[Field, ...] = V1_LAYOUT + (
    Field("dealt", (8,), "private: one-hot value of the card the observer was dealt this round"),
    Field("drawn", (8,), "private: one-hot value of the card the observer just drew (zeros unless acting)"),
    Field("moves", (MAX_MOVES, MOVE_SIZE), "the move record: one slot per move in order (see the slot table)"),
)


SLICES: dict[str, slice] = _offsets(LAYOUT)
OBSERVATION_SIZE: int = max(s.stop for s in SLICES.values())
V1_OBSERVATION_SIZE: int = SLICES[V1_LAYOUT[-1].name].stop
#: Observation layouts by version: the entries a network of that version reads.
LAYOUT_SIZES: dict[int, int] = {1: V1_OBSERVATION_SIZE, 2: OBSERVATION_SIZE}

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
_DEALT = SLICES["dealt"].start - 1
_DRAWN = SLICES["drawn"].start - 1
_MOVES = SLICES["moves"].start
_M_ACTOR = MOVE_SLICES["actor"].start
_M_CARD = MOVE_SLICES["card"].start - 1
_M_TARGET = MOVE_SLICES["target"].start
_M_GUESS = MOVE_SLICES["guess"].start - 1
_M_OUT = MOVE_SLICES["out"].start
_M_DISCARDED = MOVE_SLICES["discarded"].start - 1
_M_SAW = MOVE_SLICES["saw"].start - 1
_M_DREW = MOVE_SLICES["drew"].start - 1
_M_REPLACEMENT = MOVE_SLICES["replacement"].start - 1


@dataclass(frozen=True)
class MoveView:
    """One move of the round as the observer knows it. Seats are offsets from the observer;
    cards are values 1..8, 0 where the observer was not shown one (or there was none)."""

    actor: int
    card: int
    target: int | None
    guess: int
    out: tuple[int, ...]
    discarded: int
    saw: int
    drew: int
    replacement: int


def move_view(event: TurnEvent, observer: int, num_players: int) -> MoveView:
    """One move as ``observer`` knows it: the one statement of what a seat hears and sees of a move.

    Public: who moved, the card, its target, a Guard's named card, who went out and the
    card forced face up. Private: what the observer was shown (its own Priest, either side
    of a Baron or a King), the card it drew to begin its own move, and the card it drew
    after a Prince made it discard.
    """
    n = num_players
    actor, target, card = event.player, event.target, event.card
    saw = 0
    if target >= 0 and target != actor:
        if observer == actor and card in (PRIEST, BARON, KING):
            saw = event.target_card
        elif observer == target and card in (BARON, KING):
            saw = event.actor_card
    return MoveView(
        actor=(actor - observer) % n,
        card=card,
        target=None if target < 0 else (target - observer) % n,
        guess=event.guess,
        out=tuple(sorted((p - observer) % n for p in event.eliminated)),
        discarded=event.discarded,
        saw=saw,
        drew=event.drawn if observer == actor else 0,
        replacement=event.replacement if observer == target else 0,
    )


def event_of_move(move: MoveView) -> TurnEvent:
    """A :class:`TurnEvent` that seat 0 knows as ``move`` (seat offsets become seats).

    Parts seat 0 was not shown are 0; they are not part of its observation, so a state
    whose history holds these events shows seat 0 the same move record (search builds
    such states from an observation).
    """
    actor, target = move.actor, -1 if move.target is None else move.target
    actor_card = target_card = 0
    if move.saw:
        if actor == 0:
            target_card = move.saw
        else:
            actor_card = move.saw
    return TurnEvent(
        round=1,
        player=actor,
        card=move.card,
        target=target,
        guess=move.guess,
        actor_card=actor_card,
        target_card=target_card,
        eliminated=move.out,
        drawn=move.drew,
        discarded=move.discarded,
        replacement=move.replacement,
    )


def move_entries(move: MoveView) -> list[int]:
    """The positions set to 1 within one slot of the move record for ``move``."""
    entries = [_M_ACTOR + move.actor, _M_CARD + move.card]
    if move.target is not None:
        entries.append(_M_TARGET + move.target)
    entries.extend(_M_OUT + k for k in move.out)
    for base, card in (
        (_M_GUESS, move.guess),
        (_M_DISCARDED, move.discarded),
        (_M_SAW, move.saw),
        (_M_DREW, move.drew),
        (_M_REPLACEMENT, move.replacement),
    ):
        if card:
            entries.append(base + card)
    return entries


def encode_observation(state: GameState, observer: int) -> np.ndarray:
    """The observation vector of seat ``observer`` (float32, shape ``(OBSERVATION_SIZE,)``).

    It depends only on what ``observer`` has seen: never another player's hand, the
    set-aside card or the order of the deck. A seat outside the table raises ``ValueError``.
    """
    observer = check_seat("observer", observer, state.num_players)  # -1 would read as the last seat
    n = state.num_players
    obs = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    unseen = [0] + [CARD_COUNTS[v] for v in CARD_VALUES]  # indexed by value
    idx: list[int] = []  # flat positions that get +1 (repeats accumulate)

    for card in state.hand_of(observer):
        idx.append(_HAND + card)
        unseen[card] -= 1
    for card in state.face_up:  # 2 players, or a rung at any table size
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
    if state.dealt[observer]:
        idx.append(_DEALT + state.dealt[observer])
    if observer == state.current and state.drawn:
        idx.append(_DRAWN + state.drawn)
    for slot, event in enumerate(state.history):
        base = _MOVES + slot * MOVE_SIZE
        idx.extend(base + i for i in move_entries(move_view(event, observer, n)))

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
    dealt: int = 0
    drawn: int = 0
    moves: tuple[MoveView, ...] = ()

    @property
    def my_turn(self) -> bool:
        return self.to_act == 0

    def in_round(self, offset: int) -> bool:
        """Whether seat ``offset`` is still in the round."""
        return offset < self.num_players and not self.out[offset]

    def rules(self, name: str = "observed", in_play: tuple[int, ...] | None = None) -> Rules:
        """Rules that play as the ones this view shows (every table size needing
        ``tokens_to_win``); ``in_play`` as a ladder rung's (played at this view's table), which
        a view does not show."""
        flags = tuple(getattr(self, field) for field in _VIEW_RULE_FIELDS)
        players = 2 if in_play is None else self.num_players
        if in_play is not None and type(in_play).__hash__ is None:
            # A list or an array: Rules takes any sequence, but the cache needs a hashable key.
            in_play = tuple(in_play)
        return _observed_rules(name, self.tokens_to_win, in_play, players, flags)


@functools.lru_cache(maxsize=256)
def _observed_rules(
    name: str, tokens_to_win: int, in_play: tuple[int, ...] | None, players: int, flags: tuple[bool, ...]
) -> Rules:
    """:meth:`ObservationView.rules`, built once for each set of arguments: building and
    checking a :class:`Rules` costs more than a bot's legal moves, which ask for it at every
    decision (``Rules`` is frozen, so one object serves every caller)."""
    options = dict(zip(_VIEW_RULE_FIELDS, flags, strict=True))
    return Rules(name=name, tokens_to_win=(tokens_to_win,) * 3, in_play=in_play, rung_players=players, **options)


#: The view's fields for the rule options, in the order of :func:`rule_flags`.
_VIEW_RULE_FIELDS = ("discard_sum_tiebreak", "king_ignores_handmaid")


#: Upper bound of any observation entry (counts, tokens, deck size are all below it).
OBSERVATION_HIGH = 16.0


def _values(counts: np.ndarray) -> tuple[int, ...]:
    return tuple(v for v in CARD_VALUES for _ in range(int(counts[v - 1])))


def _one_hot(row: np.ndarray) -> int:
    """The value (1..8) a one-hot card row holds, 0 for an empty row."""
    return int(np.argmax(row)) + 1 if row.any() else 0


def _offset(row: np.ndarray) -> int | None:
    return int(np.argmax(row)) if row.any() else None


def _decode_move(slot: np.ndarray, num_players: int, number: int) -> MoveView:
    """Move ``number`` of the record, refused (``ValueError``) unless it names a player who
    moved and only seats of the table: a bot would index its seats by them."""
    f = {name: slot[s] for name, s in MOVE_SLICES.items()}
    actor = _offset(f["actor"])
    seats = [k for name in ("actor", "target", "out") for k in np.flatnonzero(f[name]).tolist()]
    if actor is None or max(seats) >= num_players:
        problem = "names no player who moved" if actor is None else f"names seat offset {max(seats)}"
        raise ValueError(f"move {number} of the observation {problem}, at a {num_players}-player table")
    return MoveView(
        actor=actor,
        card=_one_hot(f["card"]),
        target=_offset(f["target"]),
        guess=_one_hot(f["guess"]),
        out=tuple(int(i) for i in np.flatnonzero(f["out"])),
        discarded=_one_hot(f["discarded"]),
        saw=_one_hot(f["saw"]),
        drew=_one_hot(f["drew"]),
        replacement=_one_hot(f["replacement"]),
    )


def layout_size(version: int) -> int:
    """The entries of observation ``version``; ``ValueError`` naming the known ones for any
    other, and for anything but an integer (``True`` and ``1.0`` equal 1, and are no version)."""
    if not is_int(version) or version not in LAYOUT_SIZES:
        raise ValueError(
            f"unknown observation version {shown(version)}; the known versions are the integers {sorted(LAYOUT_SIZES)}"
        )
    return LAYOUT_SIZES[int(version)]


def layout_name(size: int) -> str:
    """How an observation of ``size`` entries is named in messages: its version, or not one."""
    versions = [v for v, n in LAYOUT_SIZES.items() if n == size]
    return f"observation version {versions[0]} ({size} entries)" if versions else f"{size} entries (no known layout)"


def check_observation_size(size: int, version: int = OBSERVATION_VERSION) -> None:
    """Raise ``ValueError`` naming both layouts unless ``size`` is ``version``'s length.

    An observation of one layout is never silently reshaped into another.
    """
    expected = layout_size(version)
    if size != expected:
        raise ValueError(f"expected observation version {version} ({expected} entries), got {layout_name(size)}")


def observation_for_layout(observation, version: int):
    """The entries of a current observation that a network trained on layout ``version`` reads.

    Version 1's fields are the first :data:`V1_OBSERVATION_SIZE` entries of version 2, at
    the same places, so a version-1 network reads a prefix (a view, not a copy). Works on
    numpy arrays and torch tensors, batched or not; the last axis must be a current observation.
    """
    if len(observation.shape) == 0:  # a single number has no last axis: shape[-1] would raise IndexError
        raise ValueError(
            f"expected observation version {OBSERVATION_VERSION} ({OBSERVATION_SIZE} entries) on the last axis, "
            f"got shape {tuple(observation.shape)}"
        )
    check_observation_size(observation.shape[-1])
    return observation[..., : layout_size(version)]


def check_observation_values(observations: np.ndarray) -> None:
    """Refuse, with ``ValueError`` naming the first, what no observation holds: one vector
    ``[OBSERVATION_SIZE]`` or a batch ``[B, OBSERVATION_SIZE]`` (its row named too) of
    another kind than numbers (a bool vector has lost its counts), an entry that is no whole
    number in 0..:data:`OBSERVATION_HIGH`, or no table size (a blank vector, which would
    read as a 2-player table). Any other shape is refused first, by name: the checks below
    index the last axis as an observation's entries and name a row of the first."""
    if observations.ndim not in (1, 2) or observations.shape[-1] != OBSERVATION_SIZE:
        raise ValueError(
            f"expected one observation ({OBSERVATION_SIZE},) or a batch (B, {OBSERVATION_SIZE}), "
            f"got shape {observations.shape}"
        )
    of = "of the observation" if observations.ndim == 1 else "of row {} of the observations"
    if observations.dtype.kind not in "iuf":
        # A bool vector is a lossy cast: a deck of 9 cards or 3 tokens would read as 1.
        kind = "an observation vector holds" if observations.ndim == 1 else "observations hold"
        raise ValueError(f"{kind} numbers (counts up to {OBSERVATION_HIGH:g}), got dtype {observations.dtype}")
    # A count of 1e7 would make a hand of ten million cards (1e30: a hang), not an error.
    if observations.dtype == np.uint8:  # the batched env's bytes, whole and not negative: one reduction
        bad = None if observations.max(initial=0) <= OBSERVATION_HIGH else observations > OBSERVATION_HIGH
    else:
        bad = ~((observations >= 0) & (observations <= OBSERVATION_HIGH) & (observations == np.round(observations)))
    if bad is not None and bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise ValueError(
            f"entry {index[-1]} {of.format(*index[:-1])} is {float(observations[index])!r}: every entry is a whole "
            f"number in 0..{OBSERVATION_HIGH:g}"
        )
    where = SLICES["num_players"]
    table = observations[..., where]
    blank = np.argwhere(np.atleast_1d(table.sum(-1) != 1))  # whole and not negative: exactly one 1
    if blank.size:
        row = tuple(blank[0][: observations.ndim - 1])
        raise ValueError(
            f"entries {where.start}..{where.stop - 1} {of.format(*row)} (num_players, one-hot 2, 3, 4) are "
            f"{[int(x) for x in table[row]]}: every observation has exactly one 1 there"
        )


def decode_observation(vector) -> ObservationView:
    """Turn an observation vector (or the env's observation dict) into an :class:`ObservationView`.

    Raises ``ValueError`` for a vector of another shape or dtype (a bool vector has lost its
    counts), with an entry that no observation holds (one that is no whole number in
    0..:data:`OBSERVATION_HIGH`), naming the first, with no table size (a blank vector), or
    naming a seat outside the table (the player to act, or one in a move).
    """
    if isinstance(vector, dict):
        if "observation" not in vector:
            raise ValueError(f"an observation dict holds 'observation' (and 'action_mask'), got keys {list(vector)}")
        vector = vector["observation"]
    v = np.asarray(vector)
    if v.ndim != 1:
        raise ValueError(f"an observation vector has shape ({OBSERVATION_SIZE},), got {v.shape}")
    check_observation_size(v.shape[0])
    check_observation_values(v)
    f = {name: v[s].reshape(field.shape) for field, (name, s) in zip(LAYOUT, SLICES.items())}
    n = int(np.argmax(f["num_players"])) + 2
    discards = tuple(tuple(int(np.argmax(row)) + 1 for row in f["discards"][k] if row.any()) for k in range(n))
    known = (0,) + tuple(
        int(np.argmax(f["known_card"][k - 1])) + 1 if f["known_card"][k - 1].any() else 0 for k in range(1, n)
    )
    ruled: tuple[frozenset[int], ...] = (frozenset(),) + tuple(
        frozenset(int(i) + 1 for i in np.flatnonzero(f["ruled_out"][k - 1])) for k in range(1, n)
    )
    # A bot compares to_act with its seats: like a move's, it must name one seat of the table
    # (argmax would read a seat beyond it, or hide a second 1).
    acting = np.flatnonzero(f["to_act"]).tolist()
    if len(acting) > 1:
        raise ValueError(f"to_act of the observation names seat offsets {acting}: at most one player is to act")
    if acting and acting[0] >= n:
        raise ValueError(f"to_act of the observation names seat offset {acting[0]}, at a {n}-player table")
    to_act = acting[0] if acting else None
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
        dealt=_one_hot(f["dealt"]),
        drawn=_one_hot(f["drawn"]),
        moves=tuple(_decode_move(slot, n, i) for i, slot in enumerate(f["moves"]) if slot.any()),
    )


def layout_table() -> str:
    """The observation layout as Markdown tables (for the docs): the fields, then one move-record slot."""
    rows = ["| field | indices | shape | meaning |", "| --- | --- | --- | --- |"]
    for field in LAYOUT:
        s = SLICES[field.name]
        version = 1 if s.stop <= V1_OBSERVATION_SIZE else 2
        rows.append(f"| `{field.name}` | {s.start}–{s.stop - 1} | {field.shape} | {field.description} (v{version}) |")
    start = SLICES["moves"].start
    rows += ["", f"One slot of `moves` ({MOVE_SIZE} entries; slot `k` starts at {start} + {MOVE_SIZE}·k):"]
    rows += ["", "| slot field | offsets | shape | meaning |", "| --- | --- | --- | --- |"]
    for field in MOVE_LAYOUT:
        s = MOVE_SLICES[field.name]
        rows.append(f"| `{field.name}` | {s.start}–{s.stop - 1} | {field.shape} | {field.description} |")
    rows.append(
        f"\nTotal size: {OBSERVATION_SIZE} (`OBSERVATION_SIZE`), version {OBSERVATION_VERSION}; "
        f"version 1 is the first {V1_OBSERVATION_SIZE} entries (`V1_OBSERVATION_SIZE`)."
    )
    return "\n".join(rows)
