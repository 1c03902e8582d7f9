"""Bad input is refused with a clear error before anything changes.

Regression tests for inputs that once broke that contract: a refused Gymnasium reset
that had already moved the learner, booleans taken for cards, seeds refused with
Gymnasium's generic error type, and the exporter's noise about torchvision.
"""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from conftest import ROOT

import loveletter_env  # noqa: F401  (registers the Gymnasium id)
from loveletter_env import env as make_env
from loveletter_env.actions import ACTIONS, guard_action
from loveletter_env.agents import make_agent
from loveletter_env.agents.base import AgentError, checked_act
from loveletter_env.agents.specs import AgentSpecError, resolve_agent
from loveletter_env.batched import BatchedLoveLetter
from loveletter_env.cards import FULL_DECK, GUARD, validate_deck
from loveletter_env.observation import OBSERVATION_SIZE
from training.learn.checkpoint import save_checkpoint
from training.learn.config import ConfigError, load_config
from training.selfplay import main as selfplay_main


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


def play_out(env, seed: int) -> list:
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
    assert play_out(env, 4) == play_out(untouched, 4)


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


@pytest.mark.parametrize("flag", [True, np.True_], ids=["bool", "numpy bool"])
def test_a_boolean_is_not_a_guard(flag):
    deck = list(FULL_DECK)
    deck[0] = flag  # FULL_DECK starts with a Guard: True == 1 would pass for it
    with pytest.raises(ValueError, match="integer card values"):
        validate_deck(deck)
    aec = make_env(num_players=2)
    with pytest.raises(ValueError, match="integer card values"):
        aec.reset(options={"deck": deck})


def test_export_keeps_torchvision_notices_out_of_the_users_way(tmp_path):
    pytest.importorskip("onnxscript")
    # A fresh interpreter: the exporter reports only on its first use in a process.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training.export",
            "--checkpoint",
            str(ROOT / "checkpoints/shipped/ppo_2p.pt"),
            "--onnx",
            str(tmp_path / "policy.onnx"),
            "--no-verify",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "torchvision is not installed" not in result.stderr + result.stdout
    assert result.stderr == ""
    assert "wrote" in result.stdout


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


class FixedReturnAgent:
    """An agent whose act returns one fixed value, whatever the observation."""

    def __init__(self, value):
        self.value = value

    def act(self, observation):
        return self.value

    def __repr__(self) -> str:
        return f"FixedReturnAgent({self.value!r})"


@pytest.mark.parametrize(
    "value, message",
    [
        (None, r"returned None \(NoneType\)"),
        (1.0, r"returned 1.0 \(float\)"),
        (True, r"returned True \(bool\)"),
        ("3", r"returned '3' \(str\)"),
        (41, r"returned action 41 .*0\.\.40"),
        (-1, r"returned action -1 "),
    ],
)
def test_checked_act_names_the_agent_and_what_it_returned(value, message):
    aec = make_env(num_players=2)
    aec.reset(seed=0)
    observation = aec.observe(aec.agent_selection)
    with pytest.raises(AgentError, match=r"agent my-bot " + message):
        checked_act(FixedReturnAgent(value), observation, name="my-bot")


def test_checked_act_refuses_an_illegal_action_and_passes_legal_ones():
    aec = make_env(num_players=2)
    aec.reset(seed=0)
    observation = aec.observe(aec.agent_selection)
    legal = np.flatnonzero(observation["action_mask"])
    illegal = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    with pytest.raises(
        AgentError, match=rf"FixedReturnAgent\({illegal}\) returned action {illegal}, which is not legal"
    ):
        checked_act(FixedReturnAgent(illegal), observation)
    assert checked_act(FixedReturnAgent(np.int64(legal[0])), observation) == legal[0]
    assert type(checked_act(FixedReturnAgent(np.array(legal[-1])), observation)) is int


def test_gym_env_names_an_opponent_that_returns_none():
    env = gymnasium.make("loveletter/LoveLetter-v0", num_players=2, opponents=FixedReturnAgent(None)).unwrapped
    with pytest.raises(AgentError, match=r"FixedReturnAgent\(None\) \(the opponent at player_\d\) returned None"):
        for seed in range(20):  # some seed seats the opponent first
            env.reset(seed=seed)
            env.step(int(np.flatnonzero(env.action_masks())[0]))


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


# Seeds: one check everywhere --------------------------------------------------------------

BAD_SEEDS = [1.9, "1", True, None, -1, 2**63, 2**64]


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
def test_the_batched_engine_refuses_seeds_that_are_not_integers(seed):
    # 1.9, '1' and True used to deal what 1 deals; None and 2**64 gave torch's errors.
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer below 2\*\*63, got"):
        BatchedLoveLetter(num_games=2, seed=seed)


def test_the_batched_engine_takes_numpy_seeds_as_the_same_int():
    first, second = BatchedLoveLetter(num_games=4, seed=np.int64(9)), BatchedLoveLetter(num_games=4, seed=9)
    assert torch.equal(first.reset()[0], second.reset()[0])
    BatchedLoveLetter(num_games=1, seed=2**63 - 1).reset()


@pytest.mark.parametrize("seed", [s for s in BAD_SEEDS if s is not None], ids=repr)
@pytest.mark.parametrize("name", ["random", "rule", "belief", "ismcts"])
def test_bots_refuse_seeds_that_are_not_integers(name, seed):
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got"):
        make_agent(name, seed=seed)
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got"):
        resolve_agent(name, seed=seed)
    agent = make_agent(name, seed=1)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer below 2\*\*63, got"):
        agent.reset(seed=seed)  # as evaluations reseed agents at every episode
    assert agent._seed == 1


def test_checkpoint_specs_refuse_bad_seeds_before_torch_sees_them():
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got 1.5$"):
        resolve_agent(str(ROOT / "checkpoints/shipped/ppo_2p.pt"), seed=1.5)
    assert resolve_agent(str(ROOT / "checkpoints/shipped/ppo_2p.pt"), seed=np.int64(3)) is not None


@pytest.mark.parametrize("spec", ["random:seed=5", "ismcts:iterations=10,seed=5"])
def test_a_seed_in_an_agent_spec_is_refused_with_a_reason(spec):
    with pytest.raises(AgentSpecError, match=rf"agent spec '{spec}': seed is not an option of the spec; .*set by"):
        resolve_agent(spec, seed=1)
    with pytest.raises(AgentSpecError, match="seed is not an option"):
        resolve_agent(spec)


# Guard actions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "offset, guess, message",
    [
        (1, True, "Guard guess must be an integer in 2..8, got True"),  # used to give -1
        (1, 9, "Guard guess must be an integer in 2..8, got 9"),  # used to give Guard on +2 naming Priest
        (1, 1, "Guard guess must be an integer in 2..8, got 1"),
        (1, 2.0, "Guard guess must be an integer in 2..8, got 2.0"),
        (0, 3, "Guard target offset must be an integer in 1..3, got 0"),
        (4, 3, "Guard target offset must be an integer in 1..3, got 4"),
        (True, 3, "Guard target offset must be an integer in 1..3, got True"),
    ],
)
def test_guard_action_refuses_what_is_no_guard_action(offset, guess, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        guard_action(offset, guess)


def test_guard_action_covers_every_guard_play_once():
    indices = {guard_action(o, g): (o, g) for o in (1, 2, 3) for g in range(2, 9)}
    assert sorted(indices) == list(range(21))
    assert all(ACTIONS[i] == (GUARD, o, g) for i, (o, g) in indices.items())
    assert guard_action(np.int64(2), np.int8(5)) == guard_action(2, 5)


# Training configs: refused up front, naming the key ------------------------------------


@pytest.mark.parametrize(
    "override, message",
    [
        ("eval.opponents=[nosuchbot]", r"eval.opponents must be names from .*got \['nosuchbot'\]"),
        ("eval.opponents=[guided]", r"eval.opponents: bot 'guided' cannot be built .*policy=PATH"),
        ("opponents.bot_names=[guided]", r"opponents.bot_names: bot 'guided' cannot be built"),
        ("seed=1180591620717411303424", r"seed must be < 2\*\*63, got 1180591620717411303424"),  # 2**70
        ("ppo.learning_rate=1e300", r"ppo.learning_rate must be <= 1, got 1e\+300"),
        ("env.num_games=100000000", r"env.num_games must be <= 65536, got 100000000"),
        ("env.rollout_steps=1000000", r"env.rollout_steps must be <= 4096"),
        ("env.num_games=65536", r"env.num_games times env.rollout_steps .* at most 1,048,576 turns"),
        ("model.hidden_sizes=[100000000]", r"model.hidden_sizes\[0\] must be <= 65536, got 100000000"),
        (f"model.hidden_sizes={[8] * 17}", r"model.hidden_sizes must hold at most 16 items"),
        ("model.hidden_sizes=[60000,60000]", r"model.hidden_sizes must give a network of at most 100,000,000"),
        ("torch_threads=100000000", r"torch_threads must be <= 1024"),
        ("learning_rate=1e-3", r"unknown config key\(s\) \['learning_rate'\] \(did you mean 'ppo.learning_rate'\?\)"),
        ("ppo.learnin_rate=1e-3", r"did you mean 'ppo.learning_rate'\?"),
        ("model=&m [*m]", r"model\[0\] refers to itself \(a recursive YAML alias\)"),
        # Strict types: text is no number or boolean, a boolean no number, a fraction no integer.
        ("eval.greedy='true'", r"eval.greedy must be true or false, got 'true'"),
        ("seed='3'", r"seed must be an integer, got '3'"),
        ("ppo.learning_rate=true", r"ppo.learning_rate must be a finite number, got True"),
        ("ppo.update_epochs=4.5", r"ppo.update_epochs must be an integer, got 4.5"),
        ('run_name="a\\0b"', r"run_name must be a plain folder name .*got 'a\\x00b'"),
        ('out_dir="runs\\0"', r"out_dir must be a path without NUL characters"),
        (f"run_name={'x' * 300}", r"run_name must be at most 255 characters long, got 'x+\.\.\.x+'$"),
    ],
)
def test_bad_config_values_are_a_config_error_before_training(tmp_path, capsys, override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(["--no-progress", "--set", f"out_dir={tmp_path}", "--set", override])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # nothing was started


@pytest.mark.parametrize(
    "text, message",
    [
        ("1: 2\n", r"config key 1 must be a name, got the int 1"),
        ("ppo:\n  true: 4\n", r"config key ppo.True must be a name, got the bool True"),
        ("env: &e\n  num_players: *e\n", r"env.num_players refers to itself \(a recursive YAML alias\)"),
        ("eval: &a [1, *a]\n", r"eval\[1\] refers to itself"),
    ],
    ids=["integer key", "boolean key", "recursive mapping", "recursive list"],
)
def test_bad_config_files_are_a_config_error_naming_the_key(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_quoted_text_stays_text_and_exponents_are_numbers(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('run_name: "1e5"\nppo:\n  learning_rate: 3e-4\n  ent_coef: 1.0e-3\ntotal_steps: 1e6\n')
    config = load_config(path)
    assert config.run_name == "1e5"
    assert config.ppo.learning_rate == 3e-4 and config.ppo.ent_coef == 1e-3
    assert config.total_steps == 1_000_000 and isinstance(config.total_steps, int)
    assert load_config(None, ['run_name="1e5"']).run_name == "1e5"
    with pytest.raises(ConfigError, match=r"run_name must be a string, got 100000.0"):
        load_config(None, ["run_name=1e5"])  # unquoted, YAML reads a number


def _aliases_of_aliases(levels: int) -> str:
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, message",
    [
        ("env: " + "[" * 5000 + "]" * 5000 + "\n", r"is nested too deeply \(the limit is 32 levels\)"),
        ("env: " + "[" * 40 + "]" * 40 + "\n", r"nested too deeply: env(\[0\]){31,32} is more than 32 levels down"),
        ("seed: " + "9" * 5000 + "\n", r"is not valid YAML: Exceeds the limit \(4300 digits\)"),
        (_aliases_of_aliases(7), r"holds more than 100,000 lists and mappings"),
    ],
    ids=["deeper than the stack", "deep", "5000 digits", "aliases of aliases"],
)
def test_config_files_that_would_exhaust_the_parser_are_refused(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)
    if text.count("\n") == 1:  # the same value given as an override
        with pytest.raises(ConfigError, match=message):
            load_config(None, [text.replace(": ", "=", 1).strip()])


def test_config_files_are_read_only_to_the_size_limit(tmp_path):
    from training.learn.config import MAX_CONFIG_BYTES

    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_CONFIG_BYTES)
    with pytest.raises(ConfigError, match=r"big.yaml' is too large: the limit is 1,000,000 bytes"):
        load_config(big)
    if Path("/dev/zero").exists():  # endless, and reports a size of 0
        with pytest.raises(ConfigError, match=r"'/dev/zero' is not a file"):
            load_config("/dev/zero")


def test_shared_yaml_aliases_are_still_fine(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("opponents:\n  bot_names: &bots [rule]\neval:\n  opponents: *bots\n  best_by: rule\n")
    config = load_config(path)  # an alias used twice is no loop
    assert config.opponents.bot_names == config.eval.opponents == ["rule"]


@pytest.mark.parametrize("tool", ["play", "exploit", "evaluate"])
def test_absurd_hidden_sizes_in_a_checkpoint_are_named_without_a_traceback(tmp_path, tool):
    data = torch.load(ROOT / "checkpoints/shipped/ppo_2p.pt", weights_only=True)
    data["model"]["hidden_sizes"] = [10**9, 10**9]  # petabytes, were the network built
    path = save_checkpoint(tmp_path / "absurd.pt", data)  # a valid digest: only the sizes are wrong
    args = {
        "play": [str(path), "--seed", "0"],
        "exploit": ["--checkpoint", str(path), "--steps", "64", "--no-progress"],
        "evaluate": [str(path), "rule", "--rounds", "2", "--no-progress"],
    }[tool]
    run = subprocess.run(
        [sys.executable, "-m", f"training.{tool}", *args],
        cwd=tmp_path,
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "hidden_sizes" in run.stderr
    if tool != "exploit":  # exploit refuses the training config it derives from the checkpoint
        assert "absurd.pt" in run.stderr


@pytest.mark.parametrize("content", [b"just some text\n", pickle.dumps({"a": 1})], ids=["text", "pickle"])
def test_a_file_that_is_not_a_checkpoint_passed_as_an_agent_says_so(tmp_path, content):
    path = tmp_path / "agent.pt"
    path.write_bytes(content)
    run = subprocess.run(
        [sys.executable, "-m", "training.evaluate", str(path), "rule", "--rounds", "2", "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert f"'{path}' is not a checkpoint" in run.stderr
    assert "weights_only" not in run.stderr and "Traceback" not in run.stderr  # no advice to run its code


def test_training_refuses_to_start_from_a_damaged_checkpoint(tmp_path, capsys):
    data = (ROOT / "checkpoints/shipped/ppo_2p.pt").read_bytes()
    damaged = bytearray(data)
    for i in range(len(data) // 3, len(data) // 3 + 2000):
        damaged[i] ^= 0xFF
    (tmp_path / "damaged.pt").write_bytes(bytes(damaged))
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(
            [
                "--no-progress",
                "--set",
                f"out_dir={tmp_path / 'runs'}",
                "--set",
                f"model.init_from={tmp_path / 'damaged.pt'}",
            ]
        )
    assert exit_info.value.code == 2
    assert "damaged.pt' is damaged: its content does not match its sha256" in capsys.readouterr().err
