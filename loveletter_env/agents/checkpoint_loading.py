"""Checkpoints as agents, without depending on the training code.

Loading a checkpoint (as an agent, :func:`load_checkpoint_agent`, or as a bare network for
agents that search with one, :func:`load_checkpoint_network`) goes through loaders
registered with :func:`register_checkpoint_loader`. The ``training`` package registers its
own when it is imported; when a checkpoint meets no registered loader, the package named by
:data:`CHECKPOINT_LOADER_PACKAGE` is imported once (by name) so that it can register.

This module imports no agent, so an agent built on a network (``guided``) can load one
without going round through :mod:`~loveletter_env.agents.specs`, which builds every agent.

A loader refuses a network that does not play: :func:`network_output_problem` runs one on a
few real observations, since weights can be finite numbers and still give NaN (scaled so far
that every layer overflows), and only running the network shows it.
"""

from __future__ import annotations

import functools
import importlib
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import engine
from ..actions import NUM_ACTIONS
from ..cards import FULL_DECK
from ..observation import encode_observation
from .base import Agent
from .errors import AgentSpecError

#: File suffixes that mark a spec as a checkpoint path.
CHECKPOINT_SUFFIXES: tuple[str, ...] = (".pt", ".pth", ".ckpt")
#: Imported on the first checkpoint spec when no loader is registered yet; it registers one.
CHECKPOINT_LOADER_PACKAGE = "training"

#: ``loader(path, seed, greedy) -> agent`` for checkpoint files and run folders; ``greedy`` is
#: ``True`` (the most likely action), ``False`` (sample the policy) or ``None`` (the checkpoint's own way).
CheckpointLoader = Callable[[Path, int, bool | None], Agent]
#: ``loader(path) -> network`` (``forward(obs) -> (logits, value)``, in eval mode), for agents built on a network.
NetworkLoader = Callable[[Path], Any]
_loaders: dict[str, Callable[..., Any]] = {}


def register_checkpoint_loader(agent: CheckpointLoader, network: NetworkLoader | None = None) -> None:
    """Make ``agent(path, seed, greedy)`` the way checkpoint specs become agents, and ``network(path)`` the way
    :func:`load_checkpoint_network` reads a checkpoint's network (the last registration wins).

    Both refuse a file whose network does not play (see :func:`network_output_problem`), raising
    their own error type with a message naming the file; what they return is used as is."""
    _loaders["agent"] = agent
    if network is not None:
        _loaders["network"] = network


#: What a run folder stands for as an agent, in order of preference: the run's answer
#: (``result.pt``, once it has finished), else the best evaluation's weights, else the latest.
RUN_DIR_FILES = ("result.pt", "best.pt", "latest.pt")


def checkpoint_file(path: str | os.PathLike[str]) -> Path:
    """The file a checkpoint spec loads: ``path`` itself if it is a file; for a run folder,
    the first of :data:`RUN_DIR_FILES` it holds.

    Raises:
        FileNotFoundError: naming the path, when there is no such file (or the path is a symbolic
            link to none, or no regular file: a pipe, a device) or the folder holds neither.
    """
    path = Path(path)
    if path.is_dir():
        for name in RUN_DIR_FILES:
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"run folder {str(path)!r} holds none of {list(RUN_DIR_FILES)}")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} {_not_a_file(path)}")
    return path


def _not_a_file(path: Path) -> str:
    """Why ``path``, which is neither a folder nor a regular file, holds no checkpoint, as the
    end of a sentence: "does not exist" would send the user looking for a path that is there."""
    if path.is_symlink():  # exists() follows the link: False for a loop or a missing target
        return "is a symbolic link that leads to no file (its target is missing, or the links form a loop)"
    if path.exists():
        return "is not a regular file (a pipe, a socket or a device)"
    return "does not exist"


def is_checkpoint_path(spec: str | os.PathLike[str]) -> bool:
    """Whether a spec that is not a bot name denotes a checkpoint file or run folder.

    ``package.module:factory`` never contains a path separator or a checkpoint suffix.
    """
    if isinstance(spec, os.PathLike):
        return True
    return spec.endswith(CHECKPOINT_SUFFIXES) or "/" in spec or os.sep in spec or os.path.exists(spec)


def _checkpoint_loader(kind: str, path: Path) -> Callable[..., Any]:
    if not path.is_dir():  # (a run folder is resolved by the loader)
        checkpoint_file(path)  # a path that is no file is named before any loader is imported
    if kind not in _loaders:
        try:
            importlib.import_module(CHECKPOINT_LOADER_PACKAGE)
        except ImportError as exc:
            raise AgentSpecError(
                f"cannot load checkpoint {str(path)!r}: no checkpoint loader is registered and "
                f"{CHECKPOINT_LOADER_PACKAGE!r} cannot be imported ({exc})"
            ) from None
    if kind not in _loaders:
        raise AgentSpecError(
            f"cannot load checkpoint {str(path)!r}: no {kind} loader is registered "
            "(see loveletter_env.agents.specs.register_checkpoint_loader)"
        )
    return _loaders[kind]


def load_checkpoint_agent(path: str | os.PathLike[str], seed: int = 0, greedy: bool | None = None) -> Agent:
    """The agent stored in a checkpoint file or run folder, through the registered loader: playing
    its most likely action (``greedy=True``), sampling its policy (``False``), or by default as the
    run that trained it evaluated it."""
    path = Path(path)
    return _checkpoint_loader("agent", path)(path, seed, greedy)


def load_checkpoint_network(path: str | os.PathLike[str]) -> Any:
    """The network stored in a checkpoint file or run folder (``forward(obs) -> (logits, value)``, in
    eval mode), through the registered loader: for agents that search with a trained network."""
    path = Path(path)
    return _checkpoint_loader("network", path)(path)


#: Seats of the probe observations: one deal for each table size, and a few moves into it.
_PROBE_TABLES = (2, 3, 4)
_PROBE_MOVES = 4


@functools.cache
def probe_observations() -> tuple[np.ndarray, np.ndarray]:
    """A small fixed batch of real decisions: observations ``float32 [B, OBSERVATION_SIZE]`` and
    their legal masks ``bool [B, 41]``, from the deal and the first moves of a 2-, 3- and
    4-player round (always the same: a seeded deck and seeded legal moves)."""
    rng = random.Random(0)  # a local generator: the batch never depends on anyone's global state
    observations, masks = [], []
    for num_players in _PROBE_TABLES:
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        state = engine.new_game(num_players, deck, first_player=0)
        for _ in range(_PROBE_MOVES):
            if state.round_over:
                break
            legal = engine.legal_actions(state)
            mask = np.zeros(NUM_ACTIONS, dtype=bool)
            mask[list(legal)] = True
            observations.append(encode_observation(state, state.current))
            masks.append(mask)
            engine.step(state, legal[rng.randrange(len(legal))])
    batch, legal_masks = np.stack(observations).astype(np.float32), np.stack(masks)
    batch.flags.writeable = legal_masks.flags.writeable = False  # shared by every call
    return batch, legal_masks


def network_output_problem(network: Any) -> str | None:
    """What is wrong with what ``network`` (``forward(obs) -> (logits, value)``) gives on
    :func:`probe_observations`, as a phrase that follows "the network" ("gives logits that are
    not finite ..."), or ``None`` when its logits and values are finite numbers and its policy,
    masked to the legal moves, is a finite distribution summing to 1 on every observation.

    Weights that are all finite can still overflow (weights scaled by 1e30 do): such a network
    plays NaN probabilities, which end up in replays and in every measure taken of it.
    """
    import torch  # only code that holds a network gets here: the package does not import torch itself

    observations, masks = probe_observations()
    with torch.no_grad():
        logits, values = network(torch.from_numpy(observations.copy()))
    rows = len(observations)
    if tuple(logits.shape) != (rows, NUM_ACTIONS) or values.numel() != rows:
        return (
            f"gives outputs of the wrong shape: logits {tuple(logits.shape)} and values {tuple(values.shape)} "
            f"for {rows} observations, where ({rows}, {NUM_ACTIONS}) and ({rows},) were expected"
        )
    logits, values = logits.detach().float().cpu(), values.detach().float().cpu().reshape(-1)
    for name, outputs in (("logits", logits), ("value estimates", values)):
        spoiled = int((~torch.isfinite(outputs.reshape(rows, -1))).any(-1).sum())
        if spoiled:
            return f"gives {name} that are not finite (NaN or infinity) on {spoiled} of {rows} valid observations"
    # As the agents play it: illegal moves at -inf, a softmax over the rest.
    legal = torch.from_numpy(masks.copy())
    probabilities = torch.softmax(logits.masked_fill(~legal, float("-inf")), dim=-1)
    spoiled = int((~torch.isfinite(probabilities).all(-1) | ((probabilities.sum(-1) - 1).abs() > 1e-4)).sum())
    if spoiled:
        return (
            f"gives probabilities over the legal moves that are not a distribution (not finite, or not summing "
            f"to 1) on {spoiled} of {rows} valid observations"
        )
    return None
