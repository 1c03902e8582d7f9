"""Fork a stopped training run into a second continuation, and average networks' weights.

A research tool for one question: is what a run's final network still lacks the noise of its
sampled updates, which another continuation would average away, or something both
continuations share? ``fork`` copies a run stopped part way (Ctrl-C or SIGTERM save its
``latest.pt``) into a new run folder whose games, seatings and action draws come from another
seed, with the same weights, optimizer, magnet, opponent pool and step count; ``python -m
training.selfplay --resume FORK`` then trains it on. ``average`` writes the mean of several
networks' weights as one weights-only checkpoint, which ``training.exploit`` measures like any
other.

    python scripts/fork_run.py fork checkpoints/trunk checkpoints/trunk_fork --seed 1000 [--torch-threads 1]
    python -m training.selfplay --resume checkpoints/trunk_fork
    python scripts/fork_run.py average mean.pt checkpoints/trunk/result.pt checkpoints/trunk_fork/result.pt

Weights are averaged only where the networks share their start: two runs from different
seeds start from different weights, and the mean of their weights plays nothing like either.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loveletter_env.atomic_files import temporary_beside  # noqa: E402
from loveletter_env.validation import check_new_file, check_seed  # noqa: E402
from training.learn.checkpoint import (  # noqa: E402
    CheckpointError,
    check_not_training_state,
    load_checkpoint,
    resolve_checkpoint_path,
    save_checkpoint,
)
from training.learn.config import MAX_TORCH_THREADS, load_config, save_config  # noqa: E402
from training.learn.runtime import claim_run_folder, derive_seed  # noqa: E402


def fork(run: Path, fork_dir: Path, seed: int, torch_threads: int | None = None) -> int:
    """Copy the stopped run ``run`` into ``fork_dir`` with ``seed`` as its seed (and
    ``torch_threads``, if given: where it runs, not what it trains); the update it forks at.

    The copy's generators start where a run of ``seed`` resumed at that update would start
    them, and its env's deals follow ``seed`` (they are seeded by the seed and the update), so
    the two continuations share everything up to the fork and no draw after it.
    """
    check_seed(seed)  # as the config checks it: a fork of a seed no run takes could not be resumed
    if not (run / "latest.pt").is_file():
        raise ValueError(f"{str(run)!r} is not a run folder: it has no latest.pt")
    if fork_dir.exists():
        raise ValueError(f"{str(fork_dir)!r} already exists: a fork goes into a new folder")
    with claim_run_folder(run, resume=True):  # refused, naming the process, while the run still trains
        checkpoint = load_checkpoint(run / "latest.pt")
        config = load_config(run / "config.yaml")
        # The trunk's rows, so that the fork's metrics and curve start at the beginning.
        metrics = (run / "metrics.csv").read_bytes() if (run / "metrics.csv").is_file() else None
    if "training" not in checkpoint:
        raise CheckpointError(f"{str(run / 'latest.pt')!r} holds no training state to continue from")
    if checkpoint["config"]["seed"] == seed:
        raise ValueError(f"--seed {seed} is the run's own seed: the fork would replay the run")
    update = int(checkpoint["update"])
    machine = {} if torch_threads is None else {"torch_threads": torch_threads}
    config = config.model_copy(update={"seed": seed, "run_name": fork_dir.name, **machine})
    checkpoint["config"].update(seed=seed, run_name=fork_dir.name)
    state = checkpoint["training"]
    state["act_generator"] = torch.Generator().manual_seed(derive_seed(seed, 1, update)).get_state()
    state["update_generator"] = torch.Generator().manual_seed(derive_seed(seed, 2, update)).get_state()
    state["numpy_rng"] = np.random.default_rng(derive_seed(seed, 3, update)).bit_generator.state
    state["act_device"] = "cpu"  # a run resumed on CUDA seeds its own stream from the seed and update
    # Made whole aside, then renamed into place: a failure part way (a full disk, Ctrl-C) leaves
    # no half fork, which could not be resumed and would refuse the next try as already there.
    fork_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = temporary_beside(fork_dir)
    try:
        staging.mkdir()
        save_checkpoint(staging / "latest.pt", checkpoint)
        save_config(config, staging / "config.yaml")
        if metrics is not None:
            (staging / "metrics.csv").write_bytes(metrics)
        staging.rename(fork_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return update


def average(out: Path, paths: list[Path]) -> None:
    """Write the mean of the networks' weights at ``paths`` to ``out`` (weights only)."""
    if len(paths) < 2:
        raise ValueError("average needs at least two checkpoints")
    checkpoints = [load_checkpoint(path) for path in paths]
    first = checkpoints[0]
    for path, checkpoint in zip(paths[1:], checkpoints[1:]):
        for key in ("observation_version", "observation_size", "num_actions"):
            if checkpoint.get(key) != first.get(key):
                raise ValueError(
                    f"{str(path)!r} has {key} {checkpoint.get(key)}, {str(paths[0])!r} has {first.get(key)}"
                )
        if list(checkpoint["model"]["hidden_sizes"]) != list(first["model"]["hidden_sizes"]):
            raise ValueError(
                f"{str(path)!r} has hidden_sizes {checkpoint['model']['hidden_sizes']}, "
                f"{str(paths[0])!r} has {first['model']['hidden_sizes']}"
            )
    weights = [checkpoint["model"]["state_dict"] for checkpoint in checkpoints]
    first["model"]["state_dict"] = {
        name: (sum(w[name].double() for w in weights) / len(weights)).to(tensor.dtype)
        if tensor.is_floating_point()
        else tensor
        for name, tensor in weights[0].items()
    }
    first.pop("training", None)
    save_checkpoint(out, first)


def torch_threads(text: str) -> int:
    threads = int(text)
    if not 0 <= threads <= MAX_TORCH_THREADS:
        raise argparse.ArgumentTypeError(f"must be 0 to {MAX_TORCH_THREADS}, got {text}")
    return threads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fork_parser = commands.add_parser("fork", help="copy a stopped run into a continuation of another seed")
    fork_parser.add_argument("run", type=Path, help="the stopped run's folder")
    fork_parser.add_argument("fork", type=Path, help="the new run folder")
    fork_parser.add_argument("--seed", type=int, required=True, help="the fork's seed (not the run's own)")
    fork_parser.add_argument(
        "--torch-threads",
        type=torch_threads,
        metavar="N",
        help=f"the fork's torch threads, 0 (torch's default) to {MAX_TORCH_THREADS} (default: the run's)",
    )
    average_parser = commands.add_parser("average", help="the mean of several networks' weights")
    average_parser.add_argument("out", type=Path, help="the checkpoint to write")
    average_parser.add_argument("checkpoints", type=Path, nargs="+", help="two or more checkpoints")
    average_parser.add_argument("--force", action="store_true", help="replace an existing out file")
    args = parser.parse_args(argv)
    try:
        if args.command == "fork":
            update = fork(args.run, args.fork, args.seed, args.torch_threads)
            print(f"forked {args.run} at update {update} into {args.fork} (seed {args.seed})")
            print(f"train it on: python -m training.selfplay --resume {args.fork}")
        else:
            # A forgotten out would have put the mean over the first checkpoint named; a run
            # folder named is the file it loads (its result.pt, best.pt or latest.pt).
            if args.out.resolve() in {resolve_checkpoint_path(path).resolve() for path in args.checkpoints}:
                raise ValueError(f"{str(args.out)!r} is one of the checkpoints averaged: name a new file first")
            check_new_file("out", args.out, replace=args.force)
            check_not_training_state("out", args.out)
            average(args.out, args.checkpoints)
            print(f"wrote the mean of {len(args.checkpoints)} networks' weights to {args.out}")
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a fork is staged aside and a checkpoint written whole: nothing is left half-written
        print("fork_run.py: interrupted; nothing was written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
