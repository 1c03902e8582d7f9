"""The measuring steps of scripts/gpu_check.sh, one per subcommand, each run in its own
process by the shell script (with its own timeout). Results go to ``<out>/results.jsonl``,
one JSON object per line; ``table`` prints them as one table.

    python scripts/gpu_check.py env --device cuda --sizes 4096 65536 --out DIR
    python scripts/gpu_check.py pgx --sizes 4096 65536 --out DIR
    python scripts/gpu_check.py training --run-dir DIR/runs/gpu_check --out DIR
    python scripts/gpu_check.py table --out DIR
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

#: The parts of a self-play update that metrics.csv times (``{part}_s``, trainer.py's Stopwatch).
PARTS = ("env", "forward", "bots", "update", "bookkeeping")


def _record(out: Path, **row: Any) -> None:
    with (out / "results.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def _steps_for(batch: int, steps: int) -> int:
    return max(1, steps) * batch


def bench_env(args: argparse.Namespace) -> None:
    """Turns per wall-second of the batched env at each size: observations into a buffer
    and masks only, actions drawn inside the step (as pgx's benchmark does) and, with
    observations, by torch in the Python loop (as a policy acts)."""
    from loveletter_env.bench import bench_batched

    kinds = (("buffer", "step"), ("none", "step"), ("buffer", "loop"))
    for batch in args.sizes:
        for observations, sampling in kinds:
            start = time.perf_counter()
            rates = [
                bench_batched(
                    2, _steps_for(batch, args.steps), batch, args.device, seed, "round", observations, sampling
                )
                for seed in range(args.repeats)
            ]
            _record(
                args.out,
                what="env",
                device=args.device,
                games=batch,
                observations=observations != "none",
                sampling=sampling,
                turns_per_s=statistics.median(r.wall for r in rates),
                seconds=round(time.perf_counter() - start, 1),
            )


def bench_pgx(args: argparse.Namespace) -> None:
    """pgx's leduc_holdem under the same protocol (JAX on its default backend)."""
    import jax

    from loveletter_env.bench import bench_pgx as run

    for batch in args.sizes:
        start = time.perf_counter()
        rates = [run(_steps_for(batch, args.steps), batch, seed) for seed in range(args.repeats)]
        _record(
            args.out,
            what="pgx",
            device=jax.default_backend(),
            games=batch,
            turns_per_s=statistics.median(r.wall for r in rates),
            seconds=round(time.perf_counter() - start, 1),
        )


def training(args: argparse.Namespace) -> None:
    """Turns per second and the share of time in each part, from a run's metrics.csv (the
    first update, which compiles and warms up, left out when there are others)."""
    with (args.run_dir / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{args.run_dir}/metrics.csv has no updates")
    measured = rows[1:] if len(rows) > 1 else rows
    # Runs from before bookkeeping_s was written have no such column: it counts as 0 there.
    seconds = {p: sum(float(r.get(f"{p}_s") or 0) for r in measured) for p in PARTS}
    first_step = int(rows[0]["global_step"]) if len(rows) > 1 else 0
    first_elapsed = float(rows[0]["elapsed_s"]) if len(rows) > 1 else 0.0
    elapsed = float(rows[-1]["elapsed_s"]) - first_elapsed
    turns = int(rows[-1]["global_step"]) - first_step
    _record(
        args.out,
        what="training",
        updates=len(rows),
        turns=int(rows[-1]["global_step"]),
        turns_per_s=turns / elapsed if elapsed > 0 else float("nan"),
        **{f"share_{p}": seconds[p] / elapsed if elapsed > 0 else float("nan") for p in PARTS},
    )


def table(args: argparse.Namespace) -> None:
    rows = []
    path = args.out / "results.jsonl"
    if path.exists():
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    name = "no GPU"
    try:
        import torch

        if torch.cuda.is_available():
            name = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    print(f"\n== GPU check on {name} ==")
    print(f"{'what':<44} {'games':>8} {'turns/s':>14}")
    for r in rows:
        if r["what"] == "env":
            obs = "obs+masks" if r["observations"] else "masks only"
            label = f"loveletter {r['device']} ({obs}, actions in {r['sampling']})"
            print(f"{label:<44} {r['games']:>8,} {r['turns_per_s']:>14,.0f}")
        elif r["what"] == "pgx":
            print(f"{'pgx leduc_holdem (' + r['device'] + ')':<44} {r['games']:>8,} {r['turns_per_s']:>14,.0f}")
    for r in rows:
        if r["what"] == "training":
            shares = ", ".join(f"{p} {r['share_' + p]:.0%}" for p in PARTS if f"share_{p}" in r)
            print(f"self-play: {r['turns_per_s']:,.0f} turns/s over {r['updates']} updates; time: {shares}")
    steps = args.out / "steps.txt"
    if steps.exists():
        print("steps (exit status, seconds):")
        print(steps.read_text().rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("env", "pgx"):
        p = sub.add_parser(name)
        p.add_argument("--sizes", type=int, nargs="+", required=True)
        p.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
        p.add_argument("--repeats", type=int, default=3)
        if name == "env":
            p.add_argument("--device", default="cuda")
    sub.add_parser("training").add_argument("--run-dir", type=Path, required=True)
    sub.add_parser("table")
    for p in sub.choices.values():
        p.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    {"env": bench_env, "pgx": bench_pgx, "training": training, "table": table}[args.command](args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    sys.exit(main())
