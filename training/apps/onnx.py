"""Export a trained policy to ONNX, and run the exported file as an agent.

    pip install -e ".[onnx]"
    python -m training.export --checkpoint checkpoints/run/best.pt --onnx policy.onnx

The ONNX graph takes a batch of observations and legal-action masks and returns the
greedy legal action, the masked logits and the value estimate:

========================  ===================  =======================================
name                      type / shape         meaning
========================  ===================  =======================================
input ``observation``     float32 [B, 1382]    the env's observation vectors (version 2)
input ``action_mask``     int8 [B, 41]         the env's masks (1 = legal)
output ``action``         int64 [B]            most likely legal action
output ``logits``         float32 [B, 41]      logits, illegal ones at the lowest float
output ``value``          float32 [B]          the critic's estimate of the return
========================  ===================  =======================================

so a game server needs only onnxruntime and numpy. The file also says how the exported
network plays, in its metadata (``loveletter.play``: ``"sampling"`` or ``"greedy"``, read by
``onnxruntime.InferenceSession(path).get_modelmeta().custom_metadata_map``): as the
checkpoint records (its run's ``eval.greedy``), unless the CLI's ``--greedy`` or ``--sampled``
says otherwise. A sampling player draws from the softmax of ``logits``; a greedy one plays
``action``. :class:`OnnxAgent` plays as the file says. The graph always takes the current
observation (``OBSERVATION_SIZE`` entries), whatever layout the network was trained on: a
network of observation version 1 reads the first 646 entries inside the graph, so a
server feeds every exported policy the same vectors. The CLI writes the file under a
temporary name and checks it with onnxruntime against torch on observations from seeded
random games before renaming it into place: a file that disagrees never lands at ``--onnx``,
nor replaces one already there.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents.base import action_mask_of
from loveletter_env.atomic_files import replacing
from loveletter_env.observation import OBSERVATION_SIZE, check_observation_size
from loveletter_env.validation import check_new_file, check_seed
from loveletter_env.wrappers._extras import MissingExtraError, require
from training.learn.checkpoint import (
    CheckpointError,
    build_model,
    load_checkpoint,
    plays_greedily,
    resolve_checkpoint_path,
)
from training.learn.policy_agent import checked_batch
from training.learn.ppo import masked_logits

#: The exporter's op registry reports at its first use, through this logger, that each of
#: torchvision's four ops (nms, roi_align, roi_pool, deform_conv2d) is skipped when
#: torchvision is absent. This network uses none of them, so those lines are only noise.
_REGISTRY_LOGGER = "torch.onnx._internal.exporter._registration"
INPUT_NAMES = ("observation", "action_mask")
OUTPUT_NAMES = ("action", "logits", "value")
#: The metadata key that says how the exported network plays, and its two values.
PLAY_KEY = "loveletter.play"
PLAY_MODES = {True: "greedy", False: "sampling"}
#: Largest |torch - onnxruntime| accepted on logits and values by :func:`verify_onnx`.
VERIFY_TOLERANCE = 1e-4


class GreedyPolicy(nn.Module):
    """The graph that is exported: network, mask and greedy choice in one forward.

    Args:
        model: any module with ``forward(obs) -> (logits [B, 41], value [B])``, such as
            :class:`training.learn.ppo.ActorCritic`.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        logits, value = self.model(observation)
        logits = masked_logits(logits, action_mask.bool())
        return logits.argmax(-1), logits, value


class _DropTorchvisionNotices(logging.Filter):
    """Drops the exporter's "torchvision is not installed" records and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("torchvision is not installed")


@contextlib.contextmanager
def _quiet_registry() -> Iterator[None]:
    logger = logging.getLogger(_REGISTRY_LOGGER)
    notice_filter = _DropTorchvisionNotices()
    logger.addFilter(notice_filter)
    try:
        yield
    finally:
        logger.removeFilter(notice_filter)


def export_onnx(model: nn.Module, path: str | Path, greedy: bool = False) -> Path:
    """Write ``model`` (``forward(obs) -> (logits, value)``) as an ONNX policy at ``path``.

    The batch dimension is dynamic. The file's metadata says how the network plays
    (:data:`PLAY_KEY`): sampling its policy, or its most likely action when ``greedy`` is
    true, an explicit choice. Needs the ``onnx`` extra (the torch exporter uses
    ``onnxscript``).
    """
    if not isinstance(greedy, bool):
        raise ValueError(f"greedy must be True or False, got {greedy!r}")
    require("onnxscript", "onnx")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    policy = GreedyPolicy(model).eval()
    example = (torch.zeros(2, OBSERVATION_SIZE), torch.ones(2, NUM_ACTIONS, dtype=torch.int8))
    with warnings.catch_warnings(), _quiet_registry():
        # The exporter warns about its own internals (pytree deprecations, naming one
        # dynamic axis shared by both inputs): nothing a user of this function can act on.
        warnings.filterwarnings("ignore", category=FutureWarning, module="copyreg")
        warnings.filterwarnings("ignore", message="# The axis name")
        program = torch.onnx.export(
            policy,
            example,
            input_names=list(INPUT_NAMES),
            output_names=list(OUTPUT_NAMES),
            dynamic_shapes={"observation": {0: "batch"}, "action_mask": {0: "batch"}},
            dynamo=True,
            verbose=False,
        )
    if program is None:  # torch returns None only for the TorchScript exporter, not dynamo=True
        raise RuntimeError("torch.onnx.export returned no ONNX program")
    program.model.metadata_props[PLAY_KEY] = PLAY_MODES[greedy]
    with replacing(path) as partial:  # a failed save leaves whatever was at ``path`` as it was
        program.save(str(partial))
    return path


class OnnxAgent:
    """An exported policy as an agent: ``act(observation_dict) -> int``.

    Args:
        path: an ONNX file written by :func:`export_onnx`.
        greedy: ``True`` plays the most likely legal action, ``False`` samples the masked
            policy, ``None`` (the default) plays as the file's metadata says
            (:data:`PLAY_KEY`); a file without it, from before the key was written, greedily,
            as every export then played. The ``greedy`` attribute says which it does.
        seed: seeds the agent's own generator (used only when sampling).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: a ``greedy`` that is not ``None``, ``True`` or ``False``, a bad seed, a
            folder, a file onnxruntime cannot read, or one whose inputs, outputs (names, types,
            shapes) or play metadata are not an exported policy's; the message names the file.
    """

    def __init__(self, path: str | Path, greedy: bool | None = None, seed: int = 0):
        ort = require("onnxruntime", "onnx")
        if greedy is not None and not isinstance(greedy, bool):
            raise ValueError(f"greedy must be True, False or None (the file's own way), got {greedy!r}")
        self.rng = np.random.default_rng(check_seed(seed))
        if Path(path).is_dir():
            raise ValueError(f"ONNX policy {str(path)!r} is a folder, not an ONNX file")
        if not Path(path).is_file():
            raise FileNotFoundError(f"ONNX policy {str(path)!r} does not exist")
        try:
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own types (InvalidProtobuf, Fail...), none a ValueError
            raise ValueError(
                f"{str(path)!r} is not an ONNX policy: onnxruntime cannot read it (corrupt, truncated, or another "
                f"kind of file): {str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__}"
            ) from None
        problem = _interface_problem(self.session)
        if problem is not None:
            raise ValueError(f"{str(path)!r} is not an exported Love Letter policy: {problem}")
        self.greedy = recorded_greedy(self.session, path) if greedy is None else greedy

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode (the network keeps no memory); with ``seed``, reseed sampling."""
        if seed is not None:
            self.rng = np.random.default_rng(check_seed(seed))

    def run(self, observation: np.ndarray, action_mask: np.ndarray) -> dict[str, np.ndarray]:
        """Outputs ``action``, ``logits`` and ``value`` for a batch ``[B, OBSERVATION_SIZE]`` / ``[B, 41]``.

        An observation of another layout raises ``ValueError`` naming both layouts; one that is not
        finite (NaN or infinity), masks of another shape or of values other than 0 and 1, and a row
        whose mask has no legal action a ``ValueError`` too, as the torch agent's batch does.
        """
        check_observation_size(np.shape(observation)[-1])
        # The torch agent's own checks: a NaN makes every logit NaN and a row without a legal
        # action every logit the lowest float, and the graph's argmax then answers action 0,
        # legal or not; masks of another shape fail in onnxruntime's words.
        vectors, legal = checked_batch(observation, action_mask)
        feeds = {
            "observation": np.ascontiguousarray(vectors),
            "action_mask": np.ascontiguousarray(legal, dtype=np.int8),
        }
        return dict(zip(OUTPUT_NAMES, self.session.run(list(OUTPUT_NAMES), feeds), strict=True))

    def act(self, observation: Mapping[str, Any]) -> int:
        mask = action_mask_of(observation)  # a mask of another length or values is refused, as every agent does
        out = self.run(np.asarray(observation["observation"])[None], mask[None])
        if self.greedy:
            return int(out["action"][0])
        legal = np.flatnonzero(mask)
        scores = out["logits"][0, legal].astype(np.float64)
        probabilities = np.exp(scores - scores.max())
        return int(self.rng.choice(legal, p=probabilities / probabilities.sum()))


#: What :func:`export_onnx` writes: each input's and output's element type and shape after the
#: batch axis (the batch axis is dynamic, named by the exporter).
_INTERFACE = {
    "observation": ("tensor(float)", [OBSERVATION_SIZE]),
    "action_mask": ("tensor(int8)", [NUM_ACTIONS]),
    "action": ("tensor(int64)", []),
    "logits": ("tensor(float)", [NUM_ACTIONS]),
    "value": ("tensor(float)", []),
}


def _interface_problem(session: Any) -> str | None:
    """What in ``session``'s inputs and outputs differs from an exported policy's (names, types
    and shapes: a graph of another observation layout, or outputs of another meaning, would fail
    only at its first move, in onnxruntime's words), or ``None``."""
    for kind, expected, found in (
        ("inputs", INPUT_NAMES, session.get_inputs()),
        ("outputs", OUTPUT_NAMES, session.get_outputs()),
    ):
        names = tuple(entry.name for entry in found)
        if names != expected:
            return f"its {kind} are {names}, where an exported policy's are {expected}"
        for entry in found:
            dtype, shape = _INTERFACE[entry.name]
            if entry.type != dtype or len(entry.shape) != 1 + len(shape) or list(entry.shape[1:]) != shape:
                return (
                    f"its {entry.name} is a {entry.type} of shape {entry.shape}, where an exported policy's is a "
                    f"{dtype} of shape {['batch', *shape]}"
                )
    return None


def recorded_greedy(session: Any, path: str | Path = "the file") -> bool:
    """How an exported policy plays by its metadata (:data:`PLAY_KEY`): ``True`` greedily;
    greedily too for a file without the key, written before it was.

    Raises:
        ValueError: the key holds neither ``"greedy"`` nor ``"sampling"``.
    """
    mode = session.get_modelmeta().custom_metadata_map.get(PLAY_KEY)
    if mode is None:
        return True
    for greedy, name in PLAY_MODES.items():
        if mode == name:
            return greedy
    raise ValueError(f"{str(path)!r} has {PLAY_KEY}={mode!r}, not one of {sorted(PLAY_MODES.values())}")


def sample_observations(count: int, seed: int = 0, num_players: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (observation, mask) pairs of the player to act in seeded random games."""
    from loveletter_env import env as make_env

    if count == 0:
        return np.zeros((0, OBSERVATION_SIZE), np.float32), np.zeros((0, NUM_ACTIONS), np.int8)
    rng = np.random.default_rng(seed)
    game = make_env(num_players=num_players, episode="game")
    game.reset(seed=seed)
    observations: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    while len(observations) < count:
        if any(game.terminations.values()):
            game.reset(seed=int(rng.integers(2**31)))
            continue
        obs = game.observe(game.agent_selection)
        observations.append(obs["observation"])
        masks.append(obs["action_mask"])
        game.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return np.stack(observations), np.stack(masks)


def verify_onnx(model: nn.Module, onnx_path: str | Path, count: int = 256, seed: int = 0) -> dict[str, float]:
    """Compare onnxruntime with torch on ``count`` observations from random 2-, 3- and
    4-player games.

    Returns the fraction of identical actions, the number of clear mismatches (onnxruntime
    picked an action whose torch logit is below the best by more than
    :data:`VERIFY_TOLERANCE`), and the largest logit and value gaps (over legal actions;
    illegal logits are the same lowest float in both).
    """
    # Every table size: seat padding differs between 2, 3 and 4 players.
    parts = [sample_observations(count // 3 + (i < count % 3), seed + i, n) for i, n in enumerate((2, 3, 4))]
    observations = np.concatenate([obs for obs, _ in parts])
    masks = np.concatenate([mask for _, mask in parts])
    onnx_out = OnnxAgent(onnx_path).run(observations, masks)
    with torch.no_grad():
        action, logits, value = GreedyPolicy(model).eval()(torch.from_numpy(observations), torch.from_numpy(masks))
    legal = masks.astype(bool)
    logits = logits.numpy()
    # Two runtimes may break a near-tie differently; only a clearly worse pick is a mismatch.
    picked = np.take_along_axis(logits, onnx_out["action"][:, None], axis=1)[:, 0]
    return {
        "action_agreement": float((onnx_out["action"] == action.numpy()).mean()),
        "clear_mismatches": int((picked < logits.max(axis=1) - VERIFY_TOLERANCE).sum()),
        "max_logit_gap": float(np.abs(onnx_out["logits"] - logits)[legal].max()),
        "max_value_gap": float(np.abs(onnx_out["value"] - value.numpy()).max()),
    }


def main(argv: Sequence[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(
        prog="python -m training.export",
        description="Export a Love Letter PPO checkpoint to an ONNX policy that plays as the checkpoint records "
        "(its run's eval.greedy), unless --greedy or --sampled says otherwise; the file's metadata says which.",
    )
    parser.add_argument("--checkpoint", required=True, help="checkpoint file (.pt) or run folder")
    parser.add_argument("--onnx", required=True, help="where to write the ONNX file (a new file, unless --force)")
    parser.add_argument("--force", action="store_true", help="replace an existing --onnx file")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--greedy", action="store_true", help="the exported network plays its most likely action")
    mode.add_argument("--sampled", action="store_true", help="the exported network samples its policy")
    parser.add_argument("--no-verify", action="store_true", help="skip the onnxruntime-vs-torch check")
    parser.add_argument("--verify-samples", type=int, default=512, help="observations used by the check")
    args = parser.parse_args(argv)
    if args.verify_samples <= 0:
        parser.error("--verify-samples must be positive")
    try:
        require("onnxscript", "onnx")
        if not args.no_verify:
            require("onnxruntime", "onnx")
    except MissingExtraError as err:
        parser.error(str(err))
    try:
        source = resolve_checkpoint_path(args.checkpoint)  # a run folder: its result.pt, best.pt or latest.pt
    except CheckpointError as err:
        parser.error(str(err))
    # The file a run folder resolves to, not the folder: --onnx RUN/best.pt --force would replace it.
    if Path(args.onnx).resolve() == Path(source).resolve():
        parser.error(f"--onnx {args.onnx!r} is the checkpoint being exported: write the ONNX file elsewhere")
    try:
        check_new_file("--onnx", args.onnx, replace=args.force)
    except ValueError as err:
        parser.error(str(err))
    try:
        checkpoint = load_checkpoint(source)
        model = build_model(checkpoint)
    except CheckpointError as err:
        parser.error(str(err))
    greedy = True if args.greedy else False if args.sampled else plays_greedily(checkpoint)
    how = "--greedy" if args.greedy else "--sampled" if args.sampled else "as the checkpoint records"
    path = Path(args.onnx)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written and checked under a temporary name, renamed into place only when it passes: an export
    # that disagrees with torch neither lands at --onnx nor replaces an earlier file there.
    with replacing(path) as partial:
        export_onnx(model, partial, greedy=greedy)
        size = partial.stat().st_size
        if not args.no_verify:
            report = verify_onnx(model, partial, count=args.verify_samples)
            checked = (
                f"onnxruntime vs torch on {args.verify_samples} observations: "
                f"{report['action_agreement']:.1%} same actions, max logit gap {report['max_logit_gap']:.2e}, "
                f"max value gap {report['max_value_gap']:.2e}"
            )
            gap = max(report["max_logit_gap"], report["max_value_gap"])
            if report["clear_mismatches"] or gap > VERIFY_TOLERANCE:
                kept = "left as it was" if path.exists() else "not written"
                raise SystemExit(
                    f"{checked}\nthe exported policy disagrees with torch, so {str(path)!r} is {kept}; please "
                    "report this with the checkpoint"
                )
    plays = "plays greedily" if greedy else "samples its policy"
    print(f"wrote {path} ({size / 1024:.0f} KiB) from {source}; it {plays} ({how})")
    if not args.no_verify:
        print(checked)
    return path


if __name__ == "__main__":
    main()
