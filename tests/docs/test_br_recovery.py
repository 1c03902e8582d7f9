"""The learned best responses' check on docs/agents-strength.md: ``scripts/br_recovery.py``
summarises the measured cells (``docs/assets/br_recovery.json``) into the page's table and picture."""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cut_short, run_script_stopped, subprocess_env

_spec = importlib.util.spec_from_file_location("br_recovery", ROOT / "scripts" / "br_recovery.py")
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
sys.modules["br_recovery"] = script
_spec.loader.exec_module(script)

DATA = ROOT / "docs" / "assets" / "br_recovery.json"


def test_the_mean_and_its_t_interval_over_seeds():
    cells = [{"target": "rule", "rules": "mini6", "steps": 10, "seed": s, "exact_gain_recovered": v} for s, v in
             enumerate([0.8, 0.9, 1.0])]  # fmt: skip
    [(steps, mean, low, high, seeds)] = script.summary(cells)[("learned", "rule", "mini6")]
    # Standard deviation 0.1 over 3 seeds: half-width t(0.975, 2) * 0.1 / sqrt(3).
    assert (steps, seeds) == (10, 3) and mean == pytest.approx(0.9)
    assert high - mean == pytest.approx(mean - low) == pytest.approx(4.303 * 0.1 / 3**0.5)


def test_the_page_quotes_every_measured_cell(capsys):
    """Each line of the table the data gives stands on the page, figure for figure."""
    cells = json.loads(DATA.read_text())
    assert all(c["command"].startswith("python -m training.exploit ") for c in cells)
    script.main(["draw", str(DATA), "--table"])
    page = (ROOT / "docs" / "agents-strength.md").read_text()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]  # one table per tool
    assert len(rows) == len({(script.tool_of(c), c["target"], c["rules"], script.budget_of(c)) for c in cells})
    for line in rows:
        cells_of = [c.strip() for c in line.strip("|").split("|")]
        rung_turns, mean = cells_of[1], cells_of[3].split(" ")[0]
        assert any(rung_turns in row and mean in row for row in page.splitlines()), line


def test_search_cells_are_summarised_apart_by_their_walks():
    """A learned and a search best response against the same target on the same rung are two
    lines, each over its own budget (turns, walks a decision)."""
    learned = [{"target": "rule", "rules": "mini6", "steps": 10, "seed": s, "exact_gain_recovered": 1} for s in [0, 1]]
    search = [
        {"tool": "search", "target": "rule", "rules": "mini6", "iterations": it, "seed": s, "exact_gain_recovered": v}
        for it, s, v in [(100, 0, 0.2), (100, 1, 0.4), (400, 0, 0.6)]
    ]
    rows = script.summary(learned + search)
    assert [p[0] for p in rows[("learned", "rule", "mini6")]] == [10]
    assert [(p[0], round(p[1], 6), p[4]) for p in rows[("search", "rule", "mini6")]] == [(100, 0.3, 2), (400, 0.6, 1)]


def test_checkpoints_of_one_name_in_two_folders_train_in_two_run_folders():
    """v1/ppo_2p.pt and shipped/ppo_2p.pt: one run folder would refuse (or overwrite) the other."""
    names = {script._cell_name(t, "mini9", 1_000_000, 0) for t in
             ["checkpoints/v1/ppo_2p.pt", "checkpoints/shipped/ppo_2p.pt", "rule"]}  # fmt: skip
    assert names == {"br_v1_ppo_2p_mini9_1000000_s0", "br_shipped_ppo_2p_mini9_1000000_s0", "br_rule_mini9_1000000_s0"}


def test_more_than_ten_seeds_get_student_s_t_interval():
    """The table of quantiles stops at 9 degrees of freedom; eleven seeds are summarised too."""
    cells = [{"target": "rule", "rules": "mini6", "steps": 10, "seed": s, "exact_gain_recovered": s / 10} for s in
             range(11)]  # fmt: skip
    [(_, mean, low, high, seeds)] = script.summary(cells)[("learned", "rule", "mini6")]
    sd = statistics.stdev(c["exact_gain_recovered"] for c in cells)
    # t(0.975, 10) = 2.228139 (scipy.stats.t.ppf), t(0.975, 30) = 2.042272, t(0.975, 200) = 1.971896.
    assert seeds == 11 and high - mean == pytest.approx(2.228139 * sd / 11**0.5, rel=1e-5)
    assert script.t_95(30) == pytest.approx(2.042272, abs=1e-5)
    assert script.t_95(200) == pytest.approx(1.971896, abs=1e-5)


def _fake_cell(padding: int) -> str:
    """Code that replaces the training of a best response with a cell of ``padding`` characters."""
    return (
        f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import br_recovery as s\n"
        "s._learned_cell = lambda args, target, steps, seed: {'target': target, 'rules': args.rules, "
        f"'steps': steps, 'seed': seed, 'exact_gain_recovered': 0.5, 'seconds': 0, 'padding': 'x' * {padding}}}\n"
    )


def test_a_write_that_fails_part_way_keeps_the_cells_measured_before(tmp_path):
    """Each cell rewrites the whole file: a write cut short (a full disk, here a file size
    limit) must leave the earlier cells as they were, not half a file that cannot be resumed."""
    out = tmp_path / "cells.json"
    code = _fake_cell(4000) + f"s.main(['measure', '--out', {str(out)!r}, '--targets', 'rule', '--steps', '10', "
    done = subprocess.run([sys.executable, "-c", code + "'--seeds', '0'])"], env=subprocess_env(), timeout=120)
    assert done.returncode == 0
    before = out.read_bytes()
    limit = len(before) + 1000  # room for the first cell, not for two
    run_cut_short([sys.executable, "-c", code + "'--seeds', '0', '1'])"], limit=limit)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cells.json"]  # no temporary file left beside it


def test_a_seed_named_twice_is_measured_once(tmp_path):
    out = tmp_path / "cells.json"
    code = _fake_cell(0) + f"s.main(['measure', '--out', {str(out)!r}, '--targets', 'rule', '--steps', '10', '10', "
    done = subprocess.run(
        [sys.executable, "-c", code + "'--seeds', '0', '0'])"], env=subprocess_env(), timeout=120, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(out.read_text())) == 1


def test_bad_arguments_and_files_are_named_before_any_work(tmp_path, capsys):
    (tmp_path / "notes").write_text("x")
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"target": "rule"}')
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    for argv, message in [
        (["measure", "--out", str(tmp_path / "notes" / "a.json")], "notes' is a file, not a folder"),
        (["measure", "--out", str(broken)], f"'{broken}' cannot be read as measured cells"),
        (["measure", "--out", str(wrong)], f"'{wrong}' holds no list of measured cells"),
        (["measure", "--out", str(tmp_path / "a.json"), "--steps", "0"], "--steps must be at least 1, got 0"),
        (["measure", "--out", str(tmp_path / "a.json"), "--search", "--iterations", "-1"], "--iterations must be"),
        (["measure", "--out", str(tmp_path / "a.json"), "--rounds", "0"], "--rounds must be at least 1, got 0"),
        (["measure", "--out", str(tmp_path / "a.json"), "--seeds", "-1"], "--seeds must be a non-negative integer"),
        # A full game has no tree to score the best response on: refused, not trained and then lost.
        (["measure", "--out", str(tmp_path / "a.json"), "--rules", "classic"], "--rules: rules 'classic' are not a"),
        # A checkpoint named wrong is named before the cells of the targets before it are measured.
        (
            ["measure", "--out", str(tmp_path / "a.json"), "--targets", "rule", str(tmp_path / "typo.pt")],
            f"--targets: checkpoint '{tmp_path / 'typo.pt'}' does not exist",
        ),
        (["draw", str(tmp_path / "none.json"), "--table"], f"'{tmp_path / 'none.json'}' cannot be read"),
        (["draw", str(DATA)], "draw writes a picture (--out) or a table (--table): name one"),
        (["draw", str(empty), "--table"], f"'{empty}' holds no measured cells: nothing to draw"),
        (["draw", str(DATA), "--out", str(tmp_path / "notes" / "p.png")], "cannot be written"),
        (["draw", str(DATA), "--out", str(tmp_path / "p.txt")], "a picture is a .png, .svg or .pdf file, not .txt"),
    ]:
        with pytest.raises(SystemExit) as stop:
            script.main(argv)
        assert stop.value.code == 2
        assert message in capsys.readouterr().err, argv
    assert broken.read_text() == "[{" and not (tmp_path / "a.json").exists()


def test_the_picture_is_written_whole_in_its_format(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "new" / "recovered.png"
    script.main(["draw", str(DATA), "--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in out.parent.iterdir()] == ["recovered.png"]


def test_a_cell_stopped_part_way_trains_again_in_a_new_run_folder(tmp_path, monkeypatch):
    """A measurement stopped while a best response trained leaves its run folder (Ctrl-C saves
    its latest.pt) and no cell: resumed, the cell trains under a run name no folder holds, as
    training.exploit refuses a folder that holds a run (which the stopped one's would)."""
    work = tmp_path / "work"
    (work / "br_rule_mini6_10_s0").mkdir(parents=True)
    (work / "br_rule_mini6_10_s0" / "latest.pt").write_bytes(b"left by a stopped measurement")
    (work / "br_rule_mini6_10_s0_2").mkdir()  # and by a second one
    commands = []

    def report(command):
        commands.append(command)
        exact = {"exact_gain_recovered": 0.5, "gain": 0.1, "exact_gain": 0.2, "best_response_value": 0.6}
        return {"training_turns": 10, "exact": exact, "best_response_win_rate": 0.6}

    monkeypatch.setattr(script, "_run_json", report)
    out = tmp_path / "cells.json"
    script.main(
        ["measure", "--out", str(out), "--targets", "rule", "--steps", "10", "--seeds", "0", "--work", str(work)]
    )
    (command,) = commands
    assert command[command.index("--run-name") + 1] == "br_rule_mini6_10_s0_3"
    assert "--run-name br_rule_mini6_10_s0_3" in json.loads(out.read_text())[0]["command"]


def test_a_measurement_stopped_with_ctrl_c_says_so_without_a_traceback(tmp_path):
    out = tmp_path / "cells.json"
    argv = ["measure", "--out", str(out), "--targets", "rule", "--steps", "10", "--seeds", "0"]
    done = run_script_stopped("br_recovery", "s._learned_cell = stop", argv)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert "interrupted" in done.stderr


def test_relative_targets_and_work_are_read_from_where_the_command_is_typed(tmp_path):
    """As --out is: a checkpoint beside the user, and the runs' folder too, not the
    repository's (which held neither, so training.exploit said the checkpoint did not exist)."""
    (tmp_path / "mine.pt").write_bytes((ROOT / "checkpoints" / "shipped" / "ppo_2p.pt").read_bytes())
    argv = ["measure", "--out", "cells.json", "--targets", "mine.pt", "--steps", "100", "--seeds", "0"]
    argv += ["--rounds", "10", "--work", "br_work"]
    # The script finds the repository's code itself: nothing on PYTHONPATH, as a user runs it.
    env = {key: value for key, value in subprocess_env().items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "br_recovery.py"), *argv],
        cwd=tmp_path, env=env, timeout=300, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [cell] = json.loads((tmp_path / "cells.json").read_text())
    assert cell["target"] == "mine.pt" and "--set out_dir=br_work " in cell["command"]
    assert len(list((tmp_path / "br_work").iterdir())) == 1  # the best response's run
    assert not (ROOT / "br_work").exists()


def test_the_default_target_is_the_shipped_network_from_anywhere(tmp_path, monkeypatch):
    """Typed from the repository's root, the default reads as it always has (the cells
    measured so far name it so); from elsewhere, it still names the shipped file."""
    for where, expected in [(ROOT, "checkpoints/shipped/ppo_2p.pt"), (tmp_path, None)]:
        monkeypatch.chdir(where)
        targets = script.default_targets()
        assert targets[0] == "rule" and Path(targets[1]).resolve() == ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"
        assert expected is None or targets[1] == expected
