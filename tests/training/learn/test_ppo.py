"""The pieces of masked PPO on small hand-made batches."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE
from training.learn.ppo import (
    ActorCritic,
    ObservationLinear,
    PPOConfig,
    RolloutBatch,
    SparseObservations,
    action_log_prob,
    compute_gae,
    entropy_coef,
    learning_rate,
    masked_entropy,
    masked_log_probs,
    normalize,
    policy_loss,
    ppo_losses,
    ppo_update,
    sample_actions,
    sample_with_log_prob,
    value_loss,
)


def random_masks(rows: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(rows, NUM_ACTIONS, generator=g) < 0.15
    mask[torch.arange(rows), torch.randint(NUM_ACTIONS, (rows,), generator=g)] = True  # at least one legal
    return mask


# -- masking ---------------------------------------------------------------------------
@pytest.mark.parametrize("greedy", [False, True])
def test_sampling_never_picks_an_illegal_action(greedy):
    mask = random_masks(2000, seed=1)
    # Logits that strongly favour illegal actions: masking must still win.
    low, high = torch.full_like(mask, -50.0, dtype=torch.float32), torch.full_like(mask, 50.0, dtype=torch.float32)
    logits = torch.where(mask, low, high)
    actions = sample_actions(logits, mask, torch.Generator().manual_seed(0), greedy=greedy)
    assert mask[torch.arange(2000), actions].all()


def test_sampling_follows_the_masked_probabilities():
    logits = torch.tensor([[0.0, math.log(3.0), 5.0] + [0.0] * (NUM_ACTIONS - 3)]).repeat(20000, 1)
    mask = torch.zeros(20000, NUM_ACTIONS, dtype=torch.bool)
    mask[:, :2] = True  # action 2 has the highest logit but is illegal
    actions = sample_actions(logits, mask, torch.Generator().manual_seed(3))
    share_of_1 = (actions == 1).float().mean().item()
    assert set(actions.unique().tolist()) == {0, 1}
    assert abs(share_of_1 - 0.75) < 0.02


def test_sampling_is_reproducible_with_a_seeded_generator():
    mask = random_masks(64, seed=2)
    logits = torch.zeros(64, NUM_ACTIONS)
    a = sample_actions(logits, mask, torch.Generator().manual_seed(5))
    b = sample_actions(logits, mask, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)


def test_sampling_refuses_torchs_global_generator():
    # Without a generator the draw came from torch's global one, which seeded runs never use.
    logits, mask = torch.zeros(3, NUM_ACTIONS), random_masks(3, seed=2)
    before = torch.random.get_rng_state()
    with pytest.raises(ValueError, match="generator"):
        sample_actions(logits, mask)
    with pytest.raises(ValueError, match="generator"):
        sample_with_log_prob(logits, mask)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert sample_actions(logits, mask, greedy=True).shape == (3,)  # greedy draws nothing


def test_sampling_with_its_log_prob_is_sampling_then_the_log_prob_bit_for_bit():
    mask = random_masks(500, seed=6)
    logits = torch.randn(500, NUM_ACTIONS, generator=torch.Generator().manual_seed(7)) * 3
    ours, theirs = torch.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    actions, logprobs = sample_with_log_prob(logits, mask, ours)
    expected = sample_actions(logits, mask, theirs)
    assert torch.equal(actions, expected)
    assert torch.equal(logprobs, action_log_prob(logits, mask, expected))
    assert torch.equal(ours.get_state(), theirs.get_state())


def test_masked_log_probs_put_all_mass_on_legal_actions():
    mask = random_masks(32, seed=4)
    log_p = masked_log_probs(torch.randn(32, NUM_ACTIONS), mask)
    probs = log_p.exp()
    assert torch.allclose(probs.sum(-1), torch.ones(32))
    assert (probs[~mask] == 0).all()


def test_entropy_counts_legal_actions_only():
    mask = torch.zeros(3, NUM_ACTIONS, dtype=torch.bool)
    mask[0, :1] = True
    mask[1, :4] = True
    mask[2, 10:30] = True
    entropy = masked_entropy(torch.zeros(3, NUM_ACTIONS), mask)
    assert torch.allclose(entropy, torch.tensor([0.0, math.log(4), math.log(20)]), atol=1e-6)


def test_masked_loss_pieces_have_finite_gradients():
    mask = random_masks(16, seed=6)
    logits = torch.randn(16, NUM_ACTIONS, requires_grad=True)
    actions = mask.float().argmax(-1)
    (action_log_prob(logits, mask, actions).sum() + masked_entropy(logits, mask).sum()).backward()
    assert torch.isfinite(logits.grad).all()
    assert (logits.grad[~mask] == 0).all()  # illegal logits get no gradient


# -- advantages ------------------------------------------------------------------------
def test_gae_follows_each_players_own_decisions():
    # Two-player round: seat 0 acts (i=0), seat 1 acts (i=1), seat 0 acts (i=2) and wins.
    # Seat 0's next decision after i=0 is i=2, not the table's next turn i=1.
    rewards = torch.tensor([0.0, -1.0, 1.0])
    values = torch.tensor([0.5, 0.2, 0.1])
    terminal = torch.tensor([False, True, True])
    next_index = torch.tensor([2, -1, -1])
    adv, ret, resolved = compute_gae(rewards, values, terminal, next_index, gamma=1.0, gae_lambda=0.5)
    expected = torch.tensor([0.0 + 0.1 - 0.5 + 0.5 * 0.9, -1.0 - 0.2, 1.0 - 0.1])
    assert torch.allclose(adv, expected)
    assert torch.allclose(ret, expected + values)
    assert resolved.all()


def test_gae_discounts_and_bootstraps_from_unresolved_decisions():
    # i=0 -> i=1 -> i=2 (rollout ended before i=2's outcome was known).
    rewards = torch.zeros(3)
    values = torch.tensor([0.0, 0.3, 0.8])
    terminal = torch.tensor([False, False, False])
    next_index = torch.tensor([1, 2, -1])
    adv, _, resolved = compute_gae(rewards, values, terminal, next_index, gamma=0.9, gae_lambda=0.8)
    adv1 = 0.9 * 0.8 - 0.3  # bootstraps from i=2's value; i=2 adds no advantage of its own
    adv0 = 0.9 * 0.3 - 0.0 + 0.9 * 0.8 * adv1
    assert resolved.tolist() == [True, True, False]
    assert torch.allclose(adv, torch.tensor([adv0, adv1, 0.0]))


def test_gae_a_block_at_a_time_equals_the_loop_to_the_bit():
    # Linked decisions as a rollout makes them: 50 turns of 7 games, a seat acting at most
    # once per turn, its next decision in a later turn, some episodes ending on the way.
    gen = torch.Generator().manual_seed(3)
    games, turns = 7, 50
    n = games * turns
    values = torch.randn(n, generator=gen)
    rewards = torch.zeros(n)
    terminal = torch.rand(n, generator=gen) < 0.1
    rewards[terminal] = torch.randn(int(terminal.sum()), generator=gen).sign()
    next_index = torch.full((n,), -1, dtype=torch.long)
    for i in range(n - 2 * games):
        if not terminal[i] and torch.rand(1, generator=gen) < 0.9:
            next_index[i] = (i // games + 1 + int(torch.randint(2, (1,), generator=gen))) * games + i % games
    blocks = [(t * games, (t + 1) * games) for t in range(turns)]
    for gamma, lam in ((1.0, 0.95), (0.9, 0.8), (0.99, 0.0)):
        loop = compute_gae(rewards, values, terminal, next_index, gamma, lam)
        swept = compute_gae(rewards, values, terminal, next_index, gamma, lam, blocks=blocks)
        for a, b in zip(loop, swept):
            assert a.dtype == b.dtype and torch.equal(a, b)


def test_gae_with_lambda_one_gives_monte_carlo_returns():
    rewards = torch.tensor([0.0, 0.0, -1.0])
    values = torch.tensor([0.2, -0.4, 0.6])
    _, returns, _ = compute_gae(rewards, values, torch.tensor([False, False, True]), torch.tensor([1, 2, -1]), 1.0, 1.0)
    assert torch.allclose(returns, torch.tensor([-1.0, -1.0, -1.0]))


@pytest.mark.parametrize(
    ("next_index", "blocks", "problem"),
    [
        ([-1, 0, -1], None, "transition 1 links to 0"),  # a successor before its decision
        ([0, -1, -1], None, "transition 0 links to 0"),
        ([5, 2, -1], None, "transition 0 links to 5"),  # past the end
        ([1, 2, -1], [(0, 2), (2, 3)], "transition 0 links to 1, in its own block"),
        ([1, 2, -1], [(0, 1)], "blocks must cover"),  # rows 1 and 2 were left at 0, resolved
        ([1, 2, -1], [(0, 1), (2, 3)], "blocks must cover"),
    ],
)
def test_gae_refuses_links_that_break_its_contract(next_index, blocks, problem):
    # Each of these came back as advantages without a word: a successor not yet swept, or
    # rows of no block, counted as advantage 0 (and the rows outside every block as resolved).
    rewards, values = torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.1, 0.2, 0.3])
    terminal = torch.tensor([False, False, True])
    with pytest.raises(ValueError, match=problem):
        compute_gae(rewards, values, terminal, torch.tensor(next_index), 1.0, 1.0, blocks=blocks)


@pytest.mark.parametrize("blocks", [None, [(0, 1), (1, 2), (2, 3)]])
def test_gae_refuses_mismatched_lengths_and_rewards_that_are_not_finite(blocks):
    values, terminal, next_index = (
        torch.tensor([0.1, 0.2, 0.3]),
        torch.tensor([False, False, True]),
        torch.tensor([1, 2, -1]),
    )
    with pytest.raises(ValueError, match="one entry per transition"):
        compute_gae(torch.zeros(2), values, terminal, next_index, 1.0, 1.0, blocks=blocks)
    with pytest.raises(ValueError, match=r"rewards .*not a finite number.* transition 2"):
        compute_gae(torch.tensor([0.0, 0.0, math.nan]), values, terminal, next_index, 1.0, 1.0, blocks=blocks)


# -- losses ----------------------------------------------------------------------------
def test_policy_loss_clips_the_ratio_pessimistically():
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0])
    old = torch.zeros(4)
    new = torch.log(torch.tensor([1.5, 0.5, 1.5, 0.5]))
    per_item = [-1.0 * 1.2, -1.0 * 0.5, 1.0 * 1.5, 1.0 * 0.8]
    assert policy_loss(new, old, adv, clip_coef=0.2).item() == pytest.approx(np.mean(per_item))
    # At ratio 1 the loss is minus the mean advantage.
    assert policy_loss(old, old, adv * 3, 0.2).item() == pytest.approx(0.0)


def test_value_loss_plain_and_clipped():
    new, old, ret = torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([2.0])
    assert value_loss(new, old, ret, None).item() == pytest.approx(0.5 * 1.0)
    # Clipped prediction 0.2 is further from the return: the pessimistic max picks it.
    assert value_loss(new, old, ret, 0.2).item() == pytest.approx(0.5 * 1.8**2)


def test_normalize():
    x = normalize(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert x.mean().abs() < 1e-6 and (x.std() - 1).abs() < 1e-4
    assert normalize(torch.tensor([5.0])).item() == 0.0


def test_learning_rate_schedule():
    cfg = PPOConfig(learning_rate=1e-3)
    assert learning_rate(cfg, 0.0) == pytest.approx(1e-3)
    assert learning_rate(cfg, 0.75) == pytest.approx(2.5e-4)
    assert learning_rate(cfg, 1.0) == 0.0
    assert learning_rate(PPOConfig(learning_rate=1e-3, anneal_lr=False), 0.9) == pytest.approx(1e-3)


def test_entropy_weight_moves_to_its_end_value_over_the_run():
    cfg = PPOConfig(ent_coef=0.04, ent_coef_end=0.0)
    assert entropy_coef(cfg, 0.0) == pytest.approx(0.04)
    assert entropy_coef(cfg, 0.75) == pytest.approx(0.01)
    assert entropy_coef(cfg, 1.0) == 0.0 and entropy_coef(cfg, 1.5) == 0.0
    assert entropy_coef(PPOConfig(ent_coef=0.03), 0.9) == pytest.approx(0.03)  # no end value: constant
    assert entropy_coef(PPOConfig(ent_coef=0.01, ent_coef_end=0.05), 0.5) == pytest.approx(0.03)


@pytest.mark.parametrize(
    "field,value",
    [
        ("learning_rate", 0.0),
        ("gamma", 1.5),
        ("clip_coef", -1),
        ("target_kl", 0),
        ("ent_coef_end", -0.1),
        ("adam_beta1", 1.0),
        ("adam_beta2", -0.1),
    ],
)
def test_bad_hyper_parameters_are_named(field, value):
    with pytest.raises(ValueError, match=field):
        PPOConfig(**{field: value}).validate()


# -- the update ------------------------------------------------------------------------
def test_update_raises_the_probability_of_advantaged_actions_and_keeps_masks():
    torch_gen = torch.Generator().manual_seed(0)
    model = ActorCritic(hidden_sizes=(32,), generator=torch_gen)
    obs = torch.rand(64, OBSERVATION_SIZE, generator=torch_gen)
    mask = torch.zeros(64, NUM_ACTIONS, dtype=torch.bool)
    mask[:, [3, 7, 30]] = True
    actions = torch.tensor([3, 7] * 32)
    advantages = torch.where(actions == 3, 1.0, -1.0)
    with torch.no_grad():
        logits, values = model(obs)
        old_logp = action_log_prob(logits, mask, actions)
    batch = RolloutBatch(obs, mask, actions, old_logp, values, advantages, advantages + values)
    cfg = PPOConfig(learning_rate=3e-3, update_epochs=8, num_minibatches=2, ent_coef=0.0, magnet_coef=0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    stats = ppo_update(model, optimizer, batch, cfg, torch.Generator().manual_seed(1))
    with torch.no_grad():
        probs = masked_log_probs(model(obs)[0], mask).exp()
    assert probs[:, 3].mean() > old_logp[actions == 3].exp().mean() + 0.05
    assert (probs[:, [0, 1, 2, 40]] == 0).all()
    assert set(stats) >= {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance"}


def test_update_reads_byte_observations_as_their_values():
    """The batched env's uint8 observations, as rollout storage keeps them, give the losses
    and gradients their float32 values give, the magnet term included: the sparse input
    layer only rounds its sums in another order."""
    byte_obs = sparse_byte_observations(48, seed=0)
    mask = torch.zeros(48, NUM_ACTIONS, dtype=torch.bool)
    mask[:, [3, 7, 30]] = True
    actions = torch.tensor([3, 7, 30] * 16)
    advantages = torch.linspace(-1.0, 1.0, 48)
    cfg = PPOConfig(magnet_coef=0.1)
    model = ActorCritic(hidden_sizes=(16,), generator=torch.Generator().manual_seed(1))
    magnet = ActorCritic(hidden_sizes=(16,), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        logits, values = model(byte_obs.float())
        magnet_log_probs = masked_log_probs(magnet(byte_obs.float())[0], mask)
    results = []
    for obs in (byte_obs, byte_obs.float()):
        batch = RolloutBatch(
            obs,
            mask,
            actions,
            action_log_prob(logits, mask, actions),
            values,
            advantages,
            values + 0.5,
            magnet_log_probs=magnet_log_probs,
        )
        model.zero_grad()
        loss, stats = ppo_losses(model, batch, cfg)
        loss.backward()
        results.append((stats, {name: p.grad.clone() for name, p in model.named_parameters()}))
    (byte_stats, byte_grads), (float_stats, float_grads) = results
    for k in float_stats:
        torch.testing.assert_close(byte_stats[k], float_stats[k], rtol=1e-4, atol=1e-6)
    for k in float_grads:
        torch.testing.assert_close(byte_grads[k], float_grads[k], rtol=1e-4, atol=1e-6)


def sparse_byte_observations(rows: int, seed: int) -> torch.Tensor:
    """Observations shaped like the env's: mostly zeros, a few small whole numbers."""
    gen = torch.Generator().manual_seed(seed)
    values = torch.randint(1, 9, (rows, OBSERVATION_SIZE), dtype=torch.uint8, generator=gen)
    keep = torch.rand(rows, OBSERVATION_SIZE, generator=gen) < 0.03
    obs = torch.where(keep, values, torch.zeros_like(values))
    obs[0] = 0  # a row with nothing set still gets the bias
    return obs


def test_input_layer_reads_bytes_as_the_dense_product_of_their_values():
    layer = ActorCritic(hidden_sizes=(32,), generator=torch.Generator().manual_seed(0)).trunk[0]
    assert isinstance(layer, ObservationLinear)
    obs = sparse_byte_observations(64, seed=1)
    sparse = layer(obs)
    dense = nn.functional.linear(obs.float(), layer.weight, layer.bias)
    torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sparse[0], layer.bias)
    # Gradients reach the weight as the dense product's do.
    grad_out = torch.randn(sparse.shape, generator=torch.Generator().manual_seed(2))
    (sparse * grad_out).sum().backward()
    sparse_grad = layer.weight.grad.clone()
    layer.weight.grad = None
    (dense * grad_out).sum().backward()
    torch.testing.assert_close(sparse_grad, layer.weight.grad, rtol=1e-5, atol=1e-5)


def test_input_layer_gives_each_row_the_same_bits_in_any_batch():
    """Each row's sum is its own: the same observation gives the same bits alone, in a
    batch, or in another order."""
    layer = ActorCritic(hidden_sizes=(32,), generator=torch.Generator().manual_seed(0)).trunk[0]
    obs = sparse_byte_observations(40, seed=3)
    with torch.no_grad():
        whole = layer(obs)
        alone = layer(obs[17])
        reversed_rows = layer(obs.flip(0))
    assert alone.shape == (32,)
    assert torch.equal(alone, whole[17])
    assert torch.equal(reversed_rows.flip(0), whole)


def densified(sparse: SparseObservations) -> torch.Tensor:
    """The dense rows ``sparse`` stands for."""
    rows = torch.repeat_interleave(torch.arange(len(sparse)), sparse.counts)
    dense = torch.zeros(len(sparse), sparse.width)
    dense.index_put_((rows, sparse.columns), sparse.values, accumulate=True)
    return dense


def test_sparse_observations_hold_the_rows_and_pick_rows_and_prefixes_as_dense_slicing():
    obs = sparse_byte_observations(40, seed=4)
    sparse = SparseObservations.from_dense(obs)
    assert len(sparse) == 40 and sparse.width == OBSERVATION_SIZE
    assert sparse.counts[0] == 0  # the empty row
    assert torch.equal(densified(sparse), obs.float())
    picked = torch.tensor([5, 0, 5, 39, 12])  # repeats and the empty row
    assert torch.equal(densified(sparse[picked]), obs[picked].float())
    assert torch.equal(densified(sparse.prefix(700)), obs[:, :700].float())
    assert sparse.prefix(OBSERVATION_SIZE) is sparse


def test_network_reads_sparse_observations_as_the_bytes_they_hold_bit_for_bit():
    """A PPO update hands the network its batch once as :class:`SparseObservations`: the
    network's outputs are those of the byte observations, to the bit, for a network of the
    current layout and of version 1, whose rows are a prefix."""
    obs = sparse_byte_observations(48, seed=5)
    picked = torch.tensor([47, 3, 0, 3])
    for version in (1, 2):
        model = ActorCritic(hidden_sizes=(16,), observation_version=version, generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            for a, b in zip(model(SparseObservations.from_dense(obs)[picked]), model(obs[picked])):
                assert torch.equal(a, b)
    with pytest.raises(ValueError, match="observation"):
        model(SparseObservations.from_dense(obs[:, :100]))


@pytest.mark.parametrize("rows", [2, 9, 15])
def test_a_batch_smaller_than_two_rows_per_minibatch_still_trains_the_policy(rows):
    # Fewer than 2 * num_minibatches decisions made every minibatch one row, whose
    # normalised advantage is 0: the policy loss and its gradient were exactly 0, every update.
    torch_gen = torch.Generator().manual_seed(0)
    model = ActorCritic(hidden_sizes=(16,), generator=torch_gen)
    obs = torch.rand(rows, OBSERVATION_SIZE, generator=torch_gen)
    mask = torch.zeros(rows, NUM_ACTIONS, dtype=torch.bool)
    mask[:, [3, 7]] = True
    actions = torch.tensor([3, 7] * rows)[:rows]
    advantages = torch.where(actions == 3, 1.0, -1.0)
    with torch.no_grad():
        logits, values = model(obs)
        old_logp = action_log_prob(logits, mask, actions)
    batch = RolloutBatch(obs, mask, actions, old_logp, values, advantages, advantages + values)
    cfg = PPOConfig(num_minibatches=8, update_epochs=2, ent_coef=0.0, magnet_coef=0.0)
    head = model.policy_head.weight.clone()
    ppo_update(model, torch.optim.Adam(model.parameters(), lr=1e-3), batch, cfg, torch.Generator().manual_seed(1))
    assert not torch.equal(model.policy_head.weight, head)


def test_an_update_on_one_decision_warns_of_nothing(recwarn):
    # Its explained variance has no spread to explain (0); torch's sample variance of one
    # value warned "degrees of freedom is <= 0" at every such update of a run.
    model = ActorCritic(hidden_sizes=(8,), generator=torch.Generator().manual_seed(0))
    obs = torch.zeros(1, OBSERVATION_SIZE)
    mask = torch.ones(1, NUM_ACTIONS, dtype=torch.bool)
    one = torch.ones(1)
    batch = RolloutBatch(obs, mask, torch.zeros(1, dtype=torch.long), -one, one * 0.5, one, one)
    cfg = PPOConfig(magnet_coef=0.0)
    stats = ppo_update(model, torch.optim.Adam(model.parameters()), batch, cfg, torch.Generator())
    assert stats["explained_variance"] == 0.0
    assert not [w for w in recwarn if "degrees of freedom" in str(w.message)]


def test_update_refuses_an_empty_batch():
    model = ActorCritic(hidden_sizes=(8,))
    empty = RolloutBatch(
        torch.zeros(0, OBSERVATION_SIZE),
        torch.zeros(0, NUM_ACTIONS, dtype=torch.bool),
        *(torch.zeros(0, dtype=t) for t in (torch.long, *[torch.float] * 4)),
    )
    with pytest.raises(ValueError, match="empty batch"):
        ppo_update(model, torch.optim.Adam(model.parameters()), empty, PPOConfig(), torch.Generator())


def _one_step_batch(rows: int = 8) -> tuple[ActorCritic, RolloutBatch]:
    model = ActorCritic(hidden_sizes=(8,), generator=torch.Generator().manual_seed(0))
    obs = torch.zeros(rows, OBSERVATION_SIZE)
    mask = random_masks(rows, seed=4)
    with torch.no_grad():
        logits, values = model(obs)
    actions, logprobs = sample_with_log_prob(logits, mask, torch.Generator().manual_seed(1))
    advantages = torch.linspace(-1, 1, rows)
    return model, RolloutBatch(obs, mask, actions, logprobs, values, advantages, advantages + values)


@pytest.mark.parametrize("field", ["advantages", "returns", "values", "logprobs"])
def test_update_refuses_values_that_are_not_finite_and_keeps_the_weights(field):
    # One NaN advantage (from a NaN reward, say) made every weight NaN, silently.
    model, batch = _one_step_batch()
    getattr(batch, field)[3] = math.nan
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(ValueError, match=f"batch.{field} .*not a finite number"):
        ppo_update(model, torch.optim.Adam(model.parameters()), batch, PPOConfig(magnet_coef=0.0), torch.Generator())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_update_refuses_an_action_its_mask_calls_illegal():
    # A row with no legal action (or an action its mask forbids) trained on without a word.
    model, batch = _one_step_batch()
    batch.masks[2] = False
    with pytest.raises(ValueError, match="illegal.* row 2"):
        ppo_update(model, torch.optim.Adam(model.parameters()), batch, PPOConfig(magnet_coef=0.0), torch.Generator())


# -- the network and the agent ---------------------------------------------------------
def test_network_shapes_and_seeded_init():
    a = ActorCritic(hidden_sizes=(64, 32), generator=torch.Generator().manual_seed(7))
    b = ActorCritic(hidden_sizes=(64, 32), generator=torch.Generator().manual_seed(7))
    logits, value = a(torch.zeros(5, OBSERVATION_SIZE))
    assert logits.shape == (5, NUM_ACTIONS) and value.shape == (5,)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    with pytest.raises(ValueError, match="hidden_sizes"):
        ActorCritic(hidden_sizes=())


@pytest.mark.parametrize("sizes", ["256", (1.5,), (True,), (64, 0), (-3,), None, 256, ()])
def test_network_refuses_hidden_sizes_that_are_not_positive_integers(sizes):
    # "256" built layers of 2, 5 and 6 units, 1.5 one of 1 unit; None and 256 failed with
    # "object is not iterable", naming nothing.
    with pytest.raises(ValueError, match="hidden_sizes"):
        ActorCritic(hidden_sizes=sizes)


def test_the_old_name_policy_network_still_works_with_a_deprecation_warning():
    import training
    from training.learn import ppo

    for where in (ppo, training, training):  # twice: the package does not keep it unwarned
        with pytest.warns(DeprecationWarning, match="PolicyNetwork is deprecated: use ActorCritic") as caught:
            assert where.PolicyNetwork is ActorCritic
        assert caught[0].filename == __file__, "the warning points at the code that used the old name"
    assert "PolicyNetwork" not in dir(training) and not hasattr(ppo, "PolicyNetworks")


def test_building_a_network_leaves_torchs_global_generator_alone():
    """nn.Linear's own init and an init without a generator draw from the global generator;
    building a network (as every run and checkpoint load does) must leave it as it was."""
    before = torch.random.get_rng_state()
    ActorCritic(hidden_sizes=(16, 8))
    ActorCritic(hidden_sizes=(16,), generator=torch.Generator().manual_seed(5))
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.equal(ActorCritic(hidden_sizes=(16,)).trunk[0].weight, ActorCritic(hidden_sizes=(16,)).trunk[0].weight)
