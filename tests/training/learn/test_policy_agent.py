"""training.learn.policy_agent: a network as an agent."""

from __future__ import annotations

import numpy as np
import pytest

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE
from training.learn.policy_agent import PolicyAgent
from training.learn.ppo import ActorCritic


def test_policy_agent_plays_legal_moves_in_the_env():
    from loveletter_env import env as make_env

    agent = PolicyAgent(ActorCritic(hidden_sizes=(16,)), greedy=False, seed=0)
    for num_players in (2, 4):
        env = make_env(num_players=num_players, episode="round")
        env.reset(seed=num_players)
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else agent.act(obs))  # an illegal action would raise
    with pytest.raises(ValueError, match="no legal action"):
        agent.act(
            {"observation": np.zeros(OBSERVATION_SIZE, np.float32), "action_mask": np.zeros(NUM_ACTIONS, np.int8)}
        )


def _observation(**changes):
    base = {"observation": np.zeros(OBSERVATION_SIZE, np.float32), "action_mask": np.eye(NUM_ACTIONS, dtype=np.int8)[3]}
    return {**base, **changes}


@pytest.mark.parametrize(
    ("observation", "message"),
    [
        (_observation(action_mask=np.ones(40, np.int8)), "an action mask holds 41 entries of 0 or 1"),
        (_observation(action_mask=np.zeros(NUM_ACTIONS, np.int8)), "no legal action"),
        (_observation(observation=np.full(OBSERVATION_SIZE, np.nan, np.float32)), "not a finite number"),
        ({"action_mask": np.eye(NUM_ACTIONS, dtype=np.int8)[3]}, "a numeric 'observation' entry"),
    ],
)
@pytest.mark.parametrize("method", ["act", "action_probabilities", "explain"])
def test_every_way_of_asking_refuses_what_is_no_observation(method, observation, message):
    """A NaN observation still gave an action, and explain() took an empty mask."""
    agent = PolicyAgent(ActorCritic(hidden_sizes=(16,)), seed=0)
    with pytest.raises(ValueError, match=message):
        getattr(agent, method)(observation)


def test_greedy_and_device_are_checked_when_the_agent_is_built():
    network = ActorCritic(hidden_sizes=(16,))
    with pytest.raises(ValueError, match="greedy must be True or False, got 'no'"):
        PolicyAgent(network, greedy="no")  # a string would have read as true: a pure strategy
    for device in ("gpu", "meta"):
        with pytest.raises(
            ValueError, match=rf"device must be 'cpu' or a CUDA device \('cuda', 'cuda:1'\), got '{device}'"
        ):
            PolicyAgent(network, device=device)
    assert PolicyAgent(network, greedy=np.True_).greedy is True


def test_the_network_names_an_input_that_is_no_real_tensor():
    import torch

    network = ActorCritic(hidden_sizes=(16,))
    with pytest.raises(TypeError, match="obs must be a real torch.Tensor .*, got ndarray"):
        network(np.zeros((1, OBSERVATION_SIZE), np.float32))
    with pytest.raises(TypeError, match="got a torch.complex64 tensor"):
        network(torch.zeros(1, OBSERVATION_SIZE, dtype=torch.complex64))


@pytest.mark.parametrize("greedy", [False, True])
def test_batched_probabilities_refuse_what_is_no_batch_of_decisions(greedy):
    """A row whose mask had no legal action got every action at equal odds (or action 0 when
    greedy), illegal ones included: the one-observation methods refuse such a mask."""
    agent = PolicyAgent(ActorCritic(hidden_sizes=(16,)), greedy=greedy, seed=0)
    observations, masks = np.zeros((3, OBSERVATION_SIZE), np.float32), np.eye(NUM_ACTIONS, dtype=np.int8)[[3, 4, 5]]
    assert agent.action_probabilities_batch(observations, masks).shape == (3, NUM_ACTIONS)
    empty_row = masks.copy()
    empty_row[1] = 0
    for args, message in [
        ((observations, empty_row), "row 1 of the action masks has no legal action"),
        ((observations, masks * 2), "entries of 0 or 1"),
        ((observations, masks[:2]), r"got shapes \(3, 1382\) and \(2, 41\)"),
        ((observations, np.ones((3, 50), np.int8)), r"and \(3, 50\)"),
        ((observations[0], masks[0]), r"got shapes \(1382,\) and \(41,\)"),
        ((np.full_like(observations, np.nan), masks), "not a finite number"),
    ]:
        with pytest.raises(ValueError, match=message):
            agent.action_probabilities_batch(*args)


def test_act_refuses_a_batch_for_one_observation():
    agent = PolicyAgent(ActorCritic(hidden_sizes=(16,)), seed=0)
    with pytest.raises(ValueError, match=r"one observation vector, got one of shape \(2, 1382\)"):
        agent.act(_observation(observation=np.zeros((2, OBSERVATION_SIZE), np.float32)))


def test_what_is_no_network_is_refused_naming_load_agent():
    """A checkpoint's path or its loaded dict failed with "'str' object has no attribute 'to'"."""
    for model in ("checkpoints/shipped/ppo_2p.pt", {"model": {}}):
        with pytest.raises(TypeError, match=r"got (str|dict): load a checkpoint file with training\.load_agent"):
            PolicyAgent(model)


@pytest.mark.parametrize("dtype", [np.complex64, np.str_])
def test_observations_that_are_no_real_numbers_are_refused(dtype):
    """A complex observation lost its imaginary part with only a warning (the network itself
    refuses a complex tensor), and a batch of text failed with numpy's own words."""
    agent = PolicyAgent(ActorCritic(hidden_sizes=(16,)), seed=0)
    vector = np.zeros(OBSERVATION_SIZE, dtype)
    with pytest.raises(ValueError, match="numeric 'observation' entry"):
        agent.act(_observation(observation=vector))
    with pytest.raises(ValueError, match=rf"observations of real numbers, got dtype {vector.dtype}"):
        agent.action_probabilities_batch(vector[None], np.eye(NUM_ACTIONS, dtype=np.int8)[[3]])


def test_a_batch_of_masks_of_uneven_rows_is_named():
    agent = PolicyAgent(ActorCritic(hidden_sizes=(16,)), seed=0)
    masks = [[1] * NUM_ACTIONS, [1] * (NUM_ACTIONS - 1)]
    with pytest.raises(ValueError, match=r"action masks \[B, 41\], got rows of different lengths"):
        agent.action_probabilities_batch(np.zeros((2, OBSERVATION_SIZE), np.float32), masks)
