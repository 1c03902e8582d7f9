"""Checkpoints: save atomically, load safely, turn into agents.

A checkpoint is a plain nested dict of tensors, numbers, strings, lists and dicts, so it
loads with ``torch.load(path, weights_only=True)``: no pickled code ever runs. It holds

- ``format`` / ``format_version``: what the file is (:data:`FORMAT`, :data:`FORMAT_VERSION`);
- ``observation_version``, ``observation_size``, ``num_actions``: the observation and
  action layout the network was trained for (a mismatch is refused on load);
- ``model``: ``{"hidden_sizes": [...], "state_dict": {...}}``;
- ``config``: the training config as a dict; ``global_step`` and ``update``;
- ``training`` (absent in exported agents): optimizer state, generator states and the
  opponent pool, everything ``--resume`` needs;
- ``evaluation``: the latest evaluation results, if any.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE, OBSERVATION_VERSION

from .ppo import ActorCritic, PolicyAgent

FORMAT = "loveletter-ppo"
FORMAT_VERSION = 1
#: Files tried, in order, when a run folder is given instead of a file.
RUN_DIR_FILES = ("best.pt", "latest.pt")


class CheckpointError(ValueError):
    """A file that is missing, corrupt, not a checkpoint of this project, or made for
    another observation/action layout. The message says which."""


def format_header() -> dict[str, Any]:
    """The identifying fields every checkpoint starts with."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "observation_version": OBSERVATION_VERSION,
        "observation_size": OBSERVATION_SIZE,
        "num_actions": NUM_ACTIONS,
    }


def model_payload(model: ActorCritic) -> dict[str, Any]:
    """The ``model`` entry: architecture and weights (moved to CPU so any device loads them)."""
    return {
        "hidden_sizes": list(model.hidden_sizes),
        "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
    }


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (header added) to ``path`` atomically: a crash mid-write never
    leaves a truncated file where a good one was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**format_header(), **payload}
    # A sibling temporary file (same filesystem, so the rename is atomic; plain open() so
    # the file gets the usual permissions rather than mkstemp's owner-only ones).
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            torch.save(data, f)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def resolve_checkpoint_path(path: str | Path) -> Path:
    """``path`` itself if it is a file; for a run folder, its ``best.pt`` or else ``latest.pt``."""
    path = Path(path)
    if path.is_dir():
        for name in RUN_DIR_FILES:
            if (path / name).is_file():
                return path / name
        raise CheckpointError(f"run folder {str(path)!r} holds none of {list(RUN_DIR_FILES)}")
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load and check a checkpoint (a file, or a run folder: see :func:`resolve_checkpoint_path`).

    Raises :class:`CheckpointError` if the file is unreadable, not a checkpoint of this
    project, or was trained for a different observation or action layout.
    """
    path = resolve_checkpoint_path(path)
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises many types for a bad file: unpickling, zip, EOF...
        raise CheckpointError(
            f"{str(path)!r} is not a readable checkpoint (corrupt, truncated, or not a torch file): "
            f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{str(path)!r} is a torch file but not a {FORMAT} checkpoint")
    if data.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{str(path)!r} has checkpoint format version {data.get('format_version')!r}; "
            f"this code reads version {FORMAT_VERSION}"
        )
    expected = format_header()
    for key in ("observation_version", "observation_size", "num_actions"):
        if data.get(key) != expected[key]:
            raise CheckpointError(
                f"{str(path)!r} was trained for {key}={data.get(key)!r}, but this environment has "
                f"{key}={expected[key]!r}: retrain, or use the package version it was made with"
            )
    model = data.get("model")
    if not isinstance(model, dict) or "state_dict" not in model or "hidden_sizes" not in model:
        raise CheckpointError(f"{str(path)!r} has no model weights")
    sizes, weights = model["hidden_sizes"], model["state_dict"]
    if not isinstance(sizes, (list, tuple)) or not sizes or not all(
        isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in sizes
    ):
        raise CheckpointError(f"{str(path)!r} has a malformed network description: hidden_sizes={sizes!r}")
    if not isinstance(weights, dict) or not all(isinstance(w, torch.Tensor) for w in weights.values()):
        raise CheckpointError(f"{str(path)!r} has malformed model weights (expected a dict of tensors)")
    return data


def build_model(checkpoint: dict[str, Any], device: str | torch.device = "cpu") -> ActorCritic:
    """The :class:`ActorCritic` stored in a loaded checkpoint."""
    spec = checkpoint["model"]
    model = ActorCritic(hidden_sizes=spec["hidden_sizes"])
    try:
        model.load_state_dict(spec["state_dict"])
    except RuntimeError as err:
        raise CheckpointError(f"the checkpoint's weights do not fit its network: {err}") from None
    return model.to(device)


def load_agent(
    path: str | Path, greedy: bool = True, seed: int = 0, device: str | torch.device = "cpu"
) -> PolicyAgent:
    """An agent with ``act(observation_dict) -> int`` from a checkpoint file or run folder.

    Args:
        path: a ``.pt`` checkpoint, or a run folder (its ``best.pt``, else ``latest.pt``).
        greedy: play the most likely legal action (default) instead of sampling.
        seed: seed of the agent's sampling generator.
        device: where the network runs.

    Example::

        agent = load_agent("checkpoints/shipped/ppo_2p.pt")
        action = agent.act(env.observe(env.agent_selection))
    """
    checkpoint = load_checkpoint(path, map_location=device)
    return PolicyAgent(build_model(checkpoint, device), greedy=greedy, seed=seed, device=device)


def export_agent(src: str | Path, dst: str | Path) -> Path:
    """Copy a checkpoint without its training state (optimizer, generators, opponent
    pool): the small file to ship or share. Resuming needs the full file."""
    data = load_checkpoint(src)
    data.pop("training", None)
    for key in format_header():
        data.pop(key)
    return save_checkpoint(dst, data)
