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


def _record(out: Path, **row: Any) -> None:
    with (out / "results.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def _steps_for(batch: int, steps: int) -> int:
    return steps * batch


def _variant(text: str) -> Any:
    """A kernel variant from ``THREADS,RECORDS,OBSERVATIONS[,rREGISTERS]`` (e.g.
    ``64,shared,zeroed`` or ``64,global,zeroed,r64``); ``--variants``' argument type."""
    from loveletter_env.core.gpu import KernelVariant

    fields = text.split(",")
    registers = fields.pop() if len(fields) == 4 else None
    if (
        len(fields) != 3
        or not fields[0].isdigit()
        or fields[1] not in ("shared", "global")
        or fields[2] not in ("zeroed", "whole")
        or (registers is not None and not (registers[:1] == "r" and registers[1:].isdigit()))
    ):
        raise argparse.ArgumentTypeError(f"a variant is THREADS,shared|global,zeroed|whole[,rREGISTERS], got {text!r}")
    threads, records, observations = fields
    try:  # the variant's own bounds (threads a multiple of 32, registers a thread), in its words
        return KernelVariant(
            int(threads), records == "shared", observations == "zeroed", int(registers[1:]) if registers else None
        )
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None


def _positive(text: str) -> int:
    """A count of games, steps or repeats: an integer of at least 1 (none would be no measure,
    and a measure of other sizes than asked would be recorded as the sizes asked)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 1, got {text}")
    return value


def _device(text: str) -> str:
    """``cpu`` or a CUDA device (``cuda``, ``cuda:1``): another would fail every measurement,
    each only printed, and the step would exit 0."""
    import torch

    try:
        kind = torch.device(text).type
    except (RuntimeError, ValueError):
        kind = None
    if kind not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"must be cpu or cuda (cuda:N), got {text!r}")
    return text


def _variant_name(variant: Any) -> str:
    records = "shared" if variant.shared_records else "global"
    observations = "zeroed" if variant.zeroed_observations else "whole"
    registers = "" if variant.max_registers is None else f",r{variant.max_registers}"
    return f"{variant.threads_per_block},{records},{observations}{registers}"


def _kernel_attributes(variant: Any, device: str) -> dict[str, int]:
    """The step kernel's registers, local and shared memory, and resident blocks a
    multiprocessor, as compiled for ``variant`` on this GPU (empty where it cannot say)."""
    import torch

    from loveletter_env.core import gpu

    if device != "cuda" or gpu.direct_launch_unavailable():
        return {}
    launch = gpu.DirectLaunch(gpu.compiled_kernels(variant), "step", torch.device("cuda"))
    found = launch.attributes()
    if "blocks_per_sm" in found:
        found["threads_per_sm"] = found["blocks_per_sm"] * variant.threads_per_block
    return found


def bench_env(args: argparse.Namespace) -> None:
    """Turns per wall-second of the batched env at each size, for each kernel variant:
    observations into a buffer and masks only, actions drawn inside the step (as pgx's
    benchmark does) and, for the default variant with observations, by torch in the Python
    loop (as a policy acts). On a GPU the default variant is also timed with torch's draw
    and the step replayed as one CUDA graph, and through numba's own launch beside the
    env's direct one."""
    from loveletter_env.batched.cuda_tuning import cuda_tuning
    from loveletter_env.bench import bench_batched
    from loveletter_env.core.gpu import DEFAULT_VARIANT

    variants = args.variants or [DEFAULT_VARIANT]  # parsed by _variant
    for variant in variants:
        attributes = _kernel_attributes(variant, args.device)
        if attributes:
            _record(args.out, what="kernel", variant=_variant_name(variant), **attributes)
    for batch in args.sizes:
        for variant in variants:
            kinds = [("buffer", "step", "direct"), ("none", "step", "direct")]
            if variant == DEFAULT_VARIANT:
                kinds.append(("buffer", "loop", "direct"))
                if args.device == "cuda":
                    kinds += [("buffer", "graph", "direct"), ("none", "graph", "direct")]
                    kinds += [("buffer", "step", "numba"), ("none", "step", "numba")]
            for observations, sampling, launcher in kinds:
                start = time.perf_counter()
                try:
                    steps = _steps_for(batch, args.steps)
                    with cuda_tuning(variant, launcher):
                        rates = [
                            bench_batched(2, steps, batch, args.device, seed, "round", observations, sampling)
                            for seed in range(args.repeats)
                        ]
                except Exception as error:  # noqa: BLE001 (one failed measurement must not stop the others)
                    what = f"{_variant_name(variant)} {launcher} {observations} {sampling} at {batch}"
                    print(f"FAILED: {what}: {type(error).__name__}: {error}", flush=True)
                    continue
                _record(
                    args.out,
                    what="env",
                    device=args.device,
                    games=batch,
                    variant=_variant_name(variant),
                    default=variant == DEFAULT_VARIANT,
                    launcher=launcher,
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


#: The parts of a rollout and update the trainer times (``<part>_s`` columns of metrics.csv).
TRAINING_PARTS = ("env", "forward", "bots", "bookkeeping", "update")


def training(args: argparse.Namespace) -> None:
    """Turns per second and the share of time in each part, from a run's metrics.csv (the
    first update, which compiles and warms up, left out when there are others); with
    ``--wall``, also end to end over the command's wall time; with ``--export``, the run's
    network without its training state (``result.pt`` if the run finished, else the
    ``latest.pt`` a stop signal left)."""
    with (args.run_dir / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{args.run_dir}/metrics.csv has no updates")
    measured = rows[1:] if len(rows) > 1 else rows
    parts = [p for p in TRAINING_PARTS if f"{p}_s" in rows[0]]
    seconds = {p: sum(float(r[f"{p}_s"] or 0) for r in measured) for p in parts}
    first_step = int(rows[0]["global_step"]) if len(rows) > 1 else 0
    first_elapsed = float(rows[0]["elapsed_s"]) if len(rows) > 1 else 0.0
    elapsed = float(rows[-1]["elapsed_s"]) - first_elapsed
    turns = int(rows[-1]["global_step"]) - first_step
    extra = {}
    if args.wall:
        extra["end_to_end_turns_per_s"] = int(rows[-1]["global_step"]) / args.wall
        extra["wall_s"] = args.wall
    if args.export:
        from training.learn.checkpoint import export_agent

        source = args.run_dir / "result.pt"
        if not source.is_file():
            source = args.run_dir / "latest.pt"
        export_agent(source, args.export)
        extra["network"] = f"{args.export} (from {source.name})"
    _record(
        args.out,
        what="training",
        updates=len(rows),
        turns=int(rows[-1]["global_step"]),
        turns_per_s=turns / elapsed if elapsed > 0 else float("nan"),
        **{f"share_{p}": seconds[p] / elapsed if elapsed > 0 else float("nan") for p in parts},
        **extra,
    )


def table(args: argparse.Namespace) -> None:
    """One table of everything in ``results.jsonl``: the engine's variants by size beside
    pgx (and the best variant's share of pgx's rate), then self-play."""
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
    env = [r for r in rows if r["what"] == "env"]
    pgx = {r["games"]: r["turns_per_s"] for r in rows if r["what"] == "pgx"}
    sizes = sorted({r["games"] for r in env} | set(pgx))
    if sizes:
        width = 68  # the longest label
        print(f"{'turns/s, 2 players':<{width}}" + "".join(f"{size:>14,}" for size in sizes))
        lines: dict[str, dict[int, float]] = {}
        for r in env:
            what = "obs" if r["observations"] else "masks"
            actions = {"step": "", "loop": ", actions by torch", "graph": ", torch's draw + step in a CUDA graph"}[
                r["sampling"]
            ]
            launcher = ", numba's launch" if r.get("launcher") == "numba" else ""
            label = f"{r.get('variant', 'env')}{' *' if r.get('default') else ''} ({what}{actions}{launcher})"
            lines.setdefault(label, {})[r["games"]] = r["turns_per_s"]
        if pgx:
            lines["pgx leduc_holdem"] = pgx
        for label, by_size in lines.items():
            cells = "".join(f"{by_size[size]:>14,.0f}" if size in by_size else f"{'':>14}" for size in sizes)
            print(f"{label:<{width}}{cells}")
        for sampling, named in (("step", "best {} variant / pgx"), ("graph", "CUDA graph ({}) / pgx")):
            for what, flag in (("obs", True), ("masks", False)):
                best: dict[int, float] = {}
                for r in env:
                    if r["observations"] == flag and r["sampling"] == sampling and r.get("launcher") != "numba":
                        best[r["games"]] = max(best.get(r["games"], 0.0), r["turns_per_s"])
                if pgx and best:
                    cells = "".join(
                        f"{best[size] / pgx[size]:>13.2f}x" if size in best and size in pgx else f"{'':>14}"
                        for size in sizes
                    )
                    print(f"{named.format(what):<{width}}{cells}")
        print(
            "(* the env's default kernels; variant = threads a block, records, observation writes"
            "[, register cap]; launches direct unless said)"
        )
    kernels = [r for r in rows if r["what"] == "kernel"]
    if kernels:
        print("step kernel as compiled: registers a thread, local bytes a thread, shared bytes a block, blocks a SM")
        for r in kernels:
            fields = (r.get(k, "?") for k in ("registers", "local_bytes", "shared_bytes", "blocks_per_sm"))
            print(f"  {r['variant']:<24}" + "".join(f"{v:>10}" for v in fields))
    for r in rows:
        if r["what"] == "training":
            parts = [k[len("share_") :] for k in r if k.startswith("share_")]
            shares = ", ".join(f"{p} {r['share_' + p]:.0%}" for p in parts)
            print(f"self-play: {r['turns_per_s']:,.0f} turns/s over {r['updates']} updates; time: {shares}")
            if "end_to_end_turns_per_s" in r:
                print(f"self-play end to end (start-up included): {r['end_to_end_turns_per_s']:,.0f} turns/s")
    steps = args.out / "steps.txt"
    if steps.exists():
        print("steps (exit status, seconds):")
        print(steps.read_text().rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("env", "pgx"):
        p = sub.add_parser(name)
        p.add_argument("--sizes", type=_positive, nargs="+", required=True)
        p.add_argument("--steps", type=_positive, default=20, help="timed steps per measurement")
        p.add_argument("--repeats", type=_positive, default=3)
        if name == "env":
            p.add_argument("--device", type=_device, default="cuda")
            p.add_argument(
                "--variants",
                type=_variant,
                nargs="*",
                default=None,
                metavar="THREADS,RECORDS,OBSERVATIONS[,rREGISTERS]",
                help="kernel variants to time, e.g. 64,shared,zeroed 64,global,zeroed,r64 (default: the env's)",
            )
    p = sub.add_parser("training")
    p.add_argument("--run-dir", type=Path, required=True)
    p.add_argument("--wall", type=float, default=None, help="the run command's wall seconds, start-up included")
    p.add_argument("--export", type=Path, default=None, help="write the run's network here, without training state")
    sub.add_parser("table")
    for p in sub.choices.values():
        p.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from loveletter_env.validation import check_writable

    try:  # each named before the step's measuring, not as a traceback after it
        check_writable("--out", args.out, folder=True)
        if args.command == "training":
            if not (args.run_dir / "metrics.csv").is_file():
                raise ValueError(
                    f"--run-dir {str(args.run_dir)!r} holds no metrics.csv: it is no training run's folder"
                )
            if args.wall is not None and not 0 < args.wall < float("inf"):
                raise ValueError(f"--wall must be a positive number of seconds, got {args.wall}")
            if args.export is not None:
                check_writable("--export", args.export)
    except ValueError as err:
        sub.choices[args.command].error(str(err))
    args.out.mkdir(parents=True, exist_ok=True)
    {"env": bench_env, "pgx": bench_pgx, "training": training, "table": table}[args.command](args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    sys.exit(main())
