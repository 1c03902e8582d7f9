"""The compiled bots play exactly the moves of the Python bots with the same seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import loveletter_env
from loveletter_env.agents.batched_bots import BatchedRandomBots, BatchedRuleBots
from loveletter_env.agents.random_agent import RandomAgent
from loveletter_env.agents.rule import RuleAgent


@pytest.mark.parametrize("rules", ("classic", "pegasus", "king_ignores_handmaid"))
@pytest.mark.parametrize("num_players", (2, 3, 4))
@pytest.mark.parametrize("kind", ("rule", "random"))
def test_same_moves_as_the_python_bots(kind, num_players, rules):
    """Whole games (the kept-card memory spans turns, the generators every decision):
    every decision of every seat, both bots seeded alike, over several episodes."""
    seeds = [1000 * num_players + 17 * seat for seat in range(num_players)]
    python_class, batched_class = (RuleAgent, BatchedRuleBots) if kind == "rule" else (RandomAgent, BatchedRandomBots)
    python_bots = [python_class(seed=s) for s in seeds]
    batched = batched_class(seeds)
    env = loveletter_env.env(num_players=num_players, rules=rules, episode="game")
    decisions = forced = 0
    for episode in range(10):
        env.reset(seed=episode)
        for bot in python_bots:
            bot.reset()
        batched.reset(np.arange(num_players))
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            seat = int(agent.split("_")[1])
            expected = python_bots[seat].act(observation)
            got = batched.act(np.array([seat]), observation["observation"][None], observation["action_mask"][None])
            assert int(got[0]) == expected, f"episode {episode}, {agent}"
            decisions += 1
            forced += int(observation["action_mask"].sum() == 1)
            env.step(expected)
    assert decisions - forced > 150


def test_batches_of_slots_and_bad_input():
    bots = BatchedRuleBots([1, 2, 3])
    env = loveletter_env.env(num_players=2, episode="round")
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    batch = np.stack([observation["observation"]] * 2), np.stack([observation["action_mask"]] * 2)
    one, other = RuleAgent(seed=1), RuleAgent(seed=3)
    assert bots.act(np.array([0, 2]), *batch).tolist() == [one.act(observation), other.act(observation)]
    with pytest.raises(ValueError, match="slots"):
        bots.act(np.array([0, 3]), *batch)
    with pytest.raises(ValueError, match="expected observations"):
        bots.act(np.array([0]), *batch)
    with pytest.raises(ValueError, match="legal action"):
        bots.act(np.array([0, 1]), batch[0], np.zeros_like(batch[1]))


@pytest.mark.parametrize("kind", ("rule", "random"))
def test_batched_env_bytes_give_the_moves_of_float_observations(kind):
    """The batched env's uint8 observations, read as they are, give the moves the same
    values as float32 (the AEC env's dtype) give, slot for slot and turn after turn."""
    from loveletter_env.batched import BatchedLoveLetter

    bot_class = BatchedRuleBots if kind == "rule" else BatchedRandomBots
    seeds = list(range(64))
    on_bytes, on_floats = bot_class(seeds), bot_class(seeds)
    env = BatchedLoveLetter(64, [2, 3, 4, 2] * 16, episode="game", seed=3)
    obs, mask = env.reset()
    slots = np.arange(64)
    for _ in range(120):
        assert obs.dtype == torch.uint8
        moves = on_bytes.act(slots, obs.numpy(), mask.numpy())
        assert moves.tolist() == on_floats.act(slots, obs.numpy().astype(np.float32), mask.numpy()).tolist()
        obs, mask, _, dones, _ = env.step(torch.from_numpy(moves))
        done = dones.nonzero().flatten().numpy()
        on_bytes.reset(done)
        on_floats.reset(done)


def test_same_guard_guesses_after_a_missed_guard_the_move_record_still_proves():
    """Seat 1 played the Priest a Guard had just failed to name (so it kept the card the
    Guard missed): neither bot names the Priest again, on any seed."""
    from conftest import act, deal_deck, make_env

    from loveletter_env.cards import BARON, GUARD, HANDMAID, PRIEST, PRINCE

    deck = deal_deck(2, hands={0: GUARD, 1: BARON}, draws=[HANDMAID, PRIEST, GUARD], face_up=[BARON, HANDMAID, PRINCE])
    env = make_env(2, deck)
    env.step(act(GUARD, 1, PRIEST))
    env.step(act(PRIEST, 1))
    observation = env.observe(env.agent_selection)
    seeds = list(range(40))
    batched = BatchedRuleBots(seeds).act(
        np.arange(len(seeds)),
        np.stack([observation["observation"]] * len(seeds)),
        np.stack([observation["action_mask"]] * len(seeds)),
    )
    assert batched.tolist() == [RuleAgent(seed=s).act(observation) for s in seeds]
    assert act(GUARD, 1, PRIEST) not in batched.tolist()


def _first_decision():
    env = loveletter_env.env(num_players=2, episode="round")
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    return observation["observation"], observation["action_mask"]


@pytest.mark.parametrize("bot_class", (BatchedRuleBots, BatchedRandomBots))
def test_masks_that_are_no_action_masks_are_refused(bot_class):
    """A mask of other values (here probabilities) would be read as "nonzero is legal" and
    let a slot play an action the position does not allow: refused, as the Python bots
    refuse it (``base.action_mask_of``)."""
    obs, mask = _first_decision()
    probabilities = mask.astype(np.float32) * 0.5
    probabilities[np.flatnonzero(mask == 0)] = 0.25  # weight on actions that are not legal here
    with pytest.raises(ValueError, match="0 or 1"):
        bot_class([1]).act(np.array([0]), obs[None], probabilities[None])
    with pytest.raises(ValueError, match="0 or 1"):
        bot_class([1]).act(np.array([0]), obs[None], np.where(mask, 2, 0)[None])
    with pytest.raises(ValueError, match="dtype"):
        bot_class([1]).act(np.array([0]), obs[None], mask.astype(str)[None])
    # Bool and integer masks of 0 and 1 are masks.
    assert bot_class([1]).act(np.array([0]), obs[None], mask.astype(bool)[None]).tolist() == (
        bot_class([1]).act(np.array([0]), obs[None], mask[None]).tolist()
    )


@pytest.mark.parametrize("bot_class", (BatchedRuleBots, BatchedRandomBots))
def test_vectors_that_are_no_observations_are_refused(bot_class):
    """What ``decode_observation`` refuses for the Python bots, the compiled ones refuse too:
    a bool vector (its counts lost), a blank one (no table size), entries no observation holds."""
    obs, mask = _first_decision()
    bots = bot_class([1, 2])
    with pytest.raises(ValueError, match="dtype bool"):
        bots.act(np.array([0]), obs.astype(bool)[None], mask[None])
    blank = np.stack([obs, np.zeros_like(obs)])
    with pytest.raises(ValueError, match=r"row 1 .*num_players"):
        bots.act(np.array([0, 1]), blank, np.stack([mask, mask]))
    for bad in (-1.0, 0.5, 17.0):
        odd = obs.copy()
        odd[3] = bad
        with pytest.raises(ValueError, match=f"entry 3 of row 0 .*{bad!r}"):
            bots.act(np.array([0]), odd[None], mask[None])
    wide = np.where(obs > 0, 200, 0).astype(np.uint8)  # bytes above 16
    with pytest.raises(ValueError, match="0..16"):
        bots.act(np.array([0]), wide[None], mask[None])


def test_slots_that_are_no_indices_are_refused():
    """Fractional or bool slots were cast to whole numbers (0.9 acted as slot 0)."""
    obs, mask = _first_decision()
    bots = BatchedRuleBots([1, 2])
    for slots in (np.array([0.9]), np.array([True]), [1.0]):
        with pytest.raises(ValueError, match="slot indices"):
            bots.act(slots, obs[None], mask[None])
    assert bots.act([1], obs[None], mask[None]).tolist() == [
        RuleAgent(seed=2).act({"observation": obs, "action_mask": mask})
    ]


@pytest.mark.parametrize("bot_class", (BatchedRuleBots, BatchedRandomBots))
@pytest.mark.parametrize("seed", (-1, 1.5, True, 2**63, "1"))
def test_seeds_the_python_bots_refuse_are_refused(bot_class, seed):
    """Slot i is "the Python bot with seeds[i]": a seed that bot refuses would otherwise give
    some other generator (-1 gave seed 1's)."""
    with pytest.raises(ValueError, match=r"seeds\[1\]"):
        bot_class([0, seed])


@pytest.mark.parametrize("bot_class", (BatchedRuleBots, BatchedRandomBots))
def test_reset_refuses_slots_out_of_range(bot_class):
    """``reset([-1])`` cleared the last slot's memory, and the random bots ignored any slot."""
    bots = bot_class([1, 2, 3])
    for slots in (np.array([-1]), np.array([3]), np.array([0.5])):
        with pytest.raises(ValueError, match="slot indices"):
            bots.reset(slots)
    bots.reset(np.array([], dtype=np.int64))
    bots.reset([0, 2])
