"""How much of an agent's exact exploitability a best response finds, against its budget.

``python scripts/br_recovery.py measure --out FILE.json`` trains learned best responses on a
ladder rung (``--rules``, default ``mini6``) against each target (``--targets``), for each
budget (``--steps``) and seed (``--seeds``), one command per cell::

    python -m training.exploit TARGET --rules RUNG --steps N --seed S --rounds R --json --no-progress \\
        --set out_dir=WORK --run-name NAME

Each command trains the best response, then scores its greedy policy exactly on the rung's tree
(:func:`training.exploitability.learned_response.exact_best_response_check`). Each cell is
written to FILE.json as soon as it is measured (with its command, seed and time); a cell already
in FILE.json is not measured again, so a stopped measurement resumes.

With ``--search`` it plays the search best response instead, for each budget of walks a
decision (``--iterations``)::

    python -m training.exploit TARGET --search --rules RUNG --iterations I --seed S --rounds R --json --no-progress

A search best response cannot be scored on the tree (it decides by sampling, decision by
decision), so its gain is the sampled bound it plays, over ``R`` rounds of duplicate deals; the
exact gain it is divided by comes from ``python -m training.exploit TARGET --exact --rules RUNG
--json``, measured once per target and rung.

``python scripts/br_recovery.py draw FILE.json --out PICTURE.png`` draws the share of the exact
gain recovered (``exact_gain_recovered``) against the budget, one line per target and rung (a
panel per tool when both are measured): the mean over the seeds with a 95% t interval, and each
seed as a dot. ``--table`` prints the same as Markdown tables, one per tool.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
#: Two-sided 95% quantiles of Student's t by degrees of freedom (seeds - 1), where the
#: expansion of :func:`t_95` is the less accurate.
T_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
#: The two-sided 95% quantile of the normal distribution.
Z_975 = 1.959963984540054


def t_95(degrees: int) -> float:
    """The two-sided 95% quantile of Student's t with ``degrees`` degrees of freedom (at least 1):
    the table up to 9, then the Cornish-Fisher expansion in ``1 / degrees``, within 1e-5 of the
    exact quantile from 10 on (so that a measurement over more than ten seeds can be drawn)."""
    if degrees in T_95:
        return T_95[degrees]
    z, v = Z_975, float(degrees)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


def _cell_name(target: str, rules: str, steps: int, seed: int) -> str:
    # A checkpoint is named with its folder: v1/ppo_2p.pt and shipped/ppo_2p.pt share a stem.
    path = Path(target)
    stem = f"{path.parent.name}_{path.stem}" if target.endswith(".pt") else target
    return f"br_{stem}_{rules}_{steps}_s{seed}"


def _free_run_name(work: Path, name: str) -> str:
    """``name``, or else ``name_2``, ``name_3``...: the first that no folder under ``work`` holds.

    A cell's folder is there without its cell when a measurement stopped while it trained (Ctrl-C
    saves its ``latest.pt``), or when another measurement shares ``--work``; training.exploit
    refuses a folder that holds a run, which would stop every resumed measurement at that cell."""
    taken, k = name, 1
    while (work / taken).exists():
        k += 1
        taken = f"{name}_{k}"
    return taken


def tool_of(cell: dict[str, Any]) -> str:
    """``"learned"`` or ``"search"`` (cells measured before the search was added are learned ones)."""
    return str(cell.get("tool", "learned"))


def budget_of(cell: dict[str, Any]) -> int:
    """The cell's budget: training turns of a learned best response, walks a decision of a search one."""
    return int(cell["iterations"] if tool_of(cell) == "search" else cell["steps"])


def _shown(command: list[str]) -> str:
    """The command as a reader types it (``python``, not this interpreter's path)."""
    return "python " + " ".join(command[1:])


def _run_json(command: list[str]) -> dict[str, Any]:
    # Run where the command was typed, so that a relative --targets or --work means what a
    # relative --out does; this checkout's code is found through PYTHONPATH instead.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _learned_cell(args: argparse.Namespace, target: str, steps: int, seed: int) -> dict[str, Any]:
    # The runs' out_dir is read from the current folder, where they run.
    name = _free_run_name(Path(args.work), _cell_name(target, args.rules, steps, seed))
    command = [
        sys.executable, "-m", "training.exploit", target, "--rules", args.rules,
        "--steps", str(steps), "--seed", str(seed), "--rounds", str(args.rounds),
        "--json", "--no-progress", "--set", f"out_dir={args.work}", "--run-name", name,
    ]  # fmt: skip
    began = time.perf_counter()
    report = _run_json(command)
    exact = report["exact"]
    return {
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
        "command": _shown(command),
    }


def _exact_report(rules: str, target: str) -> dict[str, Any]:
    """``training.exploit TARGET --exact``'s report on the rung, with the command that gave it."""
    command = [sys.executable, "-m", "training.exploit", target, "--exact", "--rules", rules, "--json"]
    return _run_json(command) | {"command": _shown(command)}


def _search_cell(
    args: argparse.Namespace, target: str, iterations: int, seed: int, exact: dict[str, Any]
) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "training.exploit", target, "--search", "--rules", args.rules,
        "--iterations", str(iterations), "--seed", str(seed), "--rounds", str(args.rounds),
        "--json", "--no-progress",
    ]  # fmt: skip
    began = time.perf_counter()
    report = _run_json(command)
    gain, exact_gain = report["exploitability_lower_bound"], exact["exploitability"]
    low, high = report["exploitability_lower_bound_ci95"]
    return {
        "tool": "search",
        "target": target,
        "rules": args.rules,
        "iterations": iterations,
        "seed": seed,
        "rounds": report["rounds"],
        "exact_gain_recovered": gain / exact_gain,
        "recovered_ci95": [low / exact_gain, high / exact_gain],
        "gain": gain,
        "gain_ci95": [low, high],
        "exact_gain": exact_gain,
        "score": report["score"],
        "seconds": round(time.perf_counter() - began, 1),
        "command": _shown(command),
        "exact_command": exact["command"],
    }


def default_targets() -> list[str]:
    """``rule`` and the shipped 2-player network, named from the current folder: from the
    repository's root ``checkpoints/shipped/ppo_2p.pt``, the target that the measured cells name."""
    return ["rule", os.path.relpath(ROOT / "checkpoints" / "shipped" / "ppo_2p.pt")]


def read_cells(path: Path) -> list[dict[str, Any]]:
    """The measured cells of ``path``. Raises :class:`ValueError` naming the file when it cannot
    be read, holds no JSON, or holds something other than a list of cells."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{str(path)!r} cannot be read as measured cells: {err}") from None
    needed = ("target", "rules", "seed", "exact_gain_recovered")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and all(k in c for k in needed) for c in cells):
        raise ValueError(f"{str(path)!r} holds no list of measured cells (each with {', '.join(needed)})")
    try:
        for cell in cells:
            budget_of(cell)
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{str(path)!r} holds a cell without its budget (steps, or iterations for search)") from None
    return cells


def measure(args: argparse.Namespace) -> None:
    from loveletter_env.atomic_files import replacing

    out = Path(args.out)
    cells: list[dict[str, Any]] = read_cells(out) if out.is_file() else []
    out.parent.mkdir(parents=True, exist_ok=True)  # a search makes no run folder there first
    tool = "search" if args.search else "learned"
    done = {(tool_of(c), c["target"], c["rules"], budget_of(c), c["seed"]) for c in cells}
    exact: dict[str, dict[str, Any]] = {}
    for budget in args.iterations if args.search else args.steps:
        for seed in args.seeds:
            for target in args.targets:
                if (tool, target, args.rules, budget, seed) in done:
                    continue
                if not args.search:
                    cells.append(_learned_cell(args, target, budget, seed))
                else:
                    if target not in exact:  # one exact measure per target, however many cells
                        exact[target] = _exact_report(args.rules, target)
                    cells.append(_search_cell(args, target, budget, seed, exact[target]))
                # A budget or seed named twice is measured once, as a resumed measurement skips it.
                done.add((tool, target, args.rules, budget, seed))
                # Whole or not at all: a kill mid-write must not lose the cells measured before.
                with replacing(out) as temporary:
                    temporary.write_text(json.dumps(cells, indent=1) + "\n")
                print(
                    f"{tool} {target} {args.rules} {budget} s{seed}: recovered "
                    f"{cells[-1]['exact_gain_recovered']:.3f} ({cells[-1]['seconds']} s)",
                    flush=True,
                )


Summary = dict[tuple[str, str, str], list[tuple[int, float, float, float, int]]]


def summary(cells: Sequence[dict[str, Any]]) -> Summary:
    """Per (tool, target, rules): (budget, mean recovered, interval low, interval high, seeds) by budget."""
    groups: dict[tuple[str, str, str], dict[int, list[float]]] = {}
    for c in cells:
        key = (tool_of(c), c["target"], c["rules"])
        groups.setdefault(key, {}).setdefault(budget_of(c), []).append(c["exact_gain_recovered"])
    rows: Summary = {}
    for key, by_budget in groups.items():
        for budget, values in sorted(by_budget.items()):
            mean = statistics.fmean(values)
            half = t_95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0
            rows.setdefault(key, []).append((budget, mean, mean - half, mean + half, len(values)))
    return rows


#: The lowest and highest shares the picture shows: others are drawn on these edges.
FLOOR, CEILING = -1.0, 1.5

#: Per tool: the table's budget column, how a budget reads there, and the picture's x axis.
BUDGETS = {
    "learned": ("rung, turns", lambda b: f"{b / 1e6:g}M", "training turns of the best response"),
    "search": ("rung, walks", lambda b: f"{b:,} walks", "walks a decision of the search best response"),
}


def _table(cells: Sequence[dict[str, Any]], rows: Summary, tool: str) -> None:
    header, shown_budget, _ = BUDGETS[tool]
    # "rung, turns" in one cell: a cell holding the rung alone reads as a figure table's row.
    print(f"| target | {header} | seeds | recovered, mean (95% t interval) | each seed |")
    print("| --- | --- | ---: | ---: | --- |")
    for (kind, target, rules), points in rows.items():
        if kind != tool:
            continue
        for budget, mean, low, high, seeds in points:
            each = sorted(
                (c["seed"], c["exact_gain_recovered"])
                for c in cells
                if (tool_of(c), c["target"], c["rules"], budget_of(c)) == (tool, target, rules, budget)
            )
            shown = ", ".join(f"{value:.1%}" for _, value in each)
            print(
                f"| `{target}` | `{rules}`, {shown_budget(budget)} | {seeds} | "
                f"{mean:.1%} ({low:.1%}–{high:.1%}) | {shown} |"
            )


def draw(args: argparse.Namespace) -> None:
    cells = [c for path in args.files for c in read_cells(Path(path))]
    if not cells:  # else an empty table, or matplotlib's complaint about a picture of no panel
        raise ValueError(f"{', '.join(map(repr, args.files))} holds no measured cells: nothing to draw")
    rows = summary(cells)
    tools = [tool for tool in BUDGETS if any(key[0] == tool for key in rows)]
    if args.table:
        for i, tool in enumerate(tools):
            if i:
                print()
            _table(cells, rows, tool)
    if args.out:
        from training.measure.plotting import load_plotting

        plt = load_plotting()

        fig, axes = plt.subplots(1, len(tools), figsize=(6.4 * len(tools), 6.0), squeeze=False)
        colours = [plt.get_cmap("tab20")(k) for k in range(20)]
        for ax, tool in zip(axes[0], tools, strict=True):
            mine_rows = {key: points for key, points in rows.items() if key[0] == tool}
            for i, ((_, target, rules), points) in enumerate(mine_rows.items()):
                # Each line a little to the side, so lines measured at the same budget stay apart.
                nudge = 1 + 0.025 * (i - (len(mine_rows) - 1) / 2)
                budgets = [p[0] * nudge for p in points]
                means = [p[1] for p in points]
                errors = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
                line = ax.errorbar(
                    budgets, means, yerr=errors, marker="o", capsize=4, label=f"{target} on {rules}",
                    color=colours[i % len(colours)],
                )  # fmt: skip
                mine = [c for c in cells if (tool_of(c), c["target"], c["rules"]) == (tool, target, rules)]
                shares = [c["exact_gain_recovered"] for c in mine]
                ax.scatter(
                    [budget_of(c) * nudge for c in mine],
                    [min(max(share, FLOOR), CEILING) for share in shares],
                    s=[12 if FLOOR <= share <= CEILING else 30 for share in shares],
                    marker="o",
                    alpha=0.5,
                    color=line[0].get_color(),
                )
            # A near-equilibrium target's gain is tiny, so a best response's share of it (or its
            # noise's) runs to several hundred percent either way; the edges keep the rest readable.
            ax.set_ylim(FLOOR - 0.05, CEILING + 0.05)
            ax.text(0.99, 0.01, f"shares below {FLOOR:.0%} or above {CEILING:.0%} drawn on the edge (large dots)",
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="grey")  # fmt: skip
            ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
            ax.axhline(0.8, color="grey", linewidth=0.8, linestyle=":")
            ax.set_xscale("log")
            ticks = sorted({budget_of(c) for c in cells if tool_of(c) == tool})
            ax.set_xticks(ticks, [BUDGETS[tool][1](t).replace(" walks", "") for t in ticks])
            ax.minorticks_off()
            ax.set_xlabel(BUDGETS[tool][2])
            ax.set_ylabel("share of the exact gain recovered")
            ax.set_title(f"{tool.capitalize()} best response against its exact value")
            # Below the panel: a dozen lines would cover the points they label.
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
        fig.tight_layout()
        from loveletter_env.atomic_files import replacing

        # Whole or not at all; the format named, as the temporary name's suffix says none.
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with replacing(args.out) as temporary:
            fig.savefig(temporary, dpi=110, format=Path(args.out).suffix.lstrip(".").lower() or "png")
        plt.close(fig)
        print(f"written: {args.out}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python scripts/br_recovery.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="train and score the best responses (or play search ones)")
    run.add_argument("--out", required=True, help="the JSON file of measured cells (extended, resumed)")
    run.add_argument("--rules", default="mini6", help="the ladder rung (default: mini6)")
    run.add_argument(
        "--targets",
        nargs="+",
        default=default_targets(),
        help="agent specs (a relative path from the current folder; default: rule and checkpoints/shipped/ppo_2p.pt)",
    )
    run.add_argument("--steps", nargs="+", type=int, default=[500_000, 1_000_000, 2_000_000])
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    run.add_argument("--search", action="store_true", help="play the search best response instead of training one")
    run.add_argument(
        "--iterations", nargs="+", type=int, default=[100, 400, 1600], help="with --search: the walks a decision"
    )
    run.add_argument(
        "--rounds",
        type=int,
        default=200,
        help="played rounds of each learned tool's own evaluation; with --search, the rounds it is scored on",
    )
    run.add_argument(
        "--work", default="runs/br_recovery", help="out_dir of the best responses' runs (default: runs/br_recovery)"
    )
    show = commands.add_parser("draw", help="plot (and tabulate) measured cells")
    show.add_argument("files", nargs="+")
    show.add_argument("--out", help="the picture to write")
    show.add_argument("--table", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    try:
        check_arguments(args)
        (measure if args.command == "measure" else draw)(args)
    except ValueError as err:
        parser.error(str(err))
    except KeyboardInterrupt:  # what a measurement had measured is in --out, written cell by cell
        resume = (
            f": the cells measured are in {args.out}, and the same command resumes" if args.command == "measure" else ""
        )
        print(f"br_recovery.py: interrupted{resume}", file=sys.stderr)
        raise SystemExit(130) from None


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, naming it, an argument that the work would fail on only after minutes (or
    hours) of measuring, or that would change what is measured without saying so."""
    from loveletter_env.agents.specs import spec_files
    from loveletter_env.tree import rung_rules
    from loveletter_env.validation import check_seed, check_writable

    if args.command == "draw":
        if not args.out and not args.table:
            raise ValueError("draw writes a picture (--out) or a table (--table): name one")
        if args.out:
            check_writable("--out", args.out)
            suffix = Path(args.out).suffix.lstrip(".").lower()
            if suffix not in ("", "png", "svg", "pdf"):
                raise ValueError(f"--out {args.out!r}: a picture is a .png, .svg or .pdf file, not .{suffix}")
        return
    for name in ("iterations" if args.search else "steps", "rounds"):
        values = getattr(args, name)
        for value in values if isinstance(values, list) else [values]:
            if value < 1:
                raise ValueError(f"--{name} must be at least 1, got {value}")
    for seed in args.seeds:
        check_seed(seed, "--seeds")
    # Each cell is scored on the rung's tree, which a full game has not: training.exploit would
    # train its best response and report no exact gain.
    try:
        rung_rules(args.rules)
    except ValueError as err:
        raise ValueError(f"--rules: {err}") from None
    # A checkpoint named wrong would fail only at its first cell, after the cells of the targets before it.
    for target in args.targets:
        try:
            spec_files(target)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"--targets: {err}") from None
    check_writable("--out", args.out)
    if Path(args.out).is_file():
        read_cells(Path(args.out))  # an earlier file that cannot be resumed is named before any cell


if __name__ == "__main__":
    main()
