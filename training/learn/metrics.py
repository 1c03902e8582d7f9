"""A training run's metrics: ``metrics.csv``, TensorBoard scalars and ``learning_curve.png``.

:class:`MetricsLog` writes one CSV row per update (the evaluation columns filled on the
updates that evaluated) and the same scalars to TensorBoard under ``train/`` and ``eval/``;
on resume it drops the rows written after the checkpoint it resumes from.
:func:`plot_learning_curve` draws the run's curves from the CSV file.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loveletter_env.atomic_files import replacing
from training.measure.plotting import load_plotting

#: The columns every row has; each evaluation opponent adds three (win rate and its interval).
#: Every scalar the trainer's row holds needs one: :meth:`MetricsLog.write` keeps only these
#: in the CSV file (TensorBoard gets every scalar of the row).
TRAIN_COLUMNS = (
    "update",
    "global_step",
    "stage",  # the schedule stage in force (0: the base sections, i: schedule[i - 1])
    "elapsed_s",
    "cpu_s",
    "turns_per_s",
    "learning_rate",
    "ent_coef",  # the entropy bonus weight of this update (ppo.ent_coef_end anneals it)
    "learner_decisions",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "magnet_kl",  # KL(policy || magnet), the magnet's loss term (blank when ppo.magnet_coef is 0)
    "explained_variance",
    "win_rate_vs_past",
    "win_rate_vs_bots",
    "episodes",
    # Seconds of this update in each part of the work (training.learn.stopwatch).
    "env_s",
    "forward_s",
    "bots_s",
    "update_s",
    "bookkeeping_s",  # the rest of the rollout: buffer, advantages, seating draws
)


class MetricsLog:
    """One CSV row per update (evaluation columns filled when an evaluation ran) and the
    same scalars in TensorBoard."""

    def __init__(self, run_dir: Path, eval_opponents: Sequence[str], resume_update: int | None, resume_step: int = 0):
        """Open the run's log; ``resume_update`` and ``resume_step`` are the update and turn
        count of the checkpoint a resumed run continues from (``resume_update`` None: a new run)."""
        self.path = run_dir / "metrics.csv"
        self.columns = list(TRAIN_COLUMNS)
        for name in eval_opponents:
            self.columns += [f"eval_win_rate_{name}", f"eval_ci95_low_{name}", f"eval_ci95_high_{name}"]
        rows: list[dict[str, str]] = []
        if resume_update is not None and self.path.exists():
            # Rows written after the checkpoint we resume from would be repeated: drop them.
            with self.path.open(newline="") as f:
                rows = [r for r in csv.DictReader(f) if int(r["update"]) <= resume_update]
        #: The training time (wall and CPU seconds) of the rows kept: a resumed run's
        #: ``elapsed_s`` and ``cpu_s`` go on from them, so that a curve against time spans the run.
        self.elapsed_before = _seconds(rows[-1], "elapsed_s") if rows else 0.0
        self.cpu_before = _seconds(rows[-1], "cpu_s") if rows else 0.0
        # The kept rows replace the file whole: a rewrite cut short (a full disk, a Ctrl-C)
        # leaves the old file for the next resume rather than an empty one.
        with replacing(self.path) as temporary, temporary.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(rows)
        self._file = self.path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns)
        from torch.utils.tensorboard import SummaryWriter

        # TensorBoard's steps are turn counts (as in write): it hides the events the earlier
        # process logged after the checkpoint's turn, which the resumed run logs again.
        purge_step = None if resume_update is None else resume_step + 1
        self.tb = SummaryWriter(str(run_dir / "tb"), purge_step=purge_step)

    def write(self, row: dict[str, Any]) -> None:
        self._writer.writerow({k: row.get(k, "") for k in self.columns})
        self._file.flush()
        step = int(row["global_step"])
        for key, value in row.items():
            if key not in ("update", "global_step") and isinstance(value, (int, float)) and math.isfinite(value):
                group = "eval" if key.startswith("eval_") else "train"
                self.tb.add_scalar(f"{group}/{key}", value, step)

    def close(self) -> None:
        self._file.close()
        self.tb.close()


def _seconds(row: dict[str, str], column: str) -> float:
    value = float(row.get(column) or "nan")
    return value if math.isfinite(value) else 0.0


def plot_learning_curve(csv_path: Path, png_path: Path) -> Path | None:
    """PNG of evaluation win rates, training win rates and policy entropy against turns played."""
    plt = load_plotting()

    with csv_path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None

    def plot(ax: Any, key: str, **kwargs: Any) -> None:
        pts = [(float(r["global_step"]), float(r[key])) for r in rows if r.get(key) not in (None, "", "nan")]
        if pts:
            ax.plot(*zip(*pts), **kwargs)

    fig, (ax_eval, ax_train, ax_ent) = plt.subplots(1, 3, figsize=(15, 4))
    for key in [c for c in rows[0] if c.startswith("eval_win_rate_")]:
        name = key.removeprefix("eval_win_rate_")
        plot(ax_eval, key, marker="o", label=f"vs {name}")
        band = [
            (float(r["global_step"]), float(r[f"eval_ci95_low_{name}"]), float(r[f"eval_ci95_high_{name}"]))
            for r in rows
            if r.get(key) not in (None, "")
        ]
        if band:
            ax_eval.fill_between(*zip(*band), alpha=0.2, color=ax_eval.lines[-1].get_color())
    ax_eval.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax_eval.set(title="evaluation win rate", xlabel="turns played", ylim=(0, 1))
    for key in ("win_rate_vs_past", "win_rate_vs_bots"):
        plot(ax_train, key, label=key.replace("_", " "))
    ax_train.set(title="training win rate (learner seat)", xlabel="turns played", ylim=(0, 1))
    plot(ax_ent, "entropy")
    ax_ent.set(title="policy entropy (legal actions)", xlabel="turns played")
    for ax in (ax_eval, ax_train):
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
