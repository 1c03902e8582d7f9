"""The all-actions policy gradient (ppo.policy_gradient: all_actions): the clipped surrogate
summed over every legal action, valued by an action-value head trained beside the network."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import TINY_BATCH_LEGAL, TINY_TRAINING, tiny_ppo_batch

from loveletter_env.actions import NUM_ACTIONS
from training.learn.checkpoint import load_checkpoint
from training.learn.config import ConfigError, load_config
from training.learn.ppo import (
    ActionValueHead,
    PPOConfig,
    all_actions_policy_loss,
    masked_log_probs,
    policy_loss,
    ppo_update,
)
from training.learn.selfplay_command import SelfPlayTrainer, main

ROWS = 6


def random_policy(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits, a mask of the actions ``TINY_BATCH_LEGAL`` and action values, for ``ROWS`` decisions."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(ROWS, NUM_ACTIONS, generator=generator)
    mask = torch.zeros(ROWS, NUM_ACTIONS, dtype=torch.bool)
    mask[:, TINY_BATCH_LEGAL] = True
    return logits, mask, torch.randn(ROWS, NUM_ACTIONS, generator=generator)


def test_its_gradient_is_the_sampled_surrogates_expected_over_the_acting_policy():
    """At the acting policy, the sum over actions is the expectation of PPO's surrogate over
    the action drawn, each action's advantage its value less the policy's mean value."""
    logits, mask, values = random_policy(0)
    acting = masked_log_probs(logits, mask)

    summed = logits.clone().requires_grad_(True)
    all_actions_policy_loss(summed, acting, values, mask, clip_coef=0.2, norm_adv=False).backward()

    by_hand = logits.clone().requires_grad_(True)
    probs = acting.exp()
    mean_value = (probs * values.where(mask, 0.0)).sum(-1)
    expected = torch.zeros(())
    for action in TINY_BATCH_LEGAL:
        taken = torch.full((ROWS,), action)
        new = masked_log_probs(by_hand, mask).gather(-1, taken[:, None]).squeeze(-1)
        old = acting.gather(-1, taken[:, None]).squeeze(-1)
        advantage = values[:, action] - mean_value
        # policy_loss is a mean over rows: one row at a time, weighted by that row's probability.
        for row in range(ROWS):
            term = policy_loss(new[row : row + 1], old[row : row + 1], advantage[row : row + 1], 0.2)
            expected = expected + probs[row, action] * term / ROWS
    expected.backward()
    assert summed.grad is not None and by_hand.grad is not None
    assert summed.grad.abs().max() > 1e-3
    assert torch.allclose(summed.grad, by_hand.grad, atol=1e-6)


def test_illegal_actions_and_a_common_shift_of_the_values_change_nothing():
    logits, mask, values = random_policy(1)
    acting = masked_log_probs(logits, mask)
    moved = masked_log_probs(logits + 0.3 * torch.randn(logits.shape, generator=torch.Generator().manual_seed(2)), mask)
    base = all_actions_policy_loss(moved, acting, values, mask, 0.2, norm_adv=False)
    other = values.clone()
    other[:, [0, 1, 40]] = 100.0  # illegal actions: never played, never valued
    assert torch.equal(all_actions_policy_loss(moved, acting, other, mask, 0.2, norm_adv=False), base)
    shifted = all_actions_policy_loss(moved, acting, values + 5.0, mask, 0.2, norm_adv=False)
    assert torch.allclose(shifted, base, atol=1e-6)


def test_normalised_advantages_do_not_depend_on_the_values_scale():
    """With ``norm_adv`` the advantages are divided by their acting-weighted spread, as PPO
    divides the sampled ones by theirs: values three times as far apart give the same loss."""
    logits, mask, values = random_policy(3)
    acting = masked_log_probs(logits, mask)
    moved = masked_log_probs(logits + 0.3 * torch.randn(logits.shape, generator=torch.Generator().manual_seed(4)), mask)
    base = all_actions_policy_loss(moved, acting, values, mask, 0.2)
    assert torch.allclose(all_actions_policy_loss(moved, acting, 3.0 * values, mask, 0.2), base, atol=1e-6)
    raw = all_actions_policy_loss(moved, acting, 3.0 * values, mask, 0.2, norm_adv=False)
    assert not torch.allclose(raw, base, atol=1e-3)


def test_an_action_pushed_past_the_clip_range_gets_no_further_push():
    """Action 30 has the best value; once its probability is 1.5 times the acting policy's,
    the surrogate is flat in its direction, as PPO's is for a sampled action."""
    mask = torch.zeros(1, NUM_ACTIONS, dtype=torch.bool)
    mask[:, TINY_BATCH_LEGAL] = True
    values = torch.zeros(1, NUM_ACTIONS)
    values[0, 30] = 1.0
    acting = masked_log_probs(torch.zeros(1, NUM_ACTIONS), mask)
    for boost, pushed in ((0.0, True), (1.0, False)):
        logits = torch.zeros(1, NUM_ACTIONS)
        logits[0, 30] = boost
        logits.requires_grad_(True)
        all_actions_policy_loss(logits, acting, values, mask, clip_coef=0.2, norm_adv=False).backward()
        assert logits.grad is not None
        assert (logits.grad[0, 30] < -1e-3) == pushed


def test_an_update_follows_the_action_values_and_fits_them_to_the_returns():
    """Every taken action returns 1 for action 30 and -1 otherwise: the head learns that, and
    the policy moves towards action 30 at every decision, whichever action it took there."""
    model, batch = tiny_ppo_batch(rows=96)
    returns = torch.where(batch.actions == 30, 1.0, -1.0)
    batch = dataclasses.replace(batch, returns=returns, advantages=returns - batch.values)
    head = ActionValueHead(model.hidden_sizes[-1], generator=torch.Generator().manual_seed(4))
    cfg = PPOConfig(
        learning_rate=3e-3,
        update_epochs=8,
        num_minibatches=2,
        ent_coef=0.0,
        magnet_coef=0.0,
        policy_gradient="all_actions",
    )
    optimizer = torch.optim.Adam([*model.parameters(), *head.parameters()], lr=cfg.learning_rate)

    def taken_value_error() -> float:
        with torch.no_grad():
            taken = head(model.features(batch.obs)).gather(-1, batch.actions[:, None]).squeeze(-1)
        return float(((taken - returns) ** 2).mean())

    with torch.no_grad():
        before = masked_log_probs(model(batch.obs)[0], batch.masks).exp()[:, 30]
    error_before = taken_value_error()
    for seed in (1, 2):
        stats = ppo_update(model, optimizer, batch, cfg, torch.Generator().manual_seed(seed), action_value_head=head)
    with torch.no_grad():
        after = masked_log_probs(model(batch.obs)[0], batch.masks).exp()[:, 30]
        q = head(model.features(batch.obs))
    assert "action_value_loss" in stats
    assert taken_value_error() < 0.25 * error_before
    assert (q[:, 30] > q[:, 3]).all() and (q[:, 30] > q[:, 7]).all()
    assert (after > before).all() and after.mean() > before.mean() + 0.1


def test_the_head_is_required():
    model, batch = tiny_ppo_batch()
    cfg = PPOConfig(magnet_coef=0.0, policy_gradient="all_actions")
    with pytest.raises(ValueError, match="action-value head"):
        ppo_update(model, torch.optim.Adam(model.parameters()), batch, cfg, torch.Generator())


def test_a_bad_choice_is_named():
    with pytest.raises(ConfigError, match="ppo.policy_gradient"):
        load_config(None, ["ppo.policy_gradient=both"])


RUN = [
    *TINY_TRAINING,
    "env.rules=mini6",
    "total_steps=512",
    "eval.every=0",
    "opponents.current=1",
    "opponents.past=0",
    "opponents.bots=0",
    "ppo.policy_gradient=all_actions",
]


def test_a_run_trains_the_head_and_a_resume_restores_it(tmp_path):
    main(["--no-progress", "--set", f"out_dir={tmp_path}", "--run-name", "r", *sum((["--set", o] for o in RUN), [])])
    run = tmp_path / "r"
    saved = load_checkpoint(run / "latest.pt")
    head = saved["training"]["action_value_head"]
    fresh = ActionValueHead(32, generator=torch.Generator().manual_seed(0))
    assert not torch.equal(head["weight"], fresh.weight)  # trained
    # The exported network is the usual one: no action values in it.
    assert not any("action_value" in key for key in load_checkpoint(run / "result.pt")["model"]["state_dict"])
    resumed = SelfPlayTrainer(load_config(run / "config.yaml", ["total_steps=1024"]), run, resume=True, progress=False)
    assert resumed.action_value_head is not None
    assert all(torch.equal(resumed.action_value_head.state_dict()[k], v) for k, v in head.items())
