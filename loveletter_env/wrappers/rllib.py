"""Love Letter for RLlib, in the observation layout RLlib's action-masking modules read.

RLlib's action-masking examples (``ActionMaskingTorchRLModule`` and its kin) expect a
``Dict`` observation with ``"observations"`` (what the network sees) and
``"action_mask"`` (1.0 legal, 0.0 illegal, as floats: the module adds ``log(mask)`` to
the logits). Two adapters give exactly that:

* :class:`RLlibLoveLetterEnv`: one learning seat against fixed opponents, around
  :class:`~loveletter_env.wrappers.single_agent.LoveLetterGymEnv`, built from one
  ``config`` mapping the way RLlib builds envs::

      config = PPOConfig().environment(RLlibLoveLetterEnv, env_config={"opponents": "rule"})

* :func:`rllib_multi_agent_env`: every seat an RLlib agent (self-play), RLlib's own
  ``PettingZooEnv`` around the AEC env with :class:`RLlibObservationAEC` renaming the keys.

Only :func:`rllib_multi_agent_env` imports ray (it needs the ``rllib`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo.utils import BaseWrapper

from ..actions import NUM_ACTIONS
from ..aec import env as make_aec_env
from ._extras import require
from .single_agent import LoveLetterGymEnv

OBSERVATIONS_KEY = "observations"
ACTION_MASK_KEY = "action_mask"


def _config_kwargs(config: Mapping[str, Any] | None, of: str, example: str) -> dict[str, Any]:
    """``config`` (RLlib's ``env_config``) as keyword arguments of ``of``; ``None`` for none.
    ``example`` is a config ``of`` takes, for the error message.

    Raises:
        ValueError: for a config that is no mapping (``dict()`` would take a list of pairs,
            and fail on a string with a message that names no config).
    """
    if config is not None and not isinstance(config, Mapping):
        raise ValueError(f"config is a dict of {of}'s arguments, such as {example}, got {config!r}")
    return dict(config or {})


def _rllib_space(observation_space: spaces.Space) -> spaces.Dict:
    return spaces.Dict(
        {OBSERVATIONS_KEY: observation_space, ACTION_MASK_KEY: spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32)}
    )


class RLlibLoveLetterEnv(gymnasium.ObservationWrapper):
    """:class:`LoveLetterGymEnv` whose observations are ``{"observations", "action_mask"}``.

    Args:
        config: keyword arguments of :class:`LoveLetterGymEnv` (``num_players``,
            ``opponents``, ``episode``, ...); RLlib passes its ``env_config`` here.
    """

    def __init__(self, config: Mapping[str, Any] | None = None):
        learner_env = LoveLetterGymEnv(**_config_kwargs(config, "LoveLetterGymEnv", "{'opponents': 'rule'}"))
        super().__init__(learner_env)
        self._learner_env = learner_env
        self.observation_space = _rllib_space(self.env.observation_space)

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {
            OBSERVATIONS_KEY: observation,
            ACTION_MASK_KEY: self._learner_env.action_masks().astype(np.float32),
        }

    def action_masks(self) -> np.ndarray:
        """The legal-action mask (int8[41]), as on the wrapped env."""
        return self._learner_env.action_masks()


def rllib_env_creator(config: Mapping[str, Any] | None = None) -> RLlibLoveLetterEnv:
    """For ``ray.tune.registry.register_env("loveletter", rllib_env_creator)``."""
    return RLlibLoveLetterEnv(config)


class RLlibObservationAEC(BaseWrapper):
    """The AEC env with observations ``{"observations", "action_mask" (float32)}``."""

    def __init__(self, env: Any):
        super().__init__(env)
        # One space object per agent, as PettingZoo asks (seeding a space must stick).
        self.observation_spaces = {
            agent: _rllib_space(env.observation_space(agent)["observation"]) for agent in env.possible_agents
        }

    def observation_space(self, agent: str) -> spaces.Dict:
        return self.observation_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        observation = self.env.observe(agent)
        return {
            OBSERVATIONS_KEY: observation["observation"],
            ACTION_MASK_KEY: observation["action_mask"].astype(np.float32),
        }


def rllib_multi_agent_env(config: Mapping[str, Any] | None = None) -> Any:
    """RLlib's ``PettingZooEnv`` (a ``MultiAgentEnv``) over :func:`loveletter_env.env`.

    ``config`` holds the AEC env's keyword arguments. Agent ids are ``player_0`` ...;
    map them all to one module for self-play. For ``ray.tune.registry.register_env``.
    """
    kwargs = _config_kwargs(config, "loveletter_env.env", "{'num_players': 3}")  # named before Ray is imported
    pettingzoo_env = require("ray.rllib.env.wrappers.pettingzoo_env", "rllib")
    return pettingzoo_env.PettingZooEnv(RLlibObservationAEC(make_aec_env(**kwargs)))
