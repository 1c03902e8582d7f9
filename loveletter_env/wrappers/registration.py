"""Register Love Letter with Gymnasium's and PettingZoo's env registries.

Run once by ``import loveletter_env``. Only entry-point strings are registered, so this
imports nothing beyond the two registries (both already loaded by the AEC env).

* ``gymnasium.make("loveletter/LoveLetter-v0", num_players=2, opponents="rule")``:
  the single-agent env, :class:`~loveletter_env.wrappers.single_agent.LoveLetterGymEnv`.
* ``pettingzoo.make("aec", "loveletter/loveletter_v0", num_players=3)``: the wrapped
  AEC env, :func:`loveletter_env.env`. PettingZoo 1.27 keeps separate AEC and parallel
  registries; Love Letter is turn-based (``is_parallelizable`` is False), so it is only
  in the AEC one. PettingZoo reads ``loveletter_v0`` and ``loveletter-v0`` alike.
"""

from __future__ import annotations

import gymnasium
import pettingzoo
from pettingzoo.env_registry.exceptions import PettingZooRegistryError

GYM_ENV_ID = "loveletter/LoveLetter-v0"
PETTINGZOO_ENV_ID = "loveletter/loveletter_v0"


def register_envs() -> None:
    """Add both ids to their registries (again only if missing, so re-running is silent)."""
    if GYM_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            id=GYM_ENV_ID,
            entry_point="loveletter_env.wrappers.single_agent:LoveLetterGymEnv",
        )
    try:
        pettingzoo.spec("aec", PETTINGZOO_ENV_ID)
    except PettingZooRegistryError:
        pettingzoo.register("aec", PETTINGZOO_ENV_ID, entry_point="loveletter_env.aec:env")


register_envs()
