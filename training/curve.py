"""Exact exploitability against training time: ``python -m training.curve RUN_DIR... --rules RUNG``.

For each training run folder (as :mod:`training.selfplay` writes it), every numbered
snapshot (``snapshots/update_<n>.pt``) gets its exact exploitability on a ladder rung
(:func:`training.best_response.exact_exploitability`, on one tree built once for all of
them). The snapshot's training wall time and CPU time come from the run's ``metrics.csv``
row of the same update. The figures go to ``RUN_DIR/exploitability.csv`` (computed once:
a later call reuses them and computes only new snapshots), and one plot of every run's
exploitability against wall time goes to ``--out``.

The network is evaluated as a sampling agent by default (the masked softmax at every
information set): a network that plays its most likely action is a pure strategy, and
pure strategies are not equilibria of a game with hidden cards. Each figure is the one
``python -m training.exploit SNAPSHOT --exact --sampled --rules RUNG`` prints. ``--greedy``
measures the greedy agent instead, as ``python -m training.exploit SNAPSHOT --exact`` does.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: Snapshot files of a run folder, numbered by update.
SNAPSHOT = re.compile(r"update_(\d+)\.pt")
#: What ``RUN_DIR/exploitability.csv`` holds, one row per snapshot.
COLUMNS = ("update", "global_step", "elapsed_s", "cpu_s", "exploitability", "greedy")


@dataclass
class CurvePoint:
    """One snapshot's exact exploitability and when training saved it."""

    update: int
    global_step: int
    elapsed_s: float  # training wall time when the snapshot was saved
    cpu_s: float  # training CPU time (every thread of the process) by then; nan if the run did not log it
    exploitability: float
    greedy: bool


def snapshots(run_dir: Path) -> list[tuple[int, Path]]:
    """The run's numbered snapshots, ``(update, path)``, in update order."""
    folder = run_dir / "snapshots"
    if not folder.is_dir():
        raise FileNotFoundError(f"{str(run_dir)!r} is not a training run folder (it has no snapshots/ folder)")
    found = [(int(m.group(1)), path) for path in folder.iterdir() if (m := SNAPSHOT.fullmatch(path.name))]
    return sorted(found)


def training_times(run_dir: Path) -> dict[int, tuple[int, float, float]]:
    """``update -> (global_step, elapsed_s, cpu_s)`` from the run's ``metrics.csv``."""
    path = run_dir / "metrics.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{str(run_dir)!r} has no metrics.csv to time its snapshots with")
    times = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            cpu = row.get("cpu_s") or "nan"
            times[int(row["update"])] = (int(row["global_step"]), float(row["elapsed_s"]), float(cpu))
    return times


def _read_cache(path: Path) -> list[CurvePoint]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        points = [
            CurvePoint(
                int(r["update"]),
                int(r["global_step"]),
                float(r["elapsed_s"]),
                float(r["cpu_s"]),
                float(r["exploitability"]),
                r["greedy"] == "True",
            )
            for r in csv.DictReader(f)
        ]
    return points


def _write_cache(path: Path, points: Sequence[CurvePoint]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(asdict(p) for p in points)


def run_curve(run_dir: str | Path, tree: Any, greedy: bool = False, progress: bool = True) -> list[CurvePoint]:
    """Exact exploitability of every snapshot of ``run_dir`` on ``tree``'s rung (cached in
    ``run_dir/exploitability.csv``), in update order."""
    from tqdm import tqdm

    from .best_response import exact_exploitability
    from .checkpoint import build_model, load_checkpoint
    from .ppo import PolicyAgent

    run_dir = Path(run_dir)
    times = training_times(run_dir)
    cache_path = run_dir / "exploitability.csv"
    cached = _read_cache(cache_path)
    other_mode = [p for p in cached if p.greedy != greedy]  # kept in the file, not in this curve
    known = {p.update: p for p in cached if p.greedy == greedy}
    todo = [(u, p) for u, p in snapshots(run_dir) if u not in known]
    bar = tqdm(todo, desc=f"{run_dir.name}: snapshots", unit="snapshot", disable=not progress, dynamic_ncols=True)
    for update, path in bar:
        if update not in times:
            raise ValueError(f"{str(path)!r}: metrics.csv has no row for update {update}")
        agent = PolicyAgent(build_model(load_checkpoint(path)), greedy=greedy)
        report = exact_exploitability(agent, tree.rules, tree=tree)
        step, elapsed, cpu = times[update]
        known[update] = CurvePoint(update, step, elapsed, cpu, float(report["exploitability"]), greedy)
        bar.set_postfix(exploitability=f"{report['exploitability']:.4f}")
        # Written after every snapshot, so an interrupted call keeps what it computed.
        _write_cache(cache_path, [*other_mode, *(known[u] for u in sorted(known))])
    return [known[u] for u in sorted(known)]


def plot_curves(
    curves: dict[str, list[CurvePoint]], out: str | Path, rules: str, target: float | None, minutes: float | None
) -> Path:
    """One PNG: each run's exploitability (log scale) against training wall time (left) and
    turns played (right: what the runs' share of a loaded machine does not change)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_time, by_turns) = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for label, points in curves.items():
        values = [p.exploitability for p in points]
        by_time.plot([p.elapsed_s / 60 for p in points], values, marker=".", label=label)
        by_turns.plot([p.global_step / 1e6 for p in points], values, marker=".", label=label)
    for ax in (by_time, by_turns):
        if target is not None:
            ax.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target:g}")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.yaxis.set_tick_params(labelleft=True)
    if minutes is not None:
        by_time.axvline(minutes, color="grey", linestyle=":", linewidth=1)
    by_time.set_xlabel("training wall time (minutes)")
    by_turns.set_xlabel("turns played (millions)")
    by_time.set_ylabel("exact exploitability (0: equilibrium)")
    fig.suptitle(f"{rules}: exact exploitability of the sampling policy during training")
    handles, labels = by_time.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.curve",
        description="Exact exploitability of every snapshot of training runs on a ladder rung, plotted "
        "against training wall time.",
        epilog="Example: python -m training.curve checkpoints/mini8_mmd checkpoints/mini8_default --rules mini8 "
        "--out docs/assets/mini8_exploitability.png",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="training run folders (with snapshots/)")
    parser.add_argument("--rules", required=True, help="the rung the runs trained on (mini6, mini7, mini8, mini9)")
    parser.add_argument("--labels", help="comma-separated legend labels, one per run (default: the folder names)")
    parser.add_argument("--out", help="PNG to write (default: no plot)")
    parser.add_argument("--greedy", action="store_true", help="measure the greedy agent instead of the sampling one")
    parser.add_argument("--target", type=float, default=0.01, help="draw this exploitability level (default 0.01)")
    parser.add_argument("--minutes", type=float, default=10.0, help="draw this wall time in minutes (default 10)")
    parser.add_argument("--json", action="store_true", help="print only one JSON object on stdout")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run ``python -m training.curve``; return ``{label: [point dicts]}`` (and the plot's path)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    runs = [Path(r) for r in args.runs]
    labels = args.labels.split(",") if args.labels else [r.name for r in runs]
    if len(labels) != len(runs):
        parser.error(f"--labels gives {len(labels)} labels for {len(runs)} runs")
    from loveletter_env.tree import TreeError, build_tree

    from .checkpoint import CheckpointError

    try:
        for run in runs:
            snapshots(run), training_times(run)  # refuse a bad folder before the tree is built
        tree = build_tree(args.rules)
        curves = {
            label: run_curve(run, tree, greedy=args.greedy, progress=not args.no_progress)
            for label, run in zip(labels, runs)
        }
    except (FileNotFoundError, TreeError, CheckpointError, ValueError) as err:
        parser.error(str(err))
    result: dict[str, Any] = {"rules": args.rules, "curves": {k: [asdict(p) for p in v] for k, v in curves.items()}}
    if args.out:
        result["plot"] = str(plot_curves(curves, args.out, args.rules, args.target, args.minutes))
    if args.json:
        print(json.dumps(result))
    else:
        for label, points in curves.items():
            best = min(points, key=lambda p: p.exploitability, default=None)
            last = points[-1] if points else None
            if best is None or last is None:
                print(f"{label}: no snapshots")
                continue
            print(
                f"{label}: {len(points)} snapshots; last {last.exploitability:.4f} at {last.elapsed_s / 60:.1f} min "
                f"wall ({last.cpu_s / 60:.1f} min CPU); lowest {best.exploitability:.4f} at "
                f"{best.elapsed_s / 60:.1f} min wall (update {best.update})"
            )
        if args.out:
            print(f"plot: {result['plot']}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
