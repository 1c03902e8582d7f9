"""scripts/fork_run.py: a stopped run forked into a continuation of another seed, and weights averaged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import ROOT, TINY_TRAINING, run_cut_short, run_script_stopped, subprocess_env

from training.learn.checkpoint import load_checkpoint, resolve_checkpoint_path
from training.learn.config import load_config
from training.learn.selfplay_command import main

SCRIPT = str(ROOT / "scripts" / "fork_run.py")
RUN = [*TINY_TRAINING, "eval.every=0", "opponents.current=1", "opponents.past=0", "opponents.bots=0"]


def fork_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, SCRIPT, *args], capture_output=True, text=True, env=subprocess_env(), timeout=300
    )


def train(tmp_path, name: str, *extra: str) -> None:
    overrides = [*RUN, f"out_dir={tmp_path}", f"run_name={name}", *extra]
    main(["--no-progress", *[a for o in overrides for a in ("--set", o)]])


def weights(path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)["model"]["state_dict"]


@pytest.fixture(scope="module")
def forked(tmp_path_factory):
    """A trunk of one update, its own continuation and a fork's, one more update each."""
    tmp_path = tmp_path_factory.mktemp("fork")
    train(tmp_path, "trunk", "total_steps=128")
    trunk = load_checkpoint(tmp_path / "trunk" / "latest.pt")
    done = fork_run("fork", str(tmp_path / "trunk"), str(tmp_path / "fork"), "--seed", "7", "--torch-threads", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    at_fork = load_checkpoint(tmp_path / "fork" / "latest.pt")
    for name in ("trunk", "fork"):
        main(["--resume", str(tmp_path / name), "--set", "total_steps=256", "--no-progress"])
    return tmp_path, trunk, at_fork


def test_the_fork_continues_the_trunk_with_its_own_draws(forked):
    tmp_path, trunk, at_fork = forked
    # It starts where the trunk stopped (its weights, Adam's state, the magnet), with its own draws.
    assert at_fork["update"] == trunk["update"] == 1
    same = lambda a, b: a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # noqa: E731
    assert same(at_fork["model"]["state_dict"], trunk["model"]["state_dict"])
    assert same(at_fork["training"]["magnet"], trunk["training"]["magnet"])
    adam, trunk_adam = at_fork["training"]["optimizer"]["state"], trunk["training"]["optimizer"]["state"]
    assert adam.keys() == trunk_adam.keys() and all(same(adam[i], trunk_adam[i]) for i in adam)
    assert not torch.equal(at_fork["training"]["update_generator"], trunk["training"]["update_generator"])
    continued, fork = weights(tmp_path / "trunk" / "latest.pt"), weights(tmp_path / "fork" / "latest.pt")
    assert not all(torch.equal(continued[k], fork[k]) for k in fork)  # other games, other draws
    config = load_config(tmp_path / "fork" / "config.yaml")
    assert (config.seed, config.run_name, config.torch_threads) == (7, "fork", 2)
    assert load_checkpoint(tmp_path / "fork" / "latest.pt")["update"] == 2
    rows = (tmp_path / "fork" / "metrics.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["1", "2"]  # the trunk's row, then the fork's own


def test_a_fork_with_the_runs_own_seed_replays_it_and_is_refused(forked, tmp_path):
    base = forked[0]
    done = fork_run("fork", str(base / "trunk"), str(tmp_path / "again"), "--seed", "0")
    assert done.returncode == 2 and "the run's own seed" in done.stderr
    assert not (tmp_path / "again").exists()


def test_bad_forks_are_named(forked, tmp_path):
    base = forked[0]
    done = fork_run("fork", str(tmp_path / "nothing"), str(tmp_path / "f"), "--seed", "3")
    assert done.returncode == 2 and "no latest.pt" in done.stderr
    done = fork_run("fork", str(base / "trunk"), str(base / "fork"), "--seed", "3")
    assert done.returncode == 2 and "already exists" in done.stderr
    for seed in ("-1", str(2**63)):  # a seed no run takes: the fork could never be resumed
        done = fork_run("fork", str(base / "trunk"), str(tmp_path / "f"), "--seed", seed)
        assert done.returncode == 2 and f"seed must be a non-negative integer below 2**63, got {seed}" in done.stderr
    assert not (tmp_path / "f").exists()


def test_a_fork_that_fails_part_way_leaves_no_half_fork(forked, tmp_path):
    """A fork is made whole or not at all: a write cut short (a full disk, here a file size
    limit below the checkpoint's size) leaves no folder that cannot be resumed and would
    refuse the next try as already there."""
    base = forked[0]
    size = (base / "trunk" / "latest.pt").stat().st_size
    command = [sys.executable, SCRIPT, "fork", str(base / "trunk"), str(tmp_path / "f"), "--seed", "5"]
    assert run_cut_short(command, limit=size // 2, timeout=300).returncode == 2
    assert list(tmp_path.iterdir()) == []
    done = fork_run("fork", str(base / "trunk"), str(tmp_path / "f"), "--seed", "5")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["config.yaml", "latest.pt", "metrics.csv"]


def test_the_average_is_the_mean_of_the_weights(forked, tmp_path):
    base = forked[0]
    paths = [base / "trunk" / "latest.pt", base / "fork" / "latest.pt"]
    done = fork_run("average", str(tmp_path / "mean.pt"), *map(str, paths))
    assert done.returncode == 0, done.stdout + done.stderr
    mean = load_checkpoint(tmp_path / "mean.pt")
    assert "training" not in mean
    a, b = (weights(p) for p in paths)
    for name, tensor in mean["model"]["state_dict"].items():
        assert torch.allclose(tensor, (a[name] + b[name]) / 2, atol=1e-7)


def test_networks_of_other_shapes_are_not_averaged(forked, tmp_path):
    base = forked[0]
    train(tmp_path, "narrow", "total_steps=128", "model.hidden_sizes=[16]")
    narrow = str(tmp_path / "narrow" / "latest.pt")
    done = fork_run("average", str(tmp_path / "m.pt"), str(base / "trunk" / "latest.pt"), narrow)
    assert done.returncode == 2 and f"{narrow!r} has hidden_sizes [16]" in done.stderr
    assert not (tmp_path / "m.pt").exists()
    done = fork_run("average", str(tmp_path / "m.pt"), narrow)
    assert done.returncode == 2 and "at least two" in done.stderr
    # A forgotten out would have written the mean over the first checkpoint named.
    before = Path(narrow).read_bytes()
    done = fork_run("average", narrow, str(base / "trunk" / "latest.pt"))
    assert done.returncode == 2 and f"out {narrow!r} already exists: pass --force to replace it" in done.stderr
    done = fork_run("average", narrow, narrow, str(base / "trunk" / "latest.pt"), "--force")
    assert done.returncode == 2 and "is one of the checkpoints averaged" in done.stderr
    assert Path(narrow).read_bytes() == before


def test_an_out_that_a_run_folder_named_among_the_checkpoints_loads_is_refused(forked):
    """A run folder averaged is the file it loads: an out over that file is one of the
    checkpoints averaged too, and --force must not put the mean over a run's training state,
    whichever file of the run the folder stands for."""
    base = forked[0]
    latest = base / "trunk" / "latest.pt"
    before = latest.read_bytes()
    loaded = resolve_checkpoint_path(base / "trunk")
    done = fork_run("average", str(loaded), str(base / "trunk"), str(base / "fork" / "latest.pt"), "--force")
    assert done.returncode == 2 and "is one of the checkpoints averaged" in done.stderr, done.stdout + done.stderr
    done = fork_run("average", str(latest), str(base / "trunk"), str(base / "fork" / "latest.pt"), "--force")
    assert done.returncode == 2 and "holds a run's training state" in done.stderr, done.stdout + done.stderr
    assert latest.read_bytes() == before


def test_ctrl_c_says_so_without_a_traceback_and_leaves_nothing_half_written(forked, tmp_path):
    """Stopped while it writes (here at the fork's config, after its checkpoint; at the mean's
    save), either command ends with a sentence and status 130, and leaves no fork and no mean."""
    base = forked[0]
    for patch, argv, left in [
        ("s.save_config = stop", ["fork", str(base / "trunk"), str(tmp_path / "f"), "--seed", "9"], tmp_path / "f"),
        ("s.save_checkpoint = stop",
         ["average", str(tmp_path / "m.pt"), str(base / "trunk" / "latest.pt"), str(base / "fork" / "latest.pt")],
         tmp_path / "m.pt"),
    ]:  # fmt: skip
        done = run_script_stopped("fork_run", patch, argv)
        assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
        assert "fork_run.py: interrupted; nothing was written" in done.stderr
        assert not left.exists()
    assert list(tmp_path.iterdir()) == []
