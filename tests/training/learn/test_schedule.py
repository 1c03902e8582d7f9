"""Runs that change settings at given turn counts (``schedule``), runs extended with
``--resume --set total_steps=N``, and the run's result file chosen on more rounds."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest
import torch
import yaml
from conftest import ROOT, TINY_TRAINING

from training.exploitability.training_curve import window_means
from training.learn.checkpoint import load_checkpoint, save_checkpoint
from training.learn.config import ConfigError, load_config
from training.learn.selfplay_command import SelfPlayTrainer, main

# Two updates of 16 games x 8 turns (128 turns each).
TINY = [
    *TINY_TRAINING,
    "total_steps=256",
    "eval.every=0",
    "save_every=1",
    "opponents.snapshot_every=1",
]
STAGE = "schedule=[{at_step: 128, set: {ppo.learning_rate: 2.0e-4, env.num_players: [4], opponents.bots: 0.0}}]"


def args(tmp_path: Path, *extra: str) -> list[str]:
    out = ["--no-progress", "--set", f"out_dir={tmp_path}"]
    for item in [*TINY, *extra]:
        out += ["--set", item]
    return out


def learning_rates(run: Path) -> list[float]:
    with (run / "metrics.csv").open(newline="") as f:
        return [float(r["learning_rate"]) for r in csv.DictReader(f)]


def test_a_stage_changes_tables_opponents_and_learning_rate_from_its_turn(tmp_path: Path):
    config = load_config(None, [*TINY, STAGE, "ppo.learning_rate=8e-4"])
    assert config.at_step(127).env.num_players == [2] and config.at_step(128).env.num_players == [4]
    assert config.at_step(500).opponents.bots == 0.0 and config.opponents.bots == 0.15
    trainer = SelfPlayTrainer(config, tmp_path / "staged", progress=False)
    assert trainer.env.num_players.tolist() == [2] * 16
    trainer.train()
    assert trainer.stage == 1 and trainer.env.num_players.tolist() == [4] * 16
    # Each stage anneals its own learning rate from its start: update 2 starts the new stage afresh.
    assert learning_rates(tmp_path / "staged") == pytest.approx([8e-4, 2e-4])
    saved = yaml.safe_load((tmp_path / "staged" / "config.yaml").read_text())
    assert saved["schedule"] == [{"at_step": 128, "set": config.schedule[0].set}]


def test_the_entropy_weight_anneals_within_each_stage_and_is_logged(tmp_path: Path):
    stage = "schedule=[{at_step: 128, set: {ppo.ent_coef: 0.1, ppo.ent_coef_end: 0.0}}]"
    main(args(tmp_path, "run_name=ent", "ppo.ent_coef=0.04", "ppo.ent_coef_end=0.02", "total_steps=384", stage))
    with (tmp_path / "ent" / "metrics.csv").open(newline="") as f:
        weights = [float(r["ent_coef"]) for r in csv.DictReader(f)]
    # Stage 0 is one update at its start (0.04); stage 1's two updates start afresh at 0.1 and halve it.
    assert weights == pytest.approx([0.04, 0.1, 0.05])


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ("[{at_step: 0, set: {ppo.learning_rate: 1.0e-4}}]", "at_step must be > 0"),
        ("[{at_step: 50, set: {ppo.ent_coef: 0.0}}, {at_step: 50, set: {ppo.ent_coef: 0.1}}]", "above the previous"),
        ("[{at_step: 50, set: {seed: 3}}]", "'seed' cannot change during a run"),
        (
            "[{at_step: 50, set: {ppo.learnin_rate: 3}}]",
            r"'ppo.learnin_rate' cannot change during a run \(no such key; did you mean 'ppo.learning_rate'\?\)",
        ),
        ("[{at_step: 50, set: {ppo.learning_rate: -1}}]", r"schedule\[0\] \(from turn 50\): ppo.learning_rate"),
        ("[{at_step: 50, set: {env.num_players: [5]}}]", r"schedule\[0\] \(from turn 50\): env.num_players"),
        ("[{at_step: 50, set: {}}]", r"schedule\[0\].set must hold at least 1 item"),
        ("[{at_step: 50, sets: {ppo.ent_coef: 0.0}}]", "did you mean 'schedule\\[0\\].set'"),
    ],
)
def test_bad_stages_are_named_before_anything_runs(stage: str, message: str):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [*TINY, f"schedule={stage}"])


def test_a_stage_the_run_ends_before_is_said_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture):
    """A shortened staged recipe is the first part of the whole one (``--resume --set
    total_steps=N`` extends it), so its later stages are allowed, but never silently."""
    from training.learn.selfplay_command import _new_run, build_parser

    parser = build_parser()
    late = "schedule=[{at_step: 100, set: {ppo.gamma: 0.9}}, {at_step: 256, set: {ppo.gamma: 0.8}}]"
    for stage, noted in ((late, "1 schedule stage(s) start at or after total_steps=256 (at_step 256)"), (STAGE, "")):
        _new_run(parser, parser.parse_args(args(tmp_path, stage)))
        err = capsys.readouterr().err
        assert noted in err and ("note:" in err) == bool(noted)
    assert list(tmp_path.iterdir()) == []  # said before the run folder exists


def test_shipped_agent_configs_are_valid_schedules():
    for name in ("ppo_2p.yaml", "ppo_2to4p.yaml"):
        config = load_config(ROOT / "configs" / name)
        assert config.schedule, name
        assert all(config.at_step(stage.at_step).validate() for stage in config.schedule)


def test_resume_extends_a_finished_run_and_records_the_new_length(tmp_path: Path, capsys: pytest.CaptureFixture):
    main(args(tmp_path, "run_name=short", STAGE))
    run = tmp_path / "short"
    with pytest.raises(SystemExit):
        main(["--resume", str(run), "--no-progress"])
    assert "pass --set total_steps=N" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--resume", str(run), "--no-progress", "--set", "total_steps=512", "--set", "ppo.ent_coef=0.1"])
    assert "but --set total_steps=N" in capsys.readouterr().err
    # The machine's keys may change on resume too (tf32 here: torch_threads would change this process's threads).
    summary = main(["--resume", str(run), "--no-progress", "--set", "total_steps=512", "--set", "tf32=false"])
    assert summary["global_step"] == 512 and summary["update"] == 4
    recorded = yaml.safe_load((run / "config.yaml").read_text())
    assert recorded["total_steps"] == 512 and recorded["tf32"] is False
    saved = load_checkpoint(run / "latest.pt")
    assert saved["config"]["total_steps"] == 512 and saved["training"]["pool"]["labels"][-1] == 4
    # The last stage now runs to turn 512: its learning rate anneals over the longer stretch.
    assert learning_rates(run)[2:] == pytest.approx([2e-4 * (1 - 128 / 384), 2e-4 * (1 - 256 / 384)])


@pytest.mark.parametrize(
    ("final_rates", "picked"),
    [({"best.pt": 0.6, "latest.pt": 0.4}, "best.pt"), ({"best.pt": 0.5, "latest.pt": 0.5}, "latest.pt")],
    ids=["best_wins_more", "tie_keeps_latest"],
)
def test_the_result_is_named_and_picked_on_more_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, final_rates, picked
):
    """The evaluations' win rates are set here: update 1 scores best (so best.pt is an earlier
    update than the final weights), and the final 30 rounds give each candidate its rate in
    ``final_rates``; best.pt is the result only when it wins more of them."""
    real_play_bots = SelfPlayTrainer._play_bots
    played = []

    def play_bots(trainer, model, name, rounds, seed, index):
        result = real_play_bots(trainer, model, name, rounds, seed, index)
        if rounds == trainer.config.eval.final_rounds:
            best = load_checkpoint(trainer.run_dir / "best.pt")["model"]["state_dict"]
            weights = model.state_dict()
            label = "best.pt" if all(torch.equal(weights[k].cpu(), best[k]) for k in best) else "latest.pt"
            rate = final_rates[label]
            played.append(label)
        else:
            rate = 0.8 if trainer.update == 1 else 0.2
        return dataclasses.replace(result, win_rate=[rate, *result.win_rate[1:]])

    monkeypatch.setattr(SelfPlayTrainer, "_play_bots", play_bots)
    summary = main(args(tmp_path, "run_name=picked", "eval.every=1", "eval.rounds=4", "eval.final_rounds=30"))
    run = tmp_path / "picked"
    assert load_checkpoint(run / "best.pt")["update"] == 1 and load_checkpoint(run / "latest.pt")["update"] == 2
    assert sorted(played) == ["best.pt", "latest.pt"]  # both played the final rounds
    result = summary["result"]
    assert result["path"] == str(run / "result.pt")
    assert {label: fig["rounds"] for label, fig in result["figures"].items()} == {"latest.pt": 30, "best.pt": 30}
    assert {label: fig["win_rate"] for label, fig in result["figures"].items()} == final_rates
    assert result["source"] == picked
    chosen = torch.load(run / "result.pt", weights_only=True)
    source = load_checkpoint(run / picked)
    assert chosen["update"] == source["update"] == {"best.pt": 1, "latest.pt": 2}[picked]
    for name, weights in chosen["model"]["state_dict"].items():
        assert torch.equal(weights, source["model"]["state_dict"][name])
    assert f"result: {run / 'result.pt'}" in capsys.readouterr().out


def test_without_evaluations_the_final_weights_are_the_result(tmp_path: Path):
    summary = main(args(tmp_path, "run_name=plain"))
    assert summary["result"]["source"] == "latest.pt" and not summary["result"]["figures"]
    final = load_checkpoint(tmp_path / "plain" / "latest.pt")
    assert load_checkpoint(tmp_path / "plain" / "result.pt")["update"] == final["update"]


def mean_of_snapshots(run: Path, updates: range) -> dict[str, torch.Tensor]:
    states = [load_checkpoint(run / "snapshots" / f"update_{u:05d}.pt")["model"]["state_dict"] for u in updates]
    return {name: sum(s[name] for s in states) / len(states) for name in states[0]}


def test_the_mean_of_the_tail_weights_is_the_result(tmp_path: Path, capsys: pytest.CaptureFixture):
    # Four updates of 128 turns; averaging starts at turn 256, after update 2: updates 2, 3, 4.
    summary = main(args(tmp_path, "run_name=mean", "total_steps=512", "model.average_from=0.5"))
    run = tmp_path / "mean"
    assert summary["result"]["source"] == "the mean of the last 3 updates"
    result = load_checkpoint(run / "result.pt")["model"]["state_dict"]
    expected = mean_of_snapshots(run, range(2, 5))
    assert all(torch.allclose(result[name], expected[name], atol=1e-6) for name in result)
    last = load_checkpoint(run / "latest.pt")["model"]["state_dict"]
    assert not all(torch.equal(result[name], last[name]) for name in result)
    assert "(the mean of the last 3 updates)" in capsys.readouterr().out
    # Beside each snapshot once the mean has begun: the mean as it stood then.
    assert sorted(p.name for p in (run / "snapshots").glob("mean_*.pt")) == [f"mean_0000{u}.pt" for u in (2, 3, 4)]
    halfway = load_checkpoint(run / "snapshots" / "mean_00003.pt")["model"]["state_dict"]
    expected = mean_of_snapshots(run, range(2, 4))
    assert all(torch.allclose(halfway[name], expected[name], atol=1e-6) for name in halfway)
    final = load_checkpoint(run / "snapshots" / "mean_00004.pt")["model"]["state_dict"]
    assert all(torch.equal(final[name], result[name]) for name in result)
    # A later start, from two saved means: from 0.6 of the run (turn 307) the window starts at the
    # last mean saved by then (update 2, turn 256), so it holds updates 3 and 4.
    (update, build), *rest = window_means(run, 0.6)
    assert update == 3 and [u for u, _ in rest] == [4]
    later = rest[0][1]().state_dict()
    expected = mean_of_snapshots(run, range(3, 5))
    assert all(torch.allclose(later[name], expected[name], atol=1e-6) for name in later)
    with pytest.raises(ValueError, match="must be above the run's model.average_from 0.5"):
        window_means(run, 0.5)


@pytest.mark.parametrize(
    ("length", "average_from", "extended", "mean_of"),
    [
        # The mean starts at turn 96 of 384 (update 1); extended to 512 it goes on through update 4.
        (384, 0.25, 512, range(1, 5)),
        # The mean starts at turn 192 of 384 (updates 2 and 3); extended to 1,024 turns its window
        # starts at turn 512, after the saved updates: it begins again there, updates 4 to 8,
        # rather than the old window's updates and then the new one's.
        (384, 0.5, 1024, range(4, 9)),
    ],
)
def test_a_resumed_run_continues_its_mean_unless_its_window_moved_past(
    tmp_path, length, average_from, extended, mean_of
):
    main(args(tmp_path, "run_name=run", f"total_steps={length}", f"model.average_from={average_from}"))
    summary = main(["--resume", str(tmp_path / "run"), "--no-progress", "--set", f"total_steps={extended}"])
    assert summary["result"]["source"] == f"the mean of the last {len(mean_of)} updates"
    result = load_checkpoint(tmp_path / "run" / "result.pt")["model"]["state_dict"]
    expected = mean_of_snapshots(tmp_path / "run", mean_of)
    assert all(torch.allclose(result[name], expected[name], atol=1e-6) for name in result)


def test_a_later_window_of_a_resumed_runs_mean(tmp_path: Path):
    # The mean starts at turn 96 of 384 (update 1) and, extended to 640 turns, goes on through
    # update 5, although a quarter of 640 turns falls after update 1: the count of averaged
    # updates comes from the saved means, not from the config's fractions.
    main(args(tmp_path, "run_name=longer", "total_steps=384", "model.average_from=0.25"))
    run = tmp_path / "longer"
    main(["--resume", str(run), "--no-progress", "--set", "total_steps=640"])
    counts = [load_checkpoint(run / "snapshots" / f"mean_0000{u}.pt")["averaged_updates"] for u in range(1, 6)]
    assert counts == [1, 2, 3, 4, 5]
    # From half of 640 turns (320) the window starts at the last mean by then (update 2, turn 256).
    (update, _), *rest = window_means(run, 0.5)
    assert update == 3 and [u for u, _ in rest] == [4, 5]
    later = rest[-1][1]().state_dict()
    expected = mean_of_snapshots(run, range(3, 6))
    assert all(torch.allclose(later[name], expected[name], atol=1e-6) for name in later)
    # A mean that does not say how many updates it averages is refused, not guessed at.
    old = load_checkpoint(run / "snapshots" / "mean_00002.pt")
    del old["averaged_updates"]
    save_checkpoint(run / "snapshots" / "mean_00002.pt", old)
    with pytest.raises(ValueError, match="does not record how many updates it averages"):
        window_means(run, 0.5)
