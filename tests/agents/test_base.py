"""The agent protocol (``loveletter_env.agents.base``): ``checked_act``, and the envs through it,
name an agent that returns what is no legal action."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from loveletter_env import env as make_env
from loveletter_env.agents.base import AgentError, checked_act


class FixedReturnAgent:
    """An agent whose act returns one fixed value, whatever the observation."""

    def __init__(self, value):
        self.value = value

    def act(self, observation):
        return self.value

    def __repr__(self) -> str:
        return f"FixedReturnAgent({self.value!r})"


@pytest.mark.parametrize(
    "value, message",
    [
        (None, r"returned None \(NoneType\)"),
        (1.0, r"returned 1.0 \(float\)"),
        (True, r"returned True \(bool\)"),
        ("3", r"returned '3' \(str\)"),
        (41, r"returned action 41 .*0\.\.40"),
        (-1, r"returned action -1 "),
    ],
)
def test_checked_act_names_the_agent_and_what_it_returned(value, message):
    aec = make_env(num_players=2)
    aec.reset(seed=0)
    observation = aec.observe(aec.agent_selection)
    with pytest.raises(AgentError, match=r"agent my-bot " + message):
        checked_act(FixedReturnAgent(value), observation, name="my-bot")


def test_checked_act_refuses_an_illegal_action_and_passes_legal_ones():
    aec = make_env(num_players=2)
    aec.reset(seed=0)
    observation = aec.observe(aec.agent_selection)
    legal = np.flatnonzero(observation["action_mask"])
    illegal = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    with pytest.raises(
        AgentError, match=rf"FixedReturnAgent\({illegal}\) returned action {illegal}, which is not legal"
    ):
        checked_act(FixedReturnAgent(illegal), observation)
    assert checked_act(FixedReturnAgent(np.int64(legal[0])), observation) == legal[0]
    assert type(checked_act(FixedReturnAgent(np.array(legal[-1])), observation)) is int


def test_gym_env_names_an_opponent_that_returns_none():
    env = gymnasium.make("loveletter/LoveLetter-v0", num_players=2, opponents=FixedReturnAgent(None)).unwrapped
    with pytest.raises(AgentError, match=r"FixedReturnAgent\(None\) \(the opponent at player_\d\) returned None"):
        for seed in range(20):  # some seed seats the opponent first
            env.reset(seed=seed)
            env.step(int(np.flatnonzero(env.action_masks())[0]))


@pytest.mark.parametrize(
    ("mask", "fault"),
    [
        (np.r_[np.zeros(45), 1, np.zeros(4)], "got shape (50,)"),  # would let an agent play action 45
        (np.full(41, np.nan), "with other values"),
        (np.full(41, 2.0), "with other values"),
        ("x", "got shape ()"),
        (np.zeros((2, 41)), "got shape (2, 41)"),
    ],
)
@pytest.mark.parametrize("bot", ["random", "rule", "belief"])
def test_bots_refuse_a_mask_that_is_no_action_mask(bot, mask, fault):
    from loveletter_env.agents import make_agent

    env = make_env(num_players=2)
    env.reset(seed=0)
    observation = {**env.observe(env.agent_selection), "action_mask": mask}
    with pytest.raises(ValueError, match=r"^an action mask holds 41 entries of 0 or 1") as error:
        make_agent(bot, seed=0).act(observation)
    assert fault in str(error.value)


def test_bots_say_an_empty_mask_means_another_seat_acts():
    from loveletter_env.agents import make_agent

    env = make_env(num_players=2)
    env.reset(seed=0)
    observation = {**env.observe(env.agent_selection), "action_mask": np.zeros(41, dtype=np.int8)}
    with pytest.raises(ValueError, match="the action mask has no legal action: this agent is not the one to act"):
        make_agent("rule", seed=0).act(observation)


@pytest.mark.parametrize("bot", ["random", "rule", "belief"])
def test_bots_given_the_observation_vector_alone_ask_for_the_dict(bot):
    # An array in place of the dict failed in numpy's words (only integers ... are valid indices).
    from loveletter_env.agents import make_agent

    env = make_env(num_players=2)
    env.reset(seed=0)
    vector = env.observe(env.agent_selection)["observation"]
    with pytest.raises(ValueError, match="^an agent needs the env's observation dict with an 'action_mask' entry$"):
        make_agent(bot, seed=0).act(vector)
