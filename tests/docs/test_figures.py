"""Every figure that the README, the documentation and the configs quote in more than one
place says the same in each of them, and can be measured again.

``docs/figures.yaml`` holds each such figure once, with what it measures and every place
that quotes it: a file and a phrase of that file, ``{}`` standing where the figure is. A
quote may give the whole figure (``54.6% (52.4–56.8)``) or only its first number
(``54.6%``); bold markers, line breaks and ``%`` signs inside the interval do not count, and
`` … `` in a phrase stands for any short text between its two parts. When
a figure changes, change it in ``docs/figures.yaml``: this test then names every place that
still quotes the old one. When a sentence that quotes a figure is reworded, update its phrase.

Each entry also says how to measure its figure again (``command``, ``cost``, ``compare`` and,
for a figure that is no win rate, ``measure``): ``scripts/figures.py`` runs the commands and
compares. Here every entry is checked to say it, the script's reading and comparing is checked
on made-up outputs, and the figures of the seconds class are measured (a slow test).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, run_cut_short

_spec = importlib.util.spec_from_file_location("figures_script", ROOT / "scripts" / "figures.py")
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
sys.modules["figures_script"] = script
_spec.loader.exec_module(script)

FIGURES_FILE = ROOT / "docs" / "figures.yaml"
SLOT = "{}"
GAP = " … "


def _figures() -> dict[str, dict[str, Any]]:
    from training.learn.config import read_yaml

    return read_yaml(FIGURES_FILE)  # refuses a figure named twice, which plain YAML would drop


def _flat(text: str) -> str:
    """``text`` without bold markers and comment signs (``#`` of a YAML comment), its runs of
    whitespace as one space: a phrase may wrap across lines."""
    text = re.sub(r"^[ \t]*# ?", "", text.replace("**", ""), flags=re.MULTILINE)
    return re.sub(r"\s+", " ", text)


def _written(figure: str) -> str:
    """A figure as the test compares it: no ``%`` signs inside its parentheses."""
    return re.sub(r"\([^)]*\)", lambda interval: interval[0].replace("%", ""), _flat(figure).strip())


def _pattern(part: str) -> str:
    """A regular expression for part of a phrase: its text, where `` … `` matches a short gap."""
    return ".{0,400}?".join(re.escape(_flat(piece)) for piece in part.split(GAP))


def _quotes(text: str, phrase: str) -> list[str]:
    """What stands where the phrase's ``{}`` is, at each place of ``text`` that matches the phrase."""
    before, after = (_pattern(part) for part in phrase.split(SLOT))
    # Short, and never across a table cell: a figure, not the rest of a paragraph.
    return [quote.strip() for quote in re.findall(f"{before}([^|]{{1,60}}?){after}", _flat(text))]


def test_every_entry_is_complete():
    for name, entry in _figures().items():
        assert script.REQUIRED_KEYS <= set(entry) <= script.KEYS, f"{name}: keys are {sorted(script.KEYS)}"
        places = sum(len(phrases) for phrases in entry["quoted"].values())
        assert places >= 2, f"{name}: quoted in {places} place; the file is for figures quoted in several"
        for path, phrases in entry["quoted"].items():
            assert (ROOT / path).is_file(), f"{name}: no file {path}"
            for phrase in phrases:
                assert phrase.count(SLOT) == 1, f"{name}, {path}: {phrase!r} needs one {SLOT} where the figure is"


@pytest.mark.parametrize("name", list(_figures()))
def test_every_place_quotes_the_figure(name):
    entry = _figures()[name]
    figure = _written(str(entry["figure"]))
    accepted = {figure, figure.split(" (")[0]}
    wrong = []
    for path, phrases in entry["quoted"].items():
        text = (ROOT / path).read_text(encoding="utf-8")
        for phrase in phrases:
            found = _quotes(text, phrase)
            if not found:
                wrong.append(f"{path} no longer has the phrase {phrase!r} (reworded? update docs/figures.yaml)")
            wrong += [f"{path} says {quote!r} in {phrase!r}" for quote in map(_written, found) if quote not in accepted]
    assert not wrong, f"{name} is {entry['figure']} in docs/figures.yaml, but:\n" + "\n".join(wrong)


def test_a_changed_figure_is_caught_where_it_is_quoted():
    text = "| `belief` bot | `rule` bot | 2 | **54.6%** (52.4%–56.8%) | 50% |\nbeats it 54.6% of the\ntime"
    assert list(map(_written, _quotes(text, "| `belief` bot | `rule` bot | 2 | {} |"))) == ["54.6% (52.4–56.8)"]
    assert _quotes(text, "beats it {} of the time") == ["54.6%"]
    assert _quotes(text, "| `ismcts` bot | {} |") == []
    assert _quotes(text, "| `belief` bot … | 2 | {} |") == ["54.6% (52.4%–56.8%)"]
    assert _quotes("# wins\n# 35.3% against", "wins {} against") == ["35.3%"]  # across YAML comment lines


# Measuring again: scripts/figures.py -------------------------------------------------------------


def test_a_figure_named_twice_is_refused(tmp_path):
    """Plain YAML keeps the second entry of a name and drops the first without a word."""
    path = tmp_path / "figures.yaml"
    path.write_text("a: {figure: '1'}\nb: {figure: '2'}\na: {figure: '3'}\n")
    with pytest.raises(script.FigureError, match="the key 'a' is given twice, on line 1 and on line 3"):
        script.load_figures(path)


def test_every_figure_says_how_to_measure_it_again():
    figures = script.load_figures()  # raises FigureError, naming the entry, on a bad value
    assert [f.name for f in figures] == list(_figures())
    assert {f.cost for f in figures} == set(script.COSTS)
    # The seeded figures of CI's class are measured by the slow test below.
    assert [f for f in figures if f.cost == "seconds" and f.compare == "exact"]


def _entry(**changes: Any) -> dict[str, Any]:
    entry = {
        "figure": "54.6% (52.4–56.7)",
        "what": "a win rate",
        "command": "python -m training.evaluate belief rule --json",
        "cost": "seconds",
        "compare": "exact",
        "quoted": {"README.md": ["{}"]},
    }
    return {key: value for key, value in {**entry, **changes}.items() if value is not None}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"command": None}, r"missing keys \['command'\]"),
        ({"speed": "fast"}, r"unknown keys \['speed'\]"),
        ({"command": []}, "command is a shell command line or a list of them"),
        ({"cost": "days"}, "cost is one of seconds, minutes, hours, got 'days'"),
        ({"compare": "close"}, "compare is exact, {tolerance: N%}"),
        ({"compare": "not-reproducible-here"}, "compare is exact"),  # the reason is required
        ({"compare": {"tolerance": "10"}}, "a tolerance is a percentage such as 10%"),
        ({"figure": "half a second", "compare": {"tolerance": "10%"}, "measure": {"json": "s"}}, "holds no number"),
        ({"compare": {"within": [2, 1]}}, "has its low bound above its high one"),
        ({"figure": "0.0458"}, "without a measure the figure is a win rate"),
        ({"measure": {"pattern": "no group"}}, "needs one group"),
        ({"measure": {"pattern": "(", "scale": 1}}, "is no regular expression"),
        ({"measure": {"json": "a", "pattern": "(b)"}}, "measure has one of json, pattern"),
        ({"measure": {"wall time": "hours"}}, "wall time is given in one of"),
        ({"measure": {"json": "x", "scale": 0}}, "scale is a positive number"),
    ],
)
def test_an_entry_that_cannot_be_measured_is_refused_by_name(changes, message):
    with pytest.raises(script.FigureError, match=message) as refused:
        script.check_entry("belief against rule", _entry(**changes))
    assert str(refused.value).startswith("belief against rule: ")


def _evaluation(wins: int, rounds: int, seed: int, duplicate: bool = False) -> str:
    """What ``python -m training.evaluate A B --json`` prints, with the figures a summary rounds."""
    from training.measure.stats import EpisodeRecord, summarize

    records = [EpisodeRecord((0,) if i < wins else (1,), i % 2, 4, 1) for i in range(rounds)]
    return json.dumps(summarize(records, ["a", "b"], 2, "round", seed, duplicate).to_dict(), indent=2)


def test_a_win_rate_is_read_as_the_docs_write_it_and_pooled_over_commands():
    step = script.Step
    figure = script.check_entry("belief against rule", _entry())
    # 1,091 of 2,000 is 54.55%: the evaluation's summary writes 54.6%, as the docs do.
    measured = script.compare(figure, [step(f"compiling...\n{_evaluation(1091, 2000, 0)}\n", 1.0, 1.0)])
    assert measured == script.Outcome("54.6% (52.4–56.7)", True)
    # Three seeds pooled: 1,064 + 1,036 + 2,064 wins of 8,000 rounds, the Wilson interval over all.
    pooled = script.check_entry("pooled", _entry(figure="52.0% (51.0–53.1)"))
    steps = [
        step(_evaluation(w, n, seed), 1.0, 1.0)
        for w, n, seed in [(1064, 2000, 2026), (1036, 2000, 11), (2064, 4000, 99)]
    ]
    assert script.compare(pooled, steps) == script.Outcome("52.0% (51.0–53.1)", True)
    # A figure quoted without its interval is compared on its first number.
    assert script.compare(script.check_entry("short", _entry(figure="52.0%")), steps).ok
    assert not script.compare(script.check_entry("stale", _entry(figure="52.1% (51.0–53.1)")), steps).ok
    with pytest.raises(script.FigureError, match="duplicate deals"):
        script.compare(pooled, [step(_evaluation(10, 20, 1, duplicate=True), 1, 1)] * 2)
    # The same deals twice would narrow the interval with no new data; a rung's rounds are other rounds.
    with pytest.raises(script.FigureError, match=r"same seed cannot be pooled: seeds \[1, 1\]"):
        script.compare(pooled, [step(_evaluation(10, 20, 1), 1, 1)] * 2)
    on_a_rung = _evaluation(10, 20, 2).replace('"rules": "classic"', '"rules": "mini6"')
    with pytest.raises(script.FigureError, match="table, episodes and rules"):
        script.compare(pooled, [step(_evaluation(10, 20, 1), 1, 1), step(on_a_rung, 1, 1)])
    with pytest.raises(script.FigureError, match="no output of python -m training.evaluate --json"):
        script.compare(figure, [step("done: 1,000 turns\n", 1.0, 1.0)])


def test_other_figures_are_read_by_their_measure_and_compared_by_their_rule():
    step = script.Step

    def outcome(figure: str, compare: Any, measure: dict[str, Any], stdout: str = "", wall: float = 0.0):
        entry = script.check_entry("f", _entry(figure=figure, compare=compare, measure=measure))
        return script.compare(entry, [step(stdout, wall, wall / 2)])

    exploit = '{"agent": "x", "exploitability": 0.04583333, "seconds": 2.9}\n'
    assert outcome("0.0458", "exact", {"json": "exploitability"}, exploit) == script.Outcome("0.0458", True)
    assert outcome("0.0459", "exact", {"json": "exploitability"}, exploit) == script.Outcome("0.0458", False)
    table = "| rung | information sets |\n| mini6 | 1,800 |\n"
    assert outcome("1,800", "exact", {"pattern": r"^\| mini6 \| ([\d,]+) \|"}, table).ok
    bench = "  (d) batched env         4,313,629     1,000,000\n"
    pattern = {"pattern": r"^  \(d\) batched env +([\d,]+)", "scale": 1e-6}
    assert outcome("4.3 M", {"tolerance": "10%"}, pattern, bench) == script.Outcome("4.3 M", True)
    assert not outcome("5.0 M", {"tolerance": "10%"}, pattern, bench).ok
    # A range is stretched at both ends; a figure in words is compared within explicit bounds.
    ms = {"pattern": r"compiled +([\d.]+) ms"}
    assert outcome("4–7 ms", {"tolerance": "25%"}, ms, "compiled   8.6 ms").ok
    assert not outcome("4–7 ms", {"tolerance": "25%"}, ms, "compiled   8.9 ms").ok
    assert outcome("half a second", {"within": [0.1, 1.0]}, {"pattern": r"(\d\.\d+) s"}, "0.52 s").ok
    assert outcome("7.1 min", {"tolerance": "10%"}, {"wall time": "min"}, wall=425.7) == script.Outcome("7.1 min", True)
    assert (
        outcome("3.5 CPU-minutes", {"tolerance": "10%"}, {"cpu time": "min"}, wall=425.7).measured == "3.5 CPU-minutes"
    )
    with pytest.raises(script.FigureError, match="does not match"):
        outcome("4–7 ms", {"tolerance": "25%"}, ms, "nothing timed")


def _run_script(tmp_path: Path, entries: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    figures = tmp_path / "figures.yaml"
    figures.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    command = [sys.executable, str(ROOT / "scripts" / "figures.py"), "--figures", str(figures), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_the_script_runs_each_command_once_and_fails_on_a_figure_that_differs(tmp_path):
    # Each run of the shared command leaves a line in $WORK; both figures read its output.
    shared = 'echo run >> "$WORK/runs.txt"; echo "threads $OMP_NUM_THREADS"; cat "$WORK/runs.txt" | wc -l'
    count = {"pattern": r"^\s*(\d+)$"}
    entries = {
        "one run": _entry(figure="1", command=[shared], measure=count),
        "the same run": _entry(figure="1", command=shared, measure=count),
        "one thread": _entry(figure="1", command=shared, measure={"pattern": r"threads (\d+)"}),
        "stale": _entry(figure="2", command=shared, measure=count, cost="minutes"),
        "gpu": _entry(figure="3 M", cost="minutes", compare="not-reproducible-here (needs a GPU)"),
    }
    passing = _run_script(tmp_path, entries, "--work", str(tmp_path / "work"))
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "3 of 3 figures measured hold" in passing.stdout
    assert re.search(r"^one run +seconds +exact +1 +1 +ok$", passing.stdout, flags=re.MULTILINE)
    assert (tmp_path / "work" / "runs.txt").read_text() == "run\n"
    assert "[1/3] one run" in passing.stderr

    failing = _run_script(tmp_path, entries, "--cost", "seconds", "minutes", "--no-progress")
    assert failing.returncode == 1
    assert re.search(r"^stale +minutes +exact +2 +1 +DIFFERS$", failing.stdout, flags=re.MULTILINE)
    assert re.search(r"^gpu +minutes +not-reproducible-here \(needs a GPU\) +3 M +not here$", failing.stdout, re.M)
    assert "3 of 4 figures measured hold; 1 do not; 1 cannot be measured here" in failing.stdout
    assert failing.stderr == ""

    # A command that fails is an error of its figure, with the command and its stderr.
    entries["stale"]["command"] = "echo 'no such agent: rool' >&2; exit 2"
    broken = _run_script(tmp_path, entries, "--only", "stale", "--no-progress")
    assert broken.returncode == 1
    assert "stale: exit status 2 from: echo" in broken.stderr and "no such agent: rool" in broken.stderr
    assert re.search(r"^stale +minutes +exact +2 +ERROR$", broken.stdout, flags=re.MULTILINE)


def test_the_script_reuses_kept_outputs_and_names_unknown_figures(tmp_path):
    entries = {
        "count": _entry(figure="1", command='echo x >> "$WORK/n"; wc -l < "$WORK/n"', measure={"pattern": r"(\d+)"})
    }
    work = str(tmp_path / "work")
    assert _run_script(tmp_path, entries, "--work", work).returncode == 0
    again = _run_script(tmp_path, entries, "--work", work, "--reuse")
    assert again.returncode == 0 and "reused the output of" in again.stderr
    assert _run_script(tmp_path, entries, "--work", work).returncode == 1  # run again: a second line
    unknown = _run_script(tmp_path, entries, "--only", "cuont")
    assert unknown.returncode == 2 and "no figure named 'cuont' (--list names them)" in unknown.stderr
    listed = _run_script(tmp_path, entries, "--list")
    assert listed.returncode == 0 and "count  [seconds; exact]" in listed.stdout and not (tmp_path / "n").exists()


def test_a_work_folder_that_cannot_be_made_is_named_before_any_command(tmp_path):
    entries = {
        "count": _entry(figure="1", command='echo x >> "$WORK/n"; wc -l < "$WORK/n"', measure={"pattern": r"(\d+)"})
    }
    (tmp_path / "notes").write_text("x")
    for work in (tmp_path / "notes", tmp_path / "notes" / "work"):
        done = _run_script(tmp_path, entries, "--work", str(work))
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert f"--work '{work}' cannot be written:" in done.stderr and "is a file, not a folder" in done.stderr
    assert (tmp_path / "notes").read_text() == "x"


def test_a_saved_output_cut_short_is_not_read_again(tmp_path):
    """A command's saved output is written whole or not at all: a write cut short (a full disk,
    here a file size limit between the command's output and the saved record of it) leaves no
    record for --reuse to read, and the command runs again."""
    entries = {
        "count": _entry(figure="1", command="printf 'x%.0s' $(seq 2000); echo; echo 1", measure={"pattern": r"^(\d+)$"})
    }
    work = tmp_path / "work"

    figures = tmp_path / "figures.yaml"
    figures.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    command = [sys.executable, str(ROOT / "scripts" / "figures.py"), "--figures", str(figures), "--work", str(work)]
    run_cut_short(command, limit=2040, cwd=tmp_path)
    again = _run_script(tmp_path, entries, "--work", str(work), "--reuse")
    assert again.returncode == 0, again.stderr
    assert "reused the output of" not in again.stderr and "running: printf" in again.stderr, again.stderr


def test_ctrl_c_stops_the_commands_and_says_what_was_kept(tmp_path):
    """Ctrl-C (SIGINT to the whole group, as a terminal sends it) while a command runs: a
    sentence naming the kept outputs and status 130, not a traceback; the finished command's
    output is kept for --reuse."""
    import signal
    import time

    from conftest import subprocess_env

    entries = {
        "quick": _entry(figure="1", command="echo 1", measure={"pattern": r"(\d+)"}),
        "slow": _entry(figure="1", command="sleep 60; echo 1", measure={"pattern": r"(\d+)"}),
    }
    figures, work = tmp_path / "figures.yaml", tmp_path / "work"
    figures.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    command = [sys.executable, str(ROOT / "scripts" / "figures.py"), "--figures", str(figures), "--work", str(work)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(), start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not any(p.read_text() == "sleep 60; echo 1\n" for p in work.glob("steps/*/command.sh")):
        assert time.monotonic() < deadline and process.poll() is None, "the slow command never started"
        time.sleep(0.1)
    time.sleep(1.0)  # inside its wait for the command
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert f"interrupted: the outputs of the commands that finished are kept in {work}" in stderr, stderr
    again = _run_script(tmp_path, {"quick": entries["quick"]}, "--work", str(work), "--reuse")
    assert again.returncode == 0 and "reused the output of: echo 1" in again.stderr


@pytest.mark.slow
def test_the_seconds_class_measures_what_the_docs_quote(tmp_path):
    """Runs every seeded figure of the seconds class (a few minutes on 2 cores). The timings of
    the class are left to a run on the quiet machine (their tolerance is for that machine)."""
    command = [sys.executable, str(ROOT / "scripts" / "figures.py"), "--cost", "seconds", "--exact-only"]
    done = subprocess.run([*command, "--no-progress"], capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, f"python scripts/figures.py --cost seconds:\n{done.stdout}\n{done.stderr}"


def test_the_record_size_the_docs_quote_is_the_cores():
    """The pages quoted a 190-byte record long after it had grown: each quote is checked."""
    from loveletter_env.core.layout import RECORD_SIZE

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pattern = re.compile(r"row of (\d+) bytes|(\d+)-byte record|uint8 \[N, (\d+)\]")
    quoted = [
        (page.name, int(next(g for g in m.groups() if g))) for page in pages for m in pattern.finditer(page.read_text())
    ]
    assert quoted, "the pages quote the record size somewhere"
    assert [q for q in quoted if q[1] != RECORD_SIZE] == [], f"the core's record is {RECORD_SIZE} bytes"
