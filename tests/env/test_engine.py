"""The engine (``loveletter_env.engine``): invariants over random decks and random legal play
for 2, 3 and 4 players, and the errors its calls raise."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from conftest import act, legal, legal_from_mask, snapshot, start
from hypothesis import given, settings
from hypothesis import strategies as st

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import ACTIONS, HANDMAID_ACTION, NO_TARGET
from loveletter_env.cards import DECK_SIZE, FULL_DECK, GUARD, HANDMAID, KING, PRIEST, PRINCE
from loveletter_env.engine import GameState, IllegalActionError
from loveletter_env.observation import encode_observation

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None)

tables = st.sampled_from([2, 3, 4])
decks = st.permutations(FULL_DECK).map(tuple)
presets = st.sampled_from(["classic", "pegasus", "king_ignores_handmaid"])
rngs = st.randoms(use_true_random=False)


def cards_in_play(state: GameState) -> Counter:
    """Every card the state places somewhere: hands, the drawn card, discards, face-up
    cards, the draw pile and the set-aside card (unless a Prince handed it out)."""
    cards = Counter(c for c in state.hands if c)
    if state.drawn:
        cards[state.drawn] += 1
    for pile in state.discards:
        cards.update(pile)
    cards.update(state.face_up)
    cards.update(state.deck[state.next_card :])
    if not state.set_aside_drawn:
        cards[state.set_aside] += 1
    return cards


def check_targets(state: GameState) -> None:
    """Every legal action names a seat that exists, is in the round and may be chosen."""
    n, player = state.num_players, state.current
    for action in legal(state):
        card, offset = ACTIONS[action].card, ACTIONS[action].offset
        if offset == NO_TARGET:
            continue
        assert offset < n, f"action {action} points past a table of {n}"
        target = (player + offset) % n
        if offset == 0:
            assert card == PRINCE
            continue
        assert not state.out[target]
        if not (card == KING and state.rules.king_ignores_handmaid):
            assert not state.protected[target]


def random_turn(state: GameState, rng: random.Random) -> None:
    """The player to act plays a random legal action; then SPEC's end of round is checked:
    a round goes on only while two players or more are in it, and ends with one left or
    with the deck empty (a round that goes on may have just drawn the last card).

    Checked after every turn of every random round here, because an engine that misses the
    last player standing does not fail on its own: the last player plays on, can put
    themselves out (the Princess), and the engine then loops forever looking for a next
    player still in the round, a hang instead of a failure.
    """
    engine.step(state, rng.choice(legal(state)))
    left = state.out.count(False)
    if state.round_over:
        assert left == 1 or state.deck_remaining == 0, f"the round ended with {left} players left and cards to draw"
    else:
        assert left > 1, f"the round goes on with {left} player(s) left"


@PROPERTY_SETTINGS
@given(num_players=tables, deck=decks, rules=presets, rng=rngs)
def test_round_invariants_hold_at_every_turn(num_players, deck, rules, rng):
    state = engine.new_game(num_players, deck, rng.randrange(num_players), rules)
    full = Counter(FULL_DECK)
    max_turns = DECK_SIZE - 1 - len(state.face_up) - num_players  # each turn draws a card
    while True:
        assert cards_in_play(state) == full
        if state.round_over:
            break
        assert not state.out[state.current]
        assert len(state.hand_of(state.current)) == 2
        assert legal(state), "the player to act has no legal action"
        check_targets(state)
        random_turn(state, rng)
        assert state.turn <= max_turns

    alive = [p for p in range(num_players) if not state.out[p]]
    assert state.round_winners and set(state.round_winners) <= set(alive)
    if len(alive) > 1:  # a showdown: the deck ran out
        assert state.deck_remaining == 0
        assert {state.hands[p] for p in state.round_winners} == {max(state.hands[p] for p in alive)}
    assert state.tokens == [int(p in state.round_winners) for p in range(num_players)]


@PROPERTY_SETTINGS
@given(num_players=tables, deck=decks, rules=presets, rng=rngs)
def test_whole_games_end_exactly_at_the_token_target(num_players, deck, rules, rng):
    state = engine.new_game(num_players, deck, rng.randrange(num_players), rules)
    target = state.tokens_to_win
    while True:
        before = state.tokens[:]
        while not state.round_over:
            random_turn(state, rng)
        assert state.tokens == [t + (p in state.round_winners) for p, t in enumerate(before)]
        reached = tuple(p for p, t in enumerate(state.tokens) if t >= target)
        assert state.game_over == bool(reached)
        if state.game_over:
            assert state.game_winners == reached
            assert max(state.tokens) == target  # nobody overshoots: the game stops at the target
            break
        first = min(state.round_winners)
        engine.start_round(state, tuple(rng.sample(FULL_DECK, DECK_SIZE)))
        assert state.current == first


@PROPERTY_SETTINGS
@given(num_players=tables, deck=decks, rng=rngs, split=st.integers(0, 12))
def test_clone_is_independent_of_the_original(num_players, deck, rng, split):
    state = engine.new_game(num_players, deck, rng.randrange(num_players))
    for _ in range(split):
        if state.round_over:
            break
        random_turn(state, rng)

    copy = state.clone()
    assert snapshot(copy) == snapshot(state)
    frozen = snapshot(state)
    while not copy.round_over:
        random_turn(copy, rng)
    assert snapshot(state) == frozen, "playing the clone changed the original"

    frozen_copy = snapshot(copy)
    while not state.round_over:
        random_turn(state, rng)
    assert snapshot(copy) == frozen_copy, "playing the original changed the clone"


@PROPERTY_SETTINGS
@given(num_players=tables, deck=decks, rules=presets, seed=st.integers(0, 2**32 - 1))
def test_same_deck_and_actions_give_the_same_game(num_players, deck, rules, seed):
    runs = []
    for _ in range(2):
        rng = random.Random(seed)
        state = engine.new_game(num_players, deck, seed % num_players, rules)
        while not state.round_over:
            random_turn(state, rng)
        runs.append(snapshot(state))
    assert runs[0] == runs[1]


@settings(max_examples=30, deadline=None)
@given(num_players=tables, deck=decks, rules=presets, seed=st.integers(0, 2**32 - 1))
def test_env_matches_an_engine_driven_alongside_it(num_players, deck, rules, seed):
    """The env's masks equal ``legal_actions`` of an engine state driven in parallel, and
    every agent's observation equals a from-scratch ``encode_observation``, for a whole game."""
    rng = random.Random(seed)
    env = loveletter_env.env(num_players=num_players, rules=rules, episode="game")
    first = seed % num_players
    env.reset(seed=seed, options={"deck": list(deck), "first_player": first})
    mirror = engine.new_game(num_players, deck, first, rules)
    agents = env.possible_agents

    while not any(env.terminations.values()):
        acting = env.agent_selection
        assert acting == agents[mirror.current]
        for seat, agent in enumerate(agents):
            obs = env.observe(agent)
            np.testing.assert_array_equal(obs["observation"], encode_observation(mirror, seat))
            expected = legal(mirror) if agent == acting else []
            assert legal_from_mask(obs["action_mask"]) == expected
        action = rng.choice(legal(mirror))
        env.step(action)
        engine.step(mirror, action)
        if mirror.round_over and not mirror.game_over:
            engine.start_round(mirror, env.unwrapped.game.deck)  # the env shuffled the next round
        assert mirror.tokens == env.unwrapped.game.tokens

    assert mirror.game_over
    for seat, agent in enumerate(agents):  # the final observations show the final tokens
        np.testing.assert_array_equal(env.observe(agent)["observation"], encode_observation(mirror, seat))
    winners = {agents[p] for p in mirror.game_winners}
    assert env.rewards == {a: (1.0 if a in winners else -1.0) for a in agents}


# Errors of the engine's calls ---------------------------------------------------------


def test_illegal_action_error_is_a_value_error():
    assert issubclass(IllegalActionError, ValueError)
    assert loveletter_env.IllegalActionError is IllegalActionError


def test_stepping_a_finished_round_raises():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])
    engine.step(state, act(GUARD, 1, PRIEST))
    with pytest.raises(ValueError, match="round is over"):
        engine.step(state, HANDMAID_ACTION)


def test_first_round_needs_a_first_player():
    state = engine.GameState(2)
    with pytest.raises(ValueError, match="first_player"):
        engine.start_round(state, FULL_DECK)


def test_illegal_action_error_survives_pickling():
    # evaluate --workers sends errors between processes
    import pickle

    error = IllegalActionError(5, (30, 22), 1, 3)
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert (copy.action, copy.legal, copy.player) == (5, (30, 22), 1)


def test_starting_a_round_after_the_game_is_over_is_refused():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])
    state.tokens = [6, 0]
    engine.step(state, act(GUARD, 1, PRIEST))
    assert state.game_over
    with pytest.raises(ValueError, match="game is over"):
        engine.start_round(state, FULL_DECK)


@pytest.mark.parametrize("first_player", [None, 1])
def test_dealing_a_round_while_one_is_being_played_is_refused(first_player):
    """A round ends with a winner and tokens: dealing over one in play dropped it silently
    (with a first player), or asked for the first player of a "first round" that was not."""
    state = start(2, hands={0: HANDMAID, 1: GUARD}, draws=[PRIEST])
    engine.step(state, HANDMAID_ACTION)
    before = snapshot(state)
    with pytest.raises(ValueError, match=r"round 1 is still being played .*turn 1"):
        engine.start_round(state, FULL_DECK, first_player)
    assert snapshot(state) == before
