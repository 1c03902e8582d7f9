"""Other RL libraries: the docs' snippets and the example training loops.

Each library's tests skip (with the extra to install) where the library is missing.
CI installs them with ``pip install -e ".[dev,libraries]"``, except RLlib: ray pins an
older gymnasium, so the RLlib tests (marker ``rllib``) run in a second environment that
.ci/run makes, where a skip fails (``LOVELETTER_FAIL_ON_SKIP=1``, see conftest).
"""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT

PAGE = ROOT / "docs" / "libraries.md"
SNIPPET = re.compile(
    r"<!-- snippet: (?P<name>[\w-]+)(?: requires: (?P<requires>[\w. ]+?))?(?: setup: (?P<setup>\S+))? -->\n"
    r"```python\n(?P<code>.*?)```",
    re.DOTALL,
)
EXTRA_OF = {"torchrl": "torchrl", "tianshou": "tianshou", "ray.rllib": "rllib"}
EXTRA_OF.update(onnxruntime="onnx", onnxscript="onnx")


def _section() -> str:
    """The documentation page on other libraries (docs/libraries.md)."""
    return PAGE.read_text(encoding="utf-8")


def _snippets() -> dict[str, re.Match]:
    return {m["name"]: m for m in SNIPPET.finditer(_section())}


def _need(module: str) -> None:
    extra = EXTRA_OF.get(module, module)
    # ImportError, not only ModuleNotFoundError: a package can be present with parts missing
    # (Ray without pyarrow raises ImportError from ray.rllib), which is "not usable here", not a failure.
    pytest.importorskip(
        module, reason=f'needs the {extra} extra: pip install "loveletter-env[{extra}]"', exc_type=ImportError
    )


def _load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"examples_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small networks on a shared 2-core machine run faster, and steadier, on one thread."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _write_policy_onnx(folder: Path) -> None:
    import torch

    from training.export import main as export_main
    from training.learn.checkpoint import model_payload, save_checkpoint
    from training.learn.ppo import ActorCritic

    model = ActorCritic(hidden_sizes=(32,), generator=torch.Generator().manual_seed(0))
    checkpoint = save_checkpoint(folder / "policy.pt", {"model": model_payload(model)})
    export_main(["--checkpoint", str(checkpoint), "--onnx", str(folder / "policy.onnx"), "--no-verify"])


SETUPS = {"policy.onnx": _write_policy_onnx}


# The docs ------------------------------------------------------------------------------
def test_every_python_block_of_the_docs_is_a_tested_snippet():
    assert _section().count("```python") == len(_snippets()) > 0
    for match in _snippets().values():
        assert match["setup"] is None or match["setup"] in SETUPS


def _snippet_params() -> list:
    """The snippets by name; those that need RLlib carry the ``rllib`` marker."""
    return [
        pytest.param(name, marks=[pytest.mark.rllib] if "ray.rllib" in (match["requires"] or "").split() else [])
        for name, match in sorted(_snippets().items())
    ]


@pytest.mark.parametrize("name", _snippet_params())
def test_docs_snippet_runs(name, tmp_path, monkeypatch):
    snippet = _snippets()[name]
    for module in (snippet["requires"] or "").split():
        _need(module)
    monkeypatch.chdir(tmp_path)
    if snippet["setup"]:
        SETUPS[snippet["setup"]](tmp_path)
    try:
        exec(compile(snippet["code"], f"<docs snippet {name}>", "exec"), {"__name__": f"snippet_{name}"})
    finally:
        if "ray.rllib" in (snippet["requires"] or "").split():
            # RLlib's snippets start a local Ray cluster implicitly: stop it, so that later tests start their own.
            sys.modules["ray"].shutdown()


# Stable-Baselines3 ---------------------------------------------------------------------
def test_sb3_example_trains_maskable_ppo_and_reports_a_win_rate(capsys):
    # Stable-Baselines3 and sb3-contrib are core dependencies: this never skips.
    example = _load_example("sb3_maskable_ppo")
    win_rate = example.main(["--timesteps", "2048", "--num-envs", "2", "--n-steps", "256", "--eval-episodes", "20"])
    # evaluate() raises if the masked policy ever picks an illegal action.
    assert 0.0 <= win_rate <= 1.0
    assert re.search(
        r"evaluation win rate vs rule \(2 players, games\): \d\.\d{3} over 20 episodes", capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("sb3_maskable_ppo", ["--num-envs", "0"], "--num-envs must be positive, got 0"),
        ("sb3_maskable_ppo", ["--n-steps", "0"], "--n-steps must be positive, got 0"),
        # One step a rollout: its advantage normalised by a spread of 0 would train on NaN.
        ("sb3_maskable_ppo", ["--n-steps", "1", "--num-envs", "1"], "--n-steps times --num-envs must be at least 2"),
        ("sb3_maskable_ppo", ["--seed", "-1"], "--seed must be an integer in 0..4294967292, got -1"),
        ("sb3_maskable_ppo", ["--seed", str(2**32)], "--seed must be an integer in 0..4294967292, got 4294967296"),
        ("sb3_maskable_ppo", ["--opponents", "rool"], "unknown agent 'rool'"),
        ("sb3_maskable_ppo", ["--opponents", "none.pt"], "--opponents: checkpoint 'none.pt' does not exist"),
        ("sb3_maskable_ppo", ["--save", "/proc/none/model.zip"], "--save '/proc/none/model.zip' cannot be written"),
        ("tianshou_dqn", ["--seed", "-1"], "--seed must be an integer in 0..9223372036854765803, got -1"),
        ("torchrl_reinforce", ["--seed", "-1"], "--seed must be a non-negative integer below 2**63, got -1"),
    ],
)
def test_example_arguments_are_named_before_training(name, args, message, capsys):
    """A bad argument is a usage error (exit status 2) before any training, not a traceback
    from inside the library, nor one after the training whose model it would lose."""
    _need({"tianshou_dqn": "tianshou", "torchrl_reinforce": "torchrl"}.get(name, "sb3_contrib"))
    with pytest.raises(SystemExit) as stop:
        _load_example(name).main(args)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


# TorchRL -------------------------------------------------------------------------------
def test_torchrl_reinforce_loop_learns_from_legal_self_play():
    _need("torchrl")
    import torch

    example = _load_example("torchrl_reinforce")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        policy = example.make_policy(hidden=32)
    before = [p.detach().clone() for p in policy.parameters()]
    history = example.train(iterations=3, frames_per_batch=128, policy=policy)
    assert len(history) == 3
    for batch in history:
        assert batch["decisions"] == 128, "exactly one seat acts per AEC step"
        assert batch["illegal_actions"] == 0
        assert batch["episodes"] > 0 and math.isfinite(batch["loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters())), "no gradient step happened"


def test_torchrl_returns_follow_each_seat_to_its_episode_end():
    _need("torchrl")
    import torch
    from tensordict import TensorDict

    example = _load_example("torchrl_reinforce")
    rewards = torch.tensor([[0, 0], [1, -1], [0, 0], [0, 0], [-1, 1], [0, 0]], dtype=torch.float32)
    done = torch.tensor([0, 1, 0, 0, 1, 0], dtype=torch.bool)
    batch = TensorDict(
        {("next", "players", "reward"): rewards.unsqueeze(-1), ("next", "done"): done.unsqueeze(-1)}, [6]
    )
    returns, finished = example.returns_to_episode_end(batch)
    assert returns.tolist() == [[1, -1], [1, -1], [-1, 1], [-1, 1], [-1, 1], [0, 0]]
    assert finished[:, 0].tolist() == [True, True, True, True, True, False]


# Tianshou ------------------------------------------------------------------------------
def test_tianshou_dqn_trains_a_seat_with_the_trainer():
    _need("tianshou")
    example = _load_example("tianshou_dqn")
    out = example.train(epochs=1, steps_per_epoch=256, num_envs=2, seed=0, eval_episodes=8)
    # Any illegal action would have raised inside the AEC env.
    assert out["result"].update_step > 0
    assert out["test_episodes"] == 8
    assert -1.0 <= out["learner_mean_reward"] <= 1.0
    assert out["algorithm"].get_algorithm(example.LEARNER).policy is not None


# RLlib ---------------------------------------------------------------------------------
@pytest.mark.rllib
def test_rllib_adapter_does_not_import_ray():
    code = "import sys, loveletter_env.wrappers.rllib; assert 'ray' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.rllib
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_rllib_multi_agent_env_is_turn_based_and_pays_every_seat(num_players):
    """RLlib sees one seat at a time, a legal float mask in its space, and every seat's final reward."""
    _need("ray.rllib")
    import numpy as np

    from loveletter_env.wrappers import rllib_multi_agent_env

    env = rllib_multi_agent_env({"num_players": num_players, "episode": "round"})
    rng = np.random.default_rng(num_players)
    for seed in range(10):
        observations, _ = env.reset(seed=seed)
        totals: dict[str, float] = {}
        while True:
            assert len(observations) == 1, "only the seat to act observes"
            ((seat, observation),) = observations.items()
            assert env.observation_space[seat].contains(observation)
            assert observation["action_mask"].dtype == np.float32 and observation["action_mask"].any()
            action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
            observations, rewards, terminated, truncated, _ = env.step({seat: action})
            for agent, reward in rewards.items():
                totals[agent] = totals.get(agent, 0.0) + reward
            if terminated["__all__"]:
                break
            assert not truncated["__all__"]
        # The round's end reaches every seat: terminated, its last observation (no legal action)
        # and its reward, +1 for the winners and -1 for the others.
        assert set(observations) == set(terminated) - {"__all__"} == set(env.possible_agents)
        assert all(not o["action_mask"].any() for o in observations.values())
        winners = [seat for seat, total in totals.items() if total == 1.0]
        assert winners and sorted(totals.values()) == [-1.0] * (num_players - len(winners)) + [1.0] * len(winners)
        assert set(totals) == set(env.possible_agents)
