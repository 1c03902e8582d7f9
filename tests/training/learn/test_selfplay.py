"""Self-play training end to end (tiny runs of a few seconds), its config, and the rollout."""

from __future__ import annotations

import csv
import dataclasses
import re
import shlex
import signal
import typing
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT, TINY_TRAINING
from pydantic import ValidationError

from loveletter_env.rules import PRESETS
from loveletter_env.validation import EPISODE_KINDS, PLAYER_COUNTS
from training import load_agent
from training.learn.checkpoint import DIGEST_KEY, CheckpointError, load_checkpoint, save_checkpoint
from training.learn.config import ConfigError, EnvConfig, TableSize, TrainConfig, load_config, to_dict
from training.learn.selfplay_command import SelfPlayTrainer, main
from training.learn.trainer import default_env_factory
from training.selfplay import main as selfplay_main

# A run of two updates of 16 games x 8 turns: seconds, yet every code path runs.
TINY = [
    *TINY_TRAINING,
    "total_steps=256",
    "eval.every=1",
    "eval.rounds=6",
    "save_every=1",
    "opponents.snapshot_every=1",
    "opponents.current=0.4",
    "opponents.past=0.3",
    "opponents.bots=0.3",
]


def tiny_args(tmp_path: Path, *extra: str) -> list[str]:
    args = ["--no-progress", "--set", f"out_dir={tmp_path}"]
    for item in TINY + list(extra):
        args += ["--set", item]
    return args


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


# -- config ----------------------------------------------------------------------------
def test_shipped_default_yaml_equals_the_built_in_defaults():
    assert to_dict(load_config(ROOT / "configs" / "default.yaml")) == to_dict(TrainConfig())


def test_the_config_offers_every_rules_preset_table_size_and_episode_kind():
    for name in PRESETS:
        assert EnvConfig(rules=name).rules == [name]
    with pytest.raises(ValidationError, match="must be one of 'classic', 'pegasus'"):
        EnvConfig(rules="bogus")
    assert typing.get_args(TableSize) == PLAYER_COUNTS
    assert typing.get_args(EnvConfig.model_fields["episode"].annotation) == EPISODE_KINDS


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_config_file_is_valid(path):
    load_config(path)


def test_overrides_parse_yaml_values():
    cfg = load_config(
        None,
        [
            "ppo.learning_rate=3e-4",
            "env.rules=classic",
            "env.num_players=[2,3,4]",
            "total_steps=1e6",
            "ppo.target_kl=null",
            "eval.greedy=false",
            "env.num_players=3",
        ],
    )
    assert cfg.ppo.learning_rate == 3e-4 and cfg.total_steps == 1_000_000
    assert cfg.ppo.target_kl is None and cfg.eval.greedy is False
    assert cfg.env.num_players == [3]  # a single value is a one-item list


@pytest.mark.parametrize(
    "override,message",
    [
        ("ppo.lr=1", "unknown config key.*ppo.lr"),
        ("nonsense.key=1", "unknown config key.*nonsense"),
        ("env.num_players=[2,5]", "env.num_players"),
        ("ppo.gamma=1.5", "ppo.gamma"),
        ("eval.every=often", "eval.every must be an integer"),
        ("ppo.norm_adv=1", "ppo.norm_adv must be true or false"),
        ("env=3", "env must be a mapping"),
        ("env.rules=chess", "env.rules"),
        ("eval.best_by=belief", "eval.best_by"),
        ("opponents.current=0", "opponents.current, opponents.past and opponents.bots are all 0"),
        ("opponents.bots=0.5", None),  # fine on its own: bots beside the default self-play
        ("no_equals_sign", "section.key=value"),
        ("ppo.learning_rate=.inf", "ppo.learning_rate must be a finite number"),
        ("ppo.clip_coef=.nan", "ppo.clip_coef must be a finite number"),
        ("seed=-1", "seed must be >= 0"),
        ("opponents.bot_names=[nobody]", "opponents.bot_names must be names from"),
        ("eval.rounds=301", r"eval.rounds must be a multiple of eval.num_players \(2\) with eval.duplicate"),
        ("eval.final_rounds=1001", "eval.final_rounds must be a multiple"),
    ],
)
def test_bad_overrides_name_the_problem(override, message):
    if message is None:
        load_config(None, [override])
        return
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_bad_config_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(tmp_path / "list.yaml")
    (tmp_path / "broken.yaml").write_text("ppo: {learning_rate: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "broken.yaml")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "binary.yaml")
    (tmp_path / "typo.yaml").write_text("ppo:\n  learnig_rate: 0.1\n")
    with pytest.raises(ConfigError, match="ppo.learnig_rate"):
        load_config(tmp_path / "typo.yaml")


def test_cli_reports_config_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--set", "ppo.lr=1", "--set", f"out_dir={tmp_path}"])
    assert exit_info.value.code == 2
    assert "ppo.lr" in capsys.readouterr().err


# -- end to end ------------------------------------------------------------------------
def test_odd_evaluation_lengths_are_fine_without_duplicate_deals():
    assert load_config(None, ["eval.duplicate=false", "eval.rounds=301"]).eval.rounds == 301


def test_periodic_and_final_evaluations_play_duplicate_deals(tmp_path):
    config = load_config(None, [*TINY, "eval.final_rounds=8"])
    trainer = SelfPlayTrainer(config, tmp_path, progress=False)
    # Update 1 scores best, so best.pt is an earlier update than the final weights and the
    # final pick has both play eval.final_rounds more rounds.
    periodic = trainer.evaluate

    def evaluate():
        rate = 1.0 if trainer.update == 1 else 0.0
        return {k: dataclasses.replace(r, win_rate=[rate, *r.win_rate[1:]]) for k, r in periodic().items()}

    played = []
    play_bots = trainer._play_bots

    def recording(*args, **kwargs):
        played.append(play_bots(*args, **kwargs))
        return played[-1]

    trainer.evaluate, trainer._play_bots = evaluate, recording
    summary = trainer.train()
    assert load_checkpoint(tmp_path / "best.pt")["update"] == 1 and trainer.update == 2
    assert set(summary["result"]["figures"]) == {"best.pt", "latest.pt"}  # the final pick ran
    final = [r for r in played if r.episodes == 8]
    assert len(final) == 2 and len(played) == 2 + 2 * len(config.eval.opponents)
    assert trainer.last_eval and all(r.duplicate and r.decided_by_seat is not None for r in trainer.last_eval.values())
    assert all(r.duplicate and r.decided_by_seat is not None for r in final)
    plain = SelfPlayTrainer(load_config(None, TINY + ["eval.duplicate=false"]), tmp_path / "plain", progress=False)
    assert not plain.evaluate()["rule"].duplicate


def test_short_cli_run_writes_a_loadable_checkpoint(tmp_path):
    summary = main(tiny_args(tmp_path, "run_name=tiny"))
    run = tmp_path / "tiny"
    for name in ("config.yaml", "latest.pt", "best.pt", "metrics.csv", "learning_curve.png"):
        assert (run / name).is_file(), name
    assert list((run / "snapshots").glob("update_*.pt"))
    assert list((run / "tb").iterdir())
    ckpt = torch.load(run / "latest.pt", weights_only=True)
    assert ckpt["global_step"] == summary["global_step"] >= 256
    assert yaml.safe_load((run / "config.yaml").read_text())["env"]["num_games"] == 16
    metrics = rows(run)
    assert [int(r["update"]) for r in metrics] == [1, 2]
    assert all(0 <= float(r["eval_win_rate_rule"]) <= 1 for r in metrics)
    # Where each update's time went: every part ran (bots sit in 30% of games), and the parts
    # account for no more than the update's own wall time (elapsed_s is rounded to 0.01 s).
    for previous, row in zip([{"elapsed_s": "0"}] + metrics, metrics):
        parts = [float(row[f"{part}_s"]) for part in ("env", "forward", "bots", "update", "bookkeeping")]
        assert all(seconds > 0 for seconds in parts), row
        assert sum(parts) <= float(row["elapsed_s"]) - float(previous["elapsed_s"]) + 0.01
    agent = load_agent(run)
    from training.measure.evaluation import evaluate

    result = evaluate([agent, "random"], num_players=2, rounds=4, seed=1)
    assert 0 <= result.win_rate[0] <= 1


def test_rollouts_too_short_to_finish_a_decision_do_not_crash(tmp_path):
    # One game, two turns per rollout: some rollouts resolve no decision at all.
    summary = main(
        tiny_args(
            tmp_path, "run_name=short", "env.num_games=1", "env.rollout_steps=2", "total_steps=64", "eval.every=0"
        )
    )
    assert summary["global_step"] >= 64
    assert (tmp_path / "short" / "latest.pt").is_file()


def test_existing_run_is_not_overwritten(tmp_path, capsys):
    main(tiny_args(tmp_path, "run_name=once", "eval.every=0"))
    with pytest.raises(SystemExit):
        main(tiny_args(tmp_path, "run_name=once", "eval.every=0"))
    assert "--resume" in capsys.readouterr().err


def test_the_refusal_of_a_taken_run_name_gives_a_resume_command_the_shell_reads_back(tmp_path, capsys):
    """A run name may hold a space or '#' (``--run-name "trial #2"``): the --resume the refusal
    suggests must be quoted, or the shell cuts the folder at the space and drops '#2' as a comment."""
    main(tiny_args(tmp_path, "eval.every=0", "total_steps=128") + ["--run-name", "trial #2"])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(tiny_args(tmp_path, "eval.every=0", "total_steps=128") + ["--run-name", "trial #2"])
    err = capsys.readouterr().err
    suggested = shlex.split(err.split("pass ", 1)[1].split(" or another", 1)[0], comments=True)
    assert suggested == ["--resume", str(tmp_path / "trial #2")], err


class StopAfter:
    """Wraps the batched env and interrupts training after ``steps`` env steps (a crash)."""

    def __init__(self, steps: int):
        self.steps = steps

    def __call__(self, **kwargs):
        env = default_env_factory(**kwargs)
        original, budget = env.step, [self.steps]

        def step(actions, *args, **kwargs):
            budget[0] -= 1
            if budget[0] < 0:
                raise KeyboardInterrupt
            return original(actions, *args, **kwargs)

        env.step = step
        return env


def test_a_new_run_refuses_what_a_run_that_died_before_its_first_save_left(tmp_path, capsys):
    """A folder without latest.pt holds no run, but what the dead run wrote before its first
    save (best.pt, TensorBoard events) would pass for the new run's: a new run that never
    evaluates kept the dead run's best.pt and mixed its curves with its own. It is refused,
    naming the files, and nothing is removed."""
    overrides = TINY + [f"out_dir={tmp_path}", "run_name=dead", "total_steps=512", "save_every=100"]
    run = tmp_path / "dead"
    trainer = SelfPlayTrainer(load_config(None, overrides), run, env_factory=StopAfter(2 * 8 + 3), progress=False)
    with pytest.raises(KeyboardInterrupt):
        trainer.train()  # killed during update 3: evaluated twice, never saved
    assert (run / "best.pt").is_file() and not (run / "latest.pt").exists()
    events = sorted((run / "tb").iterdir())
    with pytest.raises(SystemExit) as refused:
        main(tiny_args(tmp_path, "run_name=dead", "eval.every=0"))
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "holds what a run that stopped before its first save left (best.pt, tb/events.out.tfevents." in err
    assert (run / "best.pt").is_file() and sorted((run / "tb").iterdir()) == events


def test_resume_continues_from_the_last_save(tmp_path):
    overrides = TINY + [f"out_dir={tmp_path}", "run_name=crash", "total_steps=512", "save_every=2", "eval.every=0"]
    config = load_config(None, overrides)
    run = tmp_path / "crash"
    trainer = SelfPlayTrainer(config, run, env_factory=StopAfter(3 * 8 + 3), progress=False)
    with pytest.raises(KeyboardInterrupt):
        trainer.train()  # dies during update 4; update 2 was the last save
    saved = load_checkpoint(run / "latest.pt")
    assert (saved["update"], saved["global_step"]) == (2, 2 * 128)
    assert len(rows(run)) == 3
    # Say the first two updates took 1000 s (and 900 s of CPU): the resumed run counts on from there.
    saved_rows = rows(run)
    saved_rows[1].update(elapsed_s="1000.0", cpu_s="900.0")
    with (run / "metrics.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(saved_rows[0]))
        writer.writeheader()
        writer.writerows(saved_rows)

    summary = main(["--resume", str(run), "--no-progress"])
    assert summary["global_step"] == 512 and summary["update"] == 4
    assert [int(r["update"]) for r in rows(run)] == [1, 2, 3, 4]  # row 3 was redone, not repeated
    resumed_rows = rows(run)[2:]
    assert 1000 < float(resumed_rows[0]["elapsed_s"]) <= float(resumed_rows[1]["elapsed_s"]) < 1000 + 600
    assert 900 < float(resumed_rows[0]["cpu_s"]) <= float(resumed_rows[1]["cpu_s"])
    resumed = load_checkpoint(run / "latest.pt")
    assert resumed["training"]["pool"]["labels"][-1] == 4


def test_resume_refuses_other_settings(tmp_path, capsys):
    main(tiny_args(tmp_path, "run_name=r", "eval.every=0"))
    with pytest.raises(SystemExit):
        main(["--resume", str(tmp_path / "r"), "--set", "ppo.learning_rate=1"])
    assert "own config" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--resume", str(tmp_path / "nothing_here")])
    assert "not a run folder" in capsys.readouterr().err
    # config.yaml edited by hand: the refusal names what changed.
    config = tmp_path / "r" / "config.yaml"
    config.write_text(config.read_text().replace("ent_coef: 0.02", "ent_coef: 0.05"))
    with pytest.raises(SystemExit):
        main(["--resume", str(tmp_path / "r"), "--set", "total_steps=4096"])
    assert "differs from the one the checkpoint was trained with (ppo.ent_coef 0.02 -> 0.05)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda c: c["training"].pop("optimizer"), "KeyError: 'optimizer'"),
        (lambda c: c.pop("global_step"), "KeyError: 'global_step'"),
        (lambda c: c["training"].update(numpy_rng={"bit_generator": "MT19937"}), "ValueError"),
    ],
)
def test_a_resume_from_a_training_state_of_another_shape_is_refused(tmp_path, capsys, damage, named):
    """A latest.pt whose digest holds (it was saved again) but whose training state lacks what
    a resume reads is named, not a traceback."""
    main(tiny_args(tmp_path, "run_name=r", "eval.every=0"))
    latest = tmp_path / "r" / "latest.pt"
    checkpoint = load_checkpoint(latest)
    damage(checkpoint)
    save_checkpoint(latest, checkpoint)
    with pytest.raises(SystemExit):
        main(["--resume", str(tmp_path / "r"), "--set", "total_steps=4096"])
    err = capsys.readouterr().err
    assert "the run's latest.pt holds no training state this version can resume" in err and named in err


def test_same_seed_same_weights(tmp_path):
    config = load_config(None, TINY + ["eval.every=0", "total_steps=128"])
    weights = []
    for name in ("a", "b"):
        trainer = SelfPlayTrainer(config, tmp_path / name, progress=False)
        trainer.train()
        weights.append(trainer.model.state_dict())
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


# -- the rollout -----------------------------------------------------------------------
@pytest.mark.parametrize("table", ["[2]", "[2,3,4]"])
def test_rollout_records_legal_linked_decisions(tmp_path, table):
    config = load_config(None, TINY + [f"env.num_players={table}", "env.rollout_steps=24"])
    trainer = SelfPlayTrainer(config, tmp_path, progress=False)
    trainer._make_env()
    buffer, stats = trainer.collect_rollout()
    n = buffer.size
    assert n > 0 and stats["episodes"] > 0
    # Masking: every recorded action was legal where it was taken.
    assert buffer.masks[torch.arange(n), buffer.actions[:n]].all()
    # Links go forward in time and each decision has at most one predecessor.
    nxt = buffer.next_index[:n]
    linked = nxt[nxt >= 0]
    assert (linked > torch.arange(n)[nxt >= 0]).all() and linked.unique().numel() == linked.numel()
    # A decision is closed by the episode's end or by its successor, never both.
    assert not (buffer.terminal[:n] & (nxt >= 0)).any()
    assert set(buffer.rewards[:n][buffer.terminal[:n]].tolist()) <= {-1.0, 1.0}
    batch = buffer.batch(1.0, 0.95)
    assert 0 < len(batch) <= n
    # The env's observation bytes are stored as bytes, a quarter of float32's memory.
    assert buffer.obs.dtype == torch.uint8 and batch.obs.dtype == torch.uint8


PURE_SELF_PLAY = [*TINY, "opponents.current=1", "opponents.past=0", "opponents.bots=0"]


def buffer_contents(buffer) -> dict[str, torch.Tensor]:
    n = buffer.size
    names = ("obs", "masks", "actions", "logprobs", "values", "rewards", "terminal", "next_index")
    return {name: getattr(buffer, name)[:n].clone() for name in names} | {"pending": buffer.pending.clone()}


@pytest.mark.parametrize("table", ["[2]", "[2,3,4]"])
def test_the_self_play_rollout_records_what_the_general_rollout_records(tmp_path, table):
    # The learner in every seat takes the rollout without per-turn host reads; the general
    # path (past networks and bots) is the reference: same decisions, links, rewards, draws.
    config = load_config(None, PURE_SELF_PLAY + [f"env.num_players={table}", "env.rollout_steps=24"])
    played = {}
    for path in ("_self_play_rollout", "_mixed_rollout"):
        trainer = SelfPlayTrainer(config, tmp_path / path, progress=False)
        buffer = trainer._rollout_buffer()
        stats = getattr(trainer, path)(buffer)
        played[path] = (buffer_contents(buffer), stats, trainer.rng.random(), trainer.seating.learner_seat.copy())
        trainer.release()
    (fast, fast_stats, fast_rng, fast_seats), (slow, slow_stats, slow_rng, slow_seats) = played.values()
    assert fast.keys() == slow.keys() and all(torch.equal(fast[k], slow[k]) for k in fast)
    assert fast_stats["episodes"] == slow_stats["episodes"] > 0
    assert fast_rng == slow_rng and (fast_seats == slow_seats).all()


def test_the_self_play_rollout_keeps_each_observation_and_mask_once(tmp_path):
    # The env writes each turn's observations and masks into the buffer rows the next
    # turn's decisions fill (the last turn's into the trainer's own), and builds no info.
    config = load_config(None, PURE_SELF_PLAY + ["env.rollout_steps=6"])
    trainer = SelfPlayTrainer(config, tmp_path, progress=False)
    calls = []
    original = trainer.env.step

    def step(actions, out=None, *, mask_out=None, info=True):
        calls.append((out, mask_out, info))
        return original(actions, out=out, mask_out=mask_out, info=info)

    trainer.env.step = step
    buffer, _ = trainer.collect_rollout()
    n, turns = 16, 6
    assert len(calls) == turns
    for turn, (out, mask_out, info) in enumerate(calls):
        rows = slice((turn + 1) * n, (turn + 2) * n)
        expected = (buffer.obs[rows], buffer.masks[rows]) if turn + 1 < turns else (trainer.obs, trainer.mask)
        assert out.data_ptr() == expected[0].data_ptr() and mask_out.data_ptr() == expected[1].data_ptr(), turn
        assert info is False
    assert torch.equal(trainer.mask, trainer.env.action_mask)
    trainer.release()


@pytest.mark.parametrize("opponents", [PURE_SELF_PLAY, TINY], ids=["self-play", "past and bots"])
def test_each_network_decision_masks_its_logits_once(tmp_path, monkeypatch, opponents):
    # Sampling and the log-probability the rollout records share one masking of the logits.
    from training.learn import ppo

    config = load_config(None, opponents + ["env.rollout_steps=6"])
    trainer = SelfPlayTrainer(config, tmp_path, progress=False)
    masked, decided = [], []
    mask_logits, forward = ppo.masked_logits, ppo.ActorCritic.forward

    def counted_mask(logits, mask):
        masked.append(len(logits))
        return mask_logits(logits, mask)

    def counted_forward(model, obs):
        decided.append(len(obs))
        return forward(model, obs)

    monkeypatch.setattr(ppo, "masked_logits", counted_mask)
    monkeypatch.setattr(ppo.ActorCritic, "forward", counted_forward)
    buffer, _ = trainer.collect_rollout()
    assert 0 < buffer.size <= sum(decided)  # the learner's decisions, and the past networks' if any
    assert sum(masked) == sum(decided)
    trainer.release()


def test_pure_self_play_trains_the_weights_the_general_rollout_trains(tmp_path, monkeypatch):
    config = load_config(None, PURE_SELF_PLAY + ["eval.every=0", "total_steps=512"])
    weights = []
    for name in ("self_play", "general"):
        if name == "general":
            monkeypatch.setattr(SelfPlayTrainer, "_self_play_rollout", SelfPlayTrainer._mixed_rollout)
        trainer = SelfPlayTrainer(config, tmp_path / name, progress=False)
        trainer.train()
        weights.append(trainer.model.state_dict())
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


@pytest.mark.parametrize("opponents", [PURE_SELF_PLAY, TINY])
def test_the_reused_rollout_buffer_holds_what_a_fresh_one_would(tmp_path, opponents):
    config = load_config(None, opponents + ["env.rollout_steps=12"])
    batches = []
    for name in ("reused", "fresh"):
        trainer = SelfPlayTrainer(config, tmp_path / name, progress=False)
        first, _ = trainer.collect_rollout()
        if name == "fresh":
            trainer.buffer = None
        second, _ = trainer.collect_rollout()
        assert (second is first) == (name == "reused")
        batches.append((buffer_contents(second), second.batch(1.0, 0.95)))
        trainer.release()
    (reused, reused_batch), (fresh, fresh_batch) = batches
    assert all(torch.equal(reused[k], fresh[k]) for k in reused)
    assert all(torch.equal(getattr(reused_batch, k), getattr(fresh_batch, k)) for k in ("obs", "advantages", "returns"))


def test_a_resumed_optimizer_takes_this_machines_adam_step(tmp_path):
    # A run saved on CUDA (fused Adam) resumes on the CPU with the CPU's step, and back.
    overrides = PURE_SELF_PLAY + [f"out_dir={tmp_path}", "run_name=r", "total_steps=128", "eval.every=0"]
    main(["--no-progress", *[a for o in overrides for a in ("--set", o)]])
    latest = tmp_path / "r" / "latest.pt"
    ckpt = load_checkpoint(latest)
    for group in ckpt["training"]["optimizer"]["param_groups"]:
        group["fused"] = True
    save_checkpoint(latest, {k: v for k, v in ckpt.items() if k != DIGEST_KEY})
    config = load_config(None, overrides + ["total_steps=256"])
    trainer = SelfPlayTrainer(config, tmp_path / "r", resume=True, progress=False)
    assert all(group["fused"] is None for group in trainer.optimizer.param_groups)
    trainer.train()
    assert trainer.global_step == 256


@pytest.mark.parametrize("beta1", [0.0, 0.9])
def test_adams_momentum_is_the_configured_one(tmp_path, beta1):
    # Without momentum Adam's running mean of the gradients is the last step's clipped gradient.
    overrides = PURE_SELF_PLAY + ["total_steps=128", "eval.every=0", f"ppo.adam_beta1={beta1}", "ppo.adam_beta2=0.99"]
    trainer = SelfPlayTrainer(load_config(None, overrides), tmp_path / "r", progress=False)
    assert all(group["betas"] == (beta1, 0.99) for group in trainer.optimizer.param_groups)
    trainer.train()
    params = [p for p in trainer.model.parameters() if p.grad is not None]
    last_gradient = all(torch.equal(trainer.optimizer.state[p]["exp_avg"], p.grad) for p in params)
    assert params and last_gradient == (beta1 == 0.0)


def test_bot_games_train_only_the_learner_seat(tmp_path):
    config = load_config(
        None,
        TINY
        + [
            "opponents.current=0",
            "opponents.past=0",
            "opponents.bots=1",
            "opponents.bot_names=[rule]",
            "env.rollout_steps=20",
        ],
    )
    trainer = SelfPlayTrainer(config, tmp_path, progress=False)
    trainer._make_env()
    buffer, stats = trainer.collect_rollout()
    # Every game has exactly one learner seat, so the learner makes about half the decisions.
    assert 0.3 * 16 * 20 < buffer.size < 0.7 * 16 * 20
    assert 0 <= stats["win_rate_vs_bots"] <= 1


def test_bot_specs_with_options_play_as_training_opponents(tmp_path):
    config = load_config(
        None,
        TINY
        + ["opponents.current=0", "opponents.past=0", "opponents.bots=1", "opponents.bot_names=[ismcts:iterations=3]"],
    )
    trainer = SelfPlayTrainer(config, tmp_path, progress=False)
    trainer._make_env()
    buffer, _ = trainer.collect_rollout()
    bots = [bot for seats in trainer.seating._bots.values() for bot in seats]
    assert buffer.size > 0 and bots and all(bot.iterations == 3 for bot in bots)
    with pytest.raises(ConfigError, match=r"opponents.bot_names: bot 'ismcts:iteration=3' cannot be built .*no option"):
        load_config(None, ["opponents.bot_names=[ismcts:iteration=3]"])


def test_python_bots_see_the_aec_envs_float32_observations(tmp_path, monkeypatch):
    """Bots without a compiled version play on float32 vectors, as in the AEC env, though
    the batched env writes bytes."""
    from loveletter_env.agents.ismcts import ISMCTSAgent

    seen = []
    act = ISMCTSAgent.act

    def recording_act(self, observation):
        seen.append(observation["observation"].dtype)
        return act(self, observation)

    monkeypatch.setattr(ISMCTSAgent, "act", recording_act)
    bots = ["opponents.current=0", "opponents.past=0", "opponents.bots=1", "opponents.bot_names=[ismcts:iterations=3]"]
    trainer = SelfPlayTrainer(load_config(None, TINY + bots), tmp_path, progress=False)
    trainer._make_env()
    trainer.collect_rollout()
    assert seen and set(seen) == {np.dtype(np.float32)}


def test_init_from_starts_with_the_given_weights(tmp_path):
    main(tiny_args(tmp_path, "run_name=source", "eval.every=0"))
    source = load_checkpoint(tmp_path / "source")["model"]["state_dict"]
    config = load_config(None, TINY + [f"model.init_from={tmp_path / 'source'}"])
    trainer = SelfPlayTrainer(config, tmp_path / "child", progress=False)
    assert all(torch.equal(trainer.model.state_dict()[k], v) for k, v in source.items())
    wider = load_config(None, TINY + [f"model.init_from={tmp_path / 'source'}", "model.hidden_sizes=[64]"])
    with pytest.raises(ConfigError, match="hidden_sizes"):
        SelfPlayTrainer(wider, tmp_path / "wider", progress=False)
    assert not (tmp_path / "wider").exists()  # refused before the run folder is made
    missing = load_config(None, TINY + [f"model.init_from={tmp_path / 'none.pt'}"])
    with pytest.raises(CheckpointError, match="does not exist"):
        SelfPlayTrainer(missing, tmp_path / "missing", progress=False)
    assert not (tmp_path / "missing").exists()


V1_2P = ROOT / "checkpoints" / "v1" / "ppo_2p.pt"


def test_init_from_a_network_of_an_older_observation_layout_is_refused_by_name(tmp_path):
    # A version 1 network: it plays, but cannot be trained on version 2.
    config = load_config(None, TINY + [f"model.init_from={V1_2P}", "model.hidden_sizes=[256,256]"])
    with pytest.raises(
        ConfigError,
        match=r"model.init_from '.*ppo_2p.pt' holds a network trained on observation version 1 \(646 entries\), "
        r"but training uses observation version 2 \(1382 entries\)",
    ):
        SelfPlayTrainer(config, tmp_path / "child", progress=False)
    assert not (tmp_path / "child" / "latest.pt").exists()


def test_exploit_trains_against_a_version_1_checkpoint(tmp_path):
    """The frozen target sits in the opponent pool and in the measurement: both feed it the
    current observation, which it reads through its own layout."""
    from training.exploit import main as exploit_main

    report = exploit_main(
        [
            "--checkpoint",
            str(V1_2P),
            "--steps",
            "64",
            "--rounds",
            "4",
            "--no-progress",
            "--set",
            f"out_dir={tmp_path}",
            "--set",
            "env.num_games=8",
            "--set",
            "env.rollout_steps=8",
        ]
    )
    assert report["training_turns"] == 64 and 0 <= report["best_response_win_rate"] <= 1
    pool = load_checkpoint(tmp_path / "exploit_ppo_2p_2p" / "latest.pt")["training"]["pool"]
    assert pool["observation_versions"] == [1] and pool["labels"] == [-1]


def test_exploit_trains_against_the_frozen_checkpoint(tmp_path):
    from training.exploit import main as exploit_main

    main(tiny_args(tmp_path, "run_name=target", "eval.every=0"))
    report = exploit_main(
        [
            "--checkpoint",
            str(tmp_path / "target"),
            "--steps",
            "128",
            "--rounds",
            "6",
            "--no-progress",
            "--set",
            f"out_dir={tmp_path}",
            "--set",
            "env.num_games=16",
            "--set",
            "env.rollout_steps=8",
        ]
    )
    assert 0 <= report["best_response_win_rate"] <= 1 and report["training_turns"] == 128
    run = tmp_path / "exploit_target_2p"
    assert (run / "exploit.json").is_file() and load_checkpoint(run / "latest.pt")["training"]["pool"]["labels"] == [-1]


def test_a_pool_saved_without_shapes_holds_the_learners_shape():
    from training.learn.ppo import ActorCritic
    from training.learn.seating import OpponentPool

    model = ActorCritic([8])
    pool = OpponentPool(3)
    pool.load_state({"snapshots": [model.state_dict()], "labels": [5]}, default_hidden_sizes=[8])
    assert pool.hidden_sizes == [[8]] and pool.build(0).hidden_sizes == (8,)


def test_the_pool_keeps_each_snapshots_observation_layout():
    from training.learn.ppo import ActorCritic
    from training.learn.seating import OpponentPool

    pool = OpponentPool(3)
    pool.add(ActorCritic([8]), label=1)
    pool.add(ActorCritic([8], observation_version=1), label=2)
    current = pool.build(0)
    older = pool.build(1, into=current)  # same shape, other layout: a new network
    assert (current.observation_version, older.observation_version) == (2, 1) and older is not current
    restored = OpponentPool(3)
    restored.load_state(pool.state(), default_hidden_sizes=[8])
    assert restored.build(1).observation_version == 1
    legacy = OpponentPool(3)  # a pool saved before snapshots kept their layout: the checkpoint's own
    legacy.load_state({"snapshots": pool.snapshots[1:], "labels": [2]}, [8], default_observation_version=1)
    assert legacy.build(0).trunk[0].in_features == 646


def test_a_best_response_may_be_wider_than_its_target(tmp_path):
    from training.exploit import main as exploit_main

    main(tiny_args(tmp_path, "run_name=target", "eval.every=0"))  # hidden_sizes [32]
    small = ["--set", "env.num_games=16", "--set", "env.rollout_steps=8"]
    args = ["--checkpoint", str(tmp_path / "target"), "--steps", "256", "--rounds", "6", "--no-progress", *small]
    report = exploit_main([*args, "--set", f"out_dir={tmp_path}", "--set", "model.hidden_sizes=[48,48]"])
    run = tmp_path / "exploit_target_2p"
    saved = load_checkpoint(run / "latest.pt")
    assert saved["model"]["hidden_sizes"] == [48, 48] and report["training_turns"] == 256
    assert saved["training"]["pool"]["hidden_sizes"] == [[32]]  # the frozen target kept its own shape
    target = load_checkpoint(tmp_path / "target")["model"]["state_dict"]
    assert all(torch.equal(saved["training"]["pool"]["snapshots"][0][k], v) for k, v in target.items())
    # Resuming rebuilds the target in its shape, not the learner's.
    resumed = SelfPlayTrainer(load_config(run / "config.yaml", ["total_steps=512"]), run, resume=True, progress=False)
    resumed.collect_rollout()
    assert resumed.opponent_model.hidden_sizes == (32,)


# Progress output --------------------------------------------------------------------


def test_no_progress_prints_one_line_per_evaluation(tmp_path, capsys):
    overrides = [*TINY_TRAINING, "total_steps=384"]
    overrides += ["eval.every=1", "eval.rounds=4", "eval.opponents=[random]", "eval.best_by=random"]
    args = ["--no-progress", "--set", f"out_dir={tmp_path}"]
    for item in overrides:
        args += ["--set", item]
    summary = selfplay_main(args)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("update ")]
    assert len(lines) == summary["update"] == 3
    for update, line in enumerate(lines, 1):
        assert re.match(rf"update {update} \([\d,]+ turns\): win rate vs random \d+\.\d%", line), line


def test_a_stop_asked_after_the_last_updates_check_still_stops_the_run(tmp_path, monkeypatch):
    """Ctrl-C in the last update, after the loop last looked: the run is saved whole and ends
    as interrupted (no result picked), as the notice promised, not as a finished run."""
    from training.learn.interrupt import StopRequest

    real_uninstall = StopRequest.uninstall

    def signal_lands_just_before_uninstall(self):
        if self._previous and not self.requested:
            self._handle(signal.SIGINT, None)
        real_uninstall(self)

    monkeypatch.setattr(StopRequest, "uninstall", signal_lands_just_before_uninstall)
    config = load_config(None, TINY + [f"out_dir={tmp_path}", "run_name=late", "eval.every=0"])
    trainer = SelfPlayTrainer(config, tmp_path / "late", progress=False)
    summary = trainer.train()
    assert trainer.interrupted and summary["interrupted"]
    assert load_checkpoint(tmp_path / "late" / "latest.pt")["global_step"] == 256
    assert not (tmp_path / "late" / "result.pt").exists()
