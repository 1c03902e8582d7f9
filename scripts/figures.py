"""Measure the figures of ``docs/figures.yaml`` again and compare them with what the docs quote.

Each figure there gives the shell command(s) that measure it (``command``), how long they take
on the project's 2-core CPU (``cost``: ``seconds``, ``minutes`` or ``hours``), how to read the
figure from their output (``measure``) and how close a new measurement must come (``compare``).
This script runs the commands of the figures asked for, reads each figure from the output,
prints a table of quoted against measured figures and exits with status 1 when one differs
(or a command fails), 130 when stopped with Ctrl-C, 0 otherwise:

    python scripts/figures.py                       # the seconds class (CI runs it)
    python scripts/figures.py --cost minutes        # the minutes class only
    python scripts/figures.py --cost seconds minutes
    python scripts/figures.py --only "belief against rule"
    python scripts/figures.py --list --cost hours

Every command runs from the repository root with one torch thread (``OMP_NUM_THREADS=1``:
a seeded figure is then the same on every run) and ``$WORK`` naming a scratch folder of the
run; commands that several figures share (a training run and the evaluations of its result)
run once per invocation. ``--work DIR`` keeps that folder, and with ``--reuse`` a later
invocation reads the saved output of every command that already finished there instead of
running it again: a long class can be measured in pieces, and a table made at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURES_FILE = ROOT / "docs" / "figures.yaml"
COSTS = ("seconds", "minutes", "hours")
#: A ``compare`` rule that starts so names a figure this machine cannot measure; the reason follows.
NOT_HERE = "not-reproducible-here"
#: Keys of an entry: the first three say what and where, the others how to measure it again.
KEYS = {"figure", "what", "command", "cost", "compare", "measure", "quoted"}
REQUIRED_KEYS = KEYS - {"measure"}
#: Units a ``wall time`` or ``cpu time`` measure may give its seconds in.
TIME_UNITS = {"s": 1.0, "min": 60.0}
#: Environment of every command: one torch (OpenMP, MKL) thread, so that a seeded figure does
#: not depend on how many threads the machine would give torch.
PINNED_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_NUMBER = r"\d[\d,]*(?:\.\d+)?"


class FigureError(ValueError):
    """An entry of the figures file that this script cannot use; the message names it."""


# The entries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One entry of the figures file, checked."""

    name: str
    figure: str
    commands: tuple[str, ...]
    cost: str
    compare: Any
    measure: Any

    @property
    def reproducible(self) -> bool:
        return not (isinstance(self.compare, str) and self.compare.startswith(NOT_HERE))


def load_figures(path: Path = FIGURES_FILE) -> list[Figure]:
    """Every entry of the figures file, checked (:func:`check_entry`).

    Raises:
        FigureError: an entry lacks a key or holds a value this script cannot use.
    """
    from training.learn.config import ConfigError, read_yaml

    try:
        entries = read_yaml(path)  # a figure named twice is refused: plain YAML would keep the second
    except ConfigError as err:
        raise FigureError(str(err)) from None
    return [check_entry(str(name), entry) for name, entry in entries.items()]


def check_entry(name: str, entry: Any) -> Figure:
    """``entry`` as a :class:`Figure`, each of its keys checked.

    Raises:
        FigureError: a key missing or unknown, or a value this script cannot use.
    """
    if not isinstance(entry, dict):
        raise FigureError(f"{name}: an entry is a mapping of {sorted(REQUIRED_KEYS)}")
    missing, unknown = REQUIRED_KEYS - set(entry), set(entry) - KEYS
    if missing or unknown:
        raise FigureError(f"{name}: missing keys {sorted(missing)}, unknown keys {sorted(unknown)}")
    command = entry["command"]
    commands = (command,) if isinstance(command, str) else tuple(command) if isinstance(command, list) else ()
    if not commands or not all(isinstance(c, str) and c.strip() for c in commands):
        raise FigureError(f"{name}: command is a shell command line or a list of them, got {command!r}")
    if entry["cost"] not in COSTS:
        raise FigureError(f"{name}: cost is one of {', '.join(COSTS)}, got {entry['cost']!r}")
    figure = Figure(name, str(entry["figure"]), commands, entry["cost"], entry["compare"], entry.get("measure"))
    _check_compare(figure)
    _check_measure(figure)
    return figure


def _check_compare(figure: Figure) -> None:
    rule = figure.compare
    if rule == "exact" or (isinstance(rule, str) and re.fullmatch(rf"{NOT_HERE} \(.+\)", rule)):
        return
    if isinstance(rule, dict) and set(rule) == {"tolerance"}:
        if not re.fullmatch(r"\d+(\.\d+)?%", str(rule["tolerance"])):
            raise FigureError(f"{figure.name}: a tolerance is a percentage such as 10%, got {rule['tolerance']!r}")
        if figure_numbers(figure.figure) is None:
            raise FigureError(f"{figure.name}: {figure.figure!r} holds no number to take a tolerance of")
        return
    if isinstance(rule, dict) and set(rule) == {"within"}:
        bounds = rule["within"]
        if not (isinstance(bounds, list) and len(bounds) == 2 and all(_is_number(b) for b in bounds)):
            raise FigureError(f"{figure.name}: within is [LOW, HIGH] in the figure's unit, got {bounds!r}")
        if bounds[0] > bounds[1]:
            raise FigureError(f"{figure.name}: within {bounds} has its low bound above its high one")
        return
    raise FigureError(
        f"{figure.name}: compare is exact, {{tolerance: N%}}, {{within: [LOW, HIGH]}} or "
        f"'{NOT_HERE} (why)', got {rule!r}"
    )


def _check_measure(figure: Figure) -> None:
    measure = figure.measure
    if measure is None:
        # A figure this machine cannot measure needs no reading of an output it never sees.
        if figure.reproducible and not re.match(rf"{_NUMBER}%", figure.figure):
            raise FigureError(f"{figure.name}: without a measure the figure is a win rate, not {figure.figure!r}")
        return
    if not isinstance(measure, dict):
        raise FigureError(f"{figure.name}: measure is a mapping, got {measure!r}")
    kinds = set(measure) & {"json", "pattern", "wall time", "cpu time"}
    if len(kinds) != 1 or set(measure) - kinds - {"scale"}:
        raise FigureError(
            f"{figure.name}: measure has one of json, pattern, wall time and cpu time (and scale), "
            f"got {sorted(measure)}"
        )
    (kind,) = kinds
    if kind == "pattern":
        try:
            groups = re.compile(measure["pattern"]).groups
        except (re.error, TypeError) as err:
            raise FigureError(f"{figure.name}: pattern {measure['pattern']!r} is no regular expression: {err}") from err
        if groups != 1:
            raise FigureError(f"{figure.name}: pattern {measure['pattern']!r} needs one group, the number")
    elif kind in ("wall time", "cpu time") and measure[kind] not in TIME_UNITS:
        raise FigureError(f"{figure.name}: {kind} is given in one of {sorted(TIME_UNITS)}, got {measure[kind]!r}")
    elif kind == "json" and not (isinstance(measure["json"], str) and measure["json"]):
        raise FigureError(f"{figure.name}: json names a key of the command's JSON output, got {measure['json']!r}")
    if "scale" in measure and not (_is_number(measure["scale"]) and measure["scale"] > 0):
        raise FigureError(f"{figure.name}: scale is a positive number, got {measure['scale']!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def figure_numbers(figure: str) -> tuple[float, float] | None:
    """The number a figure starts with, as ``(value, value)``, or the two ends of a range such as
    ``4–7 ms``; ``None`` when it starts with words (``half a second``)."""
    found = re.match(rf"({_NUMBER})(?:–({_NUMBER}))?", figure)
    if not found:
        return None
    low = float(found[1].replace(",", ""))
    return low, float(found[2].replace(",", "")) if found[2] else low


# Running the commands --------------------------------------------------------------------------


@dataclass
class Step:
    """What one command printed on stdout, and its times in seconds."""

    stdout: str
    wall_s: float
    cpu_s: float


class StepFailed(RuntimeError):
    """A command that exited with an error; the message ends with the tail of its stderr."""


class Runner:
    """Runs commands from the repository root, each distinct command once per invocation."""

    def __init__(self, work: Path, reuse: bool, progress: bool) -> None:
        self.work = work
        self.reuse = reuse
        self.progress = progress
        self.done: dict[str, Step] = {}
        self.env = {
            **os.environ,
            **PINNED_THREADS,
            "WORK": str(work),
            # The commands say `python`: the interpreter running this script, whatever else is on the path.
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }

    def run(self, command: str) -> Step:
        if command in self.done:
            return self.done[command]
        folder = self.work / "steps" / hashlib.sha256(command.encode()).hexdigest()[:16]
        saved = folder / "step.json"
        if self.reuse and saved.is_file():
            step = Step(**json.loads(saved.read_text(encoding="utf-8")))
            self._say(f"      reused the output of: {command}")
        else:
            step = self._run(command, folder)
            from loveletter_env.atomic_files import replacing

            # Whole or not at all: --reuse reads it later as a command that finished.
            with replacing(saved) as temporary:
                temporary.write_text(json.dumps(step.__dict__), encoding="utf-8")
        self.done[command] = step
        return step

    def _run(self, command: str, folder: Path) -> Step:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "command.sh").write_text(command + "\n", encoding="utf-8")
        self._say(f"      running: {command}")
        cpu_before = _children_cpu_s()
        start = time.perf_counter()
        with open(folder / "stdout.txt", "w+", encoding="utf-8") as out, open(folder / "stderr.txt", "w+") as err:
            process = subprocess.Popen(
                ["bash", "-c", command], cwd=ROOT, env=self.env, stdout=out, stderr=err, text=True
            )
            try:
                while process.poll() is None:
                    self._tick(time.perf_counter() - start)
                    time.sleep(0.5)
            finally:
                # Stopped with Ctrl-C (or a failure here): no training left running without its caller.
                if process.poll() is None:
                    process.terminate()
                    process.wait()
            wall = time.perf_counter() - start
            self._tick(None)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        if process.returncode != 0:
            tail = "\n".join(stderr.replace("\r", "\n").strip().splitlines()[-15:])
            raise StepFailed(f"exit status {process.returncode} from: {command}\n{tail}")
        return Step(stdout=stdout, wall_s=round(wall, 3), cpu_s=round(_children_cpu_s() - cpu_before, 3))

    def _say(self, line: str) -> None:
        if self.progress:
            print(line, file=sys.stderr, flush=True)

    def _tick(self, elapsed: float | None) -> None:
        """A running clock on the line below the command, where stderr is a terminal."""
        if self.progress and sys.stderr.isatty():
            text = "" if elapsed is None else f"      {_duration(elapsed)} ..."
            print(f"\r{text:<40}\r" if elapsed is None else f"\r{text}", end="", file=sys.stderr, flush=True)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{seconds:.1f} s"


# Reading a figure ----------------------------------------------------------------------------


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects that ``text`` holds, each starting a line (progress lines aside)."""
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"^\{", text, flags=re.MULTILINE):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def win_rate(results: Sequence[dict[str, Any]]) -> str:
    """Slot 0's win rate and 95% interval, written as the docs write it (``54.6% (52.4–56.7)``).

    One result is read as ``training.evaluate`` prints it (its figures are rounded as its summary
    rounds them); several are pooled: their wins and rounds added, the Wilson interval over all.

    Raises:
        FigureError: no result, or several that cannot be pooled (duplicate deals, other agents, table,
            episodes or rules, a seed repeated).
    """
    # Imported here: the training package loads the agents, seconds that --list and --help need not wait.
    from training.measure.stats import percentages, wilson_interval

    if not results:
        raise FigureError("no output of python -m training.evaluate --json to read a win rate from")
    if len(results) == 1:
        (result,) = results
        low, high = result["ci95"][0]
        return f"{percentages(result['win_rate'])[0]} ({low * 100:.1f}–{high * 100:.1f})"
    kinds = {(tuple(r["agents"]), r["num_players"], r["episode"], r.get("rules", "classic")) for r in results}
    if any(r["duplicate"] for r in results) or len(kinds) > 1:
        raise FigureError(
            "only evaluations of the same agents, table, episodes and rules without duplicate deals can be pooled"
        )
    seeds = [r["seed"] for r in results]
    if len(set(seeds)) < len(seeds):  # the same deals counted twice would narrow the interval with no new data
        raise FigureError(f"evaluations on the same seed cannot be pooled: seeds {seeds}")
    wins = sum(r["wins"][0] for r in results)
    rounds = sum(r["episodes"] for r in results)
    low, high = wilson_interval(wins, rounds)
    return f"{percentages([wins / rounds])[0]} ({low * 100:.1f}–{high * 100:.1f})"


def measured_number(figure: Figure, steps: Sequence[Step]) -> float:
    """The number that ``figure.measure`` reads from the commands' outputs, scaled.

    Raises:
        FigureError: the output does not hold it.
    """
    measure = figure.measure
    last = steps[-1].stdout
    if "json" in measure:
        objects = [o for o in json_objects(last) if measure["json"] in o]
        if not objects:
            raise FigureError(f"the last command printed no JSON object with {measure['json']!r}")
        value = objects[-1][measure["json"]]
    elif "pattern" in measure:
        found = re.findall(measure["pattern"], last, flags=re.MULTILINE)
        if not found:
            raise FigureError(f"the last command's output does not match {measure['pattern']!r}")
        value = float(found[-1].replace(",", ""))
    elif "wall time" in measure:
        value = steps[0].wall_s / TIME_UNITS[measure["wall time"]]
    else:
        value = steps[0].cpu_s / TIME_UNITS[measure["cpu time"]]
    if not _is_number(value):
        raise FigureError(f"{value!r} is not a number")
    return float(value) * measure.get("scale", 1)


def written_like(value: float, figure: str) -> str:
    """``value`` with the decimals and thousands separators of the figure's first number."""
    found = re.match(_NUMBER, figure)
    decimals = len(found[0].split(".")[1]) if found and "." in found[0] else (0 if found else 2)
    return f"{value:,.{decimals}f}" if found and "," in found[0] else f"{value:.{decimals}f}"


def _normal(figure: str) -> str:
    """A figure as the docs' check compares it: no ``%`` inside its interval, single spaces."""
    figure = re.sub(r"\s+", " ", figure.strip())
    return re.sub(r"\([^)]*\)", lambda interval: interval[0].replace("%", ""), figure)


@dataclass
class Outcome:
    """A figure's comparison: what was measured (as the docs would write it) and whether it holds."""

    measured: str
    ok: bool


def compare(figure: Figure, steps: Sequence[Step]) -> Outcome:
    """Read ``figure`` from its commands' outputs and compare it by its rule.

    Raises:
        FigureError: the outputs do not hold the figure.
    """
    if figure.measure is None:
        measured = win_rate([o for step in steps for o in json_objects(step.stdout) if "win_rate" in o])
        quoted = _normal(figure.figure)
        # A figure quoted without its interval (51.1%) is compared on its first number.
        return Outcome(measured, _normal(measured) == quoted if "(" in quoted else measured.split(" (")[0] == quoted)
    value = measured_number(figure, steps)
    number = re.match(_NUMBER, figure.figure)
    # The figure's unit (" ms", " M", "%"), without a range's second end or an interval.
    unit = re.sub(rf"^{_NUMBER}(?:–{_NUMBER})?| \(.*\)$", "", figure.figure) if number else ""
    measured = written_like(value, figure.figure) + unit
    rule = figure.compare
    if rule == "exact":
        return Outcome(measured, number is not None and written_like(value, figure.figure) == number[0])
    if "within" in rule:
        low, high = rule["within"]
    else:
        share = float(str(rule["tolerance"]).rstrip("%")) / 100
        ends = figure_numbers(figure.figure)
        assert ends is not None  # checked when the entry was read
        low, high = ends[0] * (1 - share), ends[1] * (1 + share)
    return Outcome(measured, low <= value <= high)


# The command line --------------------------------------------------------------------------------


def _rule_text(rule: Any) -> str:
    if isinstance(rule, dict):
        ((key, value),) = rule.items()
        return f"{key} {value}"
    return str(rule)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python scripts/figures.py",
        description=(
            "Run the commands of the figures of docs/figures.yaml, read each figure from their output and "
            "compare it with the figure the docs quote, by the figure's rule. Prints a table; exit status 1 "
            "when a figure differs or a command fails."
        ),
        epilog="Cost classes on the project's 2-core CPU: seconds (under a minute), minutes, hours.",
    )
    parser.add_argument(
        "--cost",
        nargs="+",
        choices=COSTS,
        metavar="CLASS",
        help="the cost classes to measure: seconds, minutes, hours; a class includes no other "
        "(default: seconds; with --list every class)",
    )
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="only this figure, whatever its class (repeatable)"
    )
    parser.add_argument("--list", action="store_true", help="list the figures with their commands; run nothing")
    parser.add_argument(
        "--exact-only",
        action="store_true",
        help="skip the figures compared with a tolerance (timings, which need the quiet 2-core machine)",
    )
    parser.add_argument(
        "--work", type=Path, help="keep the commands' outputs in this folder (default: a temporary one)"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="with --work, reuse the outputs of commands finished there"
    )
    parser.add_argument("--figures", type=Path, default=FIGURES_FILE, help=argparse.SUPPRESS)
    parser.add_argument("--no-progress", action="store_true", help="print only the table")
    return parser


def select(figures: Sequence[Figure], costs: Sequence[str], only: Sequence[str] | None) -> list[Figure]:
    """The figures named by ``only``, else those of the cost classes ``costs``.

    Raises:
        FigureError: a name of ``only`` that is no figure.
    """
    if only:
        by_name = {f.name: f for f in figures}
        unknown = [name for name in only if name not in by_name]
        if unknown:
            raise FigureError(f"no figure named {', '.join(map(repr, unknown))} (--list names them)")
        return [by_name[name] for name in only]
    return [f for f in figures if f.cost in costs]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (0: every figure measured holds)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.reuse and not args.work:
        parser.error("--reuse reads the outputs kept in --work DIR: give --work")
    if args.work and not args.list:
        from loveletter_env.validation import check_writable

        try:  # before the first command, whose minutes a folder that cannot be made would waste
            check_writable("--work", args.work, folder=True)
        except ValueError as err:
            parser.error(str(err))
    try:
        figures = select(load_figures(args.figures), args.cost or (COSTS if args.list else ("seconds",)), args.only)
    except FigureError as err:
        parser.error(str(err))
    if args.list:
        for f in figures:
            print(f"{f.name}  [{f.cost}; {_rule_text(f.compare)}]\n  figure: {f.figure}")
            print("".join(f"  $ {command}\n" for command in f.commands))
        return 0
    if args.exact_only:
        figures = [f for f in figures if f.compare == "exact" or not f.reproducible]
    work = args.work or Path(tempfile.mkdtemp(prefix="figures-"))
    work.mkdir(parents=True, exist_ok=True)
    runner = Runner(work.resolve(), args.reuse, not args.no_progress)
    rows = [["figure", "cost", "rule", "quoted", "measured", "result"]]
    failed = measured_figures = 0
    try:
        for i, figure in enumerate(figures, 1):
            runner._say(f"[{i}/{len(figures)}] {figure.name}")
            measured, result = "", "not here"
            if figure.reproducible:
                measured_figures += 1
                start = time.perf_counter()
                try:
                    outcome = compare(figure, [runner.run(command) for command in figure.commands])
                    measured, result = outcome.measured, "ok" if outcome.ok else "DIFFERS"
                except (StepFailed, FigureError) as err:
                    result = "ERROR"
                    print(f"{figure.name}: {err}", file=sys.stderr)
                failed += result != "ok"
                runner._say(f"      {result} ({_duration(time.perf_counter() - start)}): {measured or '-'}")
            rows.append([figure.name, figure.cost, _rule_text(figure.compare), figure.figure, measured, result])
    except KeyboardInterrupt:
        # Ctrl-C: the running command was stopped (Runner._run); a sentence and 130, what a
        # shell reports for it, not a traceback. Each finished command's output is whole on disk.
        kept = (
            f": the outputs of the commands that finished are kept in {work} (--reuse reads them)"
            if args.work
            else "; nothing was kept (--work DIR keeps the outputs of the commands that finish)"
        )
        print(f"\nfigures.py: interrupted{kept}", file=sys.stderr)
        return 130
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(_table(rows))
    not_here = len(figures) - measured_figures
    print(
        f"\n{measured_figures - failed} of {measured_figures} figures measured hold"
        + (f"; {failed} do not" if failed else "")
        + (f"; {not_here} cannot be measured here" if not_here else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
