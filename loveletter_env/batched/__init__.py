"""The batched engine: N games stepped at once, bit-identical to the scalar engine (kept
honest by ``tests/test_batched.py``). On CPU the games run on the compiled core
(:mod:`loveletter_env.core`), on CUDA on the torch functions of :mod:`.engine`.

>>> env = BatchedLoveLetter(num_games=4096, num_players=2, device="cpu", seed=0)
>>> obs, mask = env.reset()
"""

from .engine import legal_mask, play_turn, showdown_winners, start_rounds
from .env import BatchedIllegalActionError, BatchedLoveLetter
from .observe import encode_observations
from .shuffle import shuffled_decks
from .state import BatchedState, empty_state, state_from_scalar

__all__ = [
    "BatchedLoveLetter",
    "BatchedIllegalActionError",
    "BatchedState",
    "empty_state",
    "state_from_scalar",
    "legal_mask",
    "play_turn",
    "showdown_winners",
    "start_rounds",
    "encode_observations",
    "shuffled_decks",
]
