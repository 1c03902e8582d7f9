"""Magnetic mirror descent in the PPO loss (ppo.magnet_coef, ppo.magnet_every) and the
exploitability curve tool (python -m training.curve)."""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import math

import pytest
import torch
from conftest import TINY_TRAINING

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE
from training import curve, exploit
from training.learn.checkpoint import load_checkpoint
from training.learn.config import ConfigError, load_config
from training.learn.ppo import (
    ActorCritic,
    PPOConfig,
    RolloutBatch,
    action_log_prob,
    masked_kl,
    masked_log_probs,
    ppo_losses,
    ppo_update,
)
from training.learn.selfplay_command import SelfPlayTrainer, main

LEGAL = [3, 7, 30]


def make_batch(seed: int = 0, rows: int = 48) -> tuple[ActorCritic, RolloutBatch]:
    generator = torch.Generator().manual_seed(seed)
    model = ActorCritic(hidden_sizes=(32,), generator=generator)
    obs = torch.rand(rows, OBSERVATION_SIZE, generator=generator)
    mask = torch.zeros(rows, NUM_ACTIONS, dtype=torch.bool)
    mask[:, LEGAL] = True
    actions = torch.tensor(LEGAL * (rows // len(LEGAL)))
    advantages = torch.randn(rows, generator=generator)
    with torch.no_grad():
        logits, values = model(obs)
    batch = RolloutBatch(
        obs, mask, actions, action_log_prob(logits, mask, actions), values, advantages, advantages + values
    )
    return model, batch


def magnet_favouring(action: int, batch: RolloutBatch) -> torch.Tensor:
    """Masked log-probabilities of a magnet that plays ``action`` with probability ~0.9."""
    logits = torch.zeros(len(batch), NUM_ACTIONS)
    logits[:, action] = 3.0
    return masked_log_probs(logits, batch.masks)


# -- the loss ----------------------------------------------------------------------------
def test_zero_magnet_coef_gives_exactly_the_plain_loss():
    model, batch = make_batch()
    plain_loss, plain_stats = ppo_losses(model, batch, PPOConfig(magnet_coef=0.0))
    with_magnet = dataclasses.replace(batch, magnet_log_probs=magnet_favouring(30, batch))
    loss, stats = ppo_losses(model, with_magnet, PPOConfig(magnet_coef=0.0))
    assert torch.equal(loss, plain_loss)
    assert "magnet_kl" not in stats and stats.keys() == plain_stats.keys()


def test_magnet_term_adds_alpha_times_the_reverse_kl():
    model, batch = make_batch()
    magnet = magnet_favouring(30, batch)
    plain_loss, _ = ppo_losses(model, batch, PPOConfig(magnet_coef=0.0))
    loss, stats = ppo_losses(model, dataclasses.replace(batch, magnet_log_probs=magnet), PPOConfig(magnet_coef=0.3))
    with torch.no_grad():
        p = masked_log_probs(model(batch.obs)[0], batch.masks).exp()[:, LEGAL]
        q = magnet.exp()[:, LEGAL]
        expected_kl = (p * (p.log() - q.log())).sum(-1).mean()  # KL(policy || magnet), by hand
    assert float(stats["magnet_kl"]) == pytest.approx(float(expected_kl), rel=1e-5)
    assert float((loss - plain_loss).detach()) == pytest.approx(0.3 * float(expected_kl), rel=1e-4)


def test_kl_is_zero_against_itself_and_ignores_illegal_actions():
    _, batch = make_batch()
    logits = torch.randn(len(batch), NUM_ACTIONS, generator=torch.Generator().manual_seed(3))
    own = masked_log_probs(logits, batch.masks)
    assert torch.allclose(masked_kl(logits, own, batch.masks), torch.zeros(len(batch)), atol=1e-6)
    other_illegal = logits.clone()
    other_illegal[:, [0, 1, 40]] += 50.0  # only illegal actions change: the masked policy is the same
    assert torch.allclose(masked_kl(other_illegal, own, batch.masks), torch.zeros(len(batch)), atol=1e-6)


def test_magnet_term_pulls_the_policy_towards_the_magnet():
    """With no advantage, entropy or value signal, the update only follows the KL term:
    the policy moves towards the magnet's favourite action and the KL shrinks."""
    model, batch = make_batch()
    batch = dataclasses.replace(batch, advantages=torch.zeros(len(batch)))
    cfg = PPOConfig(learning_rate=3e-3, update_epochs=8, num_minibatches=2, ent_coef=0.0, vf_coef=0.0, magnet_coef=1.0)
    magnet = ActorCritic(hidden_sizes=(32,), generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        magnet.policy_head.bias[30] = 3.0  # the magnet prefers action 30
        magnet_log_probs = masked_log_probs(magnet(batch.obs)[0], batch.masks)
        before = masked_log_probs(model(batch.obs)[0], batch.masks).exp()
        kl_before = masked_kl(model(batch.obs)[0], magnet_log_probs, batch.masks).mean()
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    stats = ppo_update(model, optimizer, batch, cfg, torch.Generator().manual_seed(1), magnet=magnet)
    with torch.no_grad():
        after = masked_log_probs(model(batch.obs)[0], batch.masks).exp()
        kl_after = masked_kl(model(batch.obs)[0], magnet_log_probs, batch.masks).mean()
    assert after[:, 30].mean() > before[:, 30].mean() + 0.2
    assert kl_after < 0.5 * kl_before
    assert stats["magnet_kl"] > 0


def test_the_magnet_is_required_when_its_term_is_on():
    model, batch = make_batch()
    optimizer = torch.optim.Adam(model.parameters())
    with pytest.raises(ValueError, match="magnet"):
        ppo_update(model, optimizer, batch, PPOConfig(magnet_coef=0.1), torch.Generator())
    with pytest.raises(ValueError, match="magnet"):
        ppo_losses(model, batch, PPOConfig(magnet_coef=0.1))


# -- config ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "override,message",
    [
        ("ppo.magnet_coef=-0.1", "ppo.magnet_coef must be >= 0"),
        ("ppo.magnet_every=0", "ppo.magnet_every must be >= 1"),
        ("ppo.magnet_every=2.5", "ppo.magnet_every"),
        ("ppo.magnet_coef=strong", "ppo.magnet_coef"),
        ("ppo.magnet=0.1", "did you mean"),
    ],
)
def test_bad_magnet_settings_are_named(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_mini8_config_turns_the_magnet_on():
    config = load_config("configs/mini8_mmd.yaml")
    assert config.env.rules == ["mini8"] and config.ppo.magnet_coef > 0


def test_the_default_run_trains_every_rung_with_the_magnet():
    config = load_config(None)
    assert config.env.rules == ["classic", "mini6", "mini7", "mini8", "mini9"]
    assert config.env.rules_weights == [4, 1, 1, 1, 1] and config.ppo.magnet_coef == 0.2
    # Rules given without weights take equal shares: the default weights go with the default rules.
    assert load_config(None, ["env.rules=mini8"]).env.rules_weights is None
    assert load_config(None, ["env.rules=[classic,mini6]", "env.rules_weights=[3,1]"]).env.rules_weights == [3, 1]


# -- a run -------------------------------------------------------------------------------
MINI6 = [
    *TINY_TRAINING,
    "env.rules=mini6",
    "total_steps=512",
    "eval.every=0",
    "save_every=1",
    "opponents.current=1",
    "opponents.past=0",
    "opponents.bots=0",
    "ppo.magnet_coef=0.5",
]


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_the_magnet_follows_the_policy_every_magnet_every_updates(tmp_path):
    trainer = SelfPlayTrainer(load_config(None, [*MINI6, "ppo.magnet_every=1"]), tmp_path / "every", progress=False)
    trainer.train()
    assert trainer.update == 4 and same_weights(trainer.magnet, trainer.model)

    fixed = SelfPlayTrainer(load_config(None, [*MINI6, "ppo.magnet_every=1000"]), tmp_path / "fixed", progress=False)
    start = ActorCritic(fixed.config.model.hidden_sizes)
    start.load_state_dict(fixed.model.state_dict())
    fixed.train()
    assert same_weights(fixed.magnet, start) and not same_weights(fixed.magnet, fixed.model)


def test_resume_restores_the_magnet(tmp_path):
    main(["--no-progress", "--set", f"out_dir={tmp_path}", "--run-name", "r", *sum((["--set", o] for o in MINI6), [])])
    run = tmp_path / "r"
    saved = load_checkpoint(run / "latest.pt")["training"]["magnet"]
    resumed = SelfPlayTrainer(load_config(run / "config.yaml", ["total_steps=1024"]), run, resume=True, progress=False)
    assert all(torch.equal(resumed.magnet.state_dict()[k], v) for k, v in saved.items())


def test_mini6_run_with_the_magnet_and_its_exploitability_curve(tmp_path, capsys):
    args = ["--no-progress", "--set", f"out_dir={tmp_path}", "--run-name", "mmd"]
    summary = main([*args, *sum((["--set", o] for o in [*MINI6, "model.average_from=0.5"]), [])])
    run = tmp_path / "mmd"
    assert summary["update"] == 4
    with (run / "metrics.csv").open(newline="") as f:
        assert all(float(row["cpu_s"]) > 0 for row in csv.DictReader(f))

    png = tmp_path / "curve.png"
    capsys.readouterr()
    result = curve.main([str(run), "--rules", "mini6", "--out", str(png), "--json", "--no-progress"])
    assert json.loads(capsys.readouterr().out) == result
    points = result["curves"]["mmd"]
    assert [p["update"] for p in points] == [1, 2, 3, 4]
    # A sampling network near its uniform start: far from an equilibrium, far from a pure strategy.
    assert all(0.01 < p["exploitability"] < 0.45 and not p["greedy"] for p in points)
    assert png.stat().st_size > 0
    with (run / "exploitability.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 4
    # Another rung of the same run is measured on that rung, never read back from the first's figures.
    other = curve.main([str(run), "--rules", "mini7", "--json", "--no-progress"])["curves"]["mmd"]
    assert [p["update"] for p in other] == [1, 2, 3, 4] and {p["rules"] for p in other} == {"mini7"}
    assert all(p["exploitability"] != q["exploitability"] for p, q in zip(other, points))
    last = str(run / "snapshots" / "update_00004.pt")
    on_mini7 = exploit.main([last, "--exact", "--sampled", "--rules", "mini7", "--json"])
    assert math.isclose(other[-1]["exploitability"], on_mini7["exploitability"], rel_tol=1e-9)
    # The run's final network at each snapshot: the training weights until the mean begins
    # (model.average_from 0.5: after update 2), then the mean, ending on result.pt's figure.
    capsys.readouterr()
    means = curve.main([str(run), "--rules", "mini6", "--mean", "--json", "--no-progress"])["curves"]["mmd"]
    assert [p["network"] for p in means] == ["mean"] * 4
    assert [p["exploitability"] for p in means[:1]] == [p["exploitability"] for p in points[:1]]
    assert means[-1]["exploitability"] != points[-1]["exploitability"]
    result = exploit.main([str(run / "result.pt"), "--exact", "--sampled", "--rules", "mini6", "--json"])
    assert math.isclose(means[-1]["exploitability"], result["exploitability"], rel_tol=1e-9)
    # Cached: a second call reads the figures back instead of computing them again, both kinds.
    with (run / "exploitability.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 12
    (run / "snapshots" / "update_00001.pt").unlink()
    again = curve.main([str(run), "--rules", "mini6", "--json", "--no-progress"])
    assert again["curves"]["mmd"] == points
    # Every other snapshot and the last, measured afresh: of updates 2, 3 and 4 (1 is gone), 2 and 4.
    (run / "exploitability.csv").unlink()
    sparse = curve.main([str(run), "--rules", "mini6", "--every", "2", "--json", "--no-progress"])["curves"]["mmd"]
    assert [p["update"] for p in sparse] == [2, 4]
    assert [p["exploitability"] for p in sparse] == [p["exploitability"] for p in points if p["update"] in (2, 4)]
    # A later window needs a saved mean where it starts: without update 2's, none at turn 282.
    (run / "snapshots" / "mean_00002.pt").unlink()
    with pytest.raises(SystemExit):
        curve.main([str(run), "--rules", "mini6", "--mean-from", "0.55", "--no-progress"])
    assert "saved no running mean before turn 282" in capsys.readouterr().err
    # A run that keeps a mean but saved none of it is refused with --mean, not measured as weights.
    for saved in (run / "snapshots").glob("mean_*.pt"):
        saved.unlink()
    (run / "exploitability.csv").unlink()
    with pytest.raises(SystemExit):
        curve.main([str(run), "--rules", "mini6", "--mean", "--no-progress"])
    assert "keeps a running mean (model.average_from) but saved none" in capsys.readouterr().err


def test_curve_refuses_what_is_not_a_run(tmp_path, capsys):
    with pytest.raises(SystemExit):
        curve.main([str(tmp_path), "--rules", "mini6"])
    assert "not a training run folder" in capsys.readouterr().err
    (tmp_path / "snapshots").mkdir()
    with pytest.raises(SystemExit):
        curve.main([str(tmp_path), "--rules", "mini6", "--labels", "a,b"])
    assert "2 labels for 1 runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        curve.main([str(tmp_path), "--rules", "mini6", "--every", "0"])
    assert "--every must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        curve.main([str(tmp_path), "--rules", "mini6", "--mean-from", "1.5"])
    assert "--mean-from must be a fraction of the run between 0 and 1, got 1.5" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # two different networks: one would be measured silently
        curve.main([str(tmp_path), "--rules", "mini6", "--mean", "--mean-from", "0.5"])
    assert "--mean and --mean-from measure different networks: give one" in capsys.readouterr().err
    # Two runs of one name would be one curve: each needs its own label.
    (tmp_path / "b" / "run").mkdir(parents=True)
    with pytest.raises(SystemExit):
        curve.main([str(tmp_path), str(tmp_path / "b" / "run"), "--rules", "mini6", "--labels", "x,x"])
    assert "'x' names more than one: give --labels" in capsys.readouterr().err
    # A plot that cannot be written is named before minutes of measuring, not after.
    (tmp_path / "notes.txt").write_text("x")
    for out, message in [
        ("curve.txt", "--out must name a .png file"),
        (f"{tmp_path / 'notes.txt'}/curve.png", "is a file, not a folder"),
    ]:
        with pytest.raises(SystemExit):
            curve.main([str(tmp_path), "--rules", "mini6", "--out", out])
        assert message in capsys.readouterr().err
    for target in ("0", "-1", "nan"):
        with pytest.raises(SystemExit):
            curve.main([str(tmp_path), "--rules", "mini6", "--target", target])
        assert "--target must be above 0" in capsys.readouterr().err


def test_curve_names_a_damaged_metrics_or_cache_file(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "snapshots").mkdir(parents=True)
    (run / "metrics.csv").write_text("foo,bar\n1,2\n")
    with pytest.raises(SystemExit):
        curve.main([str(run), "--rules", "mini6"])
    assert f"'{run / 'metrics.csv'}' cannot be read: it has no column 'global_step'" in capsys.readouterr().err
    (run / "metrics.csv").write_text("update,global_step,elapsed_s,cpu_s\n1,two,3.0,4.0\n")
    with pytest.raises(SystemExit):
        curve.main([str(run), "--rules", "mini6"])
    assert "metrics.csv' cannot be read: invalid literal for int()" in capsys.readouterr().err


def test_a_stage_that_turns_the_magnet_on_pulls_towards_recent_weights(tmp_path):
    # The magnet off for two updates (magnet_every 2), on for the third: it must then pull
    # towards the weights after update 2, not towards the weights the run started from.
    overrides = [
        *MINI6,
        "total_steps=384",
        "ppo.magnet_coef=0",
        "ppo.magnet_every=2",
        "schedule=[{at_step: 256, set: {ppo.magnet_coef: 0.5}}]",
    ]
    after = {}  # update -> (the model, the magnet) right after it

    def record(trainer: SelfPlayTrainer) -> None:
        after[trainer.update] = (copy.deepcopy(trainer.model), copy.deepcopy(trainer.magnet))

    trainer = SelfPlayTrainer(load_config(None, overrides), tmp_path / "staged", progress=False, after_update=record)
    start = copy.deepcopy(trainer.model)
    trainer.train()
    assert trainer.update == 3 and trainer.active.ppo.magnet_coef == 0.5 and sorted(after) == [1, 2, 3]
    assert same_weights(after[1][1], start)  # not yet refreshed after update 1
    # Refreshed with the weights update 2 left (not those from before it), and kept through update 3.
    assert not same_weights(after[2][0], after[1][0]) and not same_weights(after[2][0], trainer.model)
    assert same_weights(after[2][1], after[2][0])
    assert same_weights(trainer.magnet, after[2][0])
