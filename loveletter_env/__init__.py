"""Love Letter for reinforcement learning: rules engine, PettingZoo env, bots and wrappers."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import env as _env_module
from .actions import NUM_ACTIONS, decode_action, describe_action, encode_action
from .engine import GameState, IllegalActionError, legal_actions, new_game, start_round, step
from .env import raw_env
from .observation import OBSERVATION_SIZE, ObservationView, decode_observation, encode_observation
from .rules import CLASSIC, PEGASUS, Rules

if TYPE_CHECKING:  # for type checkers, loveletter_env.env is the constructor
    from .env import env

__version__ = "0.1.0"

__all__ = [
    "CLASSIC",
    "NUM_ACTIONS",
    "OBSERVATION_SIZE",
    "PEGASUS",
    "GameState",
    "IllegalActionError",
    "ObservationView",
    "Rules",
    "decode_action",
    "decode_observation",
    "describe_action",
    "encode_action",
    "encode_observation",
    "env",
    "legal_actions",
    "new_game",
    "raw_env",
    "start_round",
    "step",
]


class _CallableEnvModule(ModuleType):
    """``loveletter_env.env`` is both the submodule (``loveletter_env.env.raw_env``,
    ``help(loveletter_env.env)`` shows its env card) and, called, PettingZoo's constructor
    ``loveletter_env.env(num_players=2, ...)``, which is ``loveletter_env.env.env``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.env(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, tuple[str]]:  # pickled by name, as a function would be
        return importlib.import_module, (self.__name__,)


# Importing the submodule made it the package's ``env`` attribute; it stays that, made callable.
_env_module.__class__ = _CallableEnvModule

# Registers "loveletter/LoveLetter-v0" (Gymnasium) and "loveletter/loveletter_v0" (PettingZoo).
from .wrappers import registration as _registration  # noqa: E402,F401
