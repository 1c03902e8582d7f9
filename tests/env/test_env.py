"""The PettingZoo contract: api_test, seeding, agents, spaces, rendering, and bad arguments and
calls refused with a clear ``ValueError`` that changes nothing."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from conftest import act, deal_deck, legal_from_mask, make_env, snapshot, start
from gymnasium import spaces
from pettingzoo.test import api_test, seed_test

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import HANDMAID_ACTION
from loveletter_env.cards import BARON, COUNTESS, FULL_DECK, GUARD, HANDMAID, KING, PRIEST, PRINCESS
from loveletter_env.engine import IllegalActionError

# api_test warns about Dict spaces.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# PettingZoo's own tests -------------------------------------------------------------


@pytest.mark.parametrize("episode", ["game", "round"])
@pytest.mark.parametrize("rules", ["classic", "pegasus", "king_ignores_handmaid"])
def test_pettingzoo_api_test(num_players, rules, episode):
    api_test(loveletter_env.env(num_players=num_players, rules=rules, episode=episode), num_cycles=1000)


def test_pettingzoo_api_test_gets_no_reset_option_warning():
    """api_test passes ``options={"options": 1}`` to check that reset takes options at all."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(loveletter_env.env(num_players=3), num_cycles=20)
    assert [str(w.message) for w in caught if "reset option" in str(w.message)] == []


def test_pettingzoo_seed_test(num_players):
    seed_test(lambda: loveletter_env.env(num_players=num_players), num_cycles=500)


# Seeding and determinism ------------------------------------------------------------


def play_episode(env, seed: int, policy_seed: int) -> list[tuple]:
    """Reset with ``seed``, play random legal actions; every (agent, observation,
    mask, reward, terminated) the AEC loop shows, in order."""
    env.reset(seed=seed)
    rng = random.Random(policy_seed)
    trace = []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        trace.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(), reward, terminated, truncated))
        env.step(None if terminated or truncated else rng.choice(legal_from_mask(obs["action_mask"])))
    return trace


def test_same_seed_gives_the_same_episode(num_players):
    first = play_episode(loveletter_env.env(num_players=num_players), seed=42, policy_seed=1)
    second = play_episode(loveletter_env.env(num_players=num_players), seed=42, policy_seed=1)
    assert first == second
    assert len(first) > 20  # a whole game, several rounds


def test_reusing_an_env_with_the_same_seed_replays_the_episode():
    env = loveletter_env.env(num_players=3)
    assert play_episode(env, seed=5, policy_seed=9) == play_episode(env, seed=5, policy_seed=9)


def test_different_seeds_deal_different_games():
    decks = set()
    for seed in range(8):
        env = loveletter_env.env(num_players=2)
        env.reset(seed=seed)
        decks.add((env.unwrapped.game.deck, env.agent_selection))
    assert len(decks) == 8


@pytest.mark.parametrize("scripted", [False, True], ids=["shuffled", "scripted deck"])
def test_round_1s_first_player_is_drawn_from_the_seeded_generator(num_players, scripted):
    """SPEC: round 1's first player is chosen at random from the seeded generator, a scripted
    deck or not: every seat starts some seed's game, and a seed always picks the same one."""
    options = {"deck": list(FULL_DECK)} if scripted else None

    def first(seed: int) -> str:
        env = loveletter_env.env(num_players=num_players)
        env.reset(seed=seed, options=options)
        assert env.unwrapped.game.current == env.agent_name_mapping[env.agent_selection]
        return env.agent_selection

    firsts = [first(seed) for seed in range(40)]
    assert set(firsts) == set(loveletter_env.env(num_players=num_players).possible_agents)
    assert [first(seed) for seed in range(40)] == firsts


def test_unseeded_resets_continue_the_seeded_generator():
    a, b = loveletter_env.env(num_players=4), loveletter_env.env(num_players=4)
    a.reset(seed=123)
    b.reset(seed=123)
    # The seeded deal and the hands and decks of the unseeded ones after it: equal across the two
    # envs, but each a new deal (a generator restarted at every reset would deal the same one).
    deals = [(tuple(a.unwrapped.game.hands), a.unwrapped.game.deck)]
    for _ in range(3):
        a.reset()
        b.reset()
        assert a.unwrapped.game.deck == b.unwrapped.game.deck
        assert a.unwrapped.game.hands == b.unwrapped.game.hands
        assert a.agent_selection == b.agent_selection
        deals.append((tuple(a.unwrapped.game.hands), a.unwrapped.game.deck))
    assert len(set(deals)) == len(deals), deals


def test_unknown_reset_option_only_warns():
    env = loveletter_env.env(num_players=2)
    with pytest.warns(UserWarning, match=r"unknown reset option\(s\) \['colour'\]; known options: \['deck', 'first"):
        env.reset(seed=0, options={"colour": "red", "options": 1})
    assert env.agents == ["player_0", "player_1"]


def test_reset_options_nested_under_options_are_named_and_ignored():
    deck = deal_deck(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD])
    env = loveletter_env.env(num_players=2)
    with pytest.warns(UserWarning, match=r"ignoring reset options nested under the key 'options' \(\['deck'\]\)"):
        env.reset(seed=0, options={"options": {"deck": deck}})
    assert env.unwrapped.game.deck != deck


@pytest.mark.parametrize("options", [5, "deck", [("first_player", 1)]])
def test_reset_options_that_are_no_mapping_are_refused_in_both_envs(options):
    """Not even a list of pairs, which dict() would take: options are a dict or None."""
    from loveletter_env.wrappers import LoveLetterGymEnv

    for env in (loveletter_env.env(num_players=2), LoveLetterGymEnv(opponents="random")):
        with pytest.raises(
            ValueError, match=r"^options must be a dict such as \{'deck': \.\.\., 'first_player': 0\} or None"
        ):
            env.reset(seed=0, options=options)


def test_stepping_a_raw_env_whose_agents_have_all_left_asks_for_a_reset():
    import numpy as np

    env = loveletter_env.raw_env(num_players=2, episode="round")
    env.reset(seed=0)
    while env.agents:
        obs, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(RuntimeError, match="the episode is over and every agent has left it: call reset()"):
        env.step(None)


def test_reset_options_are_both_optional():
    deck = deal_deck(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD])
    env = loveletter_env.env(num_players=2)
    env.reset(seed=1, options={"deck": deck})
    assert env.unwrapped.game.deck == deck
    env.reset(seed=1, options={"first_player": 1})
    assert env.agent_selection == "player_1"


# Agents and spaces ------------------------------------------------------------------


def test_agents_spaces_and_metadata(num_players):
    env = loveletter_env.env(num_players=num_players)
    env.reset(seed=0)
    names = [f"player_{i}" for i in range(num_players)]
    assert env.possible_agents == names and env.agents == names
    for agent in names:
        assert env.action_space(agent) == spaces.Discrete(41)
    assert env.metadata["name"] == "loveletter_v0"
    assert isinstance(env.unwrapped, loveletter_env.raw_env)


def test_each_agents_observation_space_is_seeded_alone():
    """Every agent held the same space object, so seeding one agent's space moved another's
    samples (PettingZoo's classic envs give each agent its own)."""
    env = loveletter_env.env(num_players=2)
    first, second = env.observation_space("player_0"), env.observation_space("player_1")
    assert first == second
    first.seed(0)
    alone = first.sample()["observation"]
    first.seed(0)
    second.seed(1)
    assert np.array_equal(first.sample()["observation"], alone)


def test_out_players_stay_in_agents_and_are_skipped():
    env = make_env(3, deal_deck(3, hands={0: GUARD, 1: PRIEST, 2: BARON}, draws=[KING, GUARD, GUARD]))
    env.step(act(GUARD, 1, PRIEST))  # player_1 is out
    assert env.agents == ["player_0", "player_1", "player_2"]
    assert env.agent_selection == "player_2"
    assert decode(env, "player_1").out[0]  # the out player sees themselves out
    assert env.observe("player_1")["action_mask"].sum() == 0
    env.step(act(GUARD, 1, HANDMAID))  # player_2 misses player_0
    assert env.agent_selection == "player_0"


def test_every_agent_is_told_the_end_and_then_removed():
    env = make_env(2, deal_deck(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID]), episode="round")
    env.step(act(GUARD, 1, PRIEST))
    finished = {}
    for agent in env.agent_iter():
        obs, reward, terminated, _, info = env.last()
        assert terminated and obs["action_mask"].sum() == 0
        finished[agent] = (reward, info["winners"])
        env.step(None)
    assert finished == {"player_0": (1.0, ["player_0"]), "player_1": (-1.0, ["player_0"])}
    assert env.agents == []


def test_action_mask_helper_matches_the_observation():
    env = loveletter_env.env(num_players=3)
    env.reset(seed=2)
    np.testing.assert_array_equal(env.unwrapped.action_mask(), env.observe(env.agent_selection)["action_mask"])


# Rendering --------------------------------------------------------------------------

# player_0 holds a Handmaid and draws a Priest; player_1 holds the Princess and will
# draw a Baron; the set-aside card is the Countess; the face-up cards are Guards.
RENDER_DECK = deal_deck(
    2, set_aside=COUNTESS, face_up=(GUARD, GUARD, GUARD), hands={0: HANDMAID, 1: PRINCESS}, draws=[PRIEST, BARON]
)


def test_ansi_render_shows_the_acting_players_hand_and_no_hidden_card():
    env = make_env(2, RENDER_DECK, render_mode="ansi")
    text = env.render()
    assert isinstance(text, str)
    assert "Handmaid" in text and "Priest" in text
    assert "Princess" not in text and "Countess" not in text

    env.step(act(PRIEST, 1))  # player_0 looks at the Princess; player_1 is to act
    text = env.render()
    assert "Princess" in text and "Baron" in text
    assert "Handmaid" not in text and "Countess" not in text


def test_human_render_prints_the_view(capsys):
    env = make_env(2, RENDER_DECK, render_mode="human")
    capsys.readouterr()
    env.step(HANDMAID_ACTION)
    printed = capsys.readouterr().out
    assert "Princess" in printed  # player_1, now to act, sees their own hand
    assert "Priest" not in printed  # player_0's kept card stays hidden
    assert env.render() is None
    assert "Princess" in capsys.readouterr().out


def decode(env, agent):
    return loveletter_env.decode_observation(env.observe(agent))


# Bad arguments and calls -----------------------------------------------------------


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


def assert_same_next_deal(env, twin) -> None:
    """An unseeded reset of ``env`` deals what one of ``twin`` (reset alike, never refused
    anything) deals: a refused reset did not reseed the generator. ``env_state`` cannot see
    the generator, and a reseeded one changes every later unseeded game."""
    env.reset()
    twin.reset()
    assert (env.unwrapped.game.deck, env.agent_selection) == (twin.unwrapped.game.deck, twin.agent_selection)


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

    env, twin = make_env(2, DECK), make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(ValueError, match="deck"):
        env.reset(seed=1, options={"deck": deck})
    assert env_state(env) == before  # a refused reset leaves the episode as it was
    assert_same_next_deal(env, twin)  # and its generator: the refused seed was not taken


def test_numpy_deck_is_accepted():
    env = loveletter_env.env(num_players=2)
    env.reset(seed=0, options={"deck": np.array(DECK), "first_player": np.int64(0)})
    assert env.unwrapped.game.deck == DECK


@pytest.mark.parametrize("num_players, bad", [(2, -1), (2, 2), (3, 3), (4, 4), (2, True), (2, "0"), (2, 1.0)], ids=repr)
def test_bad_first_player_is_refused(num_players, bad):
    with pytest.raises(ValueError, match="first_player"):
        engine.new_game(num_players, FULL_DECK, bad)
    env, twin = loveletter_env.env(num_players=num_players), loveletter_env.env(num_players=num_players)
    env.reset(seed=0)
    twin.reset(seed=0)
    before = env_state(env)
    with pytest.raises(ValueError, match="first_player"):
        env.reset(seed=1, options={"first_player": bad})
    assert env_state(env) == before
    assert_same_next_deal(env, twin)


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


def test_step_before_reset_is_an_error():
    env = loveletter_env.env(num_players=2)
    with pytest.raises(Exception, match="reset"):
        env.step(HANDMAID_ACTION)
    with pytest.raises(Exception, match="reset"):
        env.observe("player_0")


def test_raw_env_before_reset_says_to_reset():
    env = loveletter_env.raw_env(num_players=2)
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.step(HANDMAID_ACTION)
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.observe("player_0")
    with pytest.raises(RuntimeError, match=r"reset\(\)"):  # was an AttributeError on agent_selection
        env.action_mask()


@pytest.mark.parametrize(
    "action",
    [30.0, np.float32(30), True, "30", np.array(True), np.array(30.0), np.array([30])],
    ids=repr,
)
def test_actions_that_hold_no_single_integer_are_refused_not_truncated(action):
    env = make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(IllegalActionError, match="actions are integers"):
        env.step(action)
    assert env_state(env) == before
    with pytest.raises(IllegalActionError, match="actions are integers"):
        engine.step(start(2, hands={0: HANDMAID, 1: GUARD}, draws=[PRIEST]), action)


@pytest.mark.parametrize("wrap", [np.array, lambda a: np.array(a, dtype=np.uint8)], ids=["int64", "uint8"])
def test_a_0d_integer_array_in_the_action_space_is_played(wrap):
    """``Discrete(41).contains`` takes a 0-d integer array (what ``predict`` or ``argmax``
    often hands back), and so does ``decode_action``: the env and the engine play it as the
    integer it holds, where they refused it as illegal while listing it among the legal ones."""
    env = make_env(2, DECK)
    action = wrap(HANDMAID_ACTION)
    assert env.action_space("player_0").contains(action)
    env.step(action)
    assert env.agent_selection == "player_1"
    assert env.unwrapped.game.discards[0] == [HANDMAID]

    state = start(2, hands={0: HANDMAID, 1: GUARD}, draws=[PRIEST])
    engine.step(state, wrap(HANDMAID_ACTION))
    assert state.discards[0] == [HANDMAID]


@pytest.mark.parametrize("action", [np.array(act(GUARD, 1, PRINCESS)), np.array(41)], ids=["illegal", "out of range"])
def test_an_illegal_0d_integer_array_is_named_by_its_number(action):
    env = make_env(2, DECK)
    before = env_state(env)
    with pytest.raises(IllegalActionError, match=rf"^action {int(action)} .*is not legal for player_0"):
        env.step(action)
    assert env_state(env) == before


def test_unknown_agent_is_named():
    env = make_env(2, DECK)
    with pytest.raises(ValueError, match="unknown agent 'player_7'"):
        env.observe("player_7")
    # An unhashable value was a bare TypeError from the name lookup.
    with pytest.raises(ValueError, match=r"unknown agent \['player_0'\]; agents are \['player_0', 'player_1'\]"):
        env.observe(["player_0"])


@pytest.mark.parametrize("action", [10**5000, "x" * 100_000], ids=["5000-digit number", "long string"])
def test_a_huge_illegal_action_is_named_short_and_changes_nothing(action):
    """Neither a 5,000-digit number (Python refuses to print it) nor a long string is echoed
    whole: the error is still the env's IllegalActionError, a few hundred characters long."""
    env = loveletter_env.env()
    env.reset(seed=1)
    before = env.agent_selection, env.observe(env.agent_selection)["observation"].copy()
    with pytest.raises(IllegalActionError, match=r"\(actions are integers 0\.\.40\) is not legal for player_") as err:
        env.step(action)
    assert len(str(err.value)) < 1000
    assert env.agent_selection == before[0]
    assert (env.observe(env.agent_selection)["observation"] == before[1]).all()


@pytest.mark.parametrize("space", ["observation_space", "action_space"])
@pytest.mark.parametrize("agent", ["player_7", 0, ["player_0"]], ids=repr)
def test_the_space_of_an_unknown_agent_is_refused_naming_it(space, agent):
    """``observe`` names an unknown agent; the space lookups were a bare ``KeyError: 0`` (a
    seat number for a name) or ``TypeError: unhashable type: 'list'``, naming no agents."""
    env = loveletter_env.env(num_players=2)
    with pytest.raises(ValueError, match=r"unknown agent .*; agents are \['player_0', 'player_1'\]"):
        getattr(env, space)(agent)
    assert getattr(env, space)("player_1") is getattr(env.unwrapped, f"{space}s")["player_1"]
