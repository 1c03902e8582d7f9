"""The deal critic (model.critic: deal): the cards it sees, its loss, and a run that saves
and resumes it while the trained network stays the kind every tool loads."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import TINY_TRAINING

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.batched import BatchedLoveLetter
from loveletter_env.batched.mixed import MixedRulesBatched
from loveletter_env.cards import NUM_CARD_TYPES
from loveletter_env.observation import OBSERVATION_SIZE
from training.learn.checkpoint import load_checkpoint
from training.learn.config import ConfigError, load_config
from training.learn.deal_critic import HIDDEN_CARD_FEATURES, DealCritic, hidden_cards
from training.learn.ppo import ActorCritic, PPOConfig, RolloutBatch, action_log_prob, ppo_losses, value_loss
from training.learn.rollout import RolloutBuffer
from training.learn.selfplay_command import SelfPlayTrainer, main

# A classic deck, top first: deck[0] is set aside, then the deal and the draws in order.
DECK = [5, 1, 2, 3, 8, 1, 4, 1, 6, 1, 2, 3, 4, 5, 7, 1]


def one_hot(value: int) -> list[int]:
    return [int(value == v) for v in range(1, NUM_CARD_TYPES + 1)]


def split(row: torch.Tensor) -> list[list[int]]:
    """The features of one decision as their six blocks of eight values."""
    return row.reshape(-1, NUM_CARD_TYPES).tolist()


@pytest.mark.parametrize("players", [2, 3, 4])
def test_hidden_cards_are_the_hands_the_set_aside_card_and_the_deck_to_come(players):
    env = BatchedLoveLetter(1, players, rules="classic")
    env.reset(decks=torch.tensor([DECK]), first_player=torch.tensor([players - 1]))
    state = env.state
    seat = int(env.current_player[0])
    blocks = split(hidden_cards(state, env.current_player)[0])
    hands = state.hands[0].tolist()
    # The other seats in turn order from the player's left, then nothing for missing seats.
    expected_hands = [one_hot(hands[(seat + k) % players]) if k < players else [0] * 8 for k in (1, 2, 3)]
    assert blocks[:3] == expected_hands
    assert all(sum(b) == 1 for b in blocks[: players - 1])  # every other seat holds a card
    assert blocks[3] == one_hot(DECK[0])  # the card set aside face down
    next_card = int(state.next_card[0])
    assert blocks[4] == one_hot(DECK[next_card])
    assert blocks[5] == [DECK[next_card + 1 :].count(v) for v in range(1, NUM_CARD_TYPES + 1)]
    # None of it is the player's own: its hand and the card it drew are elsewhere.
    assert sum(map(sum, blocks)) == (players - 1) + 1 + 1 + len(DECK) - next_card - 1


def test_the_next_card_is_the_one_the_next_player_draws():
    env = BatchedLoveLetter(64, 2, rules="mini8", seed=3)
    _, mask = env.reset()
    generator = torch.Generator().manual_seed(0)
    checked = 0
    for _ in range(6):
        before = env.state
        upcoming = split_rows(hidden_cards(before, env.current_player))[:, 4]
        actions = torch.multinomial(mask.float(), 1, generator=generator).squeeze(-1)
        _, mask, _, dones, _ = env.step(actions)
        after = env.state
        drawn = after.drawn.long()
        # Where the turn drew one card only, the next player's (a Prince's discard draws one more).
        one_draw = after.next_card.long() - before.next_card.long() == 1
        going = ~dones & one_draw & (upcoming.sum(-1) == 1)
        assert torch.equal(upcoming[going].argmax(-1) + 1, drawn[going])
        checked += int(going.sum())
    assert checked > 100


def split_rows(rows: torch.Tensor) -> torch.Tensor:
    return rows.reshape(rows.shape[0], -1, NUM_CARD_TYPES)


def test_a_mixed_env_gives_every_block_state_in_order():
    env = MixedRulesBatched(6, 2, rules=["mini6", "mini8"], seed=1)
    env.reset()
    state = env.state
    assert torch.equal(state.deck, torch.cat([block.state.deck for block in env.envs]))
    assert hidden_cards(state, env.current_player).shape == (6, HIDDEN_CARD_FEATURES)


# -- the loss ----------------------------------------------------------------------------
PLAIN_PPO = PPOConfig(magnet_coef=0.0)


def critic_batch(rows: int = 24) -> tuple[ActorCritic, DealCritic, RolloutBatch]:
    generator = torch.Generator().manual_seed(0)
    model = ActorCritic(hidden_sizes=(16,), generator=generator)
    critic = DealCritic((16, 8), generator=generator)
    obs = (torch.rand(rows, OBSERVATION_SIZE, generator=generator) < 0.05).to(torch.uint8)
    hidden = (torch.rand(rows, HIDDEN_CARD_FEATURES, generator=generator) < 0.2).to(torch.uint8)
    mask = torch.ones(rows, NUM_ACTIONS, dtype=torch.bool)
    actions = torch.arange(rows) % NUM_ACTIONS
    with torch.no_grad():
        logits, _ = model(obs)
        values = critic(obs, hidden)
    returns = torch.randn(rows, generator=generator).sign()
    batch = RolloutBatch(
        obs, mask, actions, action_log_prob(logits, mask, actions), values, returns - values, returns, hidden=hidden
    )
    return model, critic, batch


def test_the_critic_learns_from_the_hidden_cards_and_the_network_keeps_its_own_value():
    model, critic, batch = critic_batch()
    loss, _ = ppo_losses(model, batch, PLAIN_PPO, critic)
    loss.backward()
    assert critic.hidden_layer.weight.grad.abs().sum() > 0
    assert model.value_head.weight.grad.abs().sum() > 0 and model.policy_head.weight.grad.abs().sum() > 0
    # The critic's value moves with the hidden cards alone; the network does not see them.
    assert critic(batch.obs[:1], torch.zeros(1, HIDDEN_CARD_FEATURES)) != critic(batch.obs[:1], batch.hidden[:1])


def test_the_critic_changes_only_the_advantages_the_network_learns_from():
    """With the critic's values in the batch, the network's gradient is the one of a batch
    with the same advantages and no critic: same policy loss, same entropy, same magnet;
    its value head fits the same returns."""
    model, critic, batch = critic_batch()
    with_critic, _ = ppo_losses(model, batch, PLAIN_PPO, critic)
    own = value_loss(model(batch.obs)[1], batch.values, batch.returns, None)
    critic_vf = value_loss(critic(batch.obs, batch.hidden), batch.values, batch.returns, PLAIN_PPO.clip_coef)
    without, _ = ppo_losses(
        model, dataclasses.replace(batch, hidden=None), PPOConfig(magnet_coef=0.0, clip_vloss=False)
    )
    expected = without + PLAIN_PPO.vf_coef * critic_vf
    assert torch.allclose(with_critic, expected, atol=1e-6)
    assert not torch.allclose(with_critic, without + PLAIN_PPO.vf_coef * own)  # the critic's loss is in it


def test_a_batch_without_hidden_cards_is_refused():
    model, critic, batch = critic_batch()
    batch.hidden = None
    with pytest.raises(ValueError, match="hidden cards"):
        ppo_losses(model, batch, PLAIN_PPO, critic)
    buffer = RolloutBuffer(8, 4, torch.device("cpu"), hidden_width=HIDDEN_CARD_FEATURES)
    with pytest.raises(ValueError, match="deal critic"):
        ids = torch.arange(4)
        buffer.add(ids, ids % 2, batch.obs[:4], batch.masks[:4], ids, torch.zeros(4), torch.zeros(4))


# -- a run -------------------------------------------------------------------------------
RUN = [
    *TINY_TRAINING,
    "env.rules=mini6",
    "total_steps=512",
    "eval.every=0",
    "save_every=1",
    "opponents.current=1",
    "opponents.past=0",
    "opponents.bots=0",
    "model.critic=deal",
]


def test_a_run_with_the_deal_critic_saves_it_resumes_it_and_ships_a_plain_network(tmp_path):
    args = ["--no-progress", "--set", f"out_dir={tmp_path}", "--run-name", "r"]
    main([*args, *sum((["--set", o] for o in RUN), [])])
    run = tmp_path / "r"
    latest = load_checkpoint(run / "latest.pt")
    saved = latest["training"]["critic"]
    assert set(saved) == set(DealCritic([32]).state_dict()) and "hidden_layer.weight" in saved
    assert set(load_checkpoint(run / "result.pt")["model"]["state_dict"]) == set(ActorCritic((32,)).state_dict())
    resumed = SelfPlayTrainer(load_config(run / "config.yaml", ["total_steps=1024"]), run, resume=True, progress=False)
    assert resumed.critic is not None
    assert all(torch.equal(resumed.critic.state_dict()[k], v) for k, v in saved.items())
    resumed.train()
    assert resumed.global_step == 1024


def test_a_run_against_past_networks_and_bots_takes_the_deal_critic(tmp_path):
    config = load_config(None, [*TINY_TRAINING, "total_steps=256", "eval.every=0", "model.critic=deal"])
    trainer = SelfPlayTrainer(config, tmp_path / "mixed", progress=False)
    trainer.train()
    assert trainer.update == 2


def test_an_unknown_critic_is_named():
    with pytest.raises(ConfigError, match="model.critic"):
        load_config(None, ["model.critic=oracle"])
