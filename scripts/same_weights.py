"""Check that a change to the trainer leaves seeded CPU runs the same to the bit.

Trains the same tiny seeded CPU runs with this checkout's code and with the code of a git
revision (unpacked into a temporary folder with ``git archive``), each in its own process,
and compares the final weights and Adam state. Speed work on the trainer must pass it:

    python scripts/same_weights.py main

Exit status 0 when every run matches, 1 when one differs, 130 when stopped with Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Tiny runs covering each rollout path: pure self-play at 2 and at 2-4 players, the general
#: path with past networks and bots, and early stopping on the KL without the magnet.
BASE = ["env.num_games=16", "env.rollout_steps=8", "model.hidden_sizes=[32]", "torch_threads=1", "eval.every=0"]
SELF_PLAY = ["opponents.current=1", "opponents.past=0", "opponents.bots=0"]
RUNS = {
    "self-play": [*BASE, *SELF_PLAY, "env.rules=[classic,mini6]", "total_steps=1024"],
    "self-play 2-4 players": [
        *BASE,
        *SELF_PLAY,
        "env.rules=[classic]",
        "env.num_players=[2,3,4]",
        "env.episode=game",
        "total_steps=1024",
    ],
    "past and bots": [
        *BASE,
        "opponents.current=0.6",
        "opponents.past=0.25",
        "opponents.bots=0.15",
        "opponents.snapshot_every=1",
        "opponents.bot_names=[rule,random]",
        "total_steps=1024",
    ],
    "target_kl, no magnet": [*BASE, *SELF_PLAY, "ppo.magnet_coef=0", "ppo.target_kl=0.001", "total_steps=768"],
}

# Run inside the code under test (its folder first on sys.path): train each run, save the states.
TRAIN = """
import json, sys, tempfile, torch
from training.learn.config import load_config
from training.learn.trainer import SelfPlayTrainer
runs, states = json.loads(sys.argv[1]), {}
for name, overrides in runs.items():
    with tempfile.TemporaryDirectory() as folder:
        trainer = SelfPlayTrainer(load_config(None, overrides), folder + "/run", progress=False)
        trainer.train()
        states[name] = {"model": trainer.model.state_dict(), "adam": trainer.optimizer.state_dict()["state"]}
torch.save(states, sys.argv[2])
"""


def train(code: Path, out: Path) -> None:
    """The runs with the code in folder ``code``, their states saved to ``out``."""
    done = subprocess.run([sys.executable, "-c", TRAIN, json.dumps(RUNS), str(out)], cwd=code, capture_output=True)
    if done.returncode:
        raise SystemExit(f"the runs failed with the code in {code}:\n{done.stderr.decode()}")


def same(a: object, b: object) -> bool:
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and torch.equal(a, b)
    return a == b


@contextlib.contextmanager
def revision_files(revision: str) -> Iterator[Path]:
    """A temporary folder holding the files of git ``revision``. When git cannot read that
    revision, the script stops there with status 2, saying why."""
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True)
    if archive.returncode:
        print(f"git cannot read revision {revision!r}: {archive.stderr.decode().strip()}", file=sys.stderr)
        raise SystemExit(2)
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
        yield Path(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the git revision to compare with (a branch, tag or commit)")
    args = parser.parse_args(argv)
    import torch

    try:
        with revision_files(args.revision) as other, tempfile.TemporaryDirectory() as tmp:
            train(ROOT, Path(tmp) / "here.pt")
            train(other, Path(tmp) / "other.pt")
            here, there = (torch.load(Path(tmp) / f, weights_only=True) for f in ("here.pt", "other.pt"))
    except KeyboardInterrupt:  # the runs' processes had the Ctrl-C too; a sentence, not a traceback
        print("\nsame_weights.py: interrupted; nothing was compared", file=sys.stderr)
        return 130
    differ = [name for name in RUNS if not same(here[name], there[name])]
    for name in RUNS:
        print(f"{name}: {'DIFFERENT' if name in differ else 'same weights and Adam state'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
