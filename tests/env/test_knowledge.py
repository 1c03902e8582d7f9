"""SPEC "Knowledge about another player's hand": when knowledge is learned, kept, dropped
and moved, and the public record of failed Guard guesses.

Every check reads both the engine's tables and the observer's decoded observation, and
requires them to agree.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
from conftest import act, make_env, offset_of, play, start, view

from loveletter_env import decode_observation, engine, knowledge
from loveletter_env.actions import HANDMAID_ACTION
from loveletter_env.cards import BARON, COUNTESS, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from loveletter_env.engine import GameState
from loveletter_env.rules import PRESETS


def knows(state: GameState, observer: int, player: int) -> int:
    """The card ``observer`` knows ``player`` holds (0 = unknown), read from the engine
    table and from the observation, which must agree."""
    table = state.known[observer][player]
    observed = view(state, observer).known_cards[offset_of(state, observer, player)]
    assert table == observed, f"engine says {table}, observation of player_{observer} says {observed}"
    return table


def seen_by(state: GameState, observer: int, player: int) -> bool:
    """Whether ``observer``'s observation says ``player`` knows the observer's card."""
    flag = view(state, observer).seen_by[offset_of(state, observer, player)]
    assert flag == state.seen[player][observer]
    assert not flag or state.known[player][observer]  # only true knowledge is ever flagged
    return flag


def ruled_out(state: GameState, observer: int, player: int) -> frozenset[int]:
    """Values a failed Guard proved ``player`` lacks, as ``observer`` sees them."""
    table = frozenset(v for v in range(GUARD, PRINCESS + 1) if state.ruled_out[player] >> v & 1)
    observed = view(state, observer).ruled_out[offset_of(state, observer, player)]
    assert table == observed
    return table


# Priest knowledge: kept, dropped ------------------------------------------------------


def _priest_sees_baron() -> GameState:
    """3 players; player_0 has looked at player_1's Baron; player_1 is to act holding
    Baron + Guard, player_2 holds a Prince and will draw a Guard."""
    state = start(3, hands={0: PRIEST, 1: BARON, 2: PRINCE}, draws=[HANDMAID, GUARD, GUARD, KING])
    engine.step(state, act(PRIEST, 1))
    assert knows(state, 0, 1) == BARON
    assert knows(state, 2, 1) == 0
    assert seen_by(state, 1, 0)
    return state


def test_knowledge_stays_when_the_player_plays_another_value():
    state = _priest_sees_baron()
    engine.step(state, act(GUARD, 1, PRINCESS))  # player_1 plays the Guard and keeps the Baron
    assert knows(state, 0, 1) == BARON


def test_knowledge_is_dropped_when_the_player_plays_the_same_value():
    state = start(3, hands={0: PRIEST, 1: HANDMAID, 2: GUARD}, draws=[GUARD, HANDMAID])
    engine.step(state, act(PRIEST, 1))
    assert knows(state, 0, 1) == HANDMAID
    engine.step(state, HANDMAID_ACTION)  # the known copy or the drawn one: no one can tell
    assert knows(state, 0, 1) == 0


def test_knowledge_is_dropped_when_the_player_is_chosen_by_a_prince():
    state = _priest_sees_baron()
    play(state, [act(GUARD, 1, PRINCESS), act(PRINCE, 2)])  # player_2 makes player_1 discard
    assert state.discards[1] == [GUARD, BARON]
    assert knows(state, 0, 1) == 0
    assert not seen_by(state, 1, 0)


def test_knowledge_is_dropped_when_the_player_chooses_themselves_with_a_prince():
    state = start(3, hands={0: PRIEST, 1: BARON, 2: GUARD}, draws=[HANDMAID, PRINCE])
    engine.step(state, act(PRIEST, 1))
    engine.step(state, act(PRINCE, 0))
    assert state.discards[1] == [PRINCE, BARON]
    assert knows(state, 0, 1) == 0


def test_knowledge_is_dropped_when_the_player_is_out():
    state = _priest_sees_baron()
    play(state, [act(GUARD, 1, PRINCESS), act(GUARD, 2, BARON)])  # player_2 names the Baron
    assert state.out == [False, True, False]
    assert knows(state, 0, 1) == 0


# King trades ------------------------------------------------------------------------


def test_king_trade_moves_a_third_players_knowledge_with_the_card():
    state = start(3, hands={0: PRIEST, 1: BARON, 2: GUARD}, draws=[HANDMAID, KING])
    engine.step(state, act(PRIEST, 1))
    assert knows(state, 0, 1) == BARON

    engine.step(state, act(KING, 1))  # player_1 gives the Baron to player_2, receives the Guard
    assert state.hands[1:] == [GUARD, BARON]
    assert knows(state, 0, 2) == BARON
    assert knows(state, 0, 1) == 0


def test_king_trade_moves_knowledge_of_the_targets_hand_too():
    state = start(3, hands={0: PRIEST, 1: BARON, 2: GUARD}, draws=[HANDMAID, KING])
    engine.step(state, act(PRIEST, 2))
    assert knows(state, 0, 2) == GUARD

    engine.step(state, act(KING, 1))
    assert knows(state, 0, 1) == GUARD
    assert knows(state, 0, 2) == 0


def test_both_traders_know_each_others_new_card():
    state = start(3, hands={0: PRIEST, 1: BARON, 2: GUARD}, draws=[HANDMAID, KING])
    play(state, [act(PRIEST, 1), act(KING, 1)])

    assert knows(state, 1, 2) == BARON  # player_1's former card
    assert knows(state, 2, 1) == GUARD  # player_2's former card
    assert seen_by(state, 1, 2) and seen_by(state, 2, 1)
    assert knows(state, 0, 2) == BARON  # player_0 saw the Baron, which player_2 now holds...
    # ...but player_2 is not told: in general whether that knowledge survived depends on
    # the other trader's hidden card (see the test below).
    assert not seen_by(state, 2, 0)
    assert not seen_by(state, 1, 0)  # and player_0 knows nothing of player_1's new Guard


def test_seen_by_after_a_king_trade_does_not_depend_on_the_other_traders_hidden_card():
    # player_2 Priests player_0, then player_0 plays a Priest: whether player_2 still knows
    # player_0's card depends on which Priest player_0 played. player_0 then trades with
    # player_1, who receives the same card in both deals and must observe the same thing.
    rest = [GUARD, GUARD, GUARD, BARON, BARON, PRINCE, PRINCESS]
    observations = []
    for deck in (
        [PRINCE, PRIEST, GUARD, COUNTESS, HANDMAID, PRIEST, GUARD, HANDMAID, KING] + rest,
        [PRINCE, PRIEST, PRIEST, COUNTESS, HANDMAID, GUARD, GUARD, HANDMAID, KING] + rest,
    ):
        env = make_env(3, deck, first_player=2)
        for action in (act(PRIEST, 1), act(PRIEST, 2), act(GUARD, 1, PRINCESS), act(HANDMAID), act(KING, 1)):
            env.step(action)
        observations.append(env.observe("player_1")["observation"])
        # The trade moved player_2's look at player_0's card (kept only in the first deal) to
        # player_1's hand; player_0 is told that only player_1, its trader, knows its new card.
        assert decode_observation(env.observe("player_0")).seen_by == (False, True, False)
    np.testing.assert_array_equal(observations[0], observations[1])


def test_own_king_trade_tells_you_the_other_players_card():
    state = start(2, hands={0: KING, 1: PRINCE}, draws=[HANDMAID])
    engine.step(state, act(KING, 1))
    assert knows(state, 0, 1) == HANDMAID
    assert knows(state, 1, 0) == PRINCE


# Baron ------------------------------------------------------------------------------


def test_baron_tie_both_players_learn_the_other_card_and_only_they():
    state = start(3, hands={0: BARON, 1: PRIEST, 2: GUARD}, draws=[PRIEST])
    engine.step(state, act(BARON, 1))
    assert knows(state, 0, 1) == PRIEST and knows(state, 1, 0) == PRIEST
    assert knows(state, 2, 0) == 0 and knows(state, 2, 1) == 0


def test_baron_winners_card_is_known_to_the_loser():
    state = start(3, hands={0: BARON, 1: GUARD, 2: PRIEST}, draws=[KING])
    engine.step(state, act(BARON, 1))
    assert state.out[1]
    assert knows(state, 1, 0) == KING
    assert knows(state, 0, 1) == 0  # the loser's hand is gone


# Failed Guard guesses ---------------------------------------------------------------


def _guard_misses_player_2() -> GameState:
    """3 players; player_0's Guard named Countess on player_2 (who holds a Baron) and
    missed. player_1 is to act, holding a Guard and whatever the test asks for."""
    return start(3, hands={0: GUARD, 1: GUARD, 2: BARON}, draws=[HANDMAID, KING, PRIEST])


def test_failed_guard_guess_is_public():
    state = _guard_misses_player_2()
    engine.step(state, act(GUARD, 2, COUNTESS))
    for observer in (0, 1):
        assert ruled_out(state, observer, 2) == {COUNTESS}
    assert view(state, 2).ruled_out[0] == frozenset()  # own seat: nothing to rule out


def test_failed_guard_guesses_accumulate_until_that_player_draws():
    state = start(4, hands={0: GUARD, 1: GUARD, 2: PRIEST, 3: BARON}, draws=[HANDMAID, HANDMAID, GUARD])
    engine.step(state, act(GUARD, 3, COUNTESS))
    engine.step(state, act(GUARD, 2, PRINCESS))  # player_1 misses player_3 too
    for observer in (0, 1, 2):
        assert ruled_out(state, observer, 3) == {COUNTESS, PRINCESS}

    engine.step(state, act(PRIEST, 1))
    assert state.current == 3
    # player_3 has drawn: the card they keep may be the new one.
    assert ruled_out(state, 0, 3) == frozenset()


def test_failed_guard_guesses_clear_when_the_player_is_chosen_by_a_prince():
    """The Prince clears the rulings itself: its target (player_3) is not the next to act,
    so no draw of its own has cleared them when they are checked."""
    state = start(4, hands={0: GUARD, 1: PRINCE, 2: PRIEST, 3: BARON}, draws=[HANDMAID, KING, GUARD, PRIEST])
    engine.step(state, act(GUARD, 3, COUNTESS))
    assert ruled_out(state, 1, 3) == {COUNTESS}
    engine.step(state, act(PRINCE, 2))  # player_1 chooses player_3, who discards the Baron and draws a Guard
    assert state.discards[3] == [BARON] and state.hands[3] == GUARD
    assert state.current == 2  # player_3 has not begun a turn since the Guard missed
    assert ruled_out(state, 2, 3) == frozenset()
    assert ruled_out(state, 0, 3) == frozenset()


def test_failed_guard_guesses_clear_when_the_player_is_out():
    state = _guard_misses_player_2()
    engine.step(state, act(GUARD, 2, COUNTESS))
    engine.step(state, act(GUARD, 1, BARON))
    assert state.out[2]
    assert ruled_out(state, 0, 2) == frozenset()


def test_failed_guard_guesses_move_with_a_king_trade():
    state = _guard_misses_player_2()
    engine.step(state, act(GUARD, 2, COUNTESS))
    engine.step(state, act(KING, 1))  # player_1 takes player_2's Baron
    assert state.hands[1:] == [BARON, GUARD]
    assert ruled_out(state, 0, 1) == {COUNTESS}
    assert ruled_out(state, 0, 2) == frozenset()


def test_rulings_that_outlast_a_draw_and_a_play_are_exactly_those_the_play_proves():
    """``knowledge.ruled_out_after_play`` (the bots' record of failed Guards): a player whose
    kept card ``old`` was proved to lack the values of ``ruled`` draws ``new`` and plays one of
    the two. Every ruling it keeps must still hold of the card kept (sound), and when the
    card played is a ruled-out value, so the drawn one, every ruling stands (what it proves)."""
    values = range(GUARD, PRINCESS + 1)
    for old, new in itertools.product(values, values):
        for bits in range(1 << 8):
            ruled = bits << 1  # any set of values 1..8 ...
            if ruled >> old & 1:
                continue  # ... that the kept card does not hold
            for played, kept in ((old, new), (new, old)):
                after = knowledge.ruled_out_after_play(ruled, played)
                assert not after >> kept & 1, (old, new, ruled, played)
                if ruled >> played & 1:
                    assert after == ruled, (old, new, ruled, played)


# Brute force: every deal of a small rung ----------------------------------------------


def _what_they_saw(state: GameState, seat: int) -> tuple:
    """Everything ``seat`` has seen of the round, built from the move history alone (not the
    observation, which is what is under test): the deal it got, every announced move and
    what it made public, and what the seat alone was shown or drew."""
    seen: list = [state.current if not state.history else state.history[0].player, state.dealt[seat]]
    for e in state.history:
        hit = e.card == GUARD and e.target >= 0 and e.target_card == e.guess
        public = (e.player, e.card, e.target, e.guess, hit, e.eliminated, e.discarded if e.eliminated else 0)
        public += (e.target_card,) if e.card == PRINCE else ()
        private: tuple = (e.drawn,) + ((e.target_card,) if e.card == PRIEST else ()) if e.player == seat else ()
        if e.card in (BARON, KING) and seat in (e.player, e.target):
            private += (e.actor_card, e.target_card)
        if e.card == PRINCE and e.target == seat:
            private += (e.replacement,)
        seen.append((public, private))
    if not state.round_over and state.current == seat:
        seen.append(state.drawn)
    return tuple(seen)


@pytest.mark.parametrize("rules, first_players, every", [("mini6", (0, 1), 1), ("mini7_3p", (0,), 40)])
def test_the_tables_hold_what_the_observer_can_prove_in_every_deal(rules: str, first_players, every: int):
    """Deal a rung every way (``every``: one deal in that many, to keep it quick) and play every
    line of play; group the states a seat cannot tell apart. Within a group, what the seat knows
    of a player's card (and the Guard rulings it sees, and whether it is told that player knows
    its own card) is one value, and that value is true in every state of the group."""
    preset = PRESETS[rules]
    n = preset.rung_players
    groups: defaultdict[tuple, list[GameState]] = defaultdict(list)
    for order in sorted(set(itertools.permutations(preset.in_play)))[::every]:
        for first in first_players:
            stack = [engine.new_game(n, preset.deck_from_in_play(order), first, preset)]
            while stack:
                state = stack.pop()
                for seat in range(n):
                    groups[seat, _what_they_saw(state, seat)].append(state)
                for action in () if state.round_over else engine.legal_actions(state):
                    child = state.clone()
                    engine.step(child, action)
                    stack.append(child)
    for (seat, _), states in groups.items():
        for p in range(n):
            if p == seat:
                continue
            assert len({s.known[seat][p] for s in states}) == 1, (seat, p, states[0].history)
            assert all(s.hands[p] == s.known[seat][p] for s in states if s.known[seat][p]), (seat, p)
            assert len({s.ruled_out[p] for s in states}) == 1, (seat, p, states[0].history)
            assert not any(s.ruled_out[p] >> s.hands[p] & 1 for s in states if not s.out[p]), (seat, p)
            assert len({s.seen[p][seat] for s in states}) == 1, (seat, p, states[0].history)
            assert all(s.known[p][seat] == s.hands[seat] for s in states if s.seen[p][seat]), (seat, p)
