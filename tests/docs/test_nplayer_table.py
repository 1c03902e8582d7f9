"""The exact NashConv table of the 3- and 4-player rungs on docs/solving.md: its cells are what
``training.exploit --exact`` reports, and the page's table is the one its data gives.

``scripts/nplayer_table.py`` measures the cells and writes the table and the picture; these tests
load it as ``tests/docs/test_exploitability_plot.py`` loads its script.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from conftest import ROOT, run_cut_short, run_script_stopped

from training import exploit

_spec = importlib.util.spec_from_file_location("nplayer_table", ROOT / "scripts" / "nplayer_table.py")
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
sys.modules["nplayer_table"] = script
_spec.loader.exec_module(script)

RANDOM = script.ROWS[0]


def _cell(row, rung, nash_conv, n):
    return {"row": row, "rung": rung, "nash_conv": nash_conv, "exploitability": nash_conv / n}


def test_a_measured_cell_is_what_the_exact_command_reports(tmp_path, capsys):
    out = tmp_path / "cells.json"
    [cell] = script.measure(["mini6_3p"], [RANDOM], out)
    assert json.loads(out.read_text()) == [cell]
    assert cell["command"] == "python -m training.exploit random --exact --rules mini6_3p --seed 0 --json"
    assert exploit.main(cell["command"].split()[3:] + ["--no-progress"]) is not None
    report = json.loads(capsys.readouterr().out)
    for key in ("nash_conv", "exploitability", "gain", "profile_score"):
        assert cell[key] == report[key], key
    assert cell["seed"] == 0 and cell["exact_probabilities"] and cell["num_players"] == 3


def test_the_table_writes_both_figures_and_marks_what_was_not_measured():
    solved = script.ROWS[-1].label
    cells = [_cell(RANDOM.label, "mini8_4p", 0.5, 4), _cell(solved, "mini6_3p", 0.0049593, 3)]
    lines = script.table(cells).splitlines()
    assert lines[0] == "| agent | `mini6_3p` | `mini7_3p` | `mini8_3p` | `mini7_4p` | `mini8_4p` |"
    assert lines[2] == "| `random` | — | — | — | — | 0.5000 (0.1250) |"
    assert lines[3] == f"| {solved} | 0.0050 (0.00165) | — | — | — | — |"
    assert len(lines) == 4  # rows with no cell are left out


def test_the_table_goes_between_its_own_markers_only():
    page = f"a\n<!-- other -->\nx\n{script.END}\n{script.START}\nold\n{script.END}\nrest {script.END}\n"
    assert script.with_table(page, "new") == (
        f"a\n<!-- other -->\nx\n{script.END}\n{script.START}\nnew\n{script.END}\nrest {script.END}\n"
    )
    with pytest.raises(ValueError, match="the page has no table between"):
        script.with_table("no markers", "new")


def test_a_later_measurement_replaces_an_earlier_one(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps([_cell("`rule`", "mini7_4p", 0.3, 4), _cell("`random`", "mini7_4p", 0.9, 4)]))
    second.write_text(json.dumps([_cell("`rule`", "mini7_4p", 0.2, 4)]))
    cells = script.merged([first, second])
    assert [(c["row"], c["nash_conv"]) for c in cells] == [("`random`", 0.9), ("`rule`", 0.2)]


def test_the_page_shows_the_committed_data_and_its_picture():
    cells = script.merged([script.DATA])
    page = script.PAGE.read_text(encoding="utf-8")
    assert script.with_table(page, script.table(cells)) == page, "run python scripts/nplayer_table.py draw"
    assert script.PICTURE.exists() and "assets/nplayer_exploitability.png" in page
    for cell in cells:
        assert abs(cell["exploitability"] * cell["num_players"] - cell["nash_conv"]) < 1e-12


def test_the_picture_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "p.png"
    script.draw([_cell(RANDOM.label, "mini6_3p", 0.38, 3), _cell(RANDOM.label, "mini8_4p", 0.5, 4)], path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_measure_keeps_an_earlier_file_and_names_a_bad_one_before_measuring(tmp_path, capsys):
    earlier = tmp_path / "cells.json"
    earlier.write_text("[]\n")
    (tmp_path / "notes").write_text("x")
    for argv, message in [
        (["--out", str(earlier)], "already exists: pass --force to replace it"),
        (["--out", str(tmp_path / "notes" / "cells.json")], "is a file, not a folder"),
        (["--out", str(tmp_path / "new.json"), "--samples", "0"], "--samples must be at least 1, got 0"),
    ]:
        with pytest.raises(SystemExit) as stop:
            script.main(["measure", *argv])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert earlier.read_text() == "[]\n" and not (tmp_path / "new.json").exists()


def test_a_write_that_fails_part_way_keeps_the_cells_measured_before(tmp_path):
    """Each cell rewrites the whole file: a write cut short (a full disk, here a file size limit)
    must leave the cells measured before as they were, not half a file."""
    out = tmp_path / "cells.json"
    # The measure replaced by a report of 4,000 characters a cell: room for one cell, not two.
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import nplayer_table as s\n"
        "from training.exploitability import exact_response as e\n"
        "e.agent_playing = lambda spec, greedy, seed: (None, spec)\n"
        "e.exact_exploitability = lambda *a, **k: {'num_players': 3, 'nash_conv': 0.1, 'exploitability': 0.03, "
        "'gain': 'x' * 4000, 'profile_score': 0, 'exact_probabilities': True, 'seconds': 0}\n"
        f"s.measure(['mini6_3p'], s.ROWS[:2], s.Path({str(out)!r}))\n"
    )
    run_cut_short([sys.executable, "-c", code], limit=6000, timeout=300)
    assert [cell["row"] for cell in json.loads(out.read_text())] == [script.ROWS[0].label]
    assert [p.name for p in tmp_path.iterdir()] == ["cells.json"]  # no temporary file left beside it


def test_rows_that_would_measure_nothing_are_refused_before_measuring(tmp_path, capsys):
    """A name of --rows that is no row's spec, or ismcts on rungs none of which is in
    --ismcts-rungs, measured nothing without a word (and ended with status 0, no --out file)."""
    out = tmp_path / "cells.json"
    for argv, message in [
        (["--rows", "rule", "rool"], "--rows names no row for 'rool': the rows' specs are"),
        (
            ["--rungs", "mini7_3p", "--rows", "ismcts"],
            "--rows ismcts is measured on --ismcts-rungs only (mini6_3p, mini7_4p), none of them in --rungs",
        ),
    ]:
        with pytest.raises(SystemExit) as stop:
            script.main(["measure", "--out", str(out), *argv])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_a_measurement_stopped_with_ctrl_c_says_where_its_cells_are(tmp_path):
    out = tmp_path / "cells.json"
    stopped = "def stopped(rungs, rows, out, *args):\n    out.write_text('[]')  # a first cell measured\n    stop()"
    argv = ["measure", "--rows", "random", "--out", str(out)]
    done = run_script_stopped("nplayer_table", f"{stopped}\ns.measure = stopped", argv)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert f"nplayer_table.py: interrupted: the cells measured are in {out}" in done.stderr


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ({"row": "`rule`", "rung": "mini6_3p"}, "lacks 'nash_conv'"),
        (_cell("`rool`", "mini6_3p", 0.1, 3), "row '`rool`' is no row of the table"),  # was left out without a word
        (_cell("`rule`", "mini9_3p", 0.1, 3), "rung 'mini9_3p' is no rung of the table"),
        ({**_cell("`rule`", "mini6_3p", 0.1, 3), "nash_conv": "x"}, "nash_conv 'x' is no number"),
    ],
)
def test_draw_names_a_cell_it_cannot_show_and_writes_nothing(tmp_path, monkeypatch, capsys, cell, problem):
    measured = tmp_path / "cells.json"
    measured.write_text(json.dumps([cell]))
    page = tmp_path / "solving.md"
    page.write_text(f"{script.START}\nold\n{script.END}\n")
    # Nothing of the repository is written, whatever happens.
    monkeypatch.setattr(script, "PAGE", page)
    monkeypatch.setattr(script, "DATA", tmp_path / "data.json")
    monkeypatch.setattr(script, "PICTURE", tmp_path / "picture.png")
    with pytest.raises(SystemExit) as stop:
        script.main(["draw", str(measured)])
    assert stop.value.code == 2 and "Traceback" not in (err := capsys.readouterr().err)
    assert f"{measured}: cell 1: {problem}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.json", "solving.md"]
    assert page.read_text() == f"{script.START}\nold\n{script.END}\n"
