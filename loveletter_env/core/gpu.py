"""The core's kernels compiled for CUDA: one game per GPU thread, from the same Python
source as the CPU kernels of :mod:`.kernels`.

Every per-game kernel (``play``, ``start_round``, ``legal_bits``, ``observe_into``, ...)
is written once, in :mod:`.kernels` and :mod:`.sampling`, and compiled twice: by
``@njit`` for the CPU (what those modules export) and here, by :func:`device_function`,
as a CUDA device function. :func:`device_function` takes a CPU dispatcher's Python
source and compiles it with ``numba.cuda.jit(device=True)`` in a namespace where every
kernel it calls is itself replaced by its device version, so one function body serves
both targets and no rule is written for the GPU alone.

The CUDA kernels below are the batch drivers: each thread steps one game's record (a row
of ``uint8 [N, RECORD_SIZE]`` in device memory) and writes its outputs. They read and
write any CUDA array (numba device arrays, or torch CUDA tensors through
``__cuda_array_interface__``, with no copy), and run unchanged in numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) on numpy arrays, which is how the tests check them without
a GPU.

Deals on the GPU come from a counter-based generator instead of the CPU's sequential
one: the ``k``-th deal of game ``g`` under seed ``s`` is a function of ``(s, g, k)``
alone (:func:`.sampling.stream_key`), so threads need no shared generator state and the
same seed gives the same games on every run. They are not the CPU's games for the same
seed (docs/batched.md).

This module imports ``numba.cuda`` (the ``cuda`` extra: ``pip install
"loveletter-env[cuda]"``); nothing else in the package imports it unless a CUDA device
is asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import types
from collections.abc import Callable
from typing import Any

import numpy as np

if importlib.util.find_spec("numba_cuda") is None:
    # numba still ships its own older CUDA target as numba.cuda, which imports but cannot
    # compile these kernels: without numba-cuda, say so here instead of failing mid-compile.
    raise ImportError('numba-cuda is not installed (the cuda extra: pip install "loveletter-env[cuda]")')


def _load_array_overloads() -> None:
    """Import numba-cuda's array overloads now, lending NumPy its removed ``row_stack`` for
    the import only.

    numba-cuda 0.30 (in maintenance, no fix planned) registers an overload of
    ``np.row_stack`` when that module is imported, on the first kernel compile; NumPy 2.5
    removed the alias of ``np.vstack``, and every compile then failed. Imported here, the
    alias exists only while the module registers it and NumPy is left as it was."""
    if hasattr(np, "row_stack"):
        return  # NumPy < 2.5: nothing to lend (the module imports on first compile)
    numpy: Any = np  # an attribute this NumPy lacks
    numpy.row_stack = np.vstack
    try:
        import numba.cuda.np.arrayobj  # noqa: F401
    finally:
        del numpy.row_stack


_load_array_overloads()

from numba import cuda  # noqa: E402
from numba import types as nb  # noqa: E402
from numba.core.registry import CPUDispatcher  # noqa: E402

from ..actions import NUM_ACTIONS  # noqa: E402
from .kernels import (  # noqa: E402
    NEW_GAME,
    ROUND_GOES_ON,
    after_turn,
    deal_from_key,
    lowest_round_winner,
    observe_into,
    play,
    publish_turn,
    restart_game,
    start_round,
    write_observation_entries,
)
from .layout import CURRENT, NUM_PLAYERS, RECORD_SIZE  # noqa: E402
from .sampling import GOLDEN, nth_set_bit, pick, popcount, stream_key  # noqa: E402


@dataclasses.dataclass(frozen=True)
class KernelVariant:
    """How the CUDA kernels lay their work on the GPU; every variant computes the same
    outputs, bit for bit (the tests run each). ``scripts/gpu_check.py env --variants``
    times them side by side; :data:`DEFAULT_VARIANT` is what the env launches.

    Attributes:
        threads_per_block: games per thread block (a warp's multiple).
        shared_records: the step copies its block's records and legal masks into shared
            memory, every thread of the block one byte in turn (consecutive threads,
            consecutive bytes: the loads and stores coalesce), plays there, and copies them
            back; otherwise each thread reads and writes its own 314-byte record and
            41-byte mask in device memory.
        zeroed_observations: the env zeroes the observation rows (one memset) before the
            step, whose threads then write only the entries that may be nonzero;
            otherwise each thread writes its whole row.
    """

    threads_per_block: int = 64
    shared_records: bool = True
    zeroed_observations: bool = True

    def __post_init__(self) -> None:
        size = self.threads_per_block
        if size % 32 or not 32 <= size <= 1024:
            raise ValueError(f"threads_per_block must be a multiple of 32 in 32..1024, got {size}")
        row = RECORD_SIZE + NUM_ACTIONS
        if self.shared_records and size * row > 48 * 1024:
            raise ValueError(f"{size} records and masks of {row} bytes exceed a block's 48 KiB of static shared memory")


#: The variant the batched env launches (measured on an H200: docs/performance.md).
DEFAULT_VARIANT = KernelVariant()


def device_function(dispatcher: Any, built: dict[Any, Any]) -> Any:
    """The CUDA device version of the CPU kernel ``dispatcher`` (an ``@njit`` function).

    Its Python function is rebuilt over a copy of its module's globals in which every
    ``@njit`` kernel it can call is replaced, recursively, by that kernel's device version
    (``built`` maps each Python function to its device version, shared by one build so
    that each kernel compiles once). Compilation itself happens on first use, lazily."""
    source = dispatcher.py_func
    if source in built:
        return built[source]
    namespace = dict(source.__globals__)
    clone = types.FunctionType(source.__code__, namespace, source.__name__, source.__defaults__, source.__closure__)
    built[source] = device = cuda.jit(device=True)(clone)
    for name, value in source.__globals__.items():
        if isinstance(value, CPUDispatcher):
            namespace[name] = device_function(value, built)
    return device


def cuda_kernel(body: Callable[..., None], built: dict[Any, Any], constants: dict[str, Any] | None = None) -> Any:
    """``body`` (a plain function of this module calling CPU kernels by name) as a CUDA
    kernel whose calls go to the device versions (see :func:`device_function`), with the
    global names in ``constants`` bound to their values (numba compiles globals as
    constants, so a branch on one is decided when the kernel compiles)."""
    namespace = dict(body.__globals__)
    namespace.update(constants or {})
    for name, value in body.__globals__.items():
        if isinstance(value, CPUDispatcher):
            namespace[name] = device_function(value, built)
    return cuda.jit(types.FunctionType(body.__code__, namespace, body.__name__, body.__defaults__))


# Kernel bodies: one game per thread (compiled by build_kernels) -------------------------


def _reset_kernel(
    records, decks, use_decks, first_players, use_first_players, seed, deals, orders, placements, masks, legal, current
):
    """Start a new game in every record (the CPU's ``reset_batch``): from ``decks[g]`` and
    ``first_players[g]`` where ``use_decks`` / ``use_first_players``, else from the game's
    next key of the stream ``seed`` (a deck as :func:`.kernels.deal_from_key` deals it, a
    first seat ``pick(num_players, key)``)."""
    g = cuda.grid(1)
    if g < records.shape[0]:
        r = records[g]
        restart_game(r)
        key = stream_key(seed, g, deals[g])
        deals[g] += 1
        first = np.int64(first_players[g]) if use_first_players else pick(np.int64(r[NUM_PLAYERS]), key)
        if use_decks:
            start_round(r, decks[g], first)
        else:
            deal_from_key(r, orders, placements, key, first)
        publish_turn(r, g, current, legal, masks[g])


def _step_kernel(
    records, actions, draw_actions, sampler, episode_is_round, seed, deals, orders, placements,
    rewards, dones, round_over, round_winners, tokens, current, masks, legal, observations, observe,
):  # fmt: skip
    """One turn of every game, as the CPU's ``step_batch`` / ``random_step_batch`` play it:
    the same outputs, and with ``draw_actions`` the same actions for the same ``sampler``
    counter (game ``g`` draws with counter ``sampler + (g + 1) * GOLDEN``, as the CPU's
    loop does game after game). Rounds that end are dealt afresh from the game's next key
    of the stream ``seed``. An action that is not legal (unchecked input) leaves its game
    as it was, and its outputs but the observation.

    ``SHARED_RECORDS``, ``THREADS`` and ``ZEROED_OBSERVATIONS`` are the build's
    :class:`KernelVariant`, constants of the compiled kernel."""
    g = cuda.grid(1)
    num_games = records.shape[0]
    if SHARED_RECORDS:  # noqa: F821 (a constant of the build)
        tile = cuda.shared.array((THREADS, RECORD_SIZE), nb.uint8)  # noqa: F821
        mask_tile = cuda.shared.array((THREADS, NUM_ACTIONS), nb.uint8)  # noqa: F821
        first = cuda.blockIdx.x * THREADS  # noqa: F821
        count = min(THREADS, num_games - first)  # noqa: F821
        _copy_rows(records, tile, first, count, True)
        _copy_rows(masks, mask_tile, first, count, True)
        cuda.syncthreads()
        r = tile[cuda.threadIdx.x]
        mask = mask_tile[cuda.threadIdx.x]
    else:
        r = records[min(g, num_games - 1)]  # past the last game: a row the thread leaves alone
        mask = masks[min(g, num_games - 1)]
    if g < num_games:
        if draw_actions:
            bits = legal[g]
            action = nth_set_bit(bits, pick(popcount(bits), sampler + np.uint64(g + 1) * GOLDEN))
            actions[g] = action
            playable = True
        else:
            action = np.int64(actions[g])
            playable = 0 <= action < NUM_ACTIONS and (legal[g] >> np.uint64(action)) & np.uint64(1) != 0
        if playable:
            play(r, action)
            after = after_turn(r, g, episode_is_round, rewards, round_over, round_winners, tokens)
            if after != ROUND_GOES_ON:
                key = stream_key(seed, g, deals[g])
                deals[g] += 1
                first_player = pick(np.int64(r[NUM_PLAYERS]), key) if after == NEW_GAME else lowest_round_winner(r)
                deal_from_key(r, orders, placements, key, first_player)
            dones[g] = after == NEW_GAME
            publish_turn(r, g, current, legal, mask)
        if observe:
            if ZEROED_OBSERVATIONS:  # noqa: F821
                write_observation_entries(r, np.int64(r[CURRENT]), observations[g])
            else:
                observe_into(r, np.int64(r[CURRENT]), observations[g])
    if SHARED_RECORDS:  # noqa: F821
        cuda.syncthreads()
        _copy_rows(records, tile, first, count, False)
        _copy_rows(masks, mask_tile, first, count, False)


def _observe_kernel(records, seats, out):
    """``out[g]`` = game ``g`` seen from ``seats[g]`` (``out`` zeroed before the launch in
    a build with ``ZEROED_OBSERVATIONS``)."""
    g = cuda.grid(1)
    if g < records.shape[0]:
        if ZEROED_OBSERVATIONS:  # noqa: F821
            write_observation_entries(records[g], np.int64(seats[g]), out[g])
        else:
            observe_into(records[g], np.int64(seats[g]), out[g])


@cuda.jit(device=True)
def _copy_rows(rows, tile, first, count, load):
    """Rows ``first .. first + count - 1`` of ``rows`` into ``tile`` (``load``) or back, the
    block's threads taking consecutive bytes of the span in turn, so that a warp's loads
    and stores fall on consecutive addresses."""
    width = tile.shape[1]
    for i in range(cuda.threadIdx.x, count * width, cuda.blockDim.x):
        row = i // width
        column = i - row * width
        if load:
            tile[row, column] = rows[first + row, column]
        else:
            rows[first + row, column] = tile[row, column]


#: The kernel bodies by the names :func:`build_kernels` gives their compiled versions.
KERNEL_BODIES: dict[str, Callable[..., None]] = {
    "reset": _reset_kernel,
    "step": _step_kernel,
    "observe": _observe_kernel,
}


_BYTES = nb.uint8[:, ::1]  # records, deck tables, masks; bool outputs are written as bytes
_FLAGS = nb.uint8[::1]
_LONGS = nb.int64[::1]
_FLOATS = nb.float32[:, ::1]
_OBSERVATIONS = nb.uint8[:, ::1]  # one byte an entry, as the batched env allocates them
#: The argument types the batched env launches each kernel with (C-contiguous arrays of
#: torch tensors; bool tensors viewed as bytes). The PTX check compiles these.
KERNEL_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "reset": (
        _BYTES, nb.int8[:, ::1], nb.boolean, _LONGS, nb.boolean, nb.uint64, _LONGS, _BYTES, _BYTES,
        _BYTES, nb.uint64[::1], _LONGS,
    ),
    "step": (
        _BYTES, _LONGS, nb.boolean, nb.uint64, nb.boolean, nb.uint64, _LONGS, _BYTES, _BYTES,
        _FLOATS, _FLAGS, _FLAGS, _BYTES, nb.int8[:, ::1], _LONGS, _BYTES, nb.uint64[::1], _OBSERVATIONS, nb.boolean,
    ),
    "observe": (_BYTES, _LONGS, _OBSERVATIONS),
}  # fmt: skip


def build_kernels(variant: KernelVariant = DEFAULT_VARIANT) -> types.SimpleNamespace:
    """A fresh compilation of every CUDA kernel (attributes named as in ``KERNEL_BODIES``,
    and ``variant``), each with its own copies of the device functions. Kernels compile on
    first launch, or for a given architecture with ``numba.cuda.compile_ptx`` (the tests'
    PTX check)."""
    built: dict[Any, Any] = {}
    constants = {
        "THREADS": variant.threads_per_block,
        "SHARED_RECORDS": variant.shared_records,
        "ZEROED_OBSERVATIONS": variant.zeroed_observations,
    }
    kernels = {name: cuda_kernel(body, built, constants) for name, body in KERNEL_BODIES.items()}
    return types.SimpleNamespace(variant=variant, **kernels)


@functools.cache
def compiled_kernels(variant: KernelVariant = DEFAULT_VARIANT) -> types.SimpleNamespace:
    """The kernels this process launches for ``variant`` (one build each, compiled on first
    launch)."""
    return build_kernels(variant)


def launch(kernels: types.SimpleNamespace, name: str, num_games: int, stream: Any, *args: Any) -> None:
    """Launch kernel ``name`` of ``kernels`` with one thread per game on ``stream`` (0: the
    default stream), in blocks of the build's ``threads_per_block``."""
    launch_threads(
        getattr(kernels, name), num_games, stream, *args, threads_per_block=kernels.variant.threads_per_block
    )


def launch_threads(kernel: Any, num_threads: int, stream: Any, *args: Any, threads_per_block: int = 128) -> None:
    """Launch ``kernel`` on ``num_threads`` threads (one a row) on ``stream``."""
    blocks = (num_threads + threads_per_block - 1) // threads_per_block
    kernel[blocks, threads_per_block, stream](*args)


# Launching on torch tensors ------------------------------------------------------------


def tensor_view(tensor: Any) -> Any:
    """A numba view of the torch CUDA ``tensor``: no copy (bools as bytes), and no sync,
    since kernels run on torch's current stream, after whatever wrote the tensor."""
    import torch

    if tensor.dtype == torch.bool:
        tensor = tensor.view(torch.uint8)
    return cuda.as_cuda_array(tensor.detach(), sync=False)


def torch_stream(device: Any) -> Any:
    """Torch's current stream on the torch ``device``, for numba."""
    import torch

    return cuda.external_stream(torch.cuda.current_stream(device).cuda_stream)


def on_device(device: Any) -> Any:
    """A context in which numba works on the torch ``device`` (numba's current device is
    the first: another is made current for the while)."""
    return cuda.gpus[device.index] if device.index else contextlib.nullcontext()
