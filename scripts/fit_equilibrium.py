"""Fit a trained network to a ladder rung's exact equilibrium, and measure how near it gets.

A diagnostic of the network, not a way to train agents: it asks how near to an equilibrium
the network's architecture can be at all, apart from how self-play finds it. The rung is
solved with CFR+ (``training.solve``'s solver); the network (the checkpoint's architecture,
from its weights or, with ``--fresh``, from new ones) is then fitted to the solution at every
information set by the KL divergence from the equilibrium's action probabilities to its own,
each set weighted by how much its play can cost (its chance of being reached when the
equilibrium plays its own seat, see ``TreeWorkspace.own_reach``). The fitted network's exact
exploitability, sampled, is printed as it goes; ``--out`` saves it as a checkpoint that
``python -m training.exploit FILE --exact --sampled --rules RUNG`` measures again.

    python scripts/fit_equilibrium.py RUN/result.pt --rules mini8 --epochs 60 --out fitted.pt
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loveletter_env.actions import NUM_ACTIONS  # noqa: E402
from loveletter_env.tree import build_tree, key_to_observation, rung_rules  # noqa: E402
from loveletter_env.validation import check_new_file, check_seed  # noqa: E402
from training.exploitability.cfr import TreeWorkspace  # noqa: E402
from training.exploitability.solver import check_rung_and_target, solve  # noqa: E402
from training.learn.checkpoint import (  # noqa: E402
    build_model,
    check_not_training_state,
    load_checkpoint,
    model_payload,
    resolve_checkpoint_path,
    save_checkpoint,
)
from training.learn.ppo import masked_logits  # noqa: E402

MEASURE_BATCH = 16384


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a trained network (its architecture, and its weights unless --fresh)")
    parser.add_argument("--rules", default="mini8", help="the 2-player ladder rung (default: mini8)")
    parser.add_argument("--epochs", type=int, default=60, help="passes over every information set (default: 60)")
    parser.add_argument("--batch", type=int, default=1024, help="information sets per Adam step (default: 1024)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate, annealed to 0 (default: 1e-3)")
    parser.add_argument("--fresh", action="store_true", help="start from new weights, not the checkpoint's")
    parser.add_argument("--seed", type=int, default=0, help="seeds new weights and the batch order (default: 0)")
    parser.add_argument("--measure-every", type=int, default=10, help="measure every this many epochs (default: 10)")
    parser.add_argument("--solve-target", type=float, default=2e-4, help="CFR+ solves to this (default: 2e-4)")
    parser.add_argument("--out", help="save the fitted network here, as a checkpoint (a new file, unless --force)")
    parser.add_argument("--force", action="store_true", help="replace an existing --out file")
    args = parser.parse_args(argv)
    for name in ("epochs", "batch", "measure_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if not 0 < args.lr <= 1:
        parser.error(f"--lr must be in (0, 1], got {args.lr}")
    try:  # torch would wrap a negative seed round, and refuse one past 2**64 only after the solve
        check_seed(args.seed, "--seed")
    except ValueError as err:
        parser.error(str(err))
    check_rung_and_target(parser, args.rules, args.solve_target)
    try:
        if args.out:  # named now, before the minutes of fitting whose result it would lose
            # A run folder fits the file it loads (its result.pt, best.pt or latest.pt): that file is the one to spare.
            if Path(args.out).resolve() == resolve_checkpoint_path(args.checkpoint).resolve():
                raise ValueError(f"--out {args.out!r} is the checkpoint being fitted: write the fitted one elsewhere")
            check_new_file("--out", args.out, replace=args.force)
            check_not_training_state("--out", args.out)
        checkpoint = load_checkpoint(args.checkpoint)
        tree = build_tree(rung_rules(args.rules))
    except (ValueError, FileNotFoundError) as err:  # CheckpointError and TreeError among them
        parser.error(str(err))
    torch.set_num_threads(1)
    began = time.perf_counter()
    solved = solve(tree.rules, target=args.solve_target, tree=tree)
    equilibrium = solved.policy.probabilities
    print(f"{args.rules}: solved to {solved.exploitability:.6f} in {solved.iterations} CFR+ iterations", flush=True)

    workspace = TreeWorkspace(tree)
    counts = np.diff(tree.action_offsets)
    sets = np.flatnonzero(counts > 1)
    reach = workspace.own_reach(equilibrium)[sets]
    weights = torch.tensor(0.5 + 0.5 * reach / reach.mean(), dtype=torch.float32)
    # Each fitted set's entries of the tree's per-action arrays, and the row and action each fills.
    flat = np.concatenate([np.arange(tree.action_offsets[i], tree.action_offsets[i + 1]) for i in sets])
    rows = np.repeat(np.arange(len(sets)), counts[sets])
    columns = tree.actions[flat]
    obs = torch.tensor(np.stack([key_to_observation(tree.key(int(i))) for i in sets]), dtype=torch.float32)
    legal = torch.zeros((len(sets), NUM_ACTIONS), dtype=torch.bool)
    legal[rows, columns] = True
    target = torch.zeros((len(sets), NUM_ACTIONS), dtype=torch.float32)
    target[rows, columns] = torch.from_numpy(equilibrium[flat]).float()

    model = build_model(checkpoint)
    if args.fresh:
        model.reset_parameters(torch.Generator().manual_seed(args.seed))

    def exploitability() -> float:
        model.eval()
        with torch.no_grad():
            probs = torch.cat(
                [
                    torch.softmax(
                        masked_logits(model(obs[s : s + MEASURE_BATCH])[0], legal[s : s + MEASURE_BATCH]).double(), -1
                    )
                    for s in range(0, len(sets), MEASURE_BATCH)
                ]
            ).numpy()
        model.train()
        strategy = equilibrium.copy()
        strategy[flat] = probs[rows, columns]
        return workspace.exploitability(strategy).exploitability

    curve = [{"epoch": 0, "exploitability": exploitability()}]
    print(f"epoch 0: exploitability {curve[-1]['exploitability']:.4f}", flush=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps = args.epochs * -(-len(sets) // args.batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    order = torch.Generator().manual_seed(args.seed)
    for epoch in tqdm(range(1, args.epochs + 1), desc="fitting", unit="pass", dynamic_ncols=True):
        total = 0.0
        for chunk in torch.randperm(len(sets), generator=order).split(args.batch):
            log_probs = torch.log_softmax(masked_logits(model(obs[chunk])[0], legal[chunk]), -1)
            y = target[chunk]
            kl = (y * (y.clamp_min(1e-12).log() - log_probs)).masked_fill(~legal[chunk], 0).sum(-1)
            loss = (kl * weights[chunk]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.item() * len(chunk)
        if epoch % args.measure_every == 0 or epoch == args.epochs:
            curve.append({"epoch": epoch, "loss": total / len(sets), "exploitability": exploitability()})
            tqdm.write(
                f"epoch {epoch}: loss {curve[-1]['loss']:.4f}, exploitability {curve[-1]['exploitability']:.4f}",
            )
    if args.out:
        fitted = copy.deepcopy(checkpoint)
        fitted.pop("sha256", None)
        fitted.pop("training", None)  # a run's optimizer, pool and magnet belong to the weights before the fit
        fitted["model"] = model_payload(model)
        # What was fitted is a mixed strategy: the file plays it by sampling unless told otherwise.
        config = fitted.get("config") if isinstance(fitted.get("config"), dict) else {}
        fitted["config"] = {**config, "eval": {**(config.get("eval") or {}), "greedy": False}}
        save_checkpoint(args.out, fitted)
    print(
        json.dumps(
            {
                "checkpoint": args.checkpoint,
                "rules": args.rules,
                "hidden_sizes": list(model.hidden_sizes),
                "fresh": args.fresh,
                "equilibrium_exploitability": solved.exploitability,
                "information_sets": len(sets),
                "curve": curve,
                "seconds": round(time.perf_counter() - began, 1),
                "out": args.out,
            }
        )
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("fit_equilibrium.py: interrupted; nothing was saved", file=sys.stderr)
        sys.exit(130)
