"""Checkpoints as agents, without depending on the training code.

Loading a checkpoint (as an agent, :func:`load_checkpoint_agent`, or as a bare network for
agents that search with one, :func:`load_checkpoint_network`) goes through loaders
registered with :func:`register_checkpoint_loader`. The ``training`` package registers its
own when it is imported; when a checkpoint meets no registered loader, the package named by
:data:`CHECKPOINT_LOADER_PACKAGE` is imported once (by name) so that it can register.

This module imports no agent, so an agent built on a network (``guided``) can load one
without going round through :mod:`~loveletter_env.agents.specs`, which builds every agent.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    :func:`load_checkpoint_network` reads a checkpoint's network (the last registration wins)."""
    _loaders["agent"] = agent
    if network is not None:
        _loaders["network"] = network


#: What a run folder stands for as an agent, in order of preference: the best evaluation's
#: weights, else the latest.
RUN_DIR_FILES = ("best.pt", "latest.pt")


def checkpoint_file(path: str | os.PathLike[str]) -> Path:
    """The file a checkpoint spec loads: ``path`` itself if it is a file; for a run folder,
    its ``best.pt`` or else ``latest.pt``.

    Raises:
        FileNotFoundError: naming the path, when there is no such file or the folder holds neither.
    """
    path = Path(path)
    if path.is_dir():
        for name in RUN_DIR_FILES:
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"run folder {str(path)!r} holds none of {list(RUN_DIR_FILES)}")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist")
    return path


def is_checkpoint_path(spec: str | os.PathLike[str]) -> bool:
    """Whether a spec that is not a bot name denotes a checkpoint file or run folder.

    ``package.module:factory`` never contains a path separator or a checkpoint suffix.
    """
    if isinstance(spec, os.PathLike):
        return True
    return spec.endswith(CHECKPOINT_SUFFIXES) or "/" in spec or os.sep in spec or os.path.exists(spec)


def _checkpoint_loader(kind: str, path: Path) -> Callable[..., Any]:
    if not path.exists():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist")
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
