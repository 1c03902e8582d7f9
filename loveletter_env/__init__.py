"""Love Letter for reinforcement learning: rules engine, PettingZoo env, bots and wrappers.

The names below load on first use, so ``import loveletter_env.cards`` (or ``actions``,
``rules``, ``engine``) needs neither gymnasium, pettingzoo nor torch. ``loveletter_env.env``
is PettingZoo's constructor, the function ``env`` of :mod:`loveletter_env.aec` (the module
of the AEC env, with ``raw_env``), called as PettingZoo's own games are:
``loveletter_env.env(num_players=2)``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .actions import NUM_ACTIONS, decode_action, describe_action, encode_action
    from .aec import env, raw_env
    from .engine import GameState, IllegalActionError, legal_actions, new_game, start_round, step
    from .observation import OBSERVATION_SIZE, ObservationView, decode_observation, encode_observation
    from .rules import CLASSIC, PEGASUS, Rules

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

#: The module that defines each name of :data:`__all__`, imported when the name is first read.
_HOMES = {
    "actions": ("NUM_ACTIONS", "decode_action", "describe_action", "encode_action"),
    "aec": ("env", "raw_env"),
    "engine": ("GameState", "IllegalActionError", "legal_actions", "new_game", "start_round", "step"),
    "observation": ("OBSERVATION_SIZE", "ObservationView", "decode_observation", "encode_observation"),
    "rules": ("CLASSIC", "PEGASUS", "Rules"),
}
_NAMES = {name: f".{module}" for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})


def _register_envs() -> None:
    """Register "loveletter/LoveLetter-v0" (Gymnasium) and "loveletter/loveletter_v0" (PettingZoo)
    where both libraries are installed; without them the rules and the engine still import."""
    try:
        from .wrappers import registration  # noqa: F401  (registers on import)
    except ImportError as missing:
        if (missing.name or "").partition(".")[0] not in ("gymnasium", "pettingzoo"):
            raise


_register_envs()
