"""scripts/gpu_check.sh in its smoke mode, on the CPU: the one call a GPU machine gets must
not first fail there. Every kernel variant is timed, self-play runs and its network is
exported, and the table names them all (the variants' play is checked by
tests/core/test_cuda.py)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT

from training.learn.checkpoint import load_checkpoint


def test_smoke_run_checks_times_and_trains(tmp_path):
    pytest.importorskip("numba_cuda")
    env = {
        **os.environ,
        "OUT": str(tmp_path),
        "GPU_CHECK_SMOKE": "1",
        "GPU_CHECK_SKIP": "tests pgx",  # the tests run in CI anyway; pgx is optional here
        "PYTHONPATH": str(ROOT),
    }
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    steps = (tmp_path / "steps.txt").read_text()
    for step in ("env", "training"):
        assert f"{step:<10} exit   0" in steps, steps
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    timed = {(r["variant"], r["games"], r["observations"]) for r in rows if r["what"] == "env"}
    variants = {
        "64,shared,zeroed",
        "128,shared,zeroed",
        "64,global,zeroed",
        "64,global,zeroed,r64",
        "64,global,zeroed,r40",
    }
    assert timed == {(v, g, o) for v in variants for g in (64, 256) for o in (True, False)}
    (run,) = [r for r in rows if r["what"] == "training"]
    assert run["turns"] >= 4096 and run["turns_per_s"] > 0 and run["end_to_end_turns_per_s"] > 0
    assert abs(sum(v for k, v in run.items() if k.startswith("share_")) - 1) < 0.2
    network = load_checkpoint(tmp_path / "network.pt")
    assert "model" in network and "training" not in network
    assert "64,shared,zeroed * (obs)" in result.stdout and "self-play:" in result.stdout
