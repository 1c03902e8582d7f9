"""The ``rule`` and ``random`` bots for many seats at once, compiled, with the same moves
as :class:`~loveletter_env.agents.rule.RuleAgent` and :class:`~loveletter_env.agents.random_agent.RandomAgent`.

Self-play seats bots in a share of its games; one Python decision per game per step
(decode the vector, build a view, walk the rules) is what made bots a tenth of a training
run. :class:`BatchedRuleBots` and :class:`BatchedRandomBots` hold any number of bot
*slots* (one per game and seat) and decide for a batch of them in one compiled call,
reading the same observation vectors.

Each slot's decision is one compiled function (:mod:`.bot_decisions`): the CPU loops call
it for :meth:`BatchedBots.act`, and :mod:`.cuda_bots` compiles the same source as CUDA
kernels, one thread per slot, for :meth:`BatchedBots.act_on_device`.

Each slot is exactly the Python bot with the same seed: its random generator is a copy of
the state of ``random.Random(seed)`` (Mersenne Twister, drawn the way ``Random.choice``
draws), and a rule bot keeps the same kept-card memory, so a slot plays the moves the
Python bot would, draw for draw (``tests/agents/test_batched_bots.py``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..actions import NUM_ACTIONS
from ..observation import OBSERVATION_SIZE, check_observation_values
from ..validation import check_seed
from .bot_decisions import random_actions, rule_actions

_FORGOTTEN = (0, -1, -1)  # a new episode's kept-card memory: no card kept


class BatchedBots:
    """Bots in ``len(seeds)`` slots, slot ``i`` seeded like the Python bot with ``seeds[i]``
    (a seed it takes: ``None`` for fresh entropy or an integer in ``0..MAX_SEED``).

    :meth:`act` decides for a batch of slots at once on the CPU, :meth:`act_on_device` on a
    CUDA device; :meth:`reset` starts new episodes for some slots (as the Python bots'
    ``reset()`` without a seed: the generator goes on).

    The slots' state (``mt_states``, and a rule bot's ``memories``) lives where they last
    acted: it moves to the device on the first :meth:`act_on_device` and stays there, and
    back to these host arrays on the next :meth:`act` or :meth:`to_host` (until then the
    host arrays are out of date).
    """

    #: The names of the per-slot state arrays (uint32 generator states first).
    STATE: tuple[str, ...] = ("mt_states",)

    def __init__(self, seeds: Sequence[int | None]):
        # The seeds the Python bots take, no others: random.Random would take -1 as 1, 1.5 or "1".
        checked = [check_seed(s, f"seeds[{i}]", allow_none=True) for i, s in enumerate(seeds)]
        self.mt_states = np.array([random.Random(s).getstate()[1] for s in checked], dtype=np.uint32)
        self._on_device: Any = None  # the torch CUDA device holding the state, if any
        self._device_state: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.mt_states)

    def reset(self, slots: np.ndarray) -> None:
        """New episodes for ``slots``."""
        self._check_slots(slots)

    def _check_slots(self, slots: Any) -> np.ndarray:
        """``slots`` as int64 indices, or ``ValueError``: a cast would read slot 0.9 as 0, and
        numpy indexing slot -1 as the last one."""
        slots = np.asarray(slots)
        size = len(self)
        integral = slots.dtype.kind in "iu" or (slots.size == 0 and slots.dtype.kind == "f")  # [] is float64
        if slots.ndim != 1 or not integral or (len(slots) and (slots.min() < 0 or slots.max() >= size)):
            shown = slots.tolist() if slots.size <= 8 else f"shape {list(slots.shape)}"
            raise ValueError(f"slots must be a 1-D array of slot indices in 0..{size - 1}, got {slots.dtype} {shown}")
        return slots.astype(np.int64, copy=False)

    def act(self, slots: np.ndarray, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """int64 [B]: the moves of ``slots`` (int [B]) given their ``observations``
        ([B, OBSERVATION_SIZE]: the batched env's uint8 or the AEC env's float32) and legal
        ``masks`` ([B, 41], at least one legal each), on the CPU.

        Raises ``ValueError`` for what the Python bots refuse too: slots that are no slot
        indices, observations of another shape or that are no observations (a bool or blank
        vector, an entry that is no whole number in 0..16), masks of another shape or of
        values other than 0 and 1, a mask with no legal action."""
        slots = self._check_slots(slots)
        observations, masks = np.asarray(observations), np.asarray(masks)
        if observations.shape != (len(slots), OBSERVATION_SIZE) or masks.shape != (len(slots), NUM_ACTIONS):
            raise ValueError(
                f"expected observations [{len(slots)}, {OBSERVATION_SIZE}] and masks [{len(slots)}, {NUM_ACTIONS}], "
                f"got {list(observations.shape)} and {list(masks.shape)}"
            )
        check_observation_values(observations)
        # A mask of other values (probabilities, counts) would read "nonzero is legal" and let a
        # slot play an action the position does not allow; the Python bots refuse it too.
        if masks.dtype.kind not in "biuf":
            raise ValueError(f"masks hold 0 or 1 (or bools), got dtype {masks.dtype}")
        if masks.dtype != np.bool_ and not ((masks == 0) | (masks == 1)).all():
            row, action = np.argwhere((masks != 0) & (masks != 1))[0]
            raise ValueError(
                f"masks hold 0 or 1 (or bools): entry {action} of row {row} is {masks[row, action].item()!r}"
            )
        # Bytes (the batched env's) are read as they are, with no float copy of the batch;
        # the compiled bots read either dtype alike (each entry is a small whole number).
        dtype = np.uint8 if observations.dtype == np.uint8 else np.float32
        observations = np.ascontiguousarray(observations, dtype=dtype)
        masks = np.ascontiguousarray(masks).astype(np.bool_, copy=False)
        if not masks.any(1).all():
            raise ValueError("every mask needs a legal action: a bot only acts on its own turn")
        self.to_host()
        actions = np.zeros(len(slots), dtype=np.int64)
        self._decide(slots, observations, masks, actions)
        return actions

    def act_on_device(self, slots: Any, observations: Any, masks: Any) -> Any:
        """:meth:`act` on a CUDA device: torch tensors in, an int64 [B] CUDA tensor of moves
        out, with no copy to the host and no host synchronisation (the kernels of
        :mod:`.cuda_bots` run on torch's current stream).

        ``observations`` (uint8 [B, OBSERVATION_SIZE], the batched env's) and ``masks``
        (bool [B, 41]) are CUDA tensors on one device; ``slots`` is int64 [B], a CUDA
        tensor there or host indices (checked on the host, then copied over). Checking
        the masks, or the values of slots already on the device, would cost a
        synchronisation a call, so they are not checked: a row whose mask has no legal
        action, or whose slot is out of range, gets the move -1 (which the batched env
        refuses) and changes no state. Slots within a batch must differ."""
        import torch

        device = observations.device if isinstance(observations, torch.Tensor) else None
        if device is None or device.type != "cuda":
            raise ValueError("act_on_device takes CUDA tensors: use act for bots on the CPU")
        rows = len(observations)
        if observations.dtype != torch.uint8 or tuple(observations.shape) != (rows, OBSERVATION_SIZE):
            shape = list(observations.shape)
            raise ValueError(f"expected uint8 observations [B, {OBSERVATION_SIZE}], got {observations.dtype} {shape}")
        if not isinstance(masks, torch.Tensor) or masks.device != device:
            raise ValueError(f"masks must be a tensor on the observations' device ({device})")
        if masks.dtype != torch.bool or tuple(masks.shape) != (rows, NUM_ACTIONS):
            raise ValueError(f"expected bool masks [{rows}, {NUM_ACTIONS}], got {masks.dtype} {list(masks.shape)}")
        if isinstance(slots, torch.Tensor) and slots.device == device:
            if slots.dtype != torch.int64 or tuple(slots.shape) != (rows,):
                raise ValueError(f"slots must be int64 [{rows}], got {slots.dtype} {list(slots.shape)}")
        else:
            slots = torch.from_numpy(self._check_slots(np.asarray(slots))).to(device)
            if len(slots) != rows:
                raise ValueError(f"expected {rows} slots, one per observation, got {len(slots)}")
        from . import cuda_bots  # numba-cuda: imported only when bots act on a CUDA device

        self._to_device(device)
        actions = torch.empty(rows, dtype=torch.int64, device=device)
        self._decide_on_device(cuda_bots, device, slots, observations.contiguous(), masks.contiguous(), actions)
        return actions

    def to_host(self) -> None:
        """Bring the slots' state back to the host arrays if it is on a CUDA device (a
        synchronisation); :meth:`act` does it first."""
        if self._on_device is None:
            return
        for name in self.STATE:
            getattr(self, name)[...] = self._device_state[name].cpu().numpy()
        self._on_device, self._device_state = None, {}

    def _to_device(self, device: Any) -> None:
        """Move the slots' state to ``device`` (once: it stays there while they act there)."""
        if self._on_device == device:
            return
        import torch

        self.to_host()
        self._device_state = {name: torch.from_numpy(getattr(self, name)).to(device) for name in self.STATE}
        self._on_device = device

    def _decide(self, slots: np.ndarray, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> None:
        raise NotImplementedError

    def _decide_on_device(
        self, cuda_bots: Any, device: Any, slots: Any, observations: Any, masks: Any, actions: Any
    ) -> None:
        raise NotImplementedError


class BatchedRandomBots(BatchedBots):
    """``RandomAgent(seed=seeds[i])`` in slot ``i``."""

    def _decide(self, slots: np.ndarray, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> None:
        random_actions(masks, slots, self.mt_states, actions)

    def _decide_on_device(
        self, cuda_bots: Any, device: Any, slots: Any, observations: Any, masks: Any, actions: Any
    ) -> None:
        cuda_bots.launch("random", device, masks, slots, self._device_state["mt_states"], actions)


class BatchedRuleBots(BatchedBots):
    """``RuleAgent(seed=seeds[i])`` in slot ``i``, kept-card memory included."""

    STATE = ("mt_states", "memories")

    def __init__(self, seeds: list[int]):
        super().__init__(seeds)
        self.memories = np.zeros((len(seeds), 3), dtype=np.int64)
        self.reset(np.arange(len(seeds)))

    def reset(self, slots: np.ndarray) -> None:
        """New episodes for ``slots``: forget the kept cards (on the device, if the state
        is there: a copy of ``slots`` over, no synchronisation)."""
        slots = self._check_slots(slots)
        if self._on_device is None:
            self.memories[slots] = _FORGOTTEN
            return
        import torch

        index = torch.as_tensor(slots).to(self._on_device)
        self._device_state["memories"][index] = torch.tensor(_FORGOTTEN, device=self._on_device)

    def _decide(self, slots: np.ndarray, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> None:
        rule_actions(observations, masks, slots, self.mt_states, self.memories, actions)

    def _decide_on_device(
        self, cuda_bots: Any, device: Any, slots: Any, observations: Any, masks: Any, actions: Any
    ) -> None:
        state = self._device_state
        cuda_bots.launch("rule", device, observations, masks, slots, state["mt_states"], state["memories"], actions)


#: The compiled bots by agent name.
BATCHED_BOTS: dict[str, type[BatchedBots]] = {"rule": BatchedRuleBots, "random": BatchedRandomBots}
