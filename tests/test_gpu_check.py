"""scripts/gpu_check.sh in its smoke mode, on the CPU: the one call a GPU machine gets must
not first fail there. Every kernel variant is timed, self-play runs and its network is
exported, and the table names them all (the variants' play is checked by
tests/core/test_cuda.py). The variants themselves are the script's to choose: the test checks
their shape, not their names."""

from __future__ import annotations

import importlib.util
import json
import os
import re
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
    env_rows = [r for r in rows if r["what"] == "env"]
    timed = {(r["variant"], r["games"], r["observations"]) for r in env_rows}
    # The variants are the script's to retune: what is checked is their shape. Several are timed,
    # each written as the script's --variants reads it, each at both sizes, with and without
    # observations, and the env's default is one of them (marked, and starred in the table).
    variants = {r["variant"] for r in env_rows}
    assert len(variants) >= 2, variants
    for variant in variants:
        assert re.fullmatch(r"[1-9]\d*,(shared|global),(zeroed|whole)(,r[1-9]\d*)?", variant), variant
    sizes = {r["games"] for r in env_rows}
    assert len(sizes) >= 2, sizes
    assert timed == {(v, g, o) for v in variants for g in sizes for o in (True, False)}
    defaults = {r["variant"] for r in env_rows if r.get("default")}
    assert len(defaults) == 1, f"one variant is the env's default, got {sorted(defaults)}"
    assert f"{defaults.pop()} * (obs)" in result.stdout
    (run,) = [r for r in rows if r["what"] == "training"]
    assert run["turns"] >= 4096 and run["turns_per_s"] > 0 and run["end_to_end_turns_per_s"] > 0
    assert abs(sum(v for k, v in run.items() if k.startswith("share_")) - 1) < 0.2
    network = load_checkpoint(tmp_path / "network.pt")
    assert "model" in network and "training" not in network
    assert "self-play:" in result.stdout


def _gpu_check_module():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _refused(script, argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        script.main(argv)
    assert stop.value.code == 2, argv
    return capsys.readouterr().err


def test_bad_kernel_variants_are_named(tmp_path, capsys):
    """A variant is parsed into the CUDA core's own KernelVariant, which needs numba-cuda (the
    cuda extra) but no GPU."""
    pytest.importorskip("numba_cuda")
    script = _gpu_check_module()
    bad = [("0,shared,zeroed", "threads_per_block must be"), ("64,bad,zeroed", "a variant is THREADS,")]
    for variant, message in bad:
        argv = ["env", "--device", "cpu", "--sizes", "4", "--variants", variant, "--out", str(tmp_path / "out")]
        assert message in _refused(script, argv, capsys), argv
    assert not (tmp_path / "out").exists()


def test_bad_arguments_are_named_before_any_measure(tmp_path, capsys):
    """Each step's arguments, checked on the CPU: a bad one is named (exit status 2), never
    measured as something else (--steps 0 as 1), failed measure by measure with exit status 0
    (a size of 0, an unknown device), or met as a traceback (--repeats 0, a missing run)."""
    script = _gpu_check_module()
    (tmp_path / "notes").write_text("x")
    out = str(tmp_path / "out")
    for argv, message in [
        (
            ["env", "--device", "cpu", "--sizes", "4", "--repeats", "0"],
            "--repeats: must be an integer of at least 1, got 0",
        ),
        (
            ["env", "--device", "cpu", "--sizes", "4", "--steps", "0"],
            "--steps: must be an integer of at least 1, got 0",
        ),
        (["env", "--device", "cpu", "--sizes", "4", "0"], "--sizes: must be an integer of at least 1, got 0"),
        (["env", "--device", "nonsense", "--sizes", "4"], "--device: must be cpu or cuda (cuda:N), got 'nonsense'"),
        (["pgx", "--sizes", "-4"], "--sizes: must be an integer of at least 1, got -4"),
        (["training", "--run-dir", str(tmp_path)], f"--run-dir '{tmp_path}' holds no metrics.csv"),
        (["table", "--out", str(tmp_path / "notes")], "is a file, not a folder"),
    ]:
        if "--out" not in argv:
            argv = [*argv, "--out", out]
        assert message in _refused(script, argv, capsys), argv
    assert not (tmp_path / "out").exists()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.csv").write_text("global_step,elapsed_s\n")
    for argv, message in [
        (["--wall", "-1"], "--wall must be a positive number of seconds, got -1.0"),
        (["--export", str(tmp_path / "notes" / "network.pt")], "--export "),
    ]:
        with pytest.raises(SystemExit) as stop:
            script.main(["training", "--run-dir", str(tmp_path / "run"), "--out", out, *argv])
        assert stop.value.code == 2 and message in capsys.readouterr().err, argv
