"""Time one PPO update with this checkout's code against the code of a git revision.

Both sides build the same seeded trainer (``configs/rung_equilibrium.yaml`` on a rung, one
torch thread), play one rollout and time ``ppo_update`` on it, in their own processes, the
two taking turns so that a change in the machine's load falls on both. An update is timed in
CPU seconds of its process (one thread), which another job on the machine barely moves.
Prints each side's fastest update and their ratio: speed work on the trainer quotes it, beside
``python scripts/same_weights.py REV`` for the weights.

    python scripts/update_speed.py HEAD --rules mini8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from same_weights import ROOT, revision_files

# Run inside the code under test: the fastest of ``repeats`` updates on one rollout, in seconds.
TIME_UPDATES = """
import copy, json, sys, tempfile, time, torch
from training.learn.config import load_config
from training.learn.ppo import ppo_update
from training.learn.trainer import SelfPlayTrainer
rules, repeats = sys.argv[1], int(sys.argv[2])
config = load_config("configs/rung_equilibrium.yaml", [f"env.rules={rules}", "torch_threads=1"])
with tempfile.TemporaryDirectory() as folder:
    trainer = SelfPlayTrainer(config, folder + "/run", progress=False)
    buffer, _ = trainer.collect_rollout()
    batch = buffer.batch(config.ppo.gamma, config.ppo.gae_lambda)
    fastest = float("inf")
    for repeat in range(repeats):
        model, optimizer = copy.deepcopy((trainer.model, trainer.optimizer))  # the optimizer on the copy's weights
        model.train()
        began = time.process_time()
        ppo_update(model, optimizer, batch, config.ppo, torch.Generator().manual_seed(repeat), magnet=trainer.magnet)
        fastest = min(fastest, time.process_time() - began)
    trainer.release()
print(json.dumps({"decisions": len(batch), "seconds": fastest}))
"""


def fastest_update(code: Path, rules: str, repeats: int) -> dict:
    """The fastest of ``repeats`` updates with the code in folder ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", TIME_UPDATES, rules, str(repeats)], cwd=code, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"timing the update failed with the code in {code}:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the git revision to compare with (a branch, tag or commit)")
    parser.add_argument("--rules", default="mini8", help="the rung the rollout plays (default: mini8)")
    parser.add_argument("--rounds", type=int, default=3, help="turns each side takes (default: 3)")
    parser.add_argument("--repeats", type=int, default=3, help="updates timed in each turn (default: 3)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeats < 1:
        parser.error("--rounds and --repeats must be at least 1")
    from tqdm import tqdm

    from loveletter_env.rules import check_rules_for_table

    try:  # before any child process starts, whose traceback would be all the answer
        check_rules_for_table(args.rules, 2)
    except ValueError as err:
        parser.error(f"--rules: {err}")
    try:
        with revision_files(args.revision) as other, tqdm(total=2 * args.rounds, desc="timing", unit="side") as bar:
            best = {"here": float("inf"), args.revision: float("inf")}
            for _ in range(args.rounds):
                for side, code in (("here", ROOT), (args.revision, other)):
                    timed = fastest_update(code, args.rules, args.repeats)
                    best[side] = min(best[side], timed["seconds"])
                    bar.update()
    except KeyboardInterrupt:  # the timing processes had the Ctrl-C too; a sentence, not a traceback
        print("\nupdate_speed.py: interrupted; no timing is reported", file=sys.stderr)
        return 130
    tries = args.rounds * args.repeats
    what = f"{timed['decisions']:,} decisions of {args.rules}"
    print(f"one PPO update on {what} (one thread, CPU time, fastest of {tries}):")
    for side, seconds in best.items():
        print(f"  {side}: {seconds * 1000:.0f} ms")
    print(f"  {args.revision} / here: {best[args.revision] / best['here']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
