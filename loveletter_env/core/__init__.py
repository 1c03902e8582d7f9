"""The compiled core: the rules of :mod:`loveletter_env.engine` as numba kernels over
per-game byte records, bit-identical to the reference engine.

The reference engine stays the readable statement of the rules; the core runs the
same rules at machine speed for the batched CPU engine, the AEC env and search.
``tests/core/test_core.py`` keeps the two in step. It imports nothing above the engine
(no torch, gymnasium or pettingzoo).

Records are described in :mod:`.layout`, kernels in :mod:`.kernels`; this module
converts between records and :class:`~loveletter_env.engine.GameState` objects and
creates records for a table and rule preset. Kernels compile on first use and are
cached on disk (numba's ``cache=True``) for later processes, keyed on the layout as well
as on their source (:mod:`.cache`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cards import DECK_SIZE
from ..engine import GameState
from ..rules import Rules, resolve_rules
from ..validation import check_num_players, shown
from . import cache, kernels, layout  # cache first: it keys the kernels' cache on the layout
from .layout import MAX_SEATS, RECORD_SIZE
from .record_view import RecordGameState, log_entry

__all__ = ["cache", "kernels", "layout", "RECORD_SIZE", "new_records", "record_from_state", "state_from_record"]


def new_records(num_players: np.ndarray | Sequence[int], rules: str | Rules) -> np.ndarray:
    """uint8 [N, RECORD_SIZE]: N games (table sizes ``num_players``, each 2..4) with no round
    dealt yet. A ladder rung refuses tables of 3 or 4 players; its records hold a deck of the
    rung (face-up cards sorted), which a seeded deal reorders.

    Raises:
        ValueError: ``num_players`` is not a sequence of integers 2..4, or ``rules`` is not
            a :class:`~loveletter_env.rules.Rules` (or preset name) these tables can play.
            The size is one byte of the record that the kernels (no bounds checks) trust:
            -1 read as 255 seats, whose deal wrote into the neighbouring records."""
    given = np.asarray(num_players)
    if given.ndim != 1 or (given.size and given.dtype.kind not in "iu"):
        raise ValueError(f"num_players must be a sequence of integers (a table size a game), got {shown(num_players)}")
    sizes = given.astype(np.int64)
    rules = resolve_rules(rules)
    for size in np.unique(sizes).tolist():
        rules.check_num_players(check_num_players(size))
    records = np.zeros((sizes.shape[0], RECORD_SIZE), dtype=np.uint8)
    records[:, layout.NUM_PLAYERS] = sizes
    records[:, layout.TOKENS_TO_WIN] = np.asarray(rules.tokens_to_win, dtype=np.int64)[sizes - 2]
    records[:, layout.RULE_DISCARD_SUM] = rules.discard_sum_tiebreak
    records[:, layout.RULE_KING_IGNORES_HANDMAID] = rules.king_ignores_handmaid
    records[:, layout.ROUND_OVER] = 1
    records[:, layout.OUT : layout.OUT + MAX_SEATS] = np.arange(MAX_SEATS) >= sizes[:, None]
    records[:, layout.FACE_UP] = [rules.face_up_count(size) for size in sizes.tolist()]
    if rules.in_play is not None:
        records[:, layout.FACE_UP_FIXED] = 1
        records[:, layout.DECK : layout.DECK + DECK_SIZE] = rules.deck_from_in_play(rules.in_play)
    return records


def record_from_state(state: GameState) -> np.ndarray:
    """A core record holding ``state`` (at any point of a game)."""
    n = state.num_players
    r = new_records([n], state.rules)[0]
    pad = [0] * (MAX_SEATS - n)
    r[layout.CURRENT] = state.current
    r[layout.DRAWN] = state.drawn
    r[layout.NEXT_CARD] = state.next_card
    r[layout.ROUND_OVER] = state.round_over
    r[layout.GAME_OVER] = state.game_over
    r[layout.SET_ASIDE_DRAWN] = state.set_aside_drawn
    r[layout.TURN] = state.turn
    r[layout.ROUND] = state.round

    def put(at: int, values: Sequence[int]) -> None:
        r[at : at + len(values)] = values

    put(layout.TOKENS, state.tokens + pad)
    put(layout.HANDS, state.hands + pad)
    put(layout.OUT, [int(o) for o in state.out] + [1] * len(pad))
    put(layout.PROTECTED, [int(p) for p in state.protected] + pad)
    put(layout.NUM_DISCARDS, [len(d) for d in state.discards] + pad)
    put(layout.RULED_OUT, [m >> 1 for m in state.ruled_out] + pad)
    put(layout.ROUND_WINNERS, [int(p in state.round_winners) for p in range(MAX_SEATS)])
    put(layout.GAME_WINNERS, [int(p in state.game_winners) for p in range(MAX_SEATS)])
    if state.deck:
        put(layout.DECK, state.deck)
    for observer in range(n):
        put(layout.KNOWN + observer * MAX_SEATS, state.known[observer])
        put(layout.SEEN + observer * MAX_SEATS, [int(s) for s in state.seen[observer]])
    for seat, pile in enumerate(state.discards):
        put(layout.DISCARDS + seat * DECK_SIZE, pile)
        for card in pile:
            r[layout.DISCARDED + seat * 8 + card - 1] += 1
    put(layout.DEALT, list(state.dealt) + pad)
    for turn, event in enumerate(state.history):
        put(layout.MOVE_LOG + turn * layout.MOVE_BYTES, log_entry(event))
    return r


def state_from_record(record: np.ndarray, rules: Rules) -> GameState:
    """An independent :class:`GameState` holding the game in ``record`` (its ``history`` read
    from the record's move log). ``rules`` is the preset the record was made with."""
    return RecordGameState(record, rules).clone()
