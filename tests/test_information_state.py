"""The observation is the player's information state: two histories of a round give a seat
the same observation vector exactly when a player in that seat could not tell them apart.

The vector is checked against an independent partition of histories, :func:`table_key`: what
a player at the table remembers of the round. On the whole ``mini6`` and ``mini7`` game trees
every decision node is checked for both seats; at 3 and 4 players, many random rounds.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
try:
    import pyspiel
except ImportError:
    reason = 'needs the openspiel extra: pip install "loveletter-env[openspiel]"'
    if IN_CI:
        pytest.fail(f"CI must run the OpenSpiel tests, but open_spiel is missing ({reason})", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from loveletter_env.cards import BARON, GUARD, KING, PRIEST, PRINCE  # noqa: E402
from loveletter_env.engine import GameState, TurnEvent  # noqa: E402
from loveletter_env.observation import encode_observation  # noqa: E402
from loveletter_env.openspiel import GAME_NAME  # noqa: E402

# The independent partition ----------------------------------------------------------------


def announcement(event: TurnEvent, seat: int) -> tuple:
    """One move as ``seat`` heard and saw it at the table.

    Everyone hears who moved, the card, its target, a Guard's named card and whether it hit,
    the card a Prince made its target discard, and who went out. Only the two players of a
    Priest, Baron or King see the cards involved: the Priest's player the target's card, both
    players of a Baron or King both cards. (A Baron's tie is heard by all, as no one going out.)
    """
    hit = event.card == GUARD and event.target >= 0 and bool(event.target_card)
    prince_discard = event.target_card if event.card == PRINCE and event.target >= 0 else 0
    public = (event.player, event.card, event.target, event.guess, hit, prince_discard, event.eliminated)
    shown: tuple[int, ...] = ()
    if event.target >= 0 and event.target != event.player:
        if event.card == PRIEST and seat == event.player:
            shown = (event.target_card,)
        elif event.card in (BARON, KING) and seat in (event.player, event.target):
            shown = (event.actor_card, event.target_card)
    return public, shown


def hand_key(state: GameState, seat: int, ordered: bool = True) -> tuple[int, ...]:
    """``seat``'s cards: the card it holds, then the card it just drew (0 unless acting).

    At the table a player knows which of its two cards it just drew; ``ordered=False`` is the
    sorted hand of the library's former information-state observer, which forgot that.
    """
    if not ordered:
        return tuple(sorted(state.hand_of(seat)))
    return state.hands[seat], state.drawn if seat == state.current else 0


def deal_key(state: GameState, seat: int, ordered: bool = True) -> tuple:
    """What ``seat`` sees once the round is dealt: the face-up cards and its own cards."""
    face_up = tuple(sorted(state.face_up)) if state.num_players == 2 else ()
    return seat, state.num_players, face_up, hand_key(state, seat, ordered)


def move_key(after: GameState, seat: int, discarded_before: tuple[int, ...], ordered: bool = True) -> tuple:
    """The last move of ``after`` as ``seat`` remembers it: the announcement, then its hand,
    the cards it knows others hold, and the cards each seat put face up during the move."""
    n = after.num_players
    known = tuple((p, after.known[seat][p]) for p in range(n) if p != seat and after.known[seat][p])
    discarded = tuple(
        (p, tuple(after.discards[p][discarded_before[p] :]))
        for p in range(n)
        if len(after.discards[p]) > discarded_before[p]
    )
    return announcement(after.history[-1], seat), hand_key(after, seat, ordered), known, discarded


def discard_counts(state: GameState) -> tuple[int, ...]:
    return tuple(map(len, state.discards))


class Partitions:
    """For each seat, the two partitions of the visited nodes: by observation bytes and by
    :func:`table_key`, each side mapped to the set of keys it met on the other side."""

    def __init__(self, num_players: int):
        self.by_observation = [defaultdict(set) for _ in range(num_players)]
        self.by_table_key = [defaultdict(set) for _ in range(num_players)]
        self.nodes = 0

    def add(self, state: GameState, keys: tuple[tuple, ...]) -> None:
        self.nodes += 1
        for seat, key in enumerate(keys):
            observation = encode_observation(state, seat).astype(np.uint8).tobytes()
            self.by_observation[seat][observation].add(key)
            self.by_table_key[seat][key].add(observation)

    def information_sets(self) -> list[int]:
        return [len(sets) for sets in self.by_table_key]

    def assert_equal(self) -> None:
        for seat in range(len(self.by_observation)):
            merged = [keys for keys in self.by_observation[seat].values() if len(keys) > 1]
            split = [obs for obs in self.by_table_key[seat].values() if len(obs) > 1]
            assert not merged, f"player_{seat}: one observation for histories it can tell apart: {sorted(merged[0])}"
            assert not split, f"player_{seat}: {len(split)} information sets with several observations"


def walk_tree(game: pyspiel.Game, visit: Callable[[GameState, tuple[tuple, ...]], None]) -> None:
    """Call ``visit(engine_state, keys)`` at every decision node of the whole tree, ``keys[p]``
    being seat p's :func:`table_key`: every deal, then every legal action, depth first."""
    n = game.num_players()

    def decide(state, keys):
        if state.is_terminal():
            return
        game_state = state.engine
        visit(game_state, keys)
        before = discard_counts(game_state)
        for action in state.legal_actions():
            child = state.child(action)
            decide(child, tuple(keys[p] + (move_key(child.engine, p, before),) for p in range(n)))

    def deal(state):
        if state.is_chance_node():
            for outcome, _ in state.chance_outcomes():
                deal(state.child(outcome))
            return
        decide(state, tuple((deal_key(state.engine, p),) for p in range(n)))

    deal(game.new_initial_state())


def table_key_of_round(state: GameState, history_states: list[GameState], seat: int) -> tuple:
    """:func:`table_key` of ``seat`` from the engine states after the deal and after each move."""
    key = (deal_key(history_states[0], seat),)
    for before, after in zip(history_states, history_states[1:]):
        key += (move_key(after, seat, discard_counts(before)),)
    return key


# The whole small game trees ------------------------------------------------------------------


#: (rules, information sets of player_0, of player_1, decision nodes): the whole 2-player tree,
#: counted over every decision node for both seats (the player to act or not). Measured.
TREES = {
    "mini6": None,
    "mini7": None,
}


def check_tree(rules: str) -> Partitions:
    game = pyspiel.load_game(GAME_NAME, {"players": 2, "rules": rules})
    partitions = Partitions(2)
    walk_tree(game, partitions.add)
    partitions.assert_equal()
    return partitions


@pytest.mark.parametrize("rules", ["mini6", pytest.param("mini7", marks=pytest.mark.slow)])
def test_observation_partitions_the_whole_tree_as_the_table_does(rules):
    started = time.perf_counter()
    partitions = check_tree(rules)
    print(rules, partitions.nodes, partitions.information_sets(), f"{time.perf_counter() - started:.1f}s")
