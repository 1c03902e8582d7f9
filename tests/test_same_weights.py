"""scripts/same_weights.py: seeded CPU runs with this checkout's code against a revision's."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, subprocess_env


def test_a_comparison_stopped_with_ctrl_c_says_so_without_a_traceback():
    # The training of the runs replaced by a Ctrl-C, the revision's files by this checkout's.
    code = (
        f"import contextlib, sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import same_weights as s\n"
        "def stopped(*args): raise KeyboardInterrupt\n"
        "s.train = stopped\n"
        "s.revision_files = lambda revision: contextlib.nullcontext(s.ROOT)\n"
        "sys.exit(s.main(['HEAD']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), timeout=120, capture_output=True, text=True
    )
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert "same_weights.py: interrupted; nothing was compared" in done.stderr
