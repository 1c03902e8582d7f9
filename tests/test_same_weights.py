"""scripts/same_weights.py: seeded CPU runs with this checkout's code against a revision's."""

from __future__ import annotations

from conftest import SAME_REVISION, run_script_stopped


def test_a_comparison_stopped_with_ctrl_c_says_so_without_a_traceback():
    done = run_script_stopped("same_weights", f"s.train = stop\n{SAME_REVISION}", ["HEAD"])
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert "same_weights.py: interrupted; nothing was compared" in done.stderr
