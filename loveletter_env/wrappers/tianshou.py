"""Love Letter for Tianshou: its ``PettingZooEnv`` around the AEC env, with numeric infos.

Tianshou stacks the ``info`` of every step into arrays in its replay buffer. The AEC env
reports ``winners`` (agent names) only when an episode ends, so the other steps would
be padded with ``None``, which Tianshou's buffer check reports as NaNs. This adapter
gives the same facts as numbers: ``won`` (1.0 per winning seat) and ``tokens``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo.utils import BaseWrapper

from ..aec import env as make_aec_env
from ._extras import require


class NumericInfoWrapper(BaseWrapper):
    """An AEC env whose ``last()`` info holds only numeric arrays (see the module doc)."""

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().last(observe)
        numeric: dict[str, Any] = {}
        if "winners" in info:
            winners = set(info["winners"])
            numeric["won"] = np.array([float(a in winners) for a in self.possible_agents], dtype=np.float32)
            numeric["tokens"] = np.asarray(info["tokens"], dtype=np.int64)
        return observation, reward, terminated, truncated, numeric


def tianshou_env(**env_kwargs: Any) -> Any:
    """A ``tianshou.env.PettingZooEnv`` over :func:`loveletter_env.env` (same keyword arguments).

    Observations reach Tianshou policies as ``{"agent_id", "obs", "mask"}``; its DQN
    and masked random policies never choose an action whose ``mask`` entry is False.
    """
    tianshou_pettingzoo = require("tianshou.env.pettingzoo_env", "tianshou")
    return tianshou_pettingzoo.PettingZooEnv(NumericInfoWrapper(make_aec_env(**env_kwargs)))
