"""examples/rllib_selfplay.py: RLlib self-play with several env runners, exported and evaluated.

These need ray[rllib], which pins an older gymnasium than the project's: CI runs them in an
environment of their own (.ci/run), where a skip is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from conftest import ROOT, play_legal_episode

import loveletter_env
from loveletter_env.agents.specs import resolve_agent

pytestmark = pytest.mark.rllib

EXAMPLE = ROOT / "examples" / "rllib_selfplay.py"
TINY = ["--iterations", "2", "--env-runners", "2", "--envs-per-runner", "4", "--batch-size", "400"]
TINY += ["--hidden-sizes", "32", "--eval-rounds", "20", "--seed", "3"]


def _need_rllib() -> None:
    # exc_type: Ray without pyarrow raises ImportError (not ModuleNotFoundError) from ray.rllib.
    pytest.importorskip(
        "ray.rllib", reason='needs the rllib extra: pip install "loveletter-env[rllib]"', exc_type=ImportError
    )


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_rllib_selfplay", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, str]:
    """One tiny run of the example as a user runs it (its own process, a local Ray cluster): folder, output."""
    _need_rllib()
    out = tmp_path_factory.mktemp("rllib_selfplay")
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), *TINY, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return out, run.stdout


def test_example_trains_with_two_env_runners_and_reports_win_rates(trained):
    out, stdout = trained
    trained_line = re.search(
        r"trained 2 iterations: ([\d,]+) env steps in [\d.]+ s \(([\d,]+) env steps/s\) with 2 env runners", stdout
    )
    assert trained_line, stdout
    env_steps = int(trained_line[1].replace(",", ""))
    assert env_steps >= 2 * 400, "each iteration samples at least the batch size"
    rates = dict(re.findall(r"win rate vs (random|rule) \(2 players, 20 rounds, seed 3\): ([\d.]+)%", stdout))
    assert set(rates) == {"random", "rule"}, stdout
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["training"]["env_steps"] == env_steps
    assert results["training"]["env_runners"] == 2
    assert results["training"]["cpu_seconds"] > 0
    for opponent, rate in rates.items():
        assert results["evaluation"][opponent]["rounds"] == 20
        assert results["evaluation"][opponent]["win_rate"] == pytest.approx(float(rate) / 100, abs=5e-4)


def test_exported_policy_is_a_checkpoint_spec_that_plays_legal_moves(trained):
    out, _ = trained
    from training.learn.checkpoint import load_checkpoint

    checkpoint = load_checkpoint(out / "policy.pt")
    assert checkpoint["model"]["hidden_sizes"] == [32]
    assert checkpoint["source"]["library"] == "ray.rllib"
    agent = resolve_agent(str(out / "policy.pt"))
    for num_players in (2, 3, 4):
        env = loveletter_env.env(num_players=num_players)
        for seed in range(5):
            env.reset(seed=seed)
            assert play_legal_episode(env, agent.act)  # the env also raises on an illegal action


def test_export_reproduces_the_rllib_module():
    _need_rllib()
    import torch

    example = _load_example()
    for num_players in (2, 4):
        env = loveletter_env.wrappers.rllib_multi_agent_env(example.env_config(num_players))
        module = example.module_spec([16, 8], env).build()
        model = example.to_actor_critic(module.get_state(), [16, 8])
        assert example.check_export(module, model, num_players, seed=1, count=64) < 1e-5
        observations, masks = example.sample_observations(num_players, 64, seed=2)
        assert masks.any(axis=1).all(), "only seats to act are sampled"
        batch = {
            "obs": {"observations": torch.from_numpy(observations), "action_mask": torch.from_numpy(masks).float()}
        }
        with torch.no_grad():
            _, values = model(torch.from_numpy(observations))
            np.testing.assert_allclose(module.compute_values(batch).numpy(), values.numpy(), atol=1e-5)


def test_export_refuses_weights_of_another_shape():
    _need_rllib()
    example = _load_example()
    env = loveletter_env.wrappers.rllib_multi_agent_env(example.env_config(2))
    state = example.module_spec([16], env).build().get_state()
    with pytest.raises(RuntimeError, match="size mismatch"):
        example.to_actor_critic(state, [32])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env-runners", "0"], "--env-runners must be at least 1"),
        (["--iterations", "0"], "--iterations must be at least 1"),
        (["--batch-size", "1", "--env-runners", "2"], "--batch-size (1) must be at least --env-runners (2)"),
        (["--hidden-sizes", "0"], "--hidden-sizes must be positive"),
        (["--seed", "-1"], "--seed must be an integer in 0..4294967293, got -1"),
        (["--seed", str(2**32), "--env-runners", "1"], "--seed must be an integer in 0..4294967294, got 4294967296"),
    ],
)
def test_bad_arguments_are_clear_errors(args, message, capsys):
    with pytest.raises(SystemExit) as stop:
        _load_example().main(args)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_rllib_is_a_clear_error(monkeypatch, capsys):
    example = _load_example()

    def missing(module: str, extra: str) -> ModuleType:
        raise example.MissingExtraError(f"{module!r} is not installed; it comes with the {extra!r} extra")

    monkeypatch.setattr(example, "require", missing)
    assert example.main(["--iterations", "1"]) == 2
    assert "'ray.rllib' is not installed; it comes with the 'rllib' extra" in capsys.readouterr().err


def test_an_address_where_no_cluster_listens_is_a_clear_error():
    _need_rllib()
    # Its own process: one already connected to Ray (as after RLlib's snippets) would keep that connection.
    command = [sys.executable, str(EXAMPLE), "--address", "127.0.0.1:1"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    assert "no Ray cluster answers at '127.0.0.1:1'" in run.stderr and "Traceback" not in run.stderr


def test_a_folder_that_holds_a_policy_or_is_held_is_refused(trained, tmp_path, capsys):
    """A second run with the same --out neither overwrites the first's policy.pt nor runs
    beside a run that holds the folder; both are refused before any training."""
    from training.learn.runtime import RunLock

    out, _ = trained
    before = (out / "policy.pt").read_bytes()
    example = _load_example()
    assert example.main([*TINY, "--out", str(out)]) == 2
    assert "already holds a policy.pt" in capsys.readouterr().err
    assert (out / "policy.pt").read_bytes() == before
    busy = tmp_path / "busy"
    busy.mkdir()
    with RunLock(busy):
        assert example.main([*TINY, "--out", str(busy)]) == 2
    assert "busy" in capsys.readouterr().err
    assert not (busy / "policy.pt").exists()
