"""The trainer's bookkeeping across the end of a run and a resume: what ``latest.pt``,
``metrics.csv`` and TensorBoard hold match the turns the run played."""

from __future__ import annotations

import csv
import errno
import os
from pathlib import Path

import pytest
from conftest import TINY_TRAINING

from training.learn.checkpoint import load_checkpoint
from training.learn.config import ConfigError, load_config
from training.learn.selfplay_command import main
from training.learn.trainer import SelfPlayTrainer

TINY = [*TINY_TRAINING, "eval.every=0", "save_every=1", "opponents.current=1", "opponents.past=0", "opponents.bots=0"]


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def scalar_steps(run_dir: Path, tag: str) -> list[int]:
    """The turn counts TensorBoard shows for ``tag`` (after its purge of restarted runs)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tb"))
    events.Reload()
    return [event.step for event in events.Scalars(tag)]


def test_a_resumed_run_keeps_the_tensorboard_curves_it_resumed_from(tmp_path):
    """TensorBoard logs by turn count: the resume hides what was logged after the saved turn,
    not everything logged after turn ``update + 1`` (the run's whole curve before the resume)."""
    run = tmp_path / "tb"
    SelfPlayTrainer(load_config(None, [*TINY, "total_steps=256"]), run, progress=False).train()
    SelfPlayTrainer(load_config(None, [*TINY, "total_steps=512"]), run, resume=True, progress=False).train()
    steps = [int(row["global_step"]) for row in rows(run)]
    assert steps == [128, 256, 384, 512]
    assert scalar_steps(run, "train/policy_loss") == steps


def test_a_disk_that_fills_while_a_resume_rewrites_metrics_csv_keeps_its_rows(tmp_path, monkeypatch, capsys):
    """The resume rewrites metrics.csv without the rows after its checkpoint: a failed rewrite
    (a full disk, a Ctrl-C) leaves the old file, not an empty one, for the next resume."""
    args = ["--no-progress", "--set", f"out_dir={tmp_path}", "--set", "run_name=full"]
    for item in [*TINY, "total_steps=256"]:
        args += ["--set", item]
    main(args)
    run = tmp_path / "full"
    before = rows(run)
    assert [row["update"] for row in before] == ["1", "2"]

    def full(self, rows):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(csv.DictWriter, "writerows", full)
    with pytest.raises(SystemExit):
        main(["--resume", str(run), "--no-progress", "--set", "total_steps=512"])
    assert "the disk is full" in capsys.readouterr().err
    assert rows(run) == before
    monkeypatch.undo()
    main(["--resume", str(run), "--no-progress", "--set", "total_steps=512"])
    assert [row["update"] for row in rows(run)] == ["1", "2", "3", "4"]


def test_turns_played_after_the_last_update_are_saved_at_the_end(tmp_path):
    """A run whose last rollouts resolve no decision (one game, two turns each) still ends
    with latest.pt at the turns it played: what it reports, what --resume continues from, and
    a finished run's resume is refused rather than trained on again."""
    overrides = [
        *TINY,
        "env.num_games=1",
        "env.rollout_steps=2",
        "env.num_players=[4]",
        "total_steps=16",
    ]
    run = tmp_path / "short"
    summary = SelfPlayTrainer(load_config(None, overrides), run, progress=False).train()
    saved = load_checkpoint(run / "latest.pt")
    assert (saved["update"], saved["global_step"]) == (summary["update"], summary["global_step"]) == (1, 16)
    with pytest.raises(ConfigError, match="is not beyond the 16 turns"):
        SelfPlayTrainer(load_config(None, overrides), run, resume=True, progress=False)


def test_a_run_too_short_to_resolve_a_decision_can_still_be_extended(tmp_path):
    """No update at all (the first rollouts resolve nothing): the run still saves, so the
    end message's ``--resume ... --set total_steps=N`` finds a latest.pt to continue."""
    overrides = [*TINY, "env.num_games=1", "env.rollout_steps=2", "env.num_players=[4]", "total_steps=4"]
    run = tmp_path / "shorter"
    summary = SelfPlayTrainer(load_config(None, overrides), run, progress=False).train()
    assert (summary["update"], summary["global_step"]) == (0, 4)
    assert load_checkpoint(run / "latest.pt")["global_step"] == 4
    extended = [item if item != "total_steps=4" else "total_steps=64" for item in overrides]
    summary = SelfPlayTrainer(load_config(None, extended), run, resume=True, progress=False).train()
    assert summary["global_step"] == 64 and summary["update"] >= 1


def test_torch_threads_0_is_the_count_the_process_started_with(tmp_path):
    # The count is process-wide: a run with torch_threads 0 after one with another count kept
    # that count, so its seeded weights depended on what the process had run before.
    import torch

    from training.learn import trainer as trainer_module

    starting = trainer_module._STARTING_THREADS
    before = torch.get_num_threads()
    try:
        for threads, expected in ((starting + 1, starting + 1), (0, starting)):
            config = load_config(None, [*TINY_TRAINING, f"torch_threads={threads}"])
            SelfPlayTrainer(config, tmp_path / str(threads), progress=False)
            assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(before)
