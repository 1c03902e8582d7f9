"""The exact NashConv table of the 3- and 4-player rungs on docs/solving.md, and its picture.

``python scripts/nplayer_table.py measure --out FILE.json`` measures, on each rung (``--rungs``,
default every 3- and 4-player rung), each row's agent (``--rows``, default all of :data:`ROWS`):
every seat of the rung plays the agent and each seat's exact best response is computed, as
``python -m training.exploit AGENT --exact --rules RUNG --json`` does (the same library calls:
:func:`~training.exploitability.exact_response.agent_playing`, then
:func:`~training.exploitability.exact_response.exact_exploitability`), on one tree per rung. Each
cell is written to FILE.json as soon as it is measured, with its command line, seed and time.
``ismcts`` is estimated from ``--samples`` searches per decision, on ``--ismcts-rungs`` only
(its cost grows with the information sets: see docs/solving.md).

``python scripts/nplayer_table.py draw [FILE.json ...]`` merges measured files into
``docs/assets/nplayer_exploitability.json`` (with no file, redraws from it), writes the table
between ``<!-- nplayer exploitability table -->`` and its end marker on docs/solving.md, and
draws ``docs/assets/nplayer_exploitability.png`` (matplotlib): each agent's exploitability
(``nash_conv / n``) on each rung, log scale, a panel per table size.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "solving.md"
DATA = ROOT / "docs" / "assets" / "nplayer_exploitability.json"
PICTURE = ROOT / "docs" / "assets" / "nplayer_exploitability.png"
START, END = "<!-- nplayer exploitability table -->", "<!-- end of table -->"
RUNGS = ("mini6_3p", "mini7_3p", "mini8_3p", "mini7_4p", "mini8_4p")
NOT_MEASURED = "—"
SEED = 0
#: Searches per decision for ``ismcts``, and the rungs it is measured on by default.
SAMPLES = 16
ISMCTS_RUNGS = ("mini6_3p", "mini7_4p")
#: The rows' solved policies: ``python -m training.solve RUNG`` writes them there.
SOLVED = "checkpoints/solved/{rung}/policy.npz"


class Row(NamedTuple):
    """One row of the table: its label there, the agent spec (``{rung}`` filled in) and how a
    checkpoint plays (``None``: as its file records; ``False``: ``--sampled``)."""

    label: str
    spec: str
    greedy: bool | None = None


ROWS = (
    Row("`random`", "random"),
    Row("`rule`", "rule"),
    Row("`belief`", "belief"),
    Row("`ismcts` (estimated)", "ismcts"),
    Row("`checkpoints/v1/ppo_2to4p.pt` (greedy)", "checkpoints/v1/ppo_2to4p.pt"),
    Row("`checkpoints/v1/ppo_2to4p.pt --sampled`", "checkpoints/v1/ppo_2to4p.pt", False),
    Row("`checkpoints/shipped/ppo_2to4p.pt` (greedy)", "checkpoints/shipped/ppo_2to4p.pt"),
    Row("`checkpoints/shipped/ppo_2to4p.pt --sampled`", "checkpoints/shipped/ppo_2to4p.pt", False),
    Row("`checkpoints/shipped/ppo_2to4p_eq.pt` (sampling)", "checkpoints/shipped/ppo_2to4p_eq.pt"),
    Row("`solved:path=checkpoints/solved/RUNG/policy.npz`", "solved:path=" + SOLVED),
)


def command(row: Row, rung: str, samples: int) -> str:
    """The command line that measures ``row`` on ``rung`` alone."""
    extra = " --sampled" if row.greedy is False else ""
    if row.spec == "ismcts":
        extra += f" --samples {samples}"
    return f"python -m training.exploit {row.spec.format(rung=rung)} --exact --rules {rung}{extra} --seed {SEED} --json"


def measured_on(row: Row, rung: str, ismcts_rungs: Iterable[str]) -> bool:
    """Whether ``measure`` measures ``row`` on ``rung``: every row on every rung, ``ismcts``
    (whose cost grows with the information sets) on ``ismcts_rungs`` only."""
    return row.spec != "ismcts" or rung in ismcts_rungs


def measure(
    rungs: Sequence[str], rows: Sequence[Row], out: Path, samples: int = SAMPLES, ismcts_rungs: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Measure every row on every rung (``ismcts`` on ``ismcts_rungs`` only), writing ``out``
    after each cell; returns the cells."""
    from loveletter_env.atomic_files import replacing
    from loveletter_env.tree import build_tree
    from training.exploitability.exact_response import agent_playing, exact_exploitability

    cells: list[dict[str, Any]] = []
    for rung in rungs:
        started = time.perf_counter()
        tree = build_tree(rung)
        built = time.perf_counter() - started
        print(f"{rung}: tree built in {built:.1f} s", file=sys.stderr, flush=True)
        for row in rows:
            if not measured_on(row, rung, ismcts_rungs):
                continue
            agent, label = agent_playing(row.spec.format(rung=rung), row.greedy, seed=SEED)
            searched = samples if row.spec == "ismcts" else None  # the others' probabilities are exact
            report = exact_exploitability(agent, rung, seed=SEED, samples=searched, tree=tree)
            cell = {
                "row": row.label,
                "rung": rung,
                "agent": label,
                "command": command(row, rung, samples),
                "seed": SEED,
                **{k: report[k] for k in ("num_players", "nash_conv", "exploitability", "gain", "profile_score")},
                "exact_probabilities": report["exact_probabilities"],
                "seconds": report["seconds"],
                "tree_seconds": round(built, 3),
            }
            if not report["exact_probabilities"]:
                cell["samples_per_decision"] = report["samples_per_decision"]
            cells.append(cell)
            # Whole or not at all: a kill mid-write must not lose the cells measured before.
            with replacing(out) as temporary:
                temporary.write_text(json.dumps(cells, indent=1) + "\n")
            print(
                f"{rung} {label}: nash_conv {cell['nash_conv']:.5f}, exploitability {cell['exploitability']:.5f} "
                f"({cell['seconds']:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    return cells


# The table and the picture --------------------------------------------------------------------------


def merged(files: Iterable[Path]) -> list[dict[str, Any]]:
    """The cells of ``files``, a later file's cell replacing an earlier one of the same row and rung.

    Raises:
        ValueError: a file holds no list of cells, or a cell the table cannot show (a row or
            rung that is not the table's, a figure that is no number); the message names it.
    """
    labels = {row.label for row in ROWS}
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for path in files:
        found = json.loads(path.read_text())
        if not isinstance(found, list):
            raise ValueError(f"{path}: a list of cells, got {type(found).__name__}")
        for number, cell in enumerate(found, start=1):
            # Checked here, not where the table is written: a cell of another row would be left
            # out of the table without a word, and one without its figures fail with a KeyError.
            where = f"{path}: cell {number}"
            if not isinstance(cell, dict):
                raise ValueError(f"{where}: a cell is an object, got {cell!r}")
            missing = [key for key in ("row", "rung", "nash_conv", "exploitability") if key not in cell]
            if missing:
                raise ValueError(f"{where}: lacks {', '.join(map(repr, missing))}")
            if cell["row"] not in labels:
                raise ValueError(f"{where}: row {cell['row']!r} is no row of the table (ROWS)")
            if cell["rung"] not in RUNGS:
                raise ValueError(f"{where}: rung {cell['rung']!r} is no rung of the table ({', '.join(RUNGS)})")
            for key in ("nash_conv", "exploitability"):
                value = cell[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise ValueError(f"{where}: {key} {value!r} is no number")
            cells[cell["row"], cell["rung"]] = cell
    order = {row.label: k for k, row in enumerate(ROWS)}
    return sorted(cells.values(), key=lambda c: (order.get(c["row"], len(order)), RUNGS.index(c["rung"])))


def figure(value: float, digits: bool = False) -> str:
    """A table's number, as the solve table writes it: 4 decimals (``nash_conv``), or with
    ``digits`` 3 significant digits below 0.01 (``exploitability``)."""
    return f"{value:.3g}" if digits and 0 < value < 0.01 else f"{value:.4f}"


def table(cells: Sequence[dict[str, Any]]) -> str:
    """The Markdown table: a row per agent, a column per rung, each cell ``nash_conv (exploitability)``."""
    found = {(c["row"], c["rung"]): c for c in cells}
    lines = [
        "| agent | " + " | ".join(f"`{r}`" for r in RUNGS) + " |",
        "| --- |" + " ---: |" * len(RUNGS),
    ]
    for row in ROWS:
        if not any((row.label, r) in found for r in RUNGS):
            continue
        values = []
        for rung in RUNGS:
            cell = found.get((row.label, rung))
            if cell is None:
                values.append(NOT_MEASURED)
            else:
                values.append(f"{figure(cell['nash_conv'])} ({figure(cell['exploitability'], digits=True)})")
        lines.append(f"| {row.label} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def with_table(page_text: str, markdown: str) -> str:
    """``page_text`` with ``markdown`` between the table's markers (the first end marker after the start)."""
    start = page_text.find(START)
    end = page_text.find(END, start) if start >= 0 else -1
    if end < 0:
        raise ValueError(f"the page has no table between {START} and {END}")
    return page_text[: start + len(START)] + "\n" + markdown + "\n" + page_text[end:]


def draw(cells: Sequence[dict[str, Any]], path: Path) -> None:
    """The picture: exploitability (``nash_conv / n``) per rung, log scale, a panel per table size."""
    from training.measure.plotting import load_plotting

    plt = load_plotting()

    sizes = {3: [r for r in RUNGS if r.endswith("_3p")], 4: [r for r in RUNGS if r.endswith("_4p")]}
    found = {(c["row"], c["rung"]): c for c in cells}
    fig, axes = plt.subplots(
        1, 2, figsize=(10, 5.2), sharey=True, gridspec_kw={"width_ratios": [len(sizes[3]), len(sizes[4])]}
    )
    markers = "osv^D<>Xp"
    for k, row in enumerate(ROWS):
        for ax, (players, rungs) in zip(axes, sizes.items()):
            xs = [i for i, r in enumerate(rungs) if (row.label, r) in found]
            ys = [found[row.label, rungs[i]]["exploitability"] for i in xs]
            if xs:
                ax.plot(xs, ys, marker=markers[k % len(markers)], color=f"C{k}", label=row.label.replace("`", ""))
            ax.set_xticks(range(len(rungs)), rungs)
            ax.set_xlim(-0.4, len(rungs) - 0.6)
            ax.set_title(f"{players} players")
            ax.grid(True, which="major", color="#dddddd")
    axes[0].set_yscale("log")
    low = min((c["exploitability"] for c in cells if c["exploitability"] > 0), default=1e-4)  # 0 has no log
    axes[0].set_ylim(10 ** math.floor(math.log10(low)), 0.5)
    axes[0].set_ylabel("exploitability = nash_conv / n (log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.suptitle("Exact exploitability on the 3- and 4-player rungs (lower is better)")
    fig.legend(seen.values(), seen.keys(), loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    fig.savefig(path, dpi=110, format="png", metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    run = sub.add_parser("measure", help="measure the cells, writing them to --out")
    run.add_argument("--rungs", nargs="+", default=list(RUNGS), choices=RUNGS)
    run.add_argument("--rows", nargs="+", metavar="SPEC", help="the rows whose agent spec is one of these")
    run.add_argument("--samples", type=int, default=SAMPLES, help=f"ismcts searches per decision ({SAMPLES})")
    run.add_argument("--ismcts-rungs", nargs="*", default=list(ISMCTS_RUNGS), choices=RUNGS)
    run.add_argument("--out", type=Path, required=True, help="the JSON file of the cells measured (a new one)")
    run.add_argument("--force", action="store_true", help="replace an existing --out file")
    drawing = sub.add_parser("draw", help="merge measured files, write the table on the page and the picture")
    drawing.add_argument("files", nargs="*", type=Path, help=f"measured files (none: redraw from {DATA.name})")
    args = parser.parse_args(argv)
    if args.what == "measure":

        def named(row: Row, name: str) -> bool:
            return name in (row.spec, row.spec.split(":")[0])

        # A name that is no row's, or a row with no cell on these rungs, would measure nothing without a word.
        for name in args.rows or ():
            if not any(named(r, name) for r in ROWS):
                specs = ", ".join(sorted({r.spec for r in ROWS}))
                parser.error(f"--rows names no row for {name!r}: the rows' specs are {specs}")
            if not any(named(r, name) and measured_on(r, rung, args.ismcts_rungs) for r in ROWS for rung in args.rungs):
                parser.error(
                    f"--rows {name} is measured on --ismcts-rungs only ({', '.join(args.ismcts_rungs) or 'none'}), "
                    f"none of them in --rungs ({', '.join(args.rungs)})"
                )
        rows = [r for r in ROWS if args.rows is None or any(named(r, name) for name in args.rows)]
        if args.samples < 1:
            parser.error(f"--samples must be at least 1, got {args.samples}")
        from loveletter_env.validation import check_new_file

        try:  # before hours of measuring, whose cells an earlier file may already hold
            check_new_file("--out", args.out, replace=args.force)
        except ValueError as err:
            parser.error(str(err))
        replaced = args.out.stat().st_mtime_ns if args.out.exists() else None  # an earlier file, with --force
        try:
            measure(args.rungs, rows, args.out, args.samples, args.ismcts_rungs)
        except KeyboardInterrupt:
            # A sentence and 130 (what a shell reports for Ctrl-C), not a traceback: each cell
            # measured before is whole in --out.
            written = args.out.exists() and args.out.stat().st_mtime_ns != replaced
            kept = f": the cells measured are in {args.out}" if written else "; no cell was measured"
            print(f"\nnplayer_table.py: interrupted{kept}", file=sys.stderr)
            return 130
        return 0
    try:
        cells = merged([DATA, *args.files] if DATA.exists() and args.files else args.files or [DATA])
    except (OSError, ValueError, KeyError, TypeError) as err:  # a missing file, no JSON, no list of cells
        parser.error(f"the measured files cannot be read: {type(err).__name__}: {err}")
    # All three aside, then put in place together: a failure leaves the data, the page and the
    # picture as they were.
    from loveletter_env.atomic_files import replacing_together

    page = with_table(PAGE.read_text(encoding="utf-8"), table(cells))
    with replacing_together([PICTURE, DATA, PAGE]) as (drawn, data, page_file):
        draw(cells, drawn)
        data.write_text(json.dumps(cells, indent=1) + "\n")
        page_file.write_text(page, encoding="utf-8")
    print(f"wrote {DATA.relative_to(ROOT)}, the table on {PAGE.relative_to(ROOT)} and {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
