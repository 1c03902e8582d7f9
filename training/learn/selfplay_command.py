"""Self-play PPO on the batched engine: ``python -m training.selfplay``.

One network plays every seat. Each episode of each of the ``env.num_games`` parallel
games draws who it plays against (``opponents`` in the config):

- ``current``: every seat is the learning network, and every seat's decisions are trained on;
- ``past``: one seat is the learner, the others a snapshot from a pool of earlier weights
  (so the learner keeps beating what it used to be, instead of chasing its own tail);
- ``bots``: one seat is the learner, the others heuristic bots from
  :mod:`loveletter_env.agents` (they act in Python, one game at a time: keep their share small).

Outputs in ``<out_dir>/<run_name>/``: ``config.yaml``, ``latest.pt``, ``best.pt`` (best
evaluation), ``result.pt`` (the run's answer, which the end message names),
``snapshots/update_<n>.pt`` (and ``mean_<n>.pt``, the running mean, with
``model.average_from``), ``metrics.csv``, ``tb/`` (TensorBoard) and
``learning_curve.png``. ``--resume <run folder>`` continues from ``latest.pt``.

This module is the command line only. The run itself is :class:`training.learn.trainer.SelfPlayTrainer`,
built from :mod:`training.learn.rollout` (rollout storage), :mod:`training.learn.seating` (pool and
seating), :mod:`training.learn.metrics` (CSV, TensorBoard, plot), :mod:`training.learn.runtime` (device,
seeds), :mod:`training.learn.ppo` (the network and the update) and :mod:`training.learn.checkpoint`.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.learn.checkpoint import CheckpointError, load_checkpoint, run_write_failure
from training.learn.compile_notice import announce_kernel_compilation
from training.learn.config import ConfigError, TrainConfig, add_config_options, load_config, text_override
from training.learn.interrupt import exit_interrupted
from training.learn.runtime import holds_run
from training.learn.trainer import MACHINE_KEYS, SelfPlayTrainer

__all__ = ["SelfPlayTrainer", "build_parser", "main", "new_run_overrides"]


def build_parser() -> argparse.ArgumentParser:
    """The command line's options."""
    parser = argparse.ArgumentParser(
        prog="python -m training.selfplay",
        description="Train a Love Letter agent by masked self-play PPO on the batched engine.",
        epilog="Example: python -m training.selfplay --config configs/4p.yaml --set ppo.learning_rate=3e-4",
    )
    add_config_options(
        parser,
        "YAML config file (default: the built-in defaults, as configs/default.yaml); a top-level "
        "'base: OTHER.yaml' makes it a list of changes to that file",
    )
    parser.add_argument("--run-name", help="shorthand for --set run_name=NAME")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), help="shorthand for --set device=...")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its latest.pt")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run ``python -m training.selfplay``; return the trainer's summary. User mistakes exit with a message."""
    parser = build_parser()
    args = parser.parse_args(argv)
    announce_kernel_compilation()
    config, run_dir, trainer = _set_up(parser, args)
    resume = f"python -m training.selfplay --resume {shlex.quote(str(run_dir))}"
    if args.no_progress:
        resume += " --no-progress"
    summary = _train(trainer, run_dir, resume)
    if summary["interrupted"]:
        print(
            f"interrupted: saved update {summary['update']} ({summary['global_step']:,} turns) to "
            f"{run_dir / 'latest.pt'}.\nResume with: {resume}",
            file=sys.stderr,
        )
        exit_interrupted(trainer.stop_signal)
    _report(summary, config, run_dir)
    return summary


def _set_up(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[TrainConfig, Path, SelfPlayTrainer]:
    """The run's config, its folder and its trainer, for a new run or ``--resume``."""
    try:
        config, run_dir = _resumed_run(parser, args) if args.resume else _new_run(parser, args)
        trainer = SelfPlayTrainer(config, run_dir, resume=bool(args.resume), progress=not args.no_progress)
        return config, run_dir, trainer
    except (ConfigError, CheckpointError) as err:
        parser.error(str(err))
    except KeyboardInterrupt:
        print("\ninterrupted before training started; nothing was saved", file=sys.stderr)
        exit_interrupted()


def _resumed_run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[TrainConfig, Path]:
    """``--resume RUN_DIR``: the run's own config.yaml, with a new total_steps or machine keys if given."""
    run_dir = Path(args.resume)
    allowed = ("total_steps", *MACHINE_KEYS)  # how long and where it runs do not change what the run is
    extend = [o for o in args.overrides if o.partition("=")[0].strip() in allowed]
    if args.config or args.run_name is not None or len(extend) != len(args.overrides):
        parser.error(
            "--resume continues a run with its own config.yaml; drop --config/--run-name and every --set "
            "but --set total_steps=N (which extends the run) and the machine's keys "
            f"({', '.join(MACHINE_KEYS)})"
        )
    try:
        is_run = (run_dir / "latest.pt").is_file() and (run_dir / "config.yaml").is_file()
    except OSError as err:  # a path too long for the file system, a folder that may not be searched
        parser.error(f"--resume: {str(run_dir)!r} cannot be looked up ({err.strerror})")
    if not is_run:
        parser.error(f"--resume: {str(run_dir)!r} is not a run folder (needs config.yaml and latest.pt)")
    # The run's config.yaml is rewritten with the new total_steps, so it keeps saying what the run is.
    config = load_config(run_dir / "config.yaml", [*extend, *([f"device={args.device}"] if args.device else [])])
    return config, run_dir


def _new_run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[TrainConfig, Path]:
    """A new run: the config file with the overrides and shorthands, in a folder not holding a run."""
    config = load_config(args.config, new_run_overrides(args))
    run_dir = Path(config.out_dir) / config.run_name
    if holds_run(run_dir):  # said here with the way to continue it; the trainer checks again, owning the folder
        parser.error(
            f"{str(run_dir)!r} already holds a run: pass --resume {shlex.quote(str(run_dir))} or another --run-name"
        )
    late = [stage.at_step for stage in config.schedule if stage.at_step >= config.total_steps]
    if late:
        # Said, not refused: a shortened staged recipe is the first part of the whole one, which
        # --resume --set total_steps=N extends (each stage anneals up to the next one's at_step).
        print(
            f"note: {len(late)} schedule stage(s) start at or after total_steps={config.total_steps:,} "
            f"(at_step {', '.join(f'{step:,}' for step in late)}): this run ends before they begin, "
            "unless --resume --set total_steps=N extends it",
            file=sys.stderr,
        )
    return config, run_dir


def new_run_overrides(args: argparse.Namespace) -> list[str]:
    """A new run's ``--set`` overrides, then its shorthands (``--run-name``, ``--device``) as
    overrides of their own."""
    overrides = list(args.overrides)
    if args.run_name is not None:  # an empty name is refused as run_name, not dropped for "default"
        overrides.append(text_override("run_name", args.run_name))
    if args.device:
        overrides.append(f"device={args.device}")
    return overrides


def _train(trainer: SelfPlayTrainer, run_dir: Path, resume: str) -> dict[str, Any]:
    """Train; a failed write or a second Ctrl-C exits saying what was saved and how to resume."""
    try:
        return trainer.train()
    except OSError as err:
        failure = run_write_failure(err, repr(str(run_dir)))
        if failure is None:
            raise
        kept = f"{run_dir / 'latest.pt'} holds the last update saved; resume with: {resume}"
        print(f"error: {failure}.\n{kept if holds_run(run_dir) else 'Nothing was saved.'}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        # A second Ctrl-C: the update in progress is lost, the last save stands.
        latest = run_dir / "latest.pt"
        if latest.is_file():
            saved = load_checkpoint(latest)
            print(
                f"\nstopped at once: {latest} holds update {saved['update']} ({saved['global_step']:,} turns).\n"
                f"Resume with: {resume}",
                file=sys.stderr,
            )
        else:
            print("\nstopped at once, before the first save: nothing to resume", file=sys.stderr)
        exit_interrupted(trainer.stop_signal)


def _report(summary: dict[str, Any], config: TrainConfig, run_dir: Path) -> None:
    """Print the finished run's figures, its result and how it was chosen, and what to do next."""
    print(
        f"done: {summary['global_step']:,} turns in {summary['update']} updates "
        f"({summary['turns_per_s']:,.0f} turns/s); outputs in {summary['run_dir']}"
    )
    for name, res in summary["evaluation"].items():
        low, high = res["ci95"]
        print(f"  vs {name}: win rate {res['win_rate']:.1%} (95% CI {low:.1%}-{high:.1%}) over {res['rounds']} rounds")
    result = summary["result"]
    figures = result["figures"]
    if figures:
        compared = ", ".join(
            f"{label} {fig['win_rate']:.1%} (95% CI {fig['ci95'][0]:.1%}-{fig['ci95'][1]:.1%})"
            for label, fig in figures.items()
        )
        rounds = next(iter(figures.values()))["rounds"]
        why = f"the better of {compared} over {rounds} more rounds vs {config.eval.best_by}"
        print(f"result: {result['path']} ({result['source']}: {why})")
    else:
        source = "latest.pt: the final weights" if result["source"] == "latest.pt" else result["source"]
        print(f"result: {result['path']} ({source})")
    print(
        f"  use it: python -m training.evaluate {shlex.quote(result['path'])} rule   |   extend the run: "
        f"python -m training.selfplay --resume {shlex.quote(str(run_dir))} --set total_steps=N"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
