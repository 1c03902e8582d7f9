"""Solve one round of a ladder rung exactly: ``python -m training.solve mini6``.

CFR+ (regret matching+, alternating updates, the average strategy weighted by the
iteration number) runs in compiled code over the whole tree of the round, built with the
project's own compiled core (:mod:`training.game_tree`). After each of a geometric series
of iterations the average strategy's exploitability is computed exactly, by a best
response in each seat on the same tree; the run stops when it reaches ``target`` (or
after ``iterations``). Units are the project's: a round scores 1 for a win alone, ½ for a
shared win, 0 for a loss; player 0 moves first.

Outputs in ``--out``: ``policy.npz`` (the equilibrium, in the format of
:mod:`loveletter_env.agents.solved`, playable as the agent ``solved:path=FILE``),
``convergence.png`` (exploitability against iterations), ``result.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from loveletter_env import __version__
from loveletter_env.agents.solved import SolvedPolicy
from loveletter_env.rules import PRESETS, Rules

from .game_tree import INFORMATION_KINDS, GameTree, TreeError, TreeWorkspace, build_tree, cfr_plus_iterations

#: The exploitability the ladder's targets ask for.
DEFAULT_TARGET = 1e-3
DEFAULT_ITERATIONS = 10_000


@dataclass
class SolveResult:
    """What :func:`solve` found (scores in the project's units, player 0 moving first).

    Attributes:
        rules: the rung's preset name.
        information: what information sets hold (``"observations"`` or ``"full"``).
        iterations: CFR+ iterations run.
        exploitability: the mean, over the two seats, of an exact best response's expected
            score against the average strategy, minus 0.5.
        first_player_score: player 0's expected score when both seats play the average strategy.
        best_response_as_first: a best response's expected score in seat 0 (and as second, in seat 1).
        seconds: wall time of the iterations and the measurements (the tree build not included).
        build_seconds: time to build the tree.
        num_deals: distinct deals (orders of the cards in play), all equally likely.
        num_histories: nodes of the tree below the deal (decisions and ends of the round).
        num_infosets: information sets of both players.
        curve: ``(iteration, seconds, exploitability)`` at each measurement.
        policy: the average strategy at every information set.
    """

    rules: str
    information: str
    iterations: int
    exploitability: float
    first_player_score: float
    best_response_as_first: float
    best_response_as_second: float
    seconds: float
    build_seconds: float
    num_deals: int
    num_histories: int
    num_infosets: int
    target: float
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    policy: SolvedPolicy | None = None

    def summary(self) -> dict[str, Any]:
        """Everything but the policy, as JSON-ready values."""
        return {
            "rules": self.rules,
            "information": self.information,
            "exploitability": self.exploitability,
            "first_player_score": self.first_player_score,
            "best_response_as_first": self.best_response_as_first,
            "best_response_as_second": self.best_response_as_second,
            "iterations": self.iterations,
            "target": self.target,
            "seconds": round(self.seconds, 3),
            "build_seconds": round(self.build_seconds, 3),
            "num_deals": self.num_deals,
            "num_histories": self.num_histories,
            "num_infosets": self.num_infosets,
            "curve": [[t, round(s, 3), e] for t, s, e in self.curve],
        }

    def save_policy(self, path: str | Path) -> Path:
        """Write the equilibrium (see :mod:`loveletter_env.agents.solved` for the format)."""
        if self.policy is None:
            raise ValueError("this result holds no policy")
        self.policy.save(path)
        return Path(path)

    @staticmethod
    def load_policy(path: str | Path) -> SolvedPolicy:
        """Read a policy written by :meth:`save_policy`."""
        return SolvedPolicy.load(path)


def normalized(tree: GameTree, weights: np.ndarray) -> np.ndarray:
    """Per-action weights made a strategy: each information set's weights divided by their
    sum (uniform where they sum to 0)."""
    counts = np.diff(tree.action_offsets)
    totals = np.repeat(np.add.reduceat(weights, tree.action_offsets[:-1]), counts)
    uniform = np.repeat(1.0 / counts, counts)
    return np.where(totals > 0, weights / np.where(totals > 0, totals, 1.0), uniform)


def policy_of(tree: GameTree, strategy: np.ndarray, meta: dict[str, Any]) -> SolvedPolicy:
    """``strategy`` (per action of ``tree``) in the file format of :mod:`loveletter_env.agents.solved`."""
    return SolvedPolicy(
        infoset_player=tree.infoset_player,
        infoset_parent=tree.infoset_parent,
        infoset_parent_action=tree.infoset_parent_action,
        infoset_heard=tree.infoset_heard,
        key_offsets=tree.key_offsets,
        key_entries=tree.key_entries,
        action_offsets=tree.action_offsets,
        actions=tree.actions,
        probabilities=strategy,
        meta=meta,
    )


def _next_measurement(t: int) -> int:
    """Iterations at which the exploitability is measured: 1..10, then about 20% apart."""
    return t + 1 if t < 10 else int(t * 1.2)


def solve(
    rules: str | Rules,
    iterations: int = DEFAULT_ITERATIONS,
    target: float = DEFAULT_TARGET,
    tree: GameTree | None = None,
    on_measure: Callable[[int, float, float], None] | None = None,
    information: str = "observations",
) -> SolveResult:
    """Solve one round of a ladder rung with CFR+.

    Args:
        rules: a rung (``"mini6"`` .. ``"mini9"`` or a :class:`Rules` with ``in_play``).
        iterations: at most this many iterations.
        target: stop at the first measurement with exploitability <= ``target`` (0: run
            every iteration).
        tree: the rung's tree, when the caller built it already (it sets ``information``).
        on_measure: called as ``on_measure(iteration, seconds, exploitability)`` at each measurement.
        information: ``"observations"`` (the env's game, default) or ``"full"`` (every move
            announced, as at a table); see :func:`training.game_tree.build_tree`.

    Raises:
        TreeError (a ``ValueError``): rules that are not a rung.
        ValueError: ``iterations < 1`` or ``target < 0``.
    """
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    if not target >= 0:
        raise ValueError(f"target must be >= 0, got {target!r}")
    tree = tree or build_tree(rules, information)
    work = TreeWorkspace(tree)
    num_actions = tree.actions.shape[0]
    regret = np.zeros(num_actions)
    strategy = tree.uniform_strategy()
    average = np.zeros(num_actions)
    own_reach = np.zeros(tree.num_infosets)
    curve: list[tuple[int, float, float]] = []
    started = time.perf_counter()
    done, measure_at = 0, 1
    while done < iterations:
        count = min(measure_at, iterations) - done
        cfr_plus_iterations(
            tree.node_info, tree.node_child, tree.infoset_player, tree.infoset_parent, tree.infoset_parent_slot,
            tree.action_offsets, regret, strategy, average, own_reach, work.work, tree.num_deals, done + 1, count,
        )  # fmt: skip
        done += count
        measure_at = _next_measurement(done)
        exploit = work.exploitability(normalized(tree, average)).exploitability
        curve.append((done, time.perf_counter() - started, exploit))
        if on_measure is not None:
            on_measure(*curve[-1])
        if exploit <= target:
            break
    final = normalized(tree, average)
    result = work.exploitability(final)
    first = work.first_player_score(final)
    meta = {
        "rules": tree.rules.name,
        "in_play": list(tree.rules.in_play or ()),
        "information": tree.information,
        "iterations": done,
        "exploitability": result.exploitability,
        "first_player_score": first,
        "solver": "CFR+ (alternating updates, linear averaging)",
        "loveletter_env": __version__,
    }
    return SolveResult(
        rules=tree.rules.name,
        information=tree.information,
        iterations=done,
        exploitability=result.exploitability,
        first_player_score=first,
        best_response_as_first=result.best_response_as_first,
        best_response_as_second=result.best_response_as_second,
        seconds=time.perf_counter() - started,
        build_seconds=tree.build_seconds,
        num_deals=tree.num_deals,
        num_histories=tree.num_nodes,
        num_infosets=tree.num_infosets,
        target=target,
        curve=curve,
        policy=policy_of(tree, final, meta),
    )


def plot_curve(result: SolveResult, path: str | Path) -> Path:
    """Exploitability against iterations (log-log), the target as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    its = [t for t, _, _ in result.curve]
    values = [max(e, 1e-12) for _, _, e in result.curve]
    ax.loglog(its, values, marker="o", markersize=3, label="CFR+ average strategy")
    if result.target > 0:
        ax.axhline(result.target, color="grey", linestyle="--", linewidth=1, label=f"target {result.target:g}")
    ax.set_xlabel("iterations")
    ax.set_ylabel("exploitability (score units)")
    ax.set_title(f"{result.rules}: exact exploitability, {result.seconds:.1f} s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def save_outputs(result: SolveResult, out: str | Path) -> dict[str, str]:
    """Write ``policy.npz``, ``convergence.png`` and ``result.json`` into ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "policy": str(result.save_policy(folder / "policy.npz")),
        "plot": str(plot_curve(result, folder / "convergence.png")),
    }
    (folder / "result.json").write_text(json.dumps({**result.summary(), **paths}, indent=2))
    return paths


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m training.solve",
        description="Solve one round of a ladder rung exactly with CFR+ and save the equilibrium.",
    )
    parser.add_argument("rules", help="a ladder rung: mini6, mini7, mini8 or mini9")
    parser.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"at most this many iterations ({DEFAULT_ITERATIONS})",
    )
    parser.add_argument(
        "--target",
        type=float,
        default=DEFAULT_TARGET,
        help=f"stop once the exploitability is at most this (default {DEFAULT_TARGET}; 0 runs every iteration)",
    )
    parser.add_argument(
        "--information",
        choices=INFORMATION_KINDS,
        default="observations",
        help="observations (default): what the env shows, the game its agents play; full: every move announced, "
        "a missed Guard's guess included, as at a table (its policy is not an agent)",
    )
    parser.add_argument("--out", help="output folder (default checkpoints/solved/RULES, or RULES_full)")
    parser.add_argument("--json", action="store_true", help="print only one JSON object on stdout")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be positive")
    if args.target < 0:
        parser.error("--target must be >= 0")
    if args.rules not in PRESETS:
        parser.error(f"unknown rules {args.rules!r}; the ladder's rungs are mini6, mini7, mini8 and mini9")
    log = sys.stderr if args.json else sys.stdout
    print(f"building the tree of {args.rules} ...", file=sys.stderr)
    try:
        tree = build_tree(args.rules, args.information)
    except TreeError as err:
        parser.error(str(err))
    print(
        f"{args.rules}: {tree.num_deals:,} deals, {tree.num_nodes:,} histories, "
        f"{tree.num_infosets:,} information sets (built in {tree.build_seconds:.1f} s)",
        file=log,
    )
    from tqdm import tqdm

    bar = tqdm(total=args.iterations, unit="it", desc=f"CFR+ {args.rules}", file=sys.stderr, dynamic_ncols=True)
    print(f"{'iteration':>10} {'seconds':>9} {'exploitability':>15}", file=log)

    def on_measure(iteration: int, seconds: float, exploit: float) -> None:
        bar.update(iteration - bar.n)
        bar.set_postfix(exploitability=f"{exploit:.2e}")
        bar.clear()
        print(f"{iteration:>10} {seconds:>9.2f} {exploit:>15.3e}", file=log)
        bar.refresh()

    result = solve(tree.rules, args.iterations, args.target, tree=tree, on_measure=on_measure)
    bar.close()
    suffix = "" if args.information == "observations" else f"_{args.information}"
    out = args.out or str(Path("checkpoints") / "solved" / f"{args.rules}{suffix}")
    paths = save_outputs(result, out)
    report = {**result.summary(), **paths}
    if args.json:
        print(json.dumps(report))
    else:
        usage = (
            f"agent spec solved:path={paths['policy']}"
            if result.information == "observations"
            else "every move announced: not an env agent"
        )
        print(
            f"{result.rules}: exploitability {result.exploitability:.2e} after {result.iterations:,} iterations "
            f"({result.seconds:.1f} s); player 0 (moving first) scores {result.first_player_score:.6f} at the "
            f"equilibrium\npolicy: {paths['policy']} ({usage})\nplot: {paths['plot']}"
        )
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
