"""Love Letter for reinforcement learning: rules engine, PettingZoo env, bots and wrappers."""

from .actions import NUM_ACTIONS, describe_action, decode_action, encode_action
from .engine import GameState, IllegalActionError, legal_actions, new_game, start_round, step
from .env import env, raw_env
from .observation import OBSERVATION_SIZE, ObservationView, decode_observation, encode_observation
from .rules import CLASSIC, PEGASUS, Rules

__version__ = "0.1.0"

__all__ = [
    "NUM_ACTIONS", "OBSERVATION_SIZE", "CLASSIC", "PEGASUS", "Rules", "GameState", "IllegalActionError",
    "ObservationView", "env", "raw_env", "decode_observation", "encode_observation", "describe_action",
    "decode_action", "encode_action", "legal_actions", "new_game", "start_round", "step",
]

# Registers "loveletter/LoveLetter-v0" (Gymnasium) and "loveletter/loveletter_v0" (PettingZoo).
from .wrappers import registration as _registration  # noqa: E402,F401
