"""scripts/fit_equilibrium.py: a network fitted to a rung's exact equilibrium, measured exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, subprocess_env

from loveletter_env.tree import build_tree
from training.exploitability.cfr import TreeWorkspace
from training.exploitability.exact_response import exact_exploitability
from training.learn.checkpoint import load_agent

SCRIPT = str(ROOT / "scripts" / "fit_equilibrium.py")
NETWORK = str(ROOT / "checkpoints" / "shipped" / "ppo_2p.pt")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, SCRIPT, *args], capture_output=True, text=True, env=subprocess_env(), timeout=600
    )


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit") / "fitted.pt"
    done = run(NETWORK, "--rules", "mini6", "--epochs", "4", "--measure-every", "2", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), out


def test_the_curve_starts_at_the_network_s_own_exploitability(fitted):
    report, _ = fitted
    assert [point["epoch"] for point in report["curve"]] == [0, 2, 4]
    sampling = load_agent(NETWORK, greedy=False)
    measured = exact_exploitability(sampling, "mini6")["exploitability"]
    assert report["curve"][0]["exploitability"] == pytest.approx(measured, abs=1e-9)
    assert report["equilibrium_exploitability"] <= 2e-4


def test_the_saved_network_samples_and_measures_as_the_last_point(fitted):
    report, out = fitted
    agent = load_agent(out)
    assert not agent.greedy
    assert exact_exploitability(agent, "mini6")["exploitability"] == pytest.approx(
        report["curve"][-1]["exploitability"], abs=1e-9
    )
    assert report["curve"][-1]["loss"] < report["curve"][1]["loss"]


def test_bad_arguments_are_named_before_any_work(tmp_path):
    done = run(NETWORK, "--rules", "mini8_3p")
    assert done.returncode == 2 and "--rules must be a 2-player rung, got 'mini8_3p' (3 players)" in done.stderr
    done = run(NETWORK, "--rules", "mini6", "--solve-target", "2")
    assert done.returncode == 2 and "--solve-target: target must be a number between 0 and 0.5" in done.stderr
    # A seed torch would wrap round (-1 seeds as 2**64 - 1) or refuse only after the solve.
    for seed in ("-1", str(2**64)):
        done = run(NETWORK, "--rules", "mini6", "--seed", seed)
        assert done.returncode == 2 and f"--seed must be a non-negative integer below 2**63, got {seed}" in done.stderr
        assert "solved" not in done.stdout
    # An --out that cannot be written is named before the fitting, not after it.
    unwritable = tmp_path / "file" / "fitted.pt"
    (tmp_path / "file").write_text("a file, not a folder")
    done = run(NETWORK, "--rules", "mini6", "--out", str(unwritable))
    assert done.returncode == 2 and f"--out '{unwritable}' cannot be written" in done.stderr
    assert "solved" not in done.stdout
    # Never over the network being fitted, nor over another file unless told.
    copy = tmp_path / "copy.pt"
    copy.write_bytes(Path(NETWORK).read_bytes())
    done = run(str(copy), "--rules", "mini6", "--out", str(copy), "--force")
    assert done.returncode == 2 and "is the checkpoint being fitted" in done.stderr
    done = run(NETWORK, "--rules", "mini6", "--out", str(copy))
    assert done.returncode == 2 and f"--out '{copy}' already exists: pass --force to replace it" in done.stderr
    assert copy.read_bytes() == Path(NETWORK).read_bytes()
    # A run folder fits the file it loads (here its latest.pt): --out over that file is the checkpoint fitted too.
    (tmp_path / "run").mkdir()
    latest = tmp_path / "run" / "latest.pt"
    latest.write_bytes(Path(NETWORK).read_bytes())
    done = run(str(tmp_path / "run"), "--rules", "mini6", "--out", str(latest), "--force")
    assert done.returncode == 2 and "is the checkpoint being fitted" in done.stderr
    assert "solved" not in done.stdout and latest.read_bytes() == Path(NETWORK).read_bytes()
    missing = tmp_path / "none.pt"
    done = run(str(missing), "--rules", "mini6")
    assert done.returncode == 2 and f"checkpoint '{missing}' does not exist" in done.stderr


def test_own_reach_is_the_seat_s_own_chance_and_not_the_other_s():
    tree = build_tree("mini6")
    workspace = TreeWorkspace(tree)
    uniform = tree.uniform_strategy()
    reach = workspace.own_reach(uniform)
    # Each deal starts at one of seat 0's sets with nothing played yet.
    first = np.unique(tree.node_info[: tree.num_deals])
    assert reach[first].sum() == pytest.approx(1.0)
    # Seat 0 playing otherwise changes its own reach and leaves seat 1's as it was (on mini6
    # seat 0 decides more than once a round, seat 1 once).
    skewed = uniform.copy()
    seat0 = tree.infoset_player == 0
    skewed[np.repeat(seat0, np.diff(tree.action_offsets))] = 0.0
    skewed[tree.action_offsets[:-1][seat0]] = 1.0  # always its first legal action
    again = workspace.own_reach(skewed)
    assert not np.allclose(again[seat0], reach[seat0])
    np.testing.assert_allclose(again[~seat0], reach[~seat0])


def test_a_network_fitted_from_a_run_leaves_the_run_s_training_state_behind(tmp_path):
    """The training state (optimizer, opponent pool, magnet) of a run's latest.pt belongs to
    the weights before the fit: the fitted file kept it, so resuming from it would pair them."""
    from conftest import TINY_TRAINING

    from training.learn.checkpoint import load_checkpoint
    from training.learn.selfplay_command import main as selfplay

    overrides = [*TINY_TRAINING, "total_steps=64", f"out_dir={tmp_path}", "run_name=run"]
    selfplay(["--no-progress", *[a for o in overrides for a in ("--set", o)]])
    assert "training" in load_checkpoint(tmp_path / "run" / "latest.pt")
    out = tmp_path / "fitted.pt"
    done = run(str(tmp_path / "run" / "latest.pt"), "--rules", "mini6", "--epochs", "1", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "training" not in load_checkpoint(out)
