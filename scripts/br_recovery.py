"""How much of an agent's exact exploitability a learned best response finds, against its budget.

``python scripts/br_recovery.py measure --out FILE.json`` trains learned best responses on a
ladder rung (``--rules``, default ``mini6``) against each target (``--targets``), for each
budget (``--steps``) and seed (``--seeds``), one command per cell::

    python -m training.exploit TARGET --rules RUNG --steps N --seed S --rounds R --json --no-progress \\
        --set out_dir=WORK --run-name NAME

Each command trains the best response, then scores its greedy policy exactly on the rung's tree
(:func:`training.exploitability.learned_response.exact_best_response_check`). Each cell is
written to FILE.json as soon as it is measured (with its command, seed and time); a cell already
in FILE.json is not measured again, so a stopped measurement resumes.

``python scripts/br_recovery.py draw FILE.json --out PICTURE.png`` draws the share of the exact
gain recovered (``exact_gain_recovered``) against the budget, one line per target: the mean
over the seeds with a 95% t interval, and each seed as a dot. ``--table`` prints the same as a
Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Two-sided 95% quantiles of Student's t by degrees of freedom (seeds - 1).
T_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def _cell_name(target: str, rules: str, steps: int, seed: int) -> str:
    stem = Path(target).stem if target.endswith(".pt") else target
    return f"br_{stem}_{rules}_{steps}_s{seed}"


def measure(args: argparse.Namespace) -> None:
    out = Path(args.out)
    cells: list[dict[str, Any]] = json.loads(out.read_text()) if out.is_file() else []
    done = {(c["target"], c["rules"], c["steps"], c["seed"]) for c in cells}
    for steps in args.steps:
        for seed in args.seeds:
            for target in args.targets:
                if (target, args.rules, steps, seed) in done:
                    continue
                name = _cell_name(target, args.rules, steps, seed)
                command = [
                    sys.executable, "-m", "training.exploit", target, "--rules", args.rules,
                    "--steps", str(steps), "--seed", str(seed), "--rounds", str(args.rounds),
                    "--json", "--no-progress", "--set", f"out_dir={args.work}", "--run-name", name,
                ]  # fmt: skip
                began = time.perf_counter()
                result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
                if result.returncode:
                    sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
                report = json.loads(result.stdout)
                exact = report["exact"]
                cells.append(
                    {
                        "target": target,
                        "rules": args.rules,
                        "steps": steps,
                        "seed": seed,
                        "training_turns": report["training_turns"],
                        "exact_gain_recovered": exact["exact_gain_recovered"],
                        "gain": exact["gain"],
                        "exact_gain": exact["exact_gain"],
                        "best_response_value": exact["best_response_value"],
                        "win_rate": report["best_response_win_rate"],
                        "seconds": round(time.perf_counter() - began, 1),
                        "command": "python " + " ".join(command[1:]),
                    }
                )
                out.write_text(json.dumps(cells, indent=1) + "\n")
                print(f"{name}: recovered {exact['exact_gain_recovered']:.3f} ({cells[-1]['seconds']} s)", flush=True)


def summary(cells: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[int, float, float, float, int]]]:
    """Per (target, rules): (steps, mean recovered, interval low, interval high, seeds) by budget."""
    groups: dict[tuple[str, str], dict[int, list[float]]] = {}
    for c in cells:
        groups.setdefault((c["target"], c["rules"]), {}).setdefault(c["steps"], []).append(c["exact_gain_recovered"])
    rows: dict[tuple[str, str], list[tuple[int, float, float, float, int]]] = {}
    for key, by_steps in groups.items():
        for steps, values in sorted(by_steps.items()):
            mean = statistics.fmean(values)
            half = T_95[len(values) - 1] * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0
            rows.setdefault(key, []).append((steps, mean, mean - half, mean + half, len(values)))
    return rows


def draw(args: argparse.Namespace) -> None:
    cells = [c for path in args.files for c in json.loads(Path(path).read_text())]
    rows = summary(cells)
    if args.table:
        # "rung, turns" in one cell: a cell holding the rung alone reads as a figure table's row.
        print("| target | rung, turns | seeds | recovered, mean (95% t interval) | each seed |")
        print("| --- | --- | ---: | ---: | --- |")
        for (target, rules), points in rows.items():
            for steps, mean, low, high, seeds in points:
                each = sorted(
                    (c["seed"], c["exact_gain_recovered"])
                    for c in cells
                    if (c["target"], c["rules"], c["steps"]) == (target, rules, steps)
                )
                shown = ", ".join(f"{value:.1%}" for _, value in each)
                print(
                    f"| `{target}` | `{rules}`, {steps / 1e6:g}M | {seeds} | "
                    f"{mean:.1%} ({low:.1%}–{high:.1%}) | {shown} |"
                )
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for i, ((target, rules), points) in enumerate(rows.items()):
            # Each line a little to the side, so lines measured at the same budget stay apart.
            nudge = 1 + 0.025 * (i - (len(rows) - 1) / 2)
            budgets = [p[0] / 1e6 * nudge for p in points]
            means = [p[1] for p in points]
            errors = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
            line = ax.errorbar(budgets, means, yerr=errors, marker="o", capsize=4, label=f"{target} on {rules}")
            mine = [c for c in cells if (c["target"], c["rules"]) == (target, rules)]
            ax.scatter(
                [c["steps"] / 1e6 * nudge for c in mine],
                [c["exact_gain_recovered"] for c in mine],
                s=12,
                alpha=0.5,
                color=line[0].get_color(),
            )
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.axhline(0.8, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ticks = sorted({c["steps"] / 1e6 for c in cells})
        ax.set_xticks(ticks, [f"{t:g}M" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("training turns of the best response")
        ax.set_ylabel("share of the exact gain recovered")
        ax.set_title("Learned best response against its exact value")
        ax.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        fig.savefig(args.out, dpi=110)
        print(f"written: {args.out}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python scripts/br_recovery.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="train and score the best responses")
    run.add_argument("--out", required=True, help="the JSON file of measured cells (extended, resumed)")
    run.add_argument("--rules", default="mini6")
    run.add_argument("--targets", nargs="+", default=["rule", "checkpoints/shipped/ppo_2p.pt"])
    run.add_argument("--steps", nargs="+", type=int, default=[500_000, 1_000_000, 2_000_000])
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    run.add_argument("--rounds", type=int, default=200, help="played rounds of each tool's own evaluation")
    run.add_argument("--work", default="runs/br_recovery", help="out_dir of the best responses' runs")
    show = commands.add_parser("draw", help="plot (and tabulate) measured cells")
    show.add_argument("files", nargs="+")
    show.add_argument("--out", help="the picture to write")
    show.add_argument("--table", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    (measure if args.command == "measure" else draw)(args)


if __name__ == "__main__":
    main()
