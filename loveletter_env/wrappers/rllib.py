"""Love Letter for RLlib: the single-agent env with the observation layout RLlib's
action-masking modules read.

RLlib's action-masking examples (``ActionMaskingTorchRLModule`` and its kin) expect a
``Dict`` observation with ``"observations"`` (what the network sees) and
``"action_mask"`` (1.0 legal, 0.0 illegal, as floats: the module adds ``log(mask)`` to
the logits). :class:`RLlibLoveLetterEnv` gives exactly that, around
:class:`~loveletter_env.wrappers.single_agent.LoveLetterGymEnv`, and takes its
arguments as one ``config`` mapping, the way RLlib builds envs::

    from ray.rllib.algorithms.ppo import PPOConfig
    config = PPOConfig().environment(RLlibLoveLetterEnv, env_config={"opponents": "rule"})

This module does not import ray; only the caller's RLlib code does.
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium
import numpy as np
from gymnasium import spaces

from ..actions import NUM_ACTIONS
from .single_agent import LoveLetterGymEnv

OBSERVATIONS_KEY = "observations"
ACTION_MASK_KEY = "action_mask"


class RLlibLoveLetterEnv(gymnasium.ObservationWrapper):
    """:class:`LoveLetterGymEnv` whose observations are ``{"observations", "action_mask"}``.

    Args:
        config: keyword arguments of :class:`LoveLetterGymEnv` (``num_players``,
            ``opponents``, ``episode``, ...); RLlib passes its ``env_config`` here.
    """

    def __init__(self, config: Mapping[str, Any] | None = None):
        super().__init__(LoveLetterGymEnv(**dict(config or {})))
        self.observation_space = spaces.Dict(
            {
                OBSERVATIONS_KEY: self.env.observation_space,
                ACTION_MASK_KEY: spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
            }
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {
            OBSERVATIONS_KEY: observation,
            ACTION_MASK_KEY: self.env.unwrapped.action_masks().astype(np.float32),
        }

    def action_masks(self) -> np.ndarray:
        """The legal-action mask (int8[41]), as on the wrapped env."""
        return self.env.unwrapped.action_masks()


def rllib_env_creator(config: Mapping[str, Any] | None = None) -> RLlibLoveLetterEnv:
    """For ``ray.tune.registry.register_env("loveletter", rllib_env_creator)``."""
    return RLlibLoveLetterEnv(config)
