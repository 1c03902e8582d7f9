"""The observation is the player's information state: two histories of a round give a seat
the same observation vector exactly when a player in that seat could not tell them apart.

The vector is checked against an independent partition of histories, the *table key*: what a
player at the table remembers of the round (:func:`deal_key`, then one :func:`move_key` per
move). It is the information state of the OpenSpiel game's former ``information="full"``
observer, copied here, with two corrections: that observer kept the player's hand sorted, so it
forgot which card was dealt and which drawn (:func:`test_the_table_tells_the_dealt_card_from_the_one_drawn`);
and it read the cards the player knew others held from the engine's own knowledge table, so a
leak in that table showed on both sides. The key is built from the moves as announced and shown.
On the whole ``mini6`` and ``mini7`` game trees every decision node is checked for both seats;
at 3 and 4 players, many random rounds.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

import numpy as np
import pytest
from conftest import import_openspiel

pyspiel = import_openspiel()

from conftest import start  # noqa: E402

from loveletter_env.cards import BARON, DECK_SIZE, FULL_DECK, GUARD, KING, PRIEST, PRINCE  # noqa: E402
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
    """The last move of ``after`` as ``seat`` remembers it: the announcement, then its hand
    and the cards each seat put face up during the move.

    Nothing here reads the engine's knowledge tables (``known``, ``seen``, ``ruled_out``):
    what a seat knows of the others' hands is whatever follows from the moves it heard and
    the cards it was shown, and the key keeps all of those. A table that kept (or dropped)
    a fact the moves do not prove would then show in the observation and not in the key.
    """
    n = after.num_players
    discarded = tuple(
        (p, tuple(after.discards[p][discarded_before[p] :]))
        for p in range(n)
        if len(after.discards[p]) > discarded_before[p]
    )
    return announcement(after.history[-1], seat), hand_key(after, seat, ordered), discarded


def discard_counts(state: GameState) -> tuple[int, ...]:
    return tuple(map(len, state.discards))


class Partitions:
    """For each seat, the two partitions of the visited nodes, by observation bytes and by
    table key, each key of one side mapped to the set of keys of the other side it met."""

    def __init__(self, num_players: int):
        self.by_observation = [defaultdict(set) for _ in range(num_players)]
        self.by_table_key = [defaultdict(set) for _ in range(num_players)]
        self.nodes = 0
        self.visits: list[Counter] = [Counter() for _ in range(num_players)]

    def add(self, state: GameState, keys: tuple[tuple, ...]) -> None:
        self.nodes += 1
        for seat, key in enumerate(keys):
            vector = encode_observation(state, seat)
            # One byte per entry keeps mini7's 40,000 vectors small; the cast is exact.
            as_bytes = vector.astype(np.uint8)
            assert np.array_equal(as_bytes, vector)
            observation = as_bytes.tobytes()
            self.visits[seat][key] += 1
            self.by_observation[seat][observation].add(key)
            self.by_table_key[seat][key].add(observation)

    def information_sets(self) -> list[int]:
        return [len(sets) for sets in self.by_table_key]

    def met_again(self) -> int:
        """Information sets (all seats together) met at two nodes or more."""
        return sum(count > 1 for visits in self.visits for count in visits.values())

    def assert_equal(self) -> None:
        for seat in range(len(self.by_observation)):
            merged = [keys for keys in self.by_observation[seat].values() if len(keys) > 1]
            split = [obs for obs in self.by_table_key[seat].values() if len(obs) > 1]
            assert not merged, f"player_{seat}: one observation, two histories: {sorted(merged[0])[:2]}"
            assert not split, f"player_{seat}: {len(split)} information sets with several observations"


def walk_tree(game: pyspiel.Game, visit: Callable[[GameState, tuple[tuple, ...]], None]) -> None:
    """Call ``visit(engine_state, keys)`` at every decision node of the whole tree, ``keys[p]``
    being seat p's table key: every deal, then every legal action, depth first."""
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


def dealt(game: pyspiel.Game, deck: list[int]):
    """The game's state once chance has dealt ``deck`` (top first)."""
    state = game.new_initial_state()
    for position in game.plan.chance_positions:
        if not state.is_chance_node():
            break
        state.apply_action(deck[position] - 1)
    assert state.engine is not None and state.engine.deck == tuple(deck)
    return state


# The whole small game trees ------------------------------------------------------------------


#: Measured on the whole 2-player tree: (decision nodes, information sets of player_0, of
#: player_1), counted at every decision node for both seats, the player to act or not.
#: The mini7 walk takes about 30 s of CPU (80-90 s on a busy 2-core machine), mini6 about 3 s.
TREES = {
    "mini6": (6912, 1739, 781),
    "mini7": (105112, 23304, 18335),
}


@pytest.mark.parametrize("rules", ["mini6", pytest.param("mini7", marks=pytest.mark.slow)])
def test_observation_partitions_the_whole_tree_as_the_table_does(rules):
    """At every decision node of the whole tree and for both seats, two nodes share an
    observation vector exactly when they share the seat's table key (the
    reference partition: the deal the seat saw, then each move as announced and shown to
    it, its cards after it in the order received and the cards put face up; never the
    engine's knowledge tables). The counts are pinned too: a table that kept a fact the
    moves do not prove would split some sets, and the counts would move."""
    game = pyspiel.load_game(GAME_NAME, {"players": 2, "rules": rules})
    partitions = Partitions(2)
    walk_tree(game, partitions.add)
    partitions.assert_equal()
    assert (partitions.nodes, *partitions.information_sets()) == TREES[rules]


def test_the_table_tells_the_dealt_card_from_the_one_drawn():
    """The smallest pair of histories the library's former information-state observer (a
    sorted hand) merged: dealt a Guard and drew a Priest, or the other way round. A player
    at the table knows which card it was dealt, so the two are different information states;
    the opponent, who saw neither card, cannot tell them apart."""
    guard_first = start(2, hands={0: GUARD, 1: BARON}, draws=[PRIEST])
    priest_first = start(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD])
    assert deal_key(guard_first, 0, ordered=False) == deal_key(priest_first, 0, ordered=False)
    assert deal_key(guard_first, 0) != deal_key(priest_first, 0)
    assert encode_observation(guard_first, 0).tobytes() != encode_observation(priest_first, 0).tobytes()
    assert encode_observation(guard_first, 1).tobytes() == encode_observation(priest_first, 1).tobytes()


# Random rounds at 3 and 4 players --------------------------------------------------------------


@pytest.mark.parametrize("num_players", [3, 4])
def test_observation_partitions_random_rounds_as_the_table_does(num_players):
    """Random rounds at 3 and 4 players (classic rules), checked as the trees are: any two
    nodes met with equal observation bytes have equal table keys, and the other way round.
    The key holds only what the table announced and showed the seat, so a knowledge table
    that remembered more than that (a leak) splits an information set here.

    Rounds come in groups sharing a base deck and the random numbers that pick actions, each
    round with the set-aside card and the bottom of the deck shuffled anew: until someone
    draws a shuffled card the rounds of a group differ only in cards nobody has seen, so
    many nodes of different rounds meet in one information set.
    """
    game = pyspiel.load_game(GAME_NAME, {"players": num_players})
    partitions = Partitions(num_players)
    for group in range(100):
        base = np.random.default_rng([num_players, group]).permutation(FULL_DECK)
        # Deeper in some groups, shallower in others: the first shuffled draw comes later or sooner.
        hidden = [0, *range(num_players + 2 + 3 * (group % 3), DECK_SIZE)]
        for variant in range(6):
            deck = base.copy()
            deck[hidden] = np.random.default_rng([num_players, group, variant]).permutation(base[hidden])
            state = dealt(game, [int(c) for c in deck])
            choose = np.random.default_rng([num_players, group])
            keys = tuple((deal_key(state.engine, p),) for p in range(num_players))
            while not state.is_terminal():
                partitions.add(state.engine, keys)
                before = discard_counts(state.engine)
                legal = state.legal_actions()
                state.apply_action(legal[int(choose.integers(len(legal)))])
                keys = tuple(keys[p] + (move_key(state.engine, p, before),) for p in range(num_players))
    partitions.assert_equal()
    # Within a round every node is a new information set: these were met by several rounds
    # (measured: 1581 of 4671 nodes' sets at 3 players, 2526 of 5577 at 4).
    assert partitions.met_again() > 1500
