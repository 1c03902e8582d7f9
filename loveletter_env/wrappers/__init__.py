"""Love Letter for other RL libraries: a Gymnasium single-agent env, registry entries
and adapters.

``import loveletter_env`` imports only :mod:`.registration` from here; everything else
is loaded on first use, so optional libraries (and the bots) are imported only by
the code that needs them.
"""

from __future__ import annotations

import importlib
from typing import Any

from .registration import GYM_ENV_ID, PETTINGZOO_ENV_ID, register_envs

_LAZY = {
    "LoveLetterGymEnv": ".single_agent",
    "make_opponent": ".opponents",
    "make_opponents": ".opponents",
    "RLlibLoveLetterEnv": ".rllib",
    "rllib_env_creator": ".rllib",
    "RLlibObservationAEC": ".rllib",
    "rllib_multi_agent_env": ".rllib",
    "tianshou_env": ".tianshou",
    "RecordReplay": ".recorder",
}

__all__ = [
    "GYM_ENV_ID",
    "PETTINGZOO_ENV_ID",
    "LoveLetterGymEnv",
    "RecordReplay",
    "RLlibLoveLetterEnv",
    "RLlibObservationAEC",
    "make_opponent",
    "make_opponents",
    "register_envs",
    "rllib_env_creator",
    "rllib_multi_agent_env",
    "tianshou_env",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
