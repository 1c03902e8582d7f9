"""A run's folder (``training.learn.runtime``): one run per folder, named owners of a lock, and
unwritable or full disks named in a sentence before or during the run."""

from __future__ import annotations

import csv
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, TINY_TRAINING

from training.learn.checkpoint import load_checkpoint
from training.learn.runtime import LOCK_FILE, RunFolderError, RunLock, claim_run_folder
from training.selfplay import main as selfplay_main

TINY_RUN = [*TINY_TRAINING, "total_steps=256", "save_every=1", "eval.every=0"]


def tiny_run_args(out_dir: Path, run_name: str) -> list[str]:
    args = ["--no-progress", "--run-name", run_name, "--set", f"out_dir={out_dir}"]
    for item in TINY_RUN:
        args += ["--set", item]
    return args


def test_a_run_folder_in_use_is_refused_naming_the_owner(tmp_path, capsys):
    # Two runs started together with one run name used to write into one folder, both "successfully".
    run = tmp_path / "same"
    run.mkdir()
    with RunLock(run):
        with pytest.raises(SystemExit) as exit_info:
            selfplay_main(tiny_run_args(tmp_path, "same"))
        assert exit_info.value.code == 2
        assert f"run folder '{run}' is in use by another run (pid {os.getpid()})" in capsys.readouterr().err
        assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE]  # nothing of the refused run was written
    summary = selfplay_main(tiny_run_args(tmp_path, "same"))  # free again once released
    assert summary["global_step"] == 256
    assert RunLock(run).acquire().held  # and free again once the run is over


LOCK_HOLDER = """
import sys, time
from training.learn.runtime import RunLock
lock = RunLock(sys.argv[1]).acquire()  # held while referenced
print("held", flush=True)
time.sleep(120)
"""


def test_another_processs_lock_names_its_pid_and_dies_with_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(run)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderError, match=rf"is in use by another run \(pid {holder.pid}\)"):
            claim_run_folder(run)
    finally:
        holder.kill()  # as a crash would: the process ends without releasing anything
        holder.wait()
    lock = claim_run_folder(run)  # a dead owner's lock does not hold the folder
    assert (run / LOCK_FILE).read_text().strip() == str(os.getpid())
    lock.release()


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_an_unwritable_out_dir_is_named_before_the_run(tmp_path, capsys, where):
    if where == "under a file":
        (tmp_path / "notes").write_text("x")
        out_dir, why = tmp_path / "notes" / "runs", f"'{tmp_path / 'notes'}' is a file, not a folder"
    else:
        if not sys.platform.startswith("linux"):
            pytest.skip("/proc is Linux's")
        out_dir, why = Path("/proc/runs"), "creating a file in '/proc' fails"
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(out_dir, "r"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"run folder '{out_dir / 'r'}' cannot be written: {why}" in err and "Traceback" not in err


def test_a_full_disk_stops_training_with_a_sentence_and_keeps_the_last_save(tmp_path, capsys, monkeypatch):
    import training.learn.checkpoint as checkpoint_module

    real_open, opened = open, []

    def open_on_a_disk_that_fills(path, *args, **kwargs):
        opened.append(Path(path).name)
        if opened.count(Path(path).name) == 2 and Path(path).name.startswith(".latest.pt"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # the second save of latest.pt
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(checkpoint_module, "open", open_on_a_disk_that_fills, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(tmp_path, "full"))
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    run = tmp_path / "full"
    assert f"cannot save '{run / 'latest.pt'}': the disk is full; the latest.pt already there is unchanged" in err
    assert f"resume with: python -m training.selfplay --resume {run}" in err
    assert load_checkpoint(run / "latest.pt")["update"] == 1
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]
    assert RunLock(run).acquire().held  # the stopped run let go of its folder


def test_two_runs_started_together_with_one_name_leave_one_consistent_run(tmp_path):
    # They used to both exit 0, metrics.csv interleaved and config.yaml from one with the weights of the other.
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "training.selfplay", *tiny_run_args(tmp_path, "twin"), "--set", f"seed={seed}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    results = [(run.returncode, out, err) for run, (out, err) in zip(runs, outputs)]
    assert sorted(code for code, _, _ in results) == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    folder = f"'{tmp_path / 'twin'}'"
    assert f"{folder} is in use by another run (pid " in refused or f"{folder} already holds a run" in refused
    assert "Traceback" not in refused
    run = tmp_path / "twin"
    saved = load_checkpoint(run / "latest.pt")
    assert yaml.safe_load((run / "config.yaml").read_text())["seed"] == saved["config"]["seed"]
    with (run / "metrics.csv").open(newline="") as f:
        assert [int(row["update"]) for row in csv.DictReader(f)] == [1, 2]


def test_a_disk_that_fills_under_metrics_csv_is_named_too(tmp_path, capsys, monkeypatch):
    from training.learn.metrics import MetricsLog

    write, rows = MetricsLog.write, []

    def write_until_full(self, row):
        rows.append(row)
        if len(rows) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(self, row)

    monkeypatch.setattr(MetricsLog, "write", write_until_full)
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(tmp_path, "full"))
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert f"error: cannot write in '{tmp_path / 'full'}': the disk is full." in err and "Traceback" not in err
    assert load_checkpoint(tmp_path / "full" / "latest.pt")["update"] == 1


def test_a_run_name_too_long_for_the_file_system_is_named_not_a_traceback(tmp_path, capsys):
    # 200 characters pass run_name's bound, but as UTF-8 they are 400 bytes: more than a file
    # system's 255-byte names. Looking the folder up fails, which used to end in an OSError traceback.
    name = "é" * 200
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(tmp_path, name))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"run folder '{tmp_path / name}'" in err and os.strerror(errno.ENAMETOOLONG) in err, err
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(["--resume", str(tmp_path / name)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"--resume: '{tmp_path / name}'" in err and os.strerror(errno.ENAMETOOLONG) in err, err
    assert list(tmp_path.iterdir()) == []
