"""Bad input raises a clear ``ValueError`` naming the problem and changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import act, deal_deck, make_env, snapshot, start

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import HANDMAID_ACTION, decode_action, encode_action
from loveletter_env.cards import FULL_DECK, GUARD, HANDMAID, PRIEST, PRINCESS
from loveletter_env.engine import IllegalActionError
from loveletter_env.observation import OBSERVATION_SIZE, decode_observation

# player_0 holds a Handmaid and a Priest: legal actions are 22 (Priest on player_1) and 30.
DECK = deal_deck(2, hands={0: HANDMAID, 1: GUARD}, draws=[PRIEST])
LEGAL = (act(PRIEST, 1), HANDMAID_ACTION)
ILLEGAL_ACTIONS = [
    act(GUARD, 1, PRINCESS),  # a card player_0 does not hold
    act(PRIEST, 2),  # an offset past a 2-player table
    41,
    -1,  # not actions at all
    np.int64(0),
]


def env_state(env) -> tuple:
    """Everything an agent could notice about the env, to check that nothing changed."""
    observations = tuple(
        (agent, env.observe(agent)["observation"].tobytes(), env.observe(agent)["action_mask"].tobytes())
        for agent in env.possible_agents
    )
    return (env.agent_selection, observations, dict(env.rewards), dict(env.terminations), snapshot(env.unwrapped.game))


# Illegal actions --------------------------------------------------------------------


def test_illegal_action_error_is_a_value_error():
    assert issubclass(IllegalActionError, ValueError)
    assert loveletter_env.IllegalActionError is IllegalActionError


@pytest.mark.parametrize("action", ILLEGAL_ACTIONS, ids=repr)
def test_illegal_action_in_the_env_raises_and_changes_nothing(action):
    env = make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(IllegalActionError) as caught:
        env.step(action)
    message = str(caught.value)
    assert f"action {int(action)}" in message
    assert "legal actions: 22 (Priest on player_1), 30 (Handmaid)" in message
    assert caught.value.legal == LEGAL
    assert env_state(env) == before

    env.step(np.int64(HANDMAID_ACTION))  # the env still works, and takes numpy integers
    assert env.agent_selection == "player_1"


def test_none_for_an_agent_still_in_play_is_illegal():
    env = make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(IllegalActionError, match="legal actions"):
        env.step(None)
    assert env_state(env) == before


@pytest.mark.parametrize("action", ILLEGAL_ACTIONS, ids=repr)
def test_illegal_action_in_the_engine_raises_and_changes_nothing(action):
    state = start(2, hands={0: HANDMAID, 1: GUARD}, draws=[PRIEST])
    before = snapshot(state)
    with pytest.raises(IllegalActionError, match="not legal for player_0"):
        engine.step(state, action)
    assert snapshot(state) == before


def test_stepping_a_finished_round_raises():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])
    engine.step(state, act(GUARD, 1, PRIEST))
    with pytest.raises(ValueError, match="round is over"):
        engine.step(state, HANDMAID_ACTION)


# Construction and reset arguments ---------------------------------------------------


@pytest.mark.parametrize("bad", [1, 5, 0, -2, "2", True, 2.0, None], ids=repr)
def test_bad_num_players_is_refused(bad):
    with pytest.raises(ValueError, match="num_players"):
        loveletter_env.env(num_players=bad)
    with pytest.raises(ValueError, match="num_players"):
        loveletter_env.raw_env(num_players=bad)
    with pytest.raises(ValueError, match="num_players"):
        engine.new_game(bad, FULL_DECK, 0)


def test_numpy_integer_num_players_is_accepted():
    env = loveletter_env.env(num_players=np.int64(3))
    env.reset(seed=0)
    assert len(env.agents) == 3


def _replaced(position: int, value) -> list:
    deck = list(FULL_DECK)
    deck[position] = value
    return deck


BAD_DECKS = {
    "too short": (list(FULL_DECK[:15]), "16"),
    "too long": (list(FULL_DECK) + [GUARD], "16"),
    "empty": ([], "16"),
    "six guards": (_replaced(-1, GUARD), "Guard"),
    "no princess, two priests too many": (_replaced(-1, PRIEST), "Priest"),
    "zero is not a card": (_replaced(0, 0), "not cards"),
    "nine is not a card": (_replaced(0, 9), "not cards"),
    "a string": (_replaced(3, "x"), "deck"),
    "a digit string": (_replaced(3, "1"), "deck"),
    "a fraction": (_replaced(3, 1.5), "deck"),
    "None inside": (_replaced(3, None), "deck"),
    "not a sequence": (16, "deck"),
}


@pytest.mark.parametrize("deck, words", BAD_DECKS.values(), ids=BAD_DECKS.keys())
def test_bad_deck_is_refused_naming_the_problem(deck, words):
    with pytest.raises(ValueError, match="deck") as caught:
        engine.new_game(2, deck, 0)
    assert words in str(caught.value)

    env = make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(ValueError, match="deck"):
        env.reset(seed=1, options={"deck": deck})
    assert env_state(env) == before  # a refused reset leaves the episode as it was


def test_numpy_deck_is_accepted():
    env = loveletter_env.env(num_players=2)
    env.reset(seed=0, options={"deck": np.array(DECK), "first_player": np.int64(0)})
    assert env.unwrapped.game.deck == DECK


@pytest.mark.parametrize("num_players, bad", [(2, -1), (2, 2), (3, 3), (4, 4), (2, True), (2, "0"), (2, 1.0)], ids=repr)
def test_bad_first_player_is_refused(num_players, bad):
    with pytest.raises(ValueError, match="first_player"):
        engine.new_game(num_players, FULL_DECK, bad)
    env = loveletter_env.env(num_players=num_players)
    env.reset(seed=0)
    before = env_state(env)
    with pytest.raises(ValueError, match="first_player"):
        env.reset(seed=1, options={"first_player": bad})
    assert env_state(env) == before


def test_first_round_needs_a_first_player():
    state = engine.GameState(2)
    with pytest.raises(ValueError, match="first_player"):
        engine.start_round(state, FULL_DECK)


@pytest.mark.parametrize("bad", ["clasic", "Classic", "", 3, None], ids=repr)
def test_unknown_rules_preset_is_refused(bad):
    with pytest.raises(ValueError, match="rules") as caught:
        loveletter_env.env(rules=bad)
    if isinstance(bad, str):
        assert repr(bad) in str(caught.value) and "classic" in str(caught.value)
    with pytest.raises(ValueError, match="rules"):
        engine.new_game(2, FULL_DECK, 0, bad)


@pytest.mark.parametrize("bad", ["games", "Round", "", None, 1], ids=repr)
def test_bad_episode_is_refused(bad):
    with pytest.raises(ValueError, match="episode"):
        loveletter_env.env(episode=bad)


@pytest.mark.parametrize("bad", ["rgb_array", "ANSI", 1], ids=repr)
def test_bad_render_mode_is_refused(bad):
    with pytest.raises(ValueError, match="render_mode"):
        loveletter_env.env(render_mode=bad)


# Order of calls ---------------------------------------------------------------------


def test_step_before_reset_is_an_error():
    env = loveletter_env.env(num_players=2)
    with pytest.raises(Exception, match="reset"):
        env.step(HANDMAID_ACTION)
    with pytest.raises(Exception, match="reset"):
        env.observe("player_0")


def test_illegal_action_error_survives_pickling():
    # evaluate --workers sends errors between processes
    import pickle

    error = IllegalActionError(5, (30, 22), 1, 3)
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert (copy.action, copy.legal, copy.player) == (5, (30, 22), 1)


def test_raw_env_before_reset_says_to_reset():
    env = loveletter_env.raw_env(num_players=2)
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.step(HANDMAID_ACTION)
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.observe("player_0")


@pytest.mark.parametrize("action", [30.0, np.float32(30), True, "30"], ids=repr)
def test_non_integer_actions_are_refused_not_truncated(action):
    env = make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(IllegalActionError, match="actions are integers"):
        env.step(action)
    assert env_state(env) == before


def test_unknown_agent_is_named():
    env = make_env(2, DECK)
    with pytest.raises(ValueError, match="unknown agent 'player_7'"):
        env.observe("player_7")


def test_starting_a_round_after_the_game_is_over_is_refused():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])
    state.tokens = [6, 0]
    engine.step(state, act(GUARD, 1, PRIEST))
    assert state.game_over
    with pytest.raises(ValueError, match="game is over"):
        engine.start_round(state, FULL_DECK)


# Decoders ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(OBSERVATION_SIZE - 1,), (OBSERVATION_SIZE + 1,), (2, OBSERVATION_SIZE), ()])
def test_decode_observation_refuses_a_vector_of_the_wrong_shape(shape):
    with pytest.raises(ValueError, match=str(OBSERVATION_SIZE)):
        decode_observation(np.zeros(shape, dtype=np.float32))


@pytest.mark.parametrize("bad", [41, -1, 100, "3", None], ids=repr)
def test_decode_action_refuses_non_actions(bad):
    with pytest.raises(ValueError, match="action"):
        decode_action(bad)


def test_encode_action_refuses_plays_that_have_no_action():
    with pytest.raises(ValueError, match="Guard"):
        encode_action(GUARD, 1, GUARD)
    with pytest.raises(ValueError, match="Priest"):
        encode_action(PRIEST, 0)
