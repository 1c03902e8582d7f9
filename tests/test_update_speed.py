"""scripts/update_speed.py: times one PPO update with this checkout's code and a revision's."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT, SAME_REVISION, run_script_stopped, subprocess_env

SCRIPT = str(ROOT / "scripts" / "update_speed.py")


def test_times_both_sides_and_prints_their_ratio():
    done = subprocess.run(
        [sys.executable, SCRIPT, "HEAD", "--rules", "mini6", "--rounds", "1", "--repeats", "1"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    times = dict(re.findall(r"^  (here|HEAD): (\d+) ms$", done.stdout, re.M))
    assert set(times) == {"here", "HEAD"} and all(int(ms) > 0 for ms in times.values()), done.stdout
    assert re.search(r"decisions of mini6 \(one thread, CPU time, fastest of 1\)", done.stdout)
    ratio = float(re.search(r"HEAD / here: ([\d.]+)$", done.stdout, re.M).group(1))
    assert abs(ratio - int(times["HEAD"]) / int(times["here"])) < 0.02


def test_a_revision_git_cannot_read_is_named():
    done = subprocess.run(
        [sys.executable, SCRIPT, "no-such-revision"], capture_output=True, text=True, env=subprocess_env(), timeout=60
    )
    assert done.returncode == 2
    assert "git cannot read revision 'no-such-revision'" in done.stderr


def test_rules_that_are_no_2_player_game_are_refused_before_any_timing():
    done = subprocess.run(
        [sys.executable, SCRIPT, "HEAD", "--rules", "mini8_3p"], capture_output=True, text=True, env=subprocess_env()
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--rules:" in done.stderr and "mini8_3p" in done.stderr


def test_a_timing_stopped_with_ctrl_c_says_so_without_a_traceback():
    done = run_script_stopped("update_speed", f"s.fastest_update = stop\n{SAME_REVISION}", ["HEAD", "--rules", "mini6"])
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert "update_speed.py: interrupted; no timing is reported" in done.stderr
