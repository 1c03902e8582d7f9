"""The package's names: ``loveletter_env.env`` is both the submodule and PettingZoo's constructor."""

from __future__ import annotations

import importlib
import pickle

import loveletter_env
from loveletter_env import env as env_name
from loveletter_env.env import env as env_function
from loveletter_env.env import raw_env


def test_env_is_the_submodule_and_the_constructor():
    module = importlib.import_module("loveletter_env.env")
    assert loveletter_env.env is module is env_name
    assert loveletter_env.env.raw_env is raw_env is loveletter_env.raw_env
    built = loveletter_env.env(num_players=3, episode="round")
    assert type(built) is type(env_function(num_players=3)) and built.unwrapped.num_players == 3
    built.reset(seed=1)
    assert built.agent_selection in built.possible_agents
    assert pickle.loads(pickle.dumps(loveletter_env.env)) is module


def test_env_module_docstring_is_an_env_card():
    card = loveletter_env.env.__doc__
    for heading in ("Action space", "Observation space", "Action mask", "Rewards", "Version history", "loveletter_v0"):
        assert heading in card, heading
