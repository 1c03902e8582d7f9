"""The batched env: N games stepped at once on the compiled core, on CPU or CUDA, as torch
tensors, bit-identical to the scalar engine (kept honest by ``tests/batched/test_batched.py``).

>>> env = BatchedLoveLetter(num_games=4096, num_players=2, device="cpu", seed=0)
>>> obs, mask = env.reset()
"""

from .driver import OBSERVATION_DTYPE, BatchedIllegalActionError, BatchedLoveLetter
from .mixed import MixedRulesBatched
from .shuffle import shuffled_decks
from .state import BatchedState, state_from_records

__all__ = [
    "BatchedLoveLetter",
    "MixedRulesBatched",
    "OBSERVATION_DTYPE",
    "BatchedIllegalActionError",
    "BatchedState",
    "state_from_records",
    "shuffled_decks",
]
