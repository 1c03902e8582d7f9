"""The Gymnasium single-agent env, the registry entries and the library-free adapters, and bad
input to them refused before anything changes."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import gymnasium
import numpy as np
import pettingzoo
import pytest
from conftest import ROOT
from gymnasium.utils.env_checker import check_env

import loveletter_env
from loveletter_env import env as make_env
from loveletter_env.agents.base import AgentError
from loveletter_env.agents.errors import AgentTypeError
from loveletter_env.cards import FULL_DECK
from loveletter_env.engine import IllegalActionError
from loveletter_env.observation import OBSERVATION_SIZE
from loveletter_env.replay import ReplayError, load_replay
from loveletter_env.wrappers import GYM_ENV_ID, PETTINGZOO_ENV_ID, LoveLetterGymEnv, RecordReplay, RLlibLoveLetterEnv
from loveletter_env.wrappers._extras import MissingExtraError, require
from loveletter_env.wrappers.opponents import make_opponents
from loveletter_env.wrappers.tianshou import NumericInfoWrapper


def play_out(env: gymnasium.Env, seed: int, rng: np.random.Generator) -> list[tuple]:
    """One episode with uniformly random legal actions; every transition as a tuple."""
    obs, info = env.reset(seed=seed)
    trajectory = [(obs.copy(), info["learner_seat"])]
    done = False
    while not done:
        mask = env.unwrapped.action_masks()
        assert np.array_equal(mask, info["action_mask"])
        action = int(rng.choice(np.flatnonzero(mask)))
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info.get("illegal_action")
        trajectory.append((action, obs.copy(), reward, terminated))
        done = terminated or truncated
    return trajectory


class FirstLegal:
    """An opponent that plays its first legal action and counts its turns."""

    def __init__(self):
        self.calls = 0

    def act(self, observation) -> int:
        self.calls += 1
        return int(np.flatnonzero(observation["action_mask"])[0])


# Registration ------------------------------------------------------------------------
def test_import_registers_both_ids_without_loading_the_envs_or_optional_libraries():
    code = (
        "import sys, gymnasium, pettingzoo, loveletter_env\n"
        f"gymnasium.spec({GYM_ENV_ID!r}); pettingzoo.spec('aec', {PETTINGZOO_ENV_ID!r})\n"
        "heavy = [m for m in ('training', 'loveletter_env.wrappers.single_agent',"
        " 'sb3_contrib', 'torchrl', 'tianshou', 'ray', 'onnxruntime') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_gymnasium_make_builds_the_single_agent_env_with_its_kwargs():
    env = gymnasium.make(GYM_ENV_ID, num_players=3, opponents="rule", episode="round")
    assert isinstance(env.unwrapped, LoveLetterGymEnv)
    assert env.unwrapped.num_players == 3 and env.unwrapped.aec.episode == "round"
    assert env.observation_space.shape == (loveletter_env.OBSERVATION_SIZE,)
    assert env.action_space == gymnasium.spaces.Discrete(41)


@pytest.mark.parametrize("env_id", [PETTINGZOO_ENV_ID, "loveletter/loveletter-v0", "loveletter/loveletter"])
def test_pettingzoo_registry_makes_the_aec_env(env_id):
    aec = pettingzoo.make("aec", env_id, num_players=4, episode="round")
    assert isinstance(aec.unwrapped, loveletter_env.raw_env)
    assert aec.possible_agents == [f"player_{i}" for i in range(4)]
    aec.reset(seed=0)
    assert aec.observe(aec.agent_selection)["action_mask"].sum() > 0


def test_pettingzoo_registry_env_passes_the_api_test():
    from pettingzoo.test import api_test

    api_test(pettingzoo.make("aec", PETTINGZOO_ENV_ID, num_players=3), num_cycles=50)


# Gymnasium API -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs", [{}, {"num_players": 3, "episode": "round"}, {"num_players": 4, "opponents": "rule"}]
)
def test_passes_gymnasium_check_env(kwargs):
    env = gymnasium.make(GYM_ENV_ID, **kwargs)
    check_env(env.unwrapped)


def test_mask_method_and_info_agree_with_the_aec_env_at_every_step():
    env = gymnasium.make(GYM_ENV_ID, num_players=3, opponents="random")
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=1)
    inner = env.unwrapped
    done = False
    while not done:
        aec_obs = inner.aec.observe(inner.aec.possible_agents[inner.learner_seat])
        assert inner.aec.agent_selection == f"player_{inner.learner_seat}"
        assert np.array_equal(inner.action_masks(), aec_obs["action_mask"])
        assert np.array_equal(info["action_mask"], aec_obs["action_mask"])
        assert np.array_equal(obs, aec_obs["observation"])
        obs, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    assert reward in (-1.0, 1.0)
    assert (reward == 1.0) == (f"player_{inner.learner_seat}" in info["winners"])
    assert info["action_mask"].all(), "the mask is all ones once the episode is over"


def test_same_seed_gives_the_same_episode_and_seats_vary_with_the_seed():
    make = lambda: gymnasium.make(GYM_ENV_ID, num_players=3, opponents="rule")  # noqa: E731
    first = play_out(make(), seed=7, rng=np.random.default_rng(0))
    second = play_out(make(), seed=7, rng=np.random.default_rng(0))
    assert len(first) == len(second)
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)
    env = make()
    seats = {env.reset(seed=s)[1]["learner_seat"] for s in range(30)}
    assert seats == {0, 1, 2}


def test_learner_seat_can_be_fixed_and_bad_seats_are_refused():
    env = LoveLetterGymEnv(num_players=4, learner_seat=2)
    assert all(env.reset(seed=s)[1]["learner_seat"] == 2 for s in range(5))
    assert env.reset(seed=0, options={"learner_seat": 1})[1]["learner_seat"] == 1
    with pytest.raises(ValueError, match="learner_seat"):
        LoveLetterGymEnv(num_players=2, learner_seat=2)
    with pytest.raises(ValueError, match="learner_seat"):
        env.reset(options={"learner_seat": -1})


def test_each_opponent_plays_its_own_seat():
    opponents = [FirstLegal(), FirstLegal(), FirstLegal()]
    env = LoveLetterGymEnv(num_players=4, opponents=opponents, learner_seat=0, episode="round")
    # Seat 3 opens holding two Handmaids (nothing it plays can end the round).
    deck = [1, 4, 1, 1, 1, 4, 1, 2, 2, 3, 3, 5, 5, 6, 7, 8]
    env.reset(seed=3, options={"deck": deck, "first_player": 3})
    # Seat 3 sits just before the learner: the last opponent, the only one to act so far.
    assert [o.calls for o in opponents] == [0, 0, 1]


@pytest.mark.parametrize("opponents", [None, 3, b"rule", {"seat": "rule"}])
def test_opponents_that_are_no_spec_nor_list_are_named(opponents):
    with pytest.raises(ValueError, match=r"^opponents must be an agent spec .* or a list of 1, one per other seat"):
        LoveLetterGymEnv(opponents=opponents)


def test_opponents_in_a_set_are_refused_as_they_have_no_seat_order():
    # The seats would follow the hash seed: another process, another seating.
    with pytest.raises(ValueError, match=r"^opponents must be a list or tuple, .* not a set"):
        LoveLetterGymEnv(num_players=3, opponents={"rule", "random"})


@pytest.mark.parametrize("opponents", [FirstLegal, [FirstLegal, "rule"]])
def test_an_agent_class_given_for_an_instance_is_named_before_any_play(opponents):
    with pytest.raises(AgentTypeError, match=r"not the class FirstLegal: pass FirstLegal\(\)"):
        LoveLetterGymEnv(num_players=3, opponents=opponents)


@pytest.mark.parametrize("config", ["rule", 3, [("opponents", "rule")]])
def test_an_rllib_config_that_is_no_dict_is_named(config):
    with pytest.raises(ValueError, match=r"^config is a dict of LoveLetterGymEnv's arguments"):
        RLlibLoveLetterEnv(config)


def test_render_before_the_first_reset_says_to_reset():
    assert LoveLetterGymEnv(opponents="random", render_mode="ansi").render() == "(call reset() first)"


def test_reset_options_fix_the_deal():
    deck = [8, 7, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1]
    env = LoveLetterGymEnv(num_players=2, learner_seat=0)
    obs, _ = env.reset(seed=0, options={"deck": deck, "first_player": 0})
    view = loveletter_env.decode_observation(obs)
    # Set aside 8; face up 7, 6, 5; the learner (first) gets 5 and draws 4 after the opponent's 4.
    assert sorted(view.hand) == [4, 5]


def test_round_episodes_that_end_before_the_learner_acts_are_replayed_and_reported():
    env = LoveLetterGymEnv(num_players=4, opponents="rule", episode="round")
    replayed = 0
    for seed in range(60):
        obs, info = env.reset(seed=seed)
        assert env.action_masks().any() and not env.action_masks().all()
        for reward in info.get("unplayed_rewards", []):
            assert reward in (-1.0, 1.0)
            replayed += 1
    assert replayed > 0


# Illegal actions and misuse ------------------------------------------------------------
def test_illegal_action_loses_by_default_and_raises_on_request():
    env = LoveLetterGymEnv(opponents="random")
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)

    strict = LoveLetterGymEnv(opponents="random", illegal_action="raise")
    _, info = strict.reset(seed=0)
    before = strict.aec.observe(strict.aec.agent_selection)["observation"].copy()
    with pytest.raises(IllegalActionError, match=str(illegal)):
        strict.step(illegal)
    assert np.array_equal(strict.aec.observe(strict.aec.agent_selection)["observation"], before)
    strict.step(int(np.flatnonzero(info["action_mask"])[0]))  # still the learner's turn


@pytest.mark.parametrize("illegal_action", ["raise", "lose"])
@pytest.mark.parametrize("action", [41, -1, np.int64(99), 2.5, "3", None])
def test_out_of_range_or_non_integer_actions_are_refused_and_change_nothing(action, illegal_action):
    # No move at all, in either mode: "lose" would end the episode on the caller's bug.
    env = LoveLetterGymEnv(opponents="random", illegal_action=illegal_action)
    _, info = env.reset(seed=0)
    before = (env._done, env._observation().tobytes(), env.action_masks().tobytes())
    with pytest.raises(ValueError, match=r"action must be an integer index in 0\.\.40"):
        env.step(action)
    assert (env._done, env._observation().tobytes(), env.action_masks().tobytes()) == before
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))  # still the learner's turn
    assert not info.get("illegal_action")


def test_bad_constructor_arguments_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="illegal_action"):
        LoveLetterGymEnv(illegal_action="ignore")
    with pytest.raises(ValueError, match="expected 2 opponent"):
        LoveLetterGymEnv(num_players=3, opponents=["random"])
    with pytest.raises(ValueError, match="unknown agent 'grandmaster'"):
        LoveLetterGymEnv(opponents="grandmaster")
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        LoveLetterGymEnv(opponents=str(tmp_path / "missing.pt"))
    with pytest.raises(TypeError, match="opponent"):
        LoveLetterGymEnv(opponents=[42])
    with pytest.raises(ValueError, match="num_players"):
        LoveLetterGymEnv(num_players=5)
    with pytest.raises(ValueError, match="render_mode"):
        LoveLetterGymEnv(render_mode="rgb_array")


def test_checkpoint_opponents_are_loaded_through_training(tmp_path):
    torch = pytest.importorskip("torch")
    from training.learn.checkpoint import model_payload, save_checkpoint
    from training.learn.policy_agent import PolicyAgent
    from training.learn.ppo import ActorCritic

    def saved(path, seed):
        """A checkpoint at ``path`` of a network drawn from ``seed``; returns its weights."""
        weights = model_payload(ActorCritic(generator=torch.Generator().manual_seed(seed)))
        save_checkpoint(path, {"model": weights})
        return weights["state_dict"]

    # A checkpoint file, and a run folder whose best.pt is loaded, not its latest.pt.
    file_weights = saved(tmp_path / "file.pt", 1)
    best_weights = saved(tmp_path / "run" / "best.pt", 2)
    latest_weights = saved(tmp_path / "run" / "latest.pt", 3)
    env = gymnasium.make(GYM_ENV_ID, num_players=3, opponents=[str(tmp_path / "file.pt"), str(tmp_path / "run")])
    opponents = env.unwrapped.opponents
    assert [type(agent) for agent in opponents] == [PolicyAgent, PolicyAgent]

    def plays_with(agent, weights) -> bool:
        state = agent.model.state_dict()
        return state.keys() == weights.keys() and all(torch.equal(state[k].cpu(), weights[k]) for k in weights)

    assert plays_with(opponents[0], file_weights)
    assert plays_with(opponents[1], best_weights) and not plays_with(opponents[1], latest_weights)
    trajectory = play_out(env, seed=2, rng=np.random.default_rng(2))
    assert trajectory[-1][2] in (-1.0, 1.0)


def test_render_shows_the_learners_view():
    env = gymnasium.make(GYM_ENV_ID, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text


def test_render_says_an_episode_an_illegal_action_ended_is_over():
    """Was: the table still showed the learner "[to act]" with its legal moves, which ``step``
    refused to play."""
    env = LoveLetterGymEnv(num_players=3, episode="round", render_mode="ansi")
    _, info = env.reset(seed=0)
    before = env.render()
    assert "[to act]" in before and "Legal moves:" in before
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    assert env.step(illegal)[1:3] == (-1.0, True)
    text = env.render()
    assert "[to act]" not in text and "Legal moves:" not in text
    # The table as it stood, then why it stopped.
    table = before.split("\nLegal moves:")[0].replace(" [to act]", "")
    why = f"abandoned when the learner played the illegal action {illegal}; call reset"
    assert text == f"{table}\nEpisode over: {why}()"
    with pytest.raises(RuntimeError, match=why):
        env.step(illegal)


def test_human_render_mode_shows_the_table_after_an_illegal_action_too(capsys):
    """Gymnasium's "human" mode renders at every step: the step an illegal action ended printed nothing."""
    env = LoveLetterGymEnv(num_players=3, episode="round", render_mode="human")
    _, info = env.reset(seed=0)
    capsys.readouterr()
    env.step(int(np.flatnonzero(info["action_mask"] == 0)[0]))
    assert "Episode over: abandoned when the learner played the illegal action" in capsys.readouterr().out


def test_render_says_an_episode_an_opponent_broke_is_over():
    opponent = SwitchableAgent()
    env = LoveLetterGymEnv(num_players=2, opponents=opponent, render_mode="ansi")
    with pytest.raises(AgentError):
        env.reset(seed=1, options={"first_player": 0, "learner_seat": 1})
    text = env.render()
    assert "[to act]" not in text and "Legal moves:" not in text
    assert "\nEpisode over: abandoned when an opponent failed in reset() (AgentError: " in text
    assert text.endswith("; call reset()")


def test_render_of_an_episode_played_to_its_end_shows_its_result():
    env = LoveLetterGymEnv(num_players=2, episode="round", render_mode="ansi")
    _, info = env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    text = env.render()
    assert "Round over - winners:" in text and "Episode over" not in text and "Legal moves:" not in text


# Vector envs ---------------------------------------------------------------------------
def test_sync_vector_env_steps_with_the_stacked_masks():
    envs = gymnasium.make_vec(GYM_ENV_ID, num_envs=3, vectorization_mode="sync", opponents="random", episode="round")
    rng = np.random.default_rng(0)
    obs, info = envs.reset(seed=0)
    finished = 0
    for _ in range(150):
        masks = info["action_mask"]
        assert masks.shape == (3, 41)
        assert np.array_equal(np.stack(envs.call("action_masks")), masks)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert not info.get("illegal_action", np.zeros(3, bool)).any()
        finished += int(terminated.sum())
        assert set(np.unique(rewards[terminated])) <= {-1.0, 1.0}
    assert obs.shape == (3, loveletter_env.OBSERVATION_SIZE)
    assert finished > 10


def test_async_vector_env_runs_the_env_in_worker_processes():
    envs = gymnasium.make_vec(GYM_ENV_ID, num_envs=2, vectorization_mode="async", opponents="rule")
    try:
        obs, info = envs.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(20):
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
            obs, rewards, terminated, truncated, info = envs.step(actions)
        assert obs.shape == (2, loveletter_env.OBSERVATION_SIZE)
        assert np.array_equal(np.stack(envs.call("action_masks")), info["action_mask"])
    finally:
        envs.close()


# Adapters that need no optional library -------------------------------------------------
@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_rllib_adapter_has_the_observation_layout_rllib_masking_modules_read():
    env = RLlibLoveLetterEnv({"num_players": 3, "opponents": "rule"})
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=4)
    assert set(obs) == {"observations", "action_mask"}
    assert obs["action_mask"].dtype == np.float32
    assert np.array_equal(obs["action_mask"], env.action_masks().astype(np.float32))
    assert env.observation_space.contains(obs)
    action = int(np.flatnonzero(obs["action_mask"])[0])
    obs, *_ = env.step(action)
    assert env.observation_space.contains(obs)


def test_rllib_aec_observations_are_renamed_for_every_agent_at_every_step():
    # Not pettingzoo's api_test: it requires int8 masks under "action_mask", and RLlib's
    # modules take float masks.
    from loveletter_env.wrappers import RLlibObservationAEC

    aec = RLlibObservationAEC(loveletter_env.env(num_players=3, episode="round"))
    assert aec.observation_space("player_1") is aec.observation_space("player_1")
    aec.reset(seed=1)
    rng = np.random.default_rng(1)
    for agent in aec.agent_iter():
        obs, reward, terminated, truncated, info = aec.last()
        assert set(obs) == {"observations", "action_mask"} and obs["action_mask"].dtype == np.float32
        assert aec.observation_space(agent).contains(obs)
        inner = aec.unwrapped.observe(agent)
        assert np.array_equal(obs["action_mask"], inner["action_mask"])
        assert np.array_equal(obs["observations"], inner["observation"])
        aec.step(None if terminated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_rllib_aec_spaces_are_seeded_one_agent_at_a_time():
    """Seeding one agent's space leaves another's samples as they were (no subspace is shared)."""
    from loveletter_env.wrappers import RLlibObservationAEC

    aec = RLlibObservationAEC(loveletter_env.env(num_players=2))
    first, second = aec.observation_space("player_0"), aec.observation_space("player_1")
    first.seed(0)
    alone = first.sample()["observations"]
    first.seed(0)
    second.seed(1)
    assert np.array_equal(first.sample()["observations"], alone)


@pytest.mark.parametrize("config", ["rule", 3, [("num_players", 3)]])
def test_an_rllib_multi_agent_config_that_is_no_dict_is_named(config, monkeypatch):
    import types

    from loveletter_env.wrappers import rllib

    # Without Ray: the config is RLlib's business only once it is a dict of the env's arguments.
    monkeypatch.setattr(rllib, "require", lambda module, extra: types.SimpleNamespace(PettingZooEnv=lambda env: env))
    with pytest.raises(ValueError, match=r"^config is a dict of loveletter_env.env's arguments"):
        rllib.rllib_multi_agent_env(config)


def test_numeric_info_wrapper_reports_the_result_as_numbers():
    aec = NumericInfoWrapper(loveletter_env.env(num_players=3, episode="round"))
    aec.reset(seed=0)
    rng = np.random.default_rng(0)
    while True:
        obs, reward, terminated, truncated, info = aec.last()
        if terminated:
            break
        assert info == {}
        aec.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert info["won"].dtype == np.float32 and info["won"].sum() >= 1
    assert info["tokens"].tolist() == aec.unwrapped.infos["player_0"]["tokens"]


def test_missing_extra_names_the_pip_install_line():
    with pytest.raises(MissingExtraError, match=r'pip install "loveletter-env\[sb3\]"'):
        require("surely_not_an_installed_module", "sb3")


def test_a_module_that_is_installed_but_fails_to_import_is_not_called_missing(tmp_path, monkeypatch):
    # An installed library whose own import fails (a dependency of its own missing or broken): "not
    # installed" would send the user to a pip install that reports everything already installed.
    (tmp_path / "broken_extra_module.py").write_text("import surely_not_an_installed_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as caught:
        require("broken_extra_module", "sb3")
    message = str(caught.value)
    assert "not installed" not in message
    assert "'broken_extra_module' is installed but cannot be imported" in message
    assert "No module named 'surely_not_an_installed_dependency'" in message
    assert 'pip install "loveletter-env[sb3]"' in message
    # A missing parent package is the module missing.
    with pytest.raises(MissingExtraError, match=r"'surely_not_installed\.sub' is not installed"):
        require("surely_not_installed.sub", "sb3")


@pytest.mark.parametrize("count", [0, -1, 1.0, "2", True])
def test_make_opponents_refuses_a_count_that_is_no_positive_integer(count):
    with pytest.raises(ValueError, match=r"^count must be a positive integer \(the number of opponents\), got"):
        make_opponents(["rule", "rule"], count)


def test_make_opponents_seeds_every_seat_from_the_largest_seed():
    # Seat i is seeded seed + i: the error named 2**63, a seed the caller never passed.
    from loveletter_env.validation import MAX_SEED

    assert len(make_opponents("random", 3, seed=MAX_SEED)) == 3
    with pytest.raises(ValueError, match=r"got -1$"):
        make_opponents("random", 3, seed=-1)


# Bad input: refused before anything changes -----------------------------------------


def gym_env(num_players: int = 3, **kwargs):
    return gymnasium.make("loveletter/LoveLetter-v0", num_players=num_players, opponents="rule", **kwargs).unwrapped


def snapshot(env) -> tuple:
    """What a refused reset must leave as it was."""
    return (
        env.learner_seat,
        env._learner,
        env._done,
        env.np_random.bit_generator.state["state"]["state"],
        env.aec.agent_selection,
        env._observation().tobytes(),
        env.action_masks().tobytes(),
    )


def first_choice_trail(env, seed: int) -> list:
    """Legal first-choice moves until the episode ends, then a fresh seedless reset: the trail."""
    trail = []
    done = False
    while not done:
        action = int(np.flatnonzero(env.action_masks())[0])
        obs, reward, done, _, info = env.step(action)
        assert not info.get("illegal_action")
        trail.append((action, reward, obs.tobytes()))
    obs, info = env.reset()  # draws from the generator a refused reset must not have touched
    trail.append((info["learner_seat"], obs.tobytes()))
    return trail


@pytest.mark.parametrize(
    "options",
    [
        {"deck": [1] * 15, "learner_seat": 0},
        {"deck": list(FULL_DECK), "first_player": 7, "learner_seat": 0},
        {"learner_seat": 5},
        {"deck": [True] + list(FULL_DECK[1:]), "learner_seat": 0},
    ],
    ids=["short deck", "bad first player", "bad seat", "bool in deck"],
)
def test_refused_gym_reset_changes_nothing(options):
    env, untouched = gym_env(), gym_env()
    env.reset(seed=4)
    untouched.reset(seed=4)
    assert env.learner_seat != 0  # so a premature seat change would show
    before = snapshot(env)
    with pytest.raises(ValueError):
        env.reset(options=options)
    assert snapshot(env) == before
    # The episode in progress goes on exactly as in an env that never saw the bad call.
    assert first_choice_trail(env, 4) == first_choice_trail(untouched, 4)


def test_an_unknown_gym_reset_option_is_named_once_beside_every_known_one():
    # The AEC env's warning lists its own options only; the learner's seat is this env's, and a
    # misspelt "learner_seat" must not be answered with a list that leaves it out.
    env = LoveLetterGymEnv(num_players=2, opponents="rule", episode="round")
    seed = next(s for s in range(100) if "unplayed_rewards" in env.reset(seed=s)[1])  # a deal replayed in reset
    with pytest.warns(UserWarning) as caught:
        env.reset(seed=seed, options={"learnerseat": 1})
    assert len(caught) == 1
    assert "['learnerseat']; known options: ['deck', 'first_player', 'learner_seat']" in str(caught[0].message)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3", np.float64(2.0), 2**63, 2**64])
def test_bad_seeds_are_a_value_error_naming_the_seed(seed):
    message = r"seed must be None or a non-negative integer below 2\*\*63, got"
    aec = make_env(num_players=2)
    with pytest.raises(ValueError, match=message):
        aec.reset(seed=seed)
    env = gym_env()
    env.reset(seed=1)
    before = snapshot(env)
    with pytest.raises(ValueError, match=message):
        env.reset(seed=seed)
    assert snapshot(env) == before


def test_numpy_integer_seeds_are_accepted_and_match_python_ints():
    first, second = make_env(num_players=2), make_env(num_players=2)
    first.reset(seed=np.int64(9))
    second.reset(seed=9)
    assert first.observe(first.agent_selection)["observation"].tobytes() == (
        second.observe(second.agent_selection)["observation"].tobytes()
    )
    obs_np, _ = gym_env().reset(seed=np.int32(9))
    obs_int, _ = gym_env().reset(seed=9)
    assert obs_np.tobytes() == obs_int.tobytes()


ASYNC_VECTOR_SCRIPT = """
import sys
import gymnasium
import numpy as np
import torch
import loveletter_env

# The parent has run parallel torch ops before the workers fork, as a training script would.
torch.nn.init.orthogonal_(torch.empty(256, 646))
envs = gymnasium.make_vec(
    "loveletter/LoveLetter-v0", num_envs=2, vectorization_mode="async", opponents=sys.argv[1]
)
obs, info = envs.reset(seed=0)
for _ in range(5):
    actions = np.array([np.flatnonzero(mask)[0] for mask in info["action_mask"]])
    obs, reward, terminated, truncated, info = envs.step(actions)
envs.close()
print("done", obs.shape)
"""


def test_async_vector_env_with_checkpoint_opponents_works_with_default_settings(tmp_path):
    # Forked workers once deadlocked in torch's thread pool, and a killed parent left them behind.
    script = tmp_path / "async_vector_env_check.py"
    script.write_text(ASYNC_VECTOR_SCRIPT)
    checkpoint = str(ROOT / "checkpoints/shipped/ppo_2p.pt")
    try:
        result = subprocess.run(
            [sys.executable, str(script), checkpoint], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
    finally:
        leftover = subprocess.run(["pgrep", "-f", str(script)], capture_output=True, text=True).stdout.split()
        for pid in leftover:  # a hang leaves workers behind: end them so the suite goes on
            subprocess.run(["kill", "-9", pid])
    assert result.returncode == 0, result.stderr
    assert f"done (2, {OBSERVATION_SIZE})" in result.stdout
    assert leftover == [], "worker processes outlived the vector env"


class SwitchableAgent:
    """Returns None (a broken agent) until ``fixed``, then plays its first legal action."""

    fixed = False

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0]) if self.fixed else None


@pytest.mark.parametrize("illegal_action", ["raise", "lose"])
@pytest.mark.parametrize("fails_in", ["reset", "step"])
def test_an_episode_an_opponent_broke_refuses_to_step_until_reset(illegal_action, fails_in):
    opponent = SwitchableAgent()
    learner_seat = 1 if fails_in == "reset" else 0  # player_0 starts: the opponent first, or the learner
    env = gymnasium.make(
        "loveletter/LoveLetter-v0", num_players=2, opponents=opponent, illegal_action=illegal_action
    ).unwrapped
    with pytest.raises(AgentError, match="returned None"):
        env.reset(seed=1, options={"first_player": 0, "learner_seat": learner_seat})
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    # The opponent is still to act: any step would play the learner's action in its seat.
    assert env.aec.agent_selection == env.aec.possible_agents[1 - learner_seat]
    for action in range(41):
        with pytest.raises(RuntimeError, match=rf"abandoned when an opponent failed in {fails_in}\(\) .*call reset"):
            env.step(action)
    opponent.fixed = True
    obs, info = env.reset(seed=1, options={"first_player": 0, "learner_seat": learner_seat})
    assert env.aec.agent_selection == env.aec.possible_agents[learner_seat]
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert not info.get("illegal_action")


@pytest.mark.parametrize("illegal_action", ["raise", "lose"])
def test_a_reset_cut_short_leaves_no_episode_to_step(illegal_action):
    # The AEC env is dealt, then the reset stops (Ctrl-C, an error) before the opponents have played
    # up to the learner's turn. The episode before it was in progress: step() played the learner's
    # action in the opponent's seat ("raise") or called a legal move illegal ("lose").
    env = LoveLetterGymEnv(num_players=2, opponents="random", illegal_action=illegal_action, learner_seat=0)
    env.reset(seed=0, options={"first_player": 0})
    deal = env.aec.reset

    def dealt_then_interrupted(**kwargs):
        deal(**kwargs)
        raise KeyboardInterrupt

    env.aec.reset = dealt_then_interrupted
    with pytest.raises(KeyboardInterrupt):
        env.reset(seed=1, options={"first_player": 0, "learner_seat": 1})
    env.aec.reset = deal
    assert env.aec.agent_selection == "player_0"  # the opponent is to act
    opponent_move = int(np.flatnonzero(env.aec.observe("player_0")["action_mask"])[0])
    with pytest.raises(RuntimeError, match=r"abandoned when reset\(\) did not finish; call reset"):
        env.step(opponent_move)
    assert env.aec.agent_selection == "player_0"
    obs, info = env.reset(seed=1, options={"first_player": 0, "learner_seat": 1})
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert not info.get("illegal_action")


class FailingReset(SwitchableAgent):
    fixed = True

    def reset(self, seed=None):
        raise RuntimeError("no network")


def test_an_opponent_whose_reset_fails_leaves_no_episode_to_step():
    env = gymnasium.make("loveletter/LoveLetter-v0", num_players=2, opponents=FailingReset()).unwrapped
    with pytest.raises(RuntimeError, match="no network"):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"failed in reset\(\) \(RuntimeError: no network\); call reset"):
        env.step(0)


class SeedlessReset(FirstLegal):
    """An opponent whose ``reset`` takes no seed (the agent protocol's reset is optional, and so is its seed)."""

    def __init__(self):
        super().__init__()
        self.resets = 0

    def reset(self):
        self.resets += 1


class SeededReset(FirstLegal):
    """The same play, with a reset that takes a seed."""

    def reset(self, seed=None):
        pass


def test_an_opponent_whose_reset_takes_no_seed_is_reset_without_one():
    # training.evaluate resets such an agent with reset(); the env called reset(seed=...) and failed.
    opponents = [SeedlessReset(), "rule"]
    env = LoveLetterGymEnv(num_players=3, opponents=opponents, episode="round")
    seeded = LoveLetterGymEnv(num_players=3, opponents=[SeededReset(), "rule"], episode="round")
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        # The seeds drawn for the opponents are drawn all the same: the episode is the one a
        # seeded opponent that plays alike gets.
        assert obs.tobytes() == seeded.reset(seed=seed)[0].tobytes()
    assert opponents[0].resets >= 3


# Recording replays ------------------------------------------------------------------------
def record_episode(env, seed) -> list[int]:
    """Play one episode of ``env`` (a :class:`RecordReplay`) with first legal actions; its actions."""
    env.reset(seed=seed)
    return play_on(env)


def play_on(env) -> list[int]:
    """Play the episode ``env`` is in to its end with first legal actions, without a reset; its actions."""
    actions = []
    for _agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        actions.append(int(np.flatnonzero(obs["action_mask"])[0]))
        env.step(actions[-1])
    return actions


def test_recorder_saves_an_episode_seeded_with_a_numpy_integer(tmp_path):
    # The env takes numpy seeds; the replay records it as a plain int, which JSON can hold.
    env = RecordReplay(loveletter_env.env(num_players=2, episode="round"), directory=tmp_path)
    actions = record_episode(env, np.int64(3))
    replay = load_replay(env.last_path)
    assert replay.metadata["seed"] == 3 and type(replay.metadata["seed"]) is int
    assert [step.action for step in replay.rounds[0].steps] == actions


@pytest.mark.parametrize(
    "metadata, problem",
    [
        ({"lr": np.float32(0.1)}, r"metadata\.lr input was not a valid JSON value"),
        ({"score": float("nan")}, r"metadata\.score must be a finite number"),
        ({1: "x"}, r"must be a string"),
    ],
)
def test_recorder_refuses_metadata_a_replay_cannot_hold_before_any_move(tmp_path, metadata, problem):
    with pytest.raises(ReplayError, match=rf"^metadata cannot be written to a replay: .*{problem}"):
        RecordReplay(loveletter_env.env(num_players=2), directory=tmp_path, metadata=metadata)


@pytest.mark.parametrize(
    "details, problem",
    [
        ({"bogus": 1}, r"details\.bogus is not a known key"),
        ({"value": float("nan")}, r"details\.value must be a finite number"),
        ({"probabilities": {"40": 1.0}}, r"details\.probabilities must map legal actions"),
    ],
)
def test_recorder_refuses_details_a_replay_cannot_hold_and_keeps_the_episode(tmp_path, details, problem):
    env = RecordReplay(loveletter_env.env(num_players=2, episode="round"), directory=tmp_path)
    env.reset(seed=0)
    with pytest.raises(ReplayError, match=problem):
        env.set_details(details)
    # Nothing was attached: the same episode (no reset, which would clear any details) plays on
    # and its replay is saved and loads.
    actions = play_on(env)
    replay = load_replay(env.last_path)
    assert [step.action for step in replay.rounds[0].steps] == actions
    assert all(step.details is None for step in replay.rounds[0].steps)


def test_recorder_keeps_the_details_of_a_refused_move_for_the_next_one(tmp_path):
    env = RecordReplay(loveletter_env.env(num_players=2, episode="round"), directory=tmp_path)
    env.reset(seed=0)
    mask = env.observe(env.agent_selection)["action_mask"]
    legal, illegal = int(np.flatnonzero(mask)[0]), int(np.flatnonzero(mask == 0)[0])
    env.set_details({"value": 0.25})
    with pytest.raises(IllegalActionError):
        env.step(illegal)
    env.step(legal)
    while not all(env.terminations.values()):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    first = load_replay(env.last_path).rounds[0].steps[0]
    assert (first.action, first.details) == (legal, {"value": 0.25})


def test_recorder_never_replaces_a_replay_already_in_its_folder(tmp_path):
    # A second recorder on the same folder (a rerun of a script, a second env beside the
    # first) starts its count at 0 too: it must take the next free name, not overwrite.
    first = RecordReplay(loveletter_env.env(num_players=2, episode="round"), directory=tmp_path)
    record_episode(first, 1)
    kept = first.last_path.read_text()
    second = RecordReplay(loveletter_env.env(num_players=2, episode="round"), directory=tmp_path)
    actions = record_episode(second, 2)
    assert first.last_path.read_text() == kept
    assert second.last_path == tmp_path / "episode_00001.json"
    assert [step.action for step in load_replay(second.last_path).rounds[0].steps] == actions
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episode_00000.json", "episode_00001.json"]


def test_recorder_keeps_a_move_the_env_made_before_an_interruption(tmp_path):
    # Ctrl-C while the env prints the table (render_mode="human") comes after the move was
    # made: the recorder must keep it, or the rest of the episode no longer replays.
    env = RecordReplay(loveletter_env.env(num_players=2, episode="round", render_mode="human"), directory=tmp_path)
    renders = 0

    def interrupted_render() -> None:
        nonlocal renders
        renders += 1
        if renders == 2:  # the first move's table (the first is reset's)
            raise KeyboardInterrupt

    env.unwrapped.render = interrupted_render
    env.reset(seed=2)  # a round of 9 moves
    actions = []
    for _agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        action = None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0])
        with contextlib.suppress(KeyboardInterrupt):  # a notebook user carries on with the episode
            env.step(action)
        if action is not None:
            actions.append(action)
    assert renders > 2
    assert [step.action for step in load_replay(env.last_path).rounds[0].steps] == actions


@pytest.mark.parametrize("prefix", ["../outside", "sub/episode", "/tmp/elsewhere", "a\0b", None, 3])
def test_recorder_refuses_a_prefix_that_is_no_file_name_in_its_folder(tmp_path, prefix):
    # "../outside" and "/tmp/elsewhere" saved outside the folder (an absolute prefix replaced it
    # whole), None and 3 became "None_00000.json" and "3_00000.json", and a NUL failed only
    # when the first episode ended.
    with pytest.raises(ValueError, match=r"^RecordReplay prefix must be a file name"):
        RecordReplay(loveletter_env.env(num_players=2), directory=tmp_path / "replays", prefix=prefix)
    assert list(tmp_path.iterdir()) == []


def test_recorder_refuses_what_is_no_love_letter_env_in_its_own_words():
    # A plain object used to fail inside PettingZoo's wrapper with an AttributeError.
    with pytest.raises(ValueError, match=r"^RecordReplay wraps a Love Letter env, got object"):
        RecordReplay(object())


@pytest.mark.parametrize("agents", [[None, None], ["me", 3], [b"me", "rule"]])
def test_recorder_refuses_an_agent_that_is_no_name(agents):
    # None was recorded as a player named "None".
    with pytest.raises(ValueError, match=r"^agents are names or AgentInfo, one per seat"):
        RecordReplay(loveletter_env.env(num_players=2), agents=agents)


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("episode", ["round", "game"])
def test_recorded_replays_load_back_identically_for_every_reset_option(tmp_path, num_players, episode):
    env = RecordReplay(loveletter_env.env(num_players=num_players, episode=episode), directory=tmp_path)
    rng = np.random.default_rng(num_players)
    deck = list(rng.permutation(FULL_DECK))
    for seed, options in [(0, None), (1, {"first_player": num_players - 1}), (None, {"deck": deck})]:
        env.reset(seed=seed, options=options)
        # Cut short: a reset in the middle of an episode starts a new recording.
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
        env.reset(seed=seed, options=options)
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        replay = load_replay(env.last_path)
        assert replay == env.last_replay and replay.to_dict() == env.last_replay.to_dict()
        assert replay.metadata == ({} if seed is None else {"seed": seed})
        if options and "first_player" in options:
            assert replay.rounds[0].first_player == num_players - 1
        if options and "deck" in options:
            assert list(replay.rounds[0].deck) == deck
    assert env.episodes_saved == 3
