"""Checkpoints: save atomically, load safely, turn into agents.

A checkpoint is a plain nested dict of tensors, numbers, strings, lists and dicts, so it
loads with ``torch.load(path, weights_only=True)``: no pickled code ever runs. It holds

- ``format`` / ``format_version``: what the file is (:data:`FORMAT`, :data:`FORMAT_VERSION`);
- ``observation_version``, ``observation_size``, ``num_actions``: the observation and
  action layout the network was trained for. Any known observation layout loads (a
  network of version 1 reads the version-1 prefix of today's observation, see
  :class:`~training.learn.ppo.ActorCritic`); an unknown one, or a size that is not its
  version's, is refused on load, as is another action layout;
- ``model``: ``{"hidden_sizes": [...], "state_dict": {...}}``;
- ``config``: the training config as a dict; ``global_step`` and ``update``;
- ``training`` (absent in exported agents): optimizer state, generator states and the
  opponent pool, everything ``--resume`` needs;
- ``evaluation``: the latest evaluation results, if any;
- ``sha256``: a digest of everything above (every tensor's dtype, shape and bytes, and
  every other value), written by :func:`save_checkpoint` and checked by
  :func:`load_checkpoint`, so a damaged file is refused instead of playing with garbage
  weights (torch's zip reader does not check the tensor bytes itself).

Files of format version 1, written before the digest existed, carry none: they still
load, unchecked (re-save one with ``save_checkpoint(path, load_checkpoint(path))`` to
add the digest). Version 2 files without a matching digest are refused.

A matching digest says the file is as written, not that it plays: :func:`load_checkpoint`
also takes only weights that are real floating-point numbers (:data:`WEIGHT_DTYPES`, dense,
all finite), builds the network and runs it on a few real observations
(:func:`~loveletter_env.agents.checkpoint_loading.network_output_problem`), so a network
that would play NaN probabilities is refused on load rather than played.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import struct
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import torch

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents.checkpoint_loading import checkpoint_file, network_output_problem
from loveletter_env.atomic_files import replacing
from loveletter_env.observation import LAYOUT_SIZES, OBSERVATION_VERSION
from loveletter_env.validation import check_seed, is_int
from loveletter_env.validation import shown as shown_value
from training.learn.config import MAX_HIDDEN_LAYERS, MAX_HIDDEN_SIZE
from training.learn.policy_agent import PolicyAgent
from training.learn.ppo import ActorCritic
from training.learn.runtime import check_device

FORMAT = "loveletter-ppo"
FORMAT_VERSION = 2
#: Versions this code reads: 1 is the same layout without the ``sha256`` digest.
READABLE_FORMAT_VERSIONS = (1, 2)
#: The key holding the digest of the rest of the checkpoint.
DIGEST_KEY = "sha256"
#: What a network's weights may be stored as: real floating point (the network reads them as float32).
WEIGHT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _one_torch_thread_after_fork() -> None:
    """Run in every child forked from a process that loads networks (Gymnasium's async
    vector envs fork by default, and build an env, opponents included, in the parent
    first). Torch's OpenMP thread pool does not survive a fork: a child whose parent
    already ran a parallel op hangs at its own first one. With one intra-op thread no
    parallel region is entered (torch's DataLoader workers do the same), and the
    parallelism comes from the processes anyway."""
    torch.set_num_threads(1)


os.register_at_fork(after_in_child=_one_torch_thread_after_fork)


class CheckpointError(ValueError):
    """A file that is missing, corrupt, not a checkpoint of this project, or made for
    an observation layout this code does not know or another action layout. The message
    says which."""


class CheckpointWriteError(OSError):
    """A checkpoint that could not be written (the disk is full, the folder is read-only...).
    The file that was at its path, if any, is left as it was; ``errno`` is the system's code."""


#: System error codes that mean there is no room left for the file.
_DISK_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def _system_error(err: BaseException) -> OSError | None:
    """The ``OSError`` behind a failed save: ``err`` itself (opening, flushing, renaming), or
    the context of torch's ``RuntimeError`` (``unexpected pos``) for a failed write."""
    if isinstance(err, OSError):
        return err
    cause = err.__cause__ or err.__context__
    return cause if isinstance(err, RuntimeError) and isinstance(cause, OSError) else None


def run_write_failure(err: BaseException, folder: str) -> str | None:
    """What stopped a run that failed to write into its folder (``folder`` names it in the
    message), as a sentence: a :class:`CheckpointWriteError`'s message, or for a full disk met
    elsewhere (``metrics.csv`` is written every update, so a filling disk often shows there
    first) one saying so. ``None`` for any other error, a bug to report with its traceback."""
    if isinstance(err, CheckpointWriteError):
        return str(err)
    if isinstance(err, OSError) and err.errno in _DISK_FULL:
        return f"cannot write in {folder}: the disk is full"
    return None


def _write_error(path: Path, cause: OSError) -> CheckpointWriteError:
    kept = f"; the {path.name} already there is unchanged" if path.exists() else ""
    problem = "the disk is full" if cause.errno in _DISK_FULL else cause.strerror or str(cause)
    error = CheckpointWriteError(f"cannot save {str(path)!r}: {problem}{kept}")
    error.errno = cause.errno
    return error


def format_header(observation_version: int = OBSERVATION_VERSION) -> dict[str, Any]:
    """The identifying fields every checkpoint starts with, for a network trained on
    observation layout ``observation_version`` (by default the current one)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "observation_version": observation_version,
        "observation_size": LAYOUT_SIZES[observation_version],
        "num_actions": NUM_ACTIONS,
    }


def model_payload(model: ActorCritic) -> dict[str, Any]:
    """The ``model`` entry: architecture and weights (moved to CPU so any device loads them)."""
    return {
        "hidden_sizes": list(model.hidden_sizes),
        "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
    }


def _feed(digest: Any, value: Any) -> None:
    """Add ``value`` to ``digest`` in a canonical encoding: a type tag, then the value
    (lengths first, so no two different values encode alike)."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
        header = f"{value.dtype}{tuple(value.shape)}".encode()
        digest.update(b"T" + struct.pack("<Q", len(header)) + header + struct.pack("<Q", flat.nbytes))
        digest.update(flat)
    elif isinstance(value, dict):
        digest.update(b"D" + struct.pack("<Q", len(value)))
        for key, item in value.items():  # insertion order survives torch.save/torch.load
            _feed(digest, key)
            _feed(digest, item)
    elif isinstance(value, (list, tuple)):
        digest.update((b"L" if isinstance(value, list) else b"U") + struct.pack("<Q", len(value)))
        for item in value:
            _feed(digest, item)
    elif isinstance(value, (set, frozenset)):
        # A set comes back from the file in another order (strings hash differently in every
        # process), so its repr would not match itself: its items go in sorted by their own digests.
        digest.update((b"E" if isinstance(value, set) else b"F") + struct.pack("<Q", len(value)))
        for item_digest in sorted(_item_digest(item) for item in value):
            digest.update(item_digest)
    else:
        # Scalars and text: the type name keeps 1, 1.0, True and "1" apart; repr is exact for floats.
        text = f"{type(value).__qualname__}:{value!r}".encode()
        digest.update(b"S" + struct.pack("<Q", len(text)) + text)


def _item_digest(value: Any) -> bytes:
    """The SHA-256 digest of ``value`` alone, in :func:`_feed`'s encoding."""
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.digest()


def checkpoint_digest(data: dict[str, Any]) -> str:
    """The SHA-256 hex digest of a checkpoint's content, its own ``sha256`` entry left out."""
    digest = hashlib.sha256()
    _feed(digest, {key: value for key, value in data.items() if key != DIGEST_KEY})
    return digest.hexdigest()


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (header and digest added) to ``path`` atomically: a crash
    mid-write never leaves a truncated file where a good one was.

    The file is always written in the current format (:data:`FORMAT_VERSION`); layout
    keys of ``payload`` take precedence over the header's, and a ``sha256`` entry in it is
    replaced by the digest of what is written, so a loaded checkpoint (even a version 1
    file) can be saved again as is.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**format_header(), **payload, "format": FORMAT, "format_version": FORMAT_VERSION}
    data.pop(DIGEST_KEY, None)
    data[DIGEST_KEY] = checkpoint_digest(data)
    return write_atomically(path, lambda f: torch.save(data, f))


def write_atomically(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write ``path`` with ``write(file)`` into a temporary file beside it, then rename that
    over ``path``: a crash, a kill or Ctrl-C mid-write never leaves a truncated file where a
    good one was (the temporary file is removed, or, after a kill, left under a dotted name).

    Raises :class:`CheckpointWriteError` for a failed write (its message names the file and
    the problem); ``path``'s folder must exist.
    """
    path = Path(path)
    try:
        # plain open(), so the file gets the usual permissions rather than mkstemp's owner-only ones
        with replacing(path) as temporary, open(temporary, "wb") as f:
            write(f)
    except BaseException as err:
        cause = _system_error(err)
        if cause is None:
            raise
        raise _write_error(path, cause) from err
    return path


def check_not_training_state(name: str, path: str | Path) -> None:
    """Refuse to write a network over ``path`` when it holds a run's training state (a run's
    ``latest.pt``: optimizer, generators, pool), which ``--resume`` needs and which no
    ``--force`` should replace with bare weights: ``ValueError`` naming ``name``. A file that is
    no checkpoint of this project, or none at all, passes (other checks name it)."""
    if not Path(path).is_file():
        return
    try:
        held = "training" in load_checkpoint(path)
    except CheckpointError:
        return
    if held:
        raise ValueError(
            f"{name} {str(path)!r} holds a run's training state, which --resume needs: write the network elsewhere"
        )


def resolve_checkpoint_path(path: str | Path) -> Path:
    """``path`` itself if it is a file; for a run folder, the first of its ``result.pt``,
    ``best.pt`` and ``latest.pt`` (:func:`loveletter_env.agents.specs.checkpoint_file`, with
    its error as a :class:`CheckpointError`)."""
    try:
        return checkpoint_file(path)
    except FileNotFoundError as err:
        raise CheckpointError(str(err)) from None


def _read_torch_file(path: Path, map_location: str | torch.device) -> Any:
    """``torch.load(weights_only=True)``, its many failure types turned into one clear error."""
    try:
        with warnings.catch_warnings():
            # Torch warns about the pickle protocol of files it did not write; the error below says more.
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises many types for a bad file: unpickling, zip, EOF...
        # Torch's own messages suggest weights_only=False, which would run the file's code:
        # never the right advice for a file that is supposed to be a checkpoint.
        # Torch words a global outside its allow-list one way, and one of a module it blocks outright
        # (os, posix, subprocess...: the code a malicious file calls) another; both name it.
        found = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) (\S+)", str(err))
        if found:
            raise CheckpointError(
                f"{str(path)!r} is not a checkpoint: it holds a Python object ({found.group(1)}) that only code "
                f"can rebuild, and checkpoints are read without running any"
            ) from None
        raise CheckpointError(
            f"{str(path)!r} is not a checkpoint: not a torch file this project wrote (corrupt, truncated, "
            f"or another kind of file)"
        ) from None


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load and check a checkpoint (a file, or a run folder: see :func:`resolve_checkpoint_path`).

    Raises :class:`CheckpointError` if the file is unreadable, not a checkpoint of this
    project, damaged (its ``sha256`` digest does not match), was trained on an observation
    layout this code does not know (any version of ``LAYOUT_SIZES`` loads) or for another
    action layout, records a way of playing (its config's ``eval.greedy``) that is not ``True`` or
    ``False``, or holds a network this code would not build or that would not play: more
    than ``MAX_HIDDEN_LAYERS`` layers or wider than ``MAX_HIDDEN_SIZE`` (the bounds of
    :mod:`training.learn.config`), weights that do not fit it, weights that are not dense
    tensors of real floating-point numbers (:data:`WEIGHT_DTYPES`: no complex, integer,
    sparse, quantized or meta tensors), weights that are not finite (NaN or infinite, as a
    diverged training leaves them, or beyond float32 once read), or a network whose logits,
    values or masked probabilities are not finite on a few real observations (finite weights
    scaled far beyond any trained range overflow). The networks kept for ``--resume`` (opponent
    pool, magnet) get the same weight checks. A valid digest only says the file is as written,
    not that what was written makes sense. Every refusal names the file and the problem.

    A ``map_location`` that is not a device this machine has (see
    :func:`~training.learn.runtime.check_device`) raises ``ValueError`` naming it.
    """
    path = resolve_checkpoint_path(path)
    # Checked first: torch.load fails on a device this machine lacks, and that would read as a corrupt file.
    data = _read_torch_file(path, check_device(map_location))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{str(path)!r} is a torch file but not a {FORMAT} checkpoint")
    version = data.get("format_version")
    if isinstance(version, bool) or version not in READABLE_FORMAT_VERSIONS:
        raise CheckpointError(
            f"{str(path)!r} has checkpoint format version {version!r}; "
            f"this code reads versions {list(READABLE_FORMAT_VERSIONS)}"
        )
    if version >= 2:
        # Checked before anything else in the file is trusted.
        stored = data.get(DIGEST_KEY)
        if not isinstance(stored, str):
            raise CheckpointError(f"{str(path)!r} is damaged: its {DIGEST_KEY} integrity digest is missing")
        try:
            digest = checkpoint_digest(data)
        except RecursionError:  # a RuntimeError too: caught first, as its cause is no tensor
            raise CheckpointError(
                f"{str(path)!r} is malformed: it holds values nested deeper than Python can walk, which no "
                "checkpoint holds"
            ) from None
        except (RuntimeError, NotImplementedError, TypeError):
            # Sparse, quantized and meta tensors have no plain bytes to digest, and no checkpoint holds one.
            raise CheckpointError(
                f"{str(path)!r} is malformed: it holds a tensor that is not a dense one (sparse, quantized, or "
                "without values), which no checkpoint holds"
            ) from None
        if stored != digest:
            raise CheckpointError(
                f"{str(path)!r} is damaged: its content does not match its {DIGEST_KEY} integrity digest "
                f"(corrupted on disk or in transfer?); use another copy"
            )
    for key in ("observation_version", "observation_size", "num_actions"):
        if not is_int(data.get(key)):
            raise CheckpointError(
                f"{str(path)!r} is malformed: its {key} is {shown_value(data.get(key))}, not an integer"
            )
    layout, size = data["observation_version"], data["observation_size"]
    if layout not in LAYOUT_SIZES:
        raise CheckpointError(
            f"{str(path)!r} was trained on observation version {shown_value(layout)} ({shown_value(size)} entries), "
            f"which this code does not know (it reads versions {', '.join(map(str, sorted(LAYOUT_SIZES)))}): use "
            "the package version it was made with"
        )
    if size != LAYOUT_SIZES[layout]:
        raise CheckpointError(
            f"{str(path)!r} is malformed: it records observation version {layout} with "
            f"observation_size={shown_value(size)}, but that layout has {LAYOUT_SIZES[layout]} entries"
        )
    if data["num_actions"] != NUM_ACTIONS:
        raise CheckpointError(
            f"{str(path)!r} was trained for num_actions={shown_value(data['num_actions'])}, but this environment has "
            f"num_actions={NUM_ACTIONS!r}: retrain, or use the package version it was made with"
        )
    _check_recorded_play(path, data)
    model = data.get("model")
    if not isinstance(model, dict) or "state_dict" not in model or "hidden_sizes" not in model:
        raise CheckpointError(f"{str(path)!r} has no model weights")
    sizes, weights = model["hidden_sizes"], model["state_dict"]
    if not isinstance(sizes, (list, tuple)) or not sizes or not all(is_int(h) and h > 0 for h in sizes):
        raise CheckpointError(f"{str(path)!r} has a malformed network description: hidden_sizes={sizes!r}")
    if len(sizes) > MAX_HIDDEN_LAYERS or max(sizes) > MAX_HIDDEN_SIZE:
        shown = (
            repr(list(sizes)) if len(sizes) <= 8 else f"[{', '.join(map(str, sizes[:8]))}, ...] ({len(sizes)} layers)"
        )
        raise CheckpointError(
            f"{str(path)!r} describes a network beyond what this code builds: hidden_sizes={shown}, where at most "
            f"{MAX_HIDDEN_LAYERS} layers of 1..{MAX_HIDDEN_SIZE} units are allowed"
        )
    if not isinstance(weights, dict) or not all(isinstance(w, torch.Tensor) for w in weights.values()):
        raise CheckpointError(f"{str(path)!r} has malformed model weights (expected a dict of tensors)")
    _check_weights(path, weights, "")
    _check_training_networks(path, data.get("training"))
    try:
        network = build_model(data)
    except CheckpointError as err:
        raise CheckpointError(f"{str(path)!r}: {err}") from None
    _check_network(path, network)
    return data


def _check_recorded_play(path: Path, data: dict[str, Any]) -> None:
    """Refuse a recorded way of playing (the config's ``eval.greedy``) that is not ``True`` or
    ``False``: :func:`plays_greedily` would read it as "not recorded" and play greedily, a pure
    strategy, where the run may have sampled."""
    config = data.get("config")
    section = config.get("eval") if isinstance(config, dict) else None
    if isinstance(section, dict) and "greedy" in section and not isinstance(section["greedy"], bool):
        raise CheckpointError(
            f"{str(path)!r} is malformed: its config's eval.greedy (how the network plays) is "
            f"{shown_value(section['greedy'])}, not a boolean (true or false)"
        )


def _weight_kind(weight: torch.Tensor) -> str | None:
    """Why ``weight`` cannot be a network's weight, or ``None`` when it is a dense tensor of real
    floating-point numbers (:data:`WEIGHT_DTYPES`) with values."""
    if weight.is_meta:
        return "a meta tensor, which holds no values"
    if weight.is_quantized:
        return f"a quantized tensor ({weight.dtype})"
    if weight.is_nested or weight.layout != torch.strided:
        return (
            f"a {'nested' if weight.is_nested else str(weight.layout).removeprefix('torch.')} tensor, not a dense one"
        )
    if weight.dtype not in WEIGHT_DTYPES:
        # Complex weights would be cast to real (their imaginary part dropped), integers to float.
        return f"{str(weight.dtype).removeprefix('torch.')}, not a real floating-point type"
    return None


def _named(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _check_weights(path: Path, weights: dict[Any, torch.Tensor], where: str) -> None:
    """Refuse ``weights`` (named ``where`` + name in messages) unless every one is a dense tensor
    of finite real floating-point numbers."""
    odd = [f"{where}{name} is {kind}" for name, w in weights.items() if (kind := _weight_kind(w)) is not None]
    if odd:
        allowed = ", ".join(str(t).removeprefix("torch.") for t in WEIGHT_DTYPES)
        raise CheckpointError(
            f"{str(path)!r} holds weights that are not a network's: {'; '.join(odd[:3])}"
            f"{f'; and {len(odd) - 3} more' if len(odd) > 3 else ''} (weights are dense tensors of {allowed})"
        )
    spoiled = [f"{where}{name}" for name, w in weights.items() if not bool(torch.isfinite(w).all())]
    if spoiled:
        raise CheckpointError(
            f"{str(path)!r} holds weights that are not finite numbers (NaN or infinity) in {_named(spoiled)}: "
            "the training that wrote it diverged; use an earlier checkpoint of the run"
        )


def _check_training_networks(path: Path, training: Any) -> None:
    """The networks kept for ``--resume`` (the opponent pool's snapshots, the magnet, the running
    mean of the weights) pass the checks the model's own weights pass; entries of another shape
    are left to resume to refuse."""
    if not isinstance(training, dict):
        return
    pool = training.get("pool")
    snapshots = pool.get("snapshots") if isinstance(pool, dict) else None
    kept = [(f"training.pool.snapshots[{i}].", s) for i, s in enumerate(snapshots or []) if isinstance(s, dict)]
    for network in ("magnet", "average"):
        if isinstance(training.get(network), dict):
            kept.append((f"training.{network}.", training[network]))
    for where, weights in kept:
        _check_weights(path, {k: w for k, w in weights.items() if isinstance(w, torch.Tensor)}, where)


def _check_network(path: Path, network: ActorCritic) -> None:
    """Refuse a built network that does not play: weights that overflow float32 (the network's
    precision) when read from a wider type, or outputs that are not finite on real observations."""
    spoiled = [name for name, w in network.state_dict().items() if not bool(torch.isfinite(w).all())]
    if spoiled:
        raise CheckpointError(
            f"{str(path)!r} holds weights too large for the network's float32 in {_named(spoiled)} "
            "(they become infinite when read): the file was not written by a training of this project"
        )
    problem = network_output_problem(network.eval())
    if problem is not None:
        raise CheckpointError(
            f"{str(path)!r} holds a network that cannot play: it {problem}; its weights are finite but out of "
            "any trained range (a diverged training or an edited file): use an earlier checkpoint of the run"
        )


def build_model(checkpoint: dict[str, Any], device: str | torch.device = "cpu") -> ActorCritic:
    """The :class:`ActorCritic` stored in a loaded checkpoint, reading the observation
    layout it was trained on (its ``forward`` still takes the current observation)."""
    try:
        spec = checkpoint["model"]
        sizes, weights = spec["hidden_sizes"], spec["state_dict"]
        layout = checkpoint["observation_version"]
    except (KeyError, TypeError) as err:
        lacks = f"build_model takes a checkpoint as load_checkpoint returns it; this one lacks {err}"
        raise CheckpointError(lacks) from None
    # Every layer has at least one weight tensor: more layers than tensors cannot fit.
    if len(sizes) > len(weights):
        raise CheckpointError(
            f"the checkpoint's weights do not fit its network: {len(sizes)} hidden layers, {len(weights)} tensors"
        )
    # Compare shapes on the meta device (no memory) first, so absurd hidden_sizes in a
    # file are refused here rather than by the allocator.
    with torch.device("meta"):
        network = ActorCritic(hidden_sizes=sizes, observation_version=layout)
        shapes = {name: tuple(value.shape) for name, value in network.state_dict().items()}
    stored = {name: tuple(value.shape) for name, value in weights.items()}
    if shapes != stored:
        wrong = sorted(
            f"{name}: network {shapes.get(name, 'none')}, file {stored.get(name, 'none')}"
            for name in shapes.keys() | stored.keys()
            if shapes.get(name) != stored.get(name)
        )
        raise CheckpointError(
            f"the checkpoint's weights do not fit its network (hidden_sizes={list(sizes)}, "
            f"observation version {layout}): "
            + "; ".join(wrong[:3])
            + (f"; and {len(wrong) - 3} more" if len(wrong) > 3 else "")
        )
    # Memory without the random initialisation (an orthogonal init costs more than the rest of a
    # load): the shapes match, so loading the state dict overwrites every value.
    model = network.to_empty(device="cpu")
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise CheckpointError(f"the checkpoint's weights do not fit its network: {err}") from None
    return model.to(device)


def plays_greedily(checkpoint: dict[str, Any]) -> bool:
    """How a loaded checkpoint plays unless told otherwise: as its run's evaluations played it
    (``eval.greedy`` of the config it records), else greedily, as every checkpoint did before
    the setting was read (files without a config, or with one from before ``eval.greedy``)."""
    config = checkpoint.get("config")
    section = config.get("eval") if isinstance(config, dict) else None
    greedy = section.get("greedy") if isinstance(section, dict) else None
    return greedy if isinstance(greedy, bool) else True


def load_agent(
    path: str | Path, greedy: bool | None = None, seed: int = 0, device: str | torch.device = "cpu"
) -> PolicyAgent:
    """An agent with ``act(observation_dict) -> int`` from a checkpoint file or run folder.

    Args:
        path: a ``.pt`` checkpoint, or a run folder (the first it holds of ``result.pt``,
            ``best.pt`` and ``latest.pt``).
        greedy: ``True`` plays the most likely legal action, ``False`` samples from the masked
            policy; ``None`` (the default) plays the way the checkpoint's run evaluated it
            (its config's ``eval.greedy``, see :func:`plays_greedily`), greedily when it does
            not record one. A network trained towards an equilibrium (``ppo.magnet_coef``) is
            meant to sample: played greedily it is a pure strategy, which a best response
            exploits. The agent's ``greedy`` attribute says which it does.
        seed: seed of the agent's sampling generator (an integer in ``0..MAX_SEED``).
        device: where the network runs.

    Raises:
        CheckpointError: see :func:`load_checkpoint`.
        ValueError: a bad seed, or a ``greedy`` that is not ``None``, ``True`` or ``False``.

    Example::

        agent = load_agent("checkpoints/shipped/ppo_2p.pt")
        action = agent.act(env.observe(env.agent_selection))
    """
    seed = check_seed(seed)
    if greedy is not None and not isinstance(greedy, bool):
        raise ValueError(f"greedy must be True, False or None (the checkpoint's own way), got {greedy!r}")
    device = check_device(device)  # a bad one would read as a damaged file
    checkpoint = load_checkpoint(path, map_location=device)
    try:
        model = build_model(checkpoint, device)
    except CheckpointError as err:
        raise CheckpointError(f"{str(path)!r}: {err}") from None
    greedy = plays_greedily(checkpoint) if greedy is None else greedy
    return PolicyAgent(model, greedy=greedy, seed=seed, device=device)


def export_agent(src: str | Path, dst: str | Path) -> Path:
    """Copy a checkpoint without its training state (optimizer, generators, opponent
    pool): the small file to ship or share. Resuming needs the full file. The copy keeps
    the observation layout its network was trained on."""
    data = load_checkpoint(src)
    data.pop("training", None)
    return save_checkpoint(dst, data)
