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
