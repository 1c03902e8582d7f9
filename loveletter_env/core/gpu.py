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
import ctypes
import dataclasses
import functools
import importlib.util
import types
from collections.abc import Callable
from typing import Any, NamedTuple

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

import numba  # noqa: E402
from numba import cuda, njit  # noqa: E402
from numba import types as nb  # noqa: E402
from numba.core.registry import CPUDispatcher  # noqa: E402

from ..actions import NUM_ACTIONS  # noqa: E402
from ..validation import is_int  # noqa: E402
from .kernels import (  # noqa: E402
    TurnOutputs,
    close_round,
    deal_from_key,
    lowest_round_winner,
    observe_into,
    play,
    publish_outcome,
    publish_turn,
    restart_game,
    start_round,
    write_observation_entries,
)
from .layout import CURRENT, NUM_PLAYERS, RECORD_SIZE, ROUND_OVER  # noqa: E402
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
        max_registers: a cap on the registers a thread of each kernel uses (None: the
            compiler's choice), so that more threads fit a multiprocessor at once, at the
            price of spilling to local memory.
    """

    threads_per_block: int = 64
    shared_records: bool = True
    zeroed_observations: bool = True
    max_registers: int | None = None

    def __post_init__(self) -> None:
        # Each setting is a constant or an option of the compiled kernels, checked here: a
        # float block size failed at the first launch ("griddim must be a sequence of
        # integers"), a flag "no" compiled as a true constant. NumPy's ints and bools are
        # stored as Python's, so that equal variants share one build (compiled_kernels).
        size = self.threads_per_block
        if not is_int(size) or size % 32 or not 32 <= size <= 1024:
            raise ValueError(f"threads_per_block must be an int, a multiple of 32 in 32..1024, got {size!r}")
        for flag in ("shared_records", "zeroed_observations"):
            value = getattr(self, flag)
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{flag} must be True or False, got {value!r}")
            object.__setattr__(self, flag, bool(value))
        object.__setattr__(self, "threads_per_block", int(size))
        row = RECORD_SIZE + NUM_ACTIONS
        if self.shared_records and size * row > 48 * 1024:
            raise ValueError(f"{size} records and masks of {row} bytes exceed a block's 48 KiB of static shared memory")
        registers = self.max_registers
        if registers is not None:
            if not is_int(registers) or not 16 <= registers <= 255:
                raise ValueError(f"max_registers must be in 16..255 (an int, or None), got {registers!r}")
            object.__setattr__(self, "max_registers", int(registers))


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


def cuda_kernel(
    body: Callable[..., None], built: dict[Any, Any], constants: dict[str, Any] | None = None, **options: Any
) -> Any:
    """``body`` (a plain function of this module calling CPU kernels by name) as a CUDA
    kernel whose calls go to the device versions (see :func:`device_function`), with the
    global names in ``constants`` bound to their values (numba compiles globals as
    constants, so a branch on one is decided when the kernel compiles); ``options`` go to
    ``numba.cuda.jit``."""
    namespace = dict(body.__globals__)
    namespace.update(constants or {})
    for name, value in body.__globals__.items():
        if isinstance(value, CPUDispatcher):
            namespace[name] = device_function(value, built)
    return cuda.jit(types.FunctionType(body.__code__, namespace, body.__name__, body.__defaults__), **options)


class DealStream(NamedTuple):
    """Where the GPU's new rounds come from: the deck tables ``orders`` and ``placements``
    (:func:`.decks.deck_tables`) and the counter-based stream ``seed``, of which game ``g``
    has used ``counts[g]`` keys (:func:`.sampling.stream_key`). The CPU's counterpart is
    :class:`.kernels.Deals`."""

    orders: Any
    placements: Any
    seed: Any
    counts: Any


@njit
def _next_key(deals, g):
    """Game ``g``'s next key of the stream ``deals`` (a :class:`DealStream`), counted as used."""
    key = stream_key(deals.seed, g, deals.counts[g])
    deals.counts[g] += 1
    return key


# Kernel bodies: one game per thread (compiled by build_kernels) -------------------------


def _reset_kernel(records, decks, use_decks, first_players, use_first_players, deals, masks, legal, current):
    """Start a new game in every record (the CPU's ``reset_batch``): from ``decks[g]`` and
    ``first_players[g]`` where ``use_decks`` / ``use_first_players``, else from the game's
    next key of the stream ``deals`` (a deck as :func:`.kernels.deal_from_key` deals it, a
    first seat ``pick(num_players, key)``)."""
    g = cuda.grid(1)
    if g < records.shape[0]:
        r = records[g]
        restart_game(r)
        key = _next_key(deals, g)
        first = np.int64(first_players[g]) if use_first_players else pick(np.int64(r[NUM_PLAYERS]), key)
        if use_decks:
            start_round(r, decks[g], first)
        else:
            deal_from_key(r, deals.orders, deals.placements, key, first)
        publish_turn(r, g, current, legal, masks[g])


def _step_kernel(records, actions, draw_actions, sampler, episode_is_round, deals, outputs, observations, observe):
    """One turn of every game, as the CPU's ``step_batch`` / ``random_step_batch`` play it:
    the same ``outputs`` (a :class:`.kernels.TurnOutputs`), and with ``draw_actions`` the
    same actions for the same ``sampler`` counter (game ``g`` draws with counter
    ``sampler + (g + 1) * GOLDEN``, as the CPU's loop does game after game). Rounds that
    end are dealt afresh from the game's next key of the stream ``deals`` (a
    :class:`DealStream`). An action that is not legal (unchecked input) leaves its game as
    it was, and its outputs but the observation.

    ``SHARED_RECORDS``, ``THREADS`` and ``ZEROED_OBSERVATIONS`` are the build's
    :class:`KernelVariant`, constants of the compiled kernel."""
    g = cuda.grid(1)
    num_games = records.shape[0]
    masks, legal = outputs.masks, outputs.legal
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
            publish_outcome(r, g, outputs)
            done = False
            if r[ROUND_OVER]:
                done = close_round(r, g, episode_is_round, outputs.rewards)
                key = _next_key(deals, g)
                first_player = pick(np.int64(r[NUM_PLAYERS]), key) if done else lowest_round_winner(r)
                deal_from_key(r, deals.orders, deals.placements, key, first_player)
            outputs.dones[g] = done
            publish_turn(r, g, outputs.current, legal, mask)
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
_DEAL_STREAM = nb.NamedTuple((_BYTES, _BYTES, nb.uint64, _LONGS), DealStream)
_TURN_OUTPUTS = nb.NamedTuple(
    (_FLOATS, _FLAGS, _FLAGS, _BYTES, nb.int8[:, ::1], _LONGS, _BYTES, nb.uint64[::1]), TurnOutputs
)
#: The argument types the batched env launches each kernel with (C-contiguous arrays of
#: torch tensors; bool tensors viewed as bytes; the groups as named tuples, which numba
#: passes member by member). The PTX check compiles these.
KERNEL_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "reset": (_BYTES, nb.int8[:, ::1], nb.boolean, _LONGS, nb.boolean, _DEAL_STREAM, _BYTES, nb.uint64[::1], _LONGS),
    "step": (_BYTES, _LONGS, nb.boolean, nb.uint64, nb.boolean, _DEAL_STREAM, _TURN_OUTPUTS, _OBSERVATIONS, nb.boolean),
    "observe": (_BYTES, _LONGS, _OBSERVATIONS),
}


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
    # The simulator runs each thread as Python, with no registers to cap, and its jit takes
    # no such option: a capped variant builds there as it plays, uncapped.
    capped = variant.max_registers is not None and not numba.config.ENABLE_CUDASIM  # type: ignore[attr-defined]
    options = {"max_registers": variant.max_registers} if capped else {}
    kernels = {name: cuda_kernel(body, built, constants, **options) for name, body in KERNEL_BODIES.items()}
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


class DirectLaunch:
    """Kernel ``name`` of ``kernels``, compiled for its :data:`KERNEL_SIGNATURES` entry and
    launched on torch CUDA tensors straight through the driver.

    numba's own launch (``kernel[blocks, threads, stream](*args)``) types every argument,
    picks an overload and converts each array through ``__cuda_array_interface__``: about
    20 arguments cost a step some hundreds of microseconds of Python, more than the kernel
    itself takes below about 100,000 games. Here the overload is fixed when the env is
    built and each launch packs the arguments as numba's launch does (an array: two null
    pointers, its size, item size, data pointer, shape and strides in bytes; an integer as
    its ctypes type; a boolean as itself) from the tensors' own fields, after checking each
    tensor's dtype, layout and device, so a wrong one is refused instead of misread.

    Raises ``RuntimeError`` at construction when this numba-cuda launches differently
    (:func:`direct_launch_unavailable` says why); the env then keeps numba's launch."""

    def __init__(self, kernels: types.SimpleNamespace, name: str, device: Any) -> None:
        import torch

        reason = direct_launch_unavailable()
        if reason:
            raise RuntimeError(reason)
        numba_dispatcher: Any = importlib.import_module("numba.cuda.dispatcher")
        self.name = name
        self.device = torch.device(device)
        if self.device.index is None:  # "cuda": torch's tensors name their device's index
            self.device = torch.device("cuda", torch.cuda.current_device())
        self._launch = numba_dispatcher.launch
        self._launch_config = numba_dispatcher.LaunchConfig
        self._new_config_names = numba_dispatcher.CUDA_CORE_GE_1_0
        self._threads = kernels.variant.threads_per_block
        with on_device(device):
            self.kernel = getattr(kernels, name).compile(KERNEL_SIGNATURES[name])
            self._function = self.kernel._codelibrary.get_cufunc().kernel
        torch_dtypes = {
            nb.uint8: (torch.uint8, torch.bool), nb.int8: (torch.int8,), nb.int64: (torch.int64,),
            nb.uint64: (torch.uint64,), nb.float32: (torch.float32,),
        }  # fmt: skip
        self._arity = len(KERNEL_SIGNATURES[name])
        self._arguments: list[tuple[str, Any, int]] = []
        for argument in _members(KERNEL_SIGNATURES[name], nb.BaseTuple):
            if isinstance(argument, nb.Array):
                self._arguments.append(("array", torch_dtypes[argument.dtype], argument.dtype.bitwidth // 8))
            elif isinstance(argument, nb.Integer):
                self._arguments.append(("integer", getattr(ctypes, f"c_{argument}"), 0))
            elif argument == nb.boolean:
                self._arguments.append(("boolean", None, 0))
            else:  # pragma: no cover (the signatures above hold only these)
                raise TypeError(f"{name}: no direct launch for an argument of type {argument}")
        self._configs: dict[int, Any] = {}
        self._streams: dict[int, Any] = {}

    def __call__(self, num_threads: int, stream: int, *args: Any) -> None:
        """Launch on ``num_threads`` threads on the CUDA stream with handle ``stream``."""
        self._launch(self._stream(stream), self._config(num_threads), self._function, *self.pack(*args))

    def pack(self, *args: Any) -> list[Any]:
        """The launch's arguments as numba's launch would pass them to the driver (a group,
        a named tuple, member by member)."""
        if len(args) != self._arity:
            raise TypeError(f"{self.name} takes {self._arity} arguments, got {len(args)}")
        values = list(_members(args, tuple))
        if len(values) != len(self._arguments):
            raise TypeError(f"{self.name} takes {len(self._arguments)} values in its groups, got {len(values)}")
        packed: list[Any] = []
        for (kind, accepted, itemsize), value in zip(self._arguments, values):
            if kind == "array":
                if value.dtype not in accepted or value.device != self.device or not value.is_contiguous():
                    raise TypeError(
                        f"{self.name}: an argument must be a contiguous {accepted[0]} tensor on {self.device}, "
                        f"got {value.dtype} on {value.device}{'' if value.is_contiguous() else ', not contiguous'}"
                    )
                packed += (0, 0, value.numel(), itemsize, value.data_ptr(), *value.shape)
                packed += (step * itemsize for step in value.stride())
            elif kind == "integer":
                packed.append(accepted(value))
            else:
                packed.append(bool(value))
        return packed

    def _config(self, num_threads: int) -> Any:
        config = self._configs.get(num_threads)
        if config is None:
            blocks = (num_threads + self._threads - 1) // self._threads
            cooperative = "is_cooperative" if self._new_config_names else "cooperative_launch"
            config = self._launch_config(grid=blocks, block=self._threads, shmem_size=0, **{cooperative: False})
            self._configs[num_threads] = config
        return config

    def _stream(self, handle: int) -> Any:
        stream = self._streams.get(handle)
        if stream is None:
            stream = self._streams[handle] = cuda.external_stream(handle)
        return stream

    def attributes(self) -> dict[str, int]:
        """The compiled kernel's registers and local memory a thread, static shared memory a
        block, and (where this CUDA can say) resident blocks a multiprocessor."""
        with on_device(self.device):
            found = {
                "registers": self.kernel.regs_per_thread,
                "local_bytes": self.kernel.local_mem_per_thread,
                "shared_bytes": self.kernel.shared_mem_per_block,
            }
            with contextlib.suppress(Exception):  # an older cuda.core has no occupancy query
                found["blocks_per_sm"] = self._function.occupancy.max_active_blocks_per_multiprocessor(self._threads, 0)
        return found


def _members(items: Any, group: type) -> Any:
    """The items of ``items``, each ``group`` (a tuple, or numba's type of one) replaced by
    its members, at any depth: the order in which numba passes a kernel's arguments."""
    for item in items:
        if isinstance(item, group):
            yield from _members(item, group)  # numba's tuple types iterate over their members too
        else:
            yield item


def map_tensors(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``value`` with ``convert(tensor)`` for each torch tensor in it, itself or a member of a
    group (a named tuple) of a kernel's arguments."""
    import torch

    if isinstance(value, torch.Tensor):
        return convert(value)
    if isinstance(value, tuple):
        members = [map_tensors(member, convert) for member in value]
        return type(value)(*members) if hasattr(value, "_fields") else tuple(members)
    return value


def direct_launch_unavailable() -> str:
    """Why :class:`DirectLaunch` cannot run here ("" when it can): the simulator has no
    driver, and another numba-cuda may launch differently."""
    import numba

    if numba.config.ENABLE_CUDASIM:  # type: ignore[attr-defined]
        return "the CUDA simulator launches through numba only"
    numba_dispatcher = importlib.import_module("numba.cuda.dispatcher")

    missing = [name for name in ("launch", "LaunchConfig", "CUDA_CORE_GE_1_0") if not hasattr(numba_dispatcher, name)]
    if missing or not hasattr(numba_dispatcher, "_Kernel") or not hasattr(numba_dispatcher._Kernel, "_prepare_args"):
        return f"this numba-cuda launches differently (numba.cuda.dispatcher lacks {', '.join(missing) or '_Kernel'})"
    return ""


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
