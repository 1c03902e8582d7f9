"""A live, read-only :class:`~loveletter_env.engine.GameState` over a core record.

Environments that run on the core keep their game in a record, yet users, renderers and
replay recorders read ``env.game`` as a ``GameState`` and may hold on to it across steps.
:class:`RecordGameState` is that object: every attribute reads the record when asked, so
it always shows the current game, this round's moves included (``history``, read from the
record's move log). It cannot be changed (step the env instead), and
:meth:`~GameState.clone` gives an ordinary, independent ``GameState``.
"""

from __future__ import annotations

import numpy as np

from ..actions import NUM_ACTIONS
from ..cards import DECK_SIZE
from ..engine import GameState, TurnEvent
from ..rules import Rules
from ..validation import shown
from . import kernels, layout
from .layout import MAX_SEATS, RECORD_SIZE


def log_entry(event: TurnEvent) -> list[int]:
    """The move log's bytes for one turn (:data:`.layout.MOVE_BYTES`, fields ``M_*``)."""
    entry = [0] * layout.MOVE_BYTES
    entry[layout.M_ACTOR] = event.player
    entry[layout.M_CARD] = event.card
    entry[layout.M_TARGET] = event.target + 1
    entry[layout.M_GUESS] = event.guess
    entry[layout.M_ACTOR_CARD] = event.actor_card
    entry[layout.M_TARGET_CARD] = event.target_card
    entry[layout.M_OUT] = sum(1 << p for p in event.eliminated)
    entry[layout.M_DISCARDED] = event.discarded
    entry[layout.M_DRAWN] = event.drawn
    entry[layout.M_REPLACEMENT] = event.replacement
    return entry


def event_of_entry(entry: np.ndarray, round_number: int) -> TurnEvent:
    """The :class:`~loveletter_env.engine.TurnEvent` a move-log entry holds (inverse of :func:`log_entry`)."""
    e = [int(x) for x in entry]
    return TurnEvent(
        round=round_number,
        player=e[layout.M_ACTOR],
        card=e[layout.M_CARD],
        target=e[layout.M_TARGET] - 1,
        guess=e[layout.M_GUESS],
        actor_card=e[layout.M_ACTOR_CARD],
        target_card=e[layout.M_TARGET_CARD],
        eliminated=tuple(p for p in range(MAX_SEATS) if e[layout.M_OUT] >> p & 1),
        drawn=e[layout.M_DRAWN],
        discarded=e[layout.M_DISCARDED],
        replacement=e[layout.M_REPLACEMENT],
    )


def check_record(record: object) -> np.ndarray:
    """``record`` if it is one core record (uint8 [RECORD_SIZE], 2 to 4 players), else a
    ``ValueError`` naming what is wrong.

    Records carry no layout version: their size is what tells a record of another layout
    apart. Read as it stands, a short record gave a game with a truncated deck and no dealt
    cards, and the kernels (compiled without bounds checks) read past its end."""
    if not isinstance(record, np.ndarray):
        raise ValueError(f"a core record must be a numpy array of uint8 [{RECORD_SIZE}], got {shown(record)}")
    if record.dtype != np.uint8:
        raise ValueError(f"a core record must be of dtype uint8, got {record.dtype}")
    if record.shape != (RECORD_SIZE,):
        raise ValueError(
            f"a core record must be one record of {RECORD_SIZE} bytes (uint8 [{RECORD_SIZE}]), got shape "
            f"{record.shape}: a batch (pass one row) or a record of another layout (make it again with this version)"
        )
    players = int(record[layout.NUM_PLAYERS])
    if not 2 <= players <= MAX_SEATS:
        raise ValueError(f"a core record must hold a game of 2 to {MAX_SEATS} players, got {players} players")
    return record


def _seats(at: int):
    return property(lambda self: [int(x) for x in self._record[at : at + self.num_players]])


def _flags(at: int):
    return property(lambda self: [bool(x) for x in self._record[at : at + self.num_players]])


def _who(at: int):
    return property(lambda self: tuple(p for p in range(self.num_players) if self._record[at + p]))


def _scalar(at: int, kind=int):
    return property(lambda self: kind(self._record[at]))


class RecordGameState(GameState):
    """The game held in ``record`` (uint8 [RECORD_SIZE]), read live, as a ``GameState``."""

    __slots__ = ("_record",)
    _record: np.ndarray

    def __init__(self, record: np.ndarray, rules: Rules):
        check_record(record)
        object.__setattr__(self, "_record", record)
        object.__setattr__(self, "num_players", int(record[layout.NUM_PLAYERS]))
        object.__setattr__(self, "rules", rules)

    def __reduce__(self):
        # Rebuilt around the (copied) record, so a copied or pickled env keeps a live view of its own record.
        return (type(self), (self._record, self.rules))

    def __setattr__(self, name: str, value) -> None:
        if name == "legal":
            return  # the engine caches legal actions here; the view computes them when asked
        raise AttributeError(f"{type(self).__name__} is a read-only view of the env's game; step the env instead")

    tokens = _seats(layout.TOKENS)
    round = _scalar(layout.ROUND)
    next_card = _scalar(layout.NEXT_CARD)
    set_aside_drawn = _scalar(layout.SET_ASIDE_DRAWN, bool)
    hands = _seats(layout.HANDS)
    dealt = property(lambda self: tuple(int(x) for x in self._record[layout.DEALT : layout.DEALT + self.num_players]))
    drawn = _scalar(layout.DRAWN)
    current = _scalar(layout.CURRENT)
    out = _flags(layout.OUT)
    protected = _flags(layout.PROTECTED)
    turn = _scalar(layout.TURN)
    round_over = _scalar(layout.ROUND_OVER, bool)
    round_winners = _who(layout.ROUND_WINNERS)
    game_over = _scalar(layout.GAME_OVER, bool)
    game_winners = _who(layout.GAME_WINNERS)

    @property
    def deck(self) -> tuple[int, ...]:
        r = self._record
        return tuple(int(x) for x in r[layout.DECK : layout.DECK + DECK_SIZE]) if r[layout.ROUND] else ()

    def _rows(self, at: int, stride: int, kind=int) -> list[list]:
        r, n = self._record, self.num_players
        return [[kind(x) for x in r[at + i * stride : at + i * stride + n]] for i in range(n)]

    @property
    def discards(self) -> list[list[int]]:
        r = self._record
        starts = [layout.DISCARDS + p * DECK_SIZE for p in range(self.num_players)]
        return [[int(x) for x in r[at : at + r[layout.NUM_DISCARDS + p]]] for p, at in enumerate(starts)]

    @property
    def known(self) -> list[list[int]]:
        return self._rows(layout.KNOWN, MAX_SEATS)

    @property
    def seen(self) -> list[list[bool]]:
        return self._rows(layout.SEEN, MAX_SEATS, bool)

    @property
    def ruled_out(self) -> list[int]:
        # The reference keeps value v at bit v; records at bit v - 1.
        return [int(x) << 1 for x in self._record[layout.RULED_OUT : layout.RULED_OUT + self.num_players]]

    @property
    def history(self) -> list[TurnEvent]:
        r = self._record
        log = r[layout.MOVE_LOG : layout.MOVE_LOG + int(r[layout.TURN]) * layout.MOVE_BYTES]
        return [event_of_entry(entry, int(r[layout.ROUND])) for entry in log.reshape(-1, layout.MOVE_BYTES)]

    @property
    def legal(self) -> tuple[int, ...]:
        """The legal actions (what :func:`~loveletter_env.engine.legal_actions` returns)."""
        bits = int(kernels.legal_bits(self._record))
        return tuple(a for a in range(NUM_ACTIONS) if bits >> a & 1)
