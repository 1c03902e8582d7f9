"""The command-line tools say when they compile the game's kernels, and only then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from conftest import ROOT

from training.learn.compile_notice import _NOTICE, COMPILING_KERNELS, announce_kernel_compilation


def _evaluate(cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.evaluate", "rule", "random", "--rounds", "2", "--no-progress"],
        cwd=ROOT,
        env={**os.environ, "NUMBA_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_first_run_says_it_compiles_once_and_a_cached_run_says_nothing(tmp_path):
    first = _evaluate(tmp_path)  # an empty cache: every kernel the run needs compiles
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(COMPILING_KERNELS) == 1, first.stderr
    again = _evaluate(tmp_path)  # the same kernels, loaded from the cache
    assert again.returncode == 0, again.stderr
    assert COMPILING_KERNELS not in again.stderr
    assert again.stdout == first.stdout


def test_the_notice_is_said_once_however_often_it_is_installed(monkeypatch, capsys):
    monkeypatch.setattr(_NOTICE, "said", False)
    announce_kernel_compilation()
    announce_kernel_compilation()

    @numba.njit
    def twice(x):
        return 2 * x

    @numba.njit
    def thrice(x):
        return 3 * x

    assert twice(2) == 4
    assert capsys.readouterr().err == COMPILING_KERNELS + "\n"
    assert thrice(2) == 6
    assert capsys.readouterr().err == ""


FORKED_WORKERS = """
import os, sys
import numba
import pytest
from training.learn.compile_notice import announce_kernel_compilation

announce_kernel_compilation()

@numba.njit
def double(x):
    return 2 * x

children = []
for _ in range(3):  # as training.evaluate --workers 3 forks its pool: each worker compiles for itself
    pid = os.fork()
    if pid == 0:
        double(2)
        sys.stderr.flush()
        os._exit(0)
    children.append(pid)
for pid in children:
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers are POSIX's")
def test_workers_forked_by_one_command_say_it_once_between_them():
    # Each worker of `training.evaluate --workers N` on a first run used to print the notice:
    # the same line N times.
    run = subprocess.run([sys.executable, "-c", FORKED_WORKERS], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count(COMPILING_KERNELS) == 1, run.stderr
