"""The compiled ``rule`` and ``random`` bots as CUDA kernels: one bot decision per GPU
thread, from the same Python source as the CPU bots of :mod:`.batched_bots`.

The per-slot decisions :func:`.bot_decisions.rule_action` and
:func:`.bot_decisions.random_action` (and everything they call, the Mersenne Twister of
:mod:`loveletter_env.core.mt19937` included) are rebuilt as CUDA device functions by
:func:`loveletter_env.core.gpu.device_function`; the kernels below give each thread its
scratch in local memory and its slot's generator state and kept-card memory in device
memory, so a bot on the GPU draws what the CPU bot with the same state draws.

Kernels read and write torch CUDA tensors with no copy (:meth:`.batched_bots.BatchedBots.act_on_device`
launches them on torch's current stream), and run in numba's CUDA simulator on numpy
arrays, which is how ``tests/agents/test_cuda_bots.py`` checks them without a GPU.

This module imports ``numba.cuda`` (the ``cuda`` extra); nothing imports it unless bots
are asked to act on a CUDA device.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

from numba import types as nb

from ..actions import NUM_ACTIONS
from ..core import gpu  # first: it readies numba-cuda (or refuses numba's older CUDA target)
from ..core.gpu import cuda, cuda_kernel
from .bot_decisions import random_action, rule_action


@cuda.jit(device=True)
def _row_slot(slots, num_slots, actions):
    """This thread's row's bot slot, or -1 where it has none: a thread past the last row,
    or a slot out of range (whose move is then -1)."""
    i = cuda.grid(1)
    if i >= slots.shape[0]:
        return -1
    slot = slots[i]
    if slot < 0 or slot >= num_slots:
        actions[i] = -1
        return -1
    return slot


def _rule_kernel(observations, masks, slots, mt_states, memories, actions):
    """``actions[i]`` = the move of rule-bot slot ``slots[i]`` (the CPU's ``rule_actions``
    for one row), -1 for a slot out of range or a mask with no legal action."""
    slot = _row_slot(slots, mt_states.shape[0], actions)
    if slot < 0:
        return
    i = cuda.grid(1)
    known = cuda.local.array(4, nb.int64)
    ruled = cuda.local.array(4, nb.int64)
    options = cuda.local.array(NUM_ACTIONS, nb.int64)
    picks = cuda.local.array(NUM_ACTIONS, nb.int64)
    chosen = cuda.local.array(NUM_ACTIONS, nb.int64)
    weights = cuda.local.array(9, nb.int64)
    actions[i] = rule_action(
        observations[i], masks[i], mt_states[slot], memories[slot], known, ruled, options, picks, chosen, weights
    )


def _random_kernel(masks, slots, mt_states, actions):
    """``actions[i]`` = the move of random-bot slot ``slots[i]`` (the CPU's
    ``random_actions`` for one row), -1 for a slot out of range or a mask with no legal action."""
    slot = _row_slot(slots, mt_states.shape[0], actions)
    if slot < 0:
        return
    i = cuda.grid(1)
    options = cuda.local.array(NUM_ACTIONS, nb.int64)
    actions[i] = random_action(masks[i], mt_states[slot], options)


#: The kernel bodies by the names :func:`build_kernels` gives their compiled versions.
KERNEL_BODIES: dict[str, Callable[..., None]] = {"rule": _rule_kernel, "random": _random_kernel}

_BYTES = nb.uint8[:, ::1]  # observations, and masks (bool tensors viewed as bytes)
_LONGS = nb.int64[::1]
_MT_STATES = nb.uint32[:, ::1]
#: The argument types :meth:`.batched_bots.BatchedBots.act_on_device` launches each kernel
#: with. The PTX check compiles these.
KERNEL_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "rule": (_BYTES, _BYTES, _LONGS, _MT_STATES, nb.int64[:, ::1], _LONGS),
    "random": (_BYTES, _LONGS, _MT_STATES, _LONGS),
}


def build_kernels() -> types.SimpleNamespace:
    """A fresh compilation of the bot kernels (attributes named as in ``KERNEL_BODIES``),
    compiled on first launch or by ``numba.cuda.compile_ptx``."""
    built: dict[Any, Any] = {}
    return types.SimpleNamespace(**{name: cuda_kernel(body, built) for name, body in KERNEL_BODIES.items()})


@functools.cache
def compiled_kernels() -> types.SimpleNamespace:
    """The bot kernels this process launches (one build, compiled on first launch)."""
    return build_kernels()


def launch(name: str, device: Any, *tensors: Any) -> None:
    """Launch kernel ``name`` over the rows of the first of ``tensors`` (torch CUDA tensors
    on ``device``) on torch's current stream, with no copy and no host synchronisation."""
    rows = tensors[0].shape[0]
    if rows == 0:
        return
    kernel = getattr(compiled_kernels(), name)
    with gpu.on_device(device):
        gpu.launch_threads(kernel, rows, gpu.torch_stream(device), *(gpu.tensor_view(t) for t in tensors))
