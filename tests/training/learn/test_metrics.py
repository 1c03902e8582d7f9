"""training.learn.metrics: what a run's ``metrics.csv`` holds."""

from __future__ import annotations

import csv

from conftest import TINY_TRAINING

from training.learn.config import load_config
from training.learn.metrics import MetricsLog
from training.learn.trainer import SelfPlayTrainer


def test_every_scalar_the_run_logs_has_a_column(tmp_path, monkeypatch):
    """The row's ``magnet_kl`` (the magnet's loss term, on in the default recipe) and ``stage``
    reached TensorBoard but were dropped from ``metrics.csv`` without a word."""
    written: list[dict] = []
    write = MetricsLog.write
    monkeypatch.setattr(MetricsLog, "write", lambda log, row: (written.append(row), write(log, row))[1])
    overrides = [*TINY_TRAINING, "eval.every=0", "total_steps=256", "ppo.magnet_coef=0.2"]
    run = tmp_path / "run"
    SelfPlayTrainer(load_config(None, overrides), run, progress=False).train()
    with (run / "metrics.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        rows, columns = list(reader), reader.fieldnames or []
    assert written and all(set(row) <= set(columns) for row in written), set(written[0]) - set(columns)
    assert all(row["magnet_kl"] not in ("", "nan") and row["stage"] == "0" for row in rows)
