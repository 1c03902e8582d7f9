"""Solve one round of a ladder rung exactly: ``python -m training.solve mini6``.

CFR+ (regret matching+, alternating updates, the average strategy weighted by the
iteration number) runs in compiled code over the whole tree of the round, built with the
project's own compiled core (:func:`loveletter_env.tree.build_tree`; the passes are
:mod:`training.cfr`'s). After each of a geometric series of iterations the average
strategy's exploitability is computed exactly, by a best response in each seat on the
same tree; the run stops when it reaches ``target`` (or after ``iterations``). Units are
the project's: a round scores 1 for a win alone, ½ for a shared win, 0 for a loss;
player 0 moves first.

Outputs in ``--out``: ``policy.npz`` (the average strategy, an equilibrium when the target
was met, in the format of
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
from typing import Any, BinaryIO

import numpy as np

from loveletter_env import __version__
from loveletter_env.agents.solved import SolvedPolicy
from loveletter_env.rules import PRESETS, Rules
from loveletter_env.tree import GameTree, TreeError, build_tree, retire_flag, run_interruptibly
from loveletter_env.validation import check_number, check_writable

from .cfr import TreeWorkspace, cfr_plus_iterations
from .compile_notice import announce_kernel_compilation

#: The exploitability the ladder's targets ask for.
DEFAULT_TARGET = 1e-3
DEFAULT_ITERATIONS = 10_000
#: The largest exploitability there is (a best response that always wins scores 1).
MAX_EXPLOITABILITY = 0.5
#: The files of a solve in its folder; a folder holding any of them holds a solve.
OUTPUT_FILES = ("policy.npz", "convergence.png", "result.json")
#: What a rung's solve needs, said before it starts, where it is more than a minute or a
#: gigabyte: measured with ``/usr/bin/time -v`` on a 2-core development machine shared with
#: other work (see docs/solving.md).
SOLVE_COST = {"mini9": ("about 3.3 GB", "about 8 minutes on 2 cores to an exploitability of 0.001, the tree alone 2")}


@dataclass
class SolveResult:
    """What :func:`solve` found (scores in the project's units, player 0 moving first).

    Attributes:
        rules: the rung's preset name.
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

    @property
    def target_met(self) -> bool:
        """Whether the exploitability reached the target: only then is the policy an equilibrium."""
        return self.exploitability <= self.target

    def summary(self) -> dict[str, Any]:
        """Everything but the policy, as JSON-ready values."""
        return {
            "rules": self.rules,
            "exploitability": self.exploitability,
            "target_met": self.target_met,
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
        """Write the policy (see :mod:`loveletter_env.agents.solved` for the format)."""
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
        key_offsets=tree.key_offsets,
        key_entries=tree.key_entries,
        action_offsets=tree.action_offsets,
        actions=tree.actions,
        probabilities=strategy,
        meta=meta,
    )


def check_target(target: object) -> float:
    """``target`` as a float if it is a finite number in [0, 0.5] (0.5 is the largest
    exploitability there is); else a ``ValueError`` saying so."""
    try:
        return check_number("target", target, 0.0, MAX_EXPLOITABILITY)
    except ValueError:
        raise ValueError(
            f"target must be a number between 0 and {MAX_EXPLOITABILITY} (an exploitability), got {target!r}"
        ) from None


def _next_measurement(t: int) -> int:
    """Iterations at which the exploitability is measured: 1..10, then about 20% apart."""
    return t + 1 if t < 10 else int(t * 1.2)


def solve(
    rules: str | Rules,
    iterations: int = DEFAULT_ITERATIONS,
    target: float = DEFAULT_TARGET,
    tree: GameTree | None = None,
    on_measure: Callable[[int, float, float], None] | None = None,
) -> SolveResult:
    """Solve one round of a ladder rung with CFR+.

    Args:
        rules: a rung (``"mini6"`` .. ``"mini9"`` or a :class:`Rules` with ``in_play``).
        iterations: at most this many iterations.
        target: stop at the first measurement with exploitability <= ``target`` (0: run
            every iteration).
        tree: the rung's tree, when the caller built it already.
        on_measure: called as ``on_measure(iteration, seconds, exploitability)`` at each measurement.

    Raises:
        TreeError (a ``ValueError``): rules that are not a rung.
        ValueError: ``iterations < 1`` or ``target`` not a number in [0, 0.5].
        KeyboardInterrupt: Ctrl-C, within one iteration or measurement; nothing is returned.
        MemoryError: not enough memory for the tree or the iterations' arrays.
    """
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    target = check_target(target)
    tree = tree or build_tree(rules)
    work = TreeWorkspace(tree)
    num_actions = tree.actions.shape[0]
    regret = np.zeros(num_actions)
    strategy = tree.uniform_strategy()
    average = np.zeros(num_actions)
    curve: list[tuple[int, float, float]] = []
    stop = np.zeros(1, np.uint8)
    started = time.perf_counter()
    done, measure_at = 0, 1
    while done < iterations:
        count = min(measure_at, iterations) - done
        run_interruptibly(
            cfr_plus_iterations,
            tree.node_info, tree.node_child, tree.infoset_player, tree.infoset_node,
            tree.action_offsets, regret, strategy, average, work.work, tree.num_deals, done + 1, count,
            stop, stop=stop,
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
        "iterations": done,
        "exploitability": result.exploitability,
        "first_player_score": first,
        "solver": "CFR+ (alternating updates, linear averaging)",
        "loveletter_env": __version__,
    }
    return SolveResult(
        rules=tree.rules.name,
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


def plot_curve(result: SolveResult, path: str | Path | BinaryIO) -> None:
    """Exploitability against iterations (log-log), the target as a dashed line, as a PNG
    written to ``path`` (a path or an open binary file)."""
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
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


def json_text(report: dict[str, Any], indent: int | None = None) -> str:
    """``report`` as strict JSON; a ``ValueError`` in words if it holds NaN or infinity,
    which JSON has no numbers for (Python would write ``NaN``, which most readers refuse)."""
    try:
        return json.dumps(report, indent=indent, allow_nan=False)
    except ValueError:
        raise ValueError(
            "the solve's figures hold a value that is not a finite number (NaN or infinity), which JSON cannot hold"
        ) from None


def holds_solve(folder: str | Path) -> bool:
    """Whether ``folder`` holds any file of a solve (:data:`OUTPUT_FILES`)."""
    return any((Path(folder) / name).exists() for name in OUTPUT_FILES)


def save_outputs(result: SolveResult, out: str | Path) -> dict[str, str]:
    """Write ``policy.npz``, ``convergence.png`` and ``result.json`` into ``out``.

    Each file is written under a temporary name and renamed into place, so a crash or a
    kill never leaves a truncated file; ``result.json`` comes last. A result holding NaN or
    infinity is refused (``ValueError``) before anything is written; a failed write raises
    :class:`training.checkpoint.CheckpointWriteError` naming the file.
    """
    from .checkpoint import write_atomically

    if result.policy is None:
        raise ValueError("this result holds no policy")
    folder = Path(out)
    paths = {"policy": str(folder / "policy.npz"), "plot": str(folder / "convergence.png")}
    text = json_text({**result.summary(), **paths}, indent=2)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / "policy.npz", result.policy.save)
    write_atomically(folder / "convergence.png", lambda f: plot_curve(result, f))
    write_atomically(folder / "result.json", lambda f: f.write(text.encode()))
    return paths


def _target_argument(text: str) -> float:
    """``--target``'s type: argparse turns the ``ValueError`` into a usage error."""
    try:
        return check_target(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a number between 0 and {MAX_EXPLOITABILITY} (an exploitability), got {text!r}"
        ) from None


def _claim_output_folder(parser: argparse.ArgumentParser, out: str, force: bool) -> Any:
    """Check ``out`` before any work, and hold it (a :class:`training.runtime.RunLock`) for the run."""
    from .runtime import RunFolderError, RunLock

    try:
        check_writable("--out", out, folder=True)
        Path(out).mkdir(parents=True, exist_ok=True)
        lock = RunLock(out).acquire()
    except RunFolderError as err:  # another solve or run holds the folder
        parser.error(str(err).replace("run folder", "--out", 1))
    except ValueError as err:
        parser.error(str(err))
    except OSError as err:
        parser.error(f"--out {out!r} cannot be created ({err.strerror})")
    if holds_solve(out) and not force:
        lock.release()
        parser.error(
            f"--out {out!r} already holds a solve ({', '.join(n for n in OUTPUT_FILES if (Path(out) / n).exists())}), "
            "which this one would replace: pass --force to replace it, or choose another --out"
        )
    return lock


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
        type=_target_argument,
        default=DEFAULT_TARGET,
        help=f"stop once the exploitability is at most this, a number in [0, {MAX_EXPLOITABILITY}] "
        f"(default {DEFAULT_TARGET}; 0 runs every iteration)",
    )
    retire_flag(parser, "--information")
    parser.add_argument("--out", help="output folder (default checkpoints/solved/RULES)")
    parser.add_argument("--force", action="store_true", help="replace the solve that --out already holds")
    parser.add_argument("--json", action="store_true", help="print only one JSON object on stdout")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be positive")
    if args.rules not in PRESETS:
        parser.error(f"unknown rules {args.rules!r}; the ladder's rungs are mini6, mini7, mini8 and mini9")
    out = args.out or str(Path("checkpoints") / "solved" / args.rules)
    try:
        lock = _claim_output_folder(parser, out, args.force)
    except KeyboardInterrupt:
        from .interrupt import exit_interrupted

        print("\ninterrupted before the solve started; nothing was written", file=sys.stderr)
        exit_interrupted()
    try:
        return _run(parser, args, out)
    finally:
        lock.release()


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace, out: str) -> dict[str, Any]:
    """The solve of :func:`main` once its folder is held; every failure is one sentence."""
    from tqdm import tqdm

    from .checkpoint import CheckpointWriteError
    from .interrupt import StopRequest, exit_interrupted

    announce_kernel_compilation()
    log = sys.stderr if args.json else sys.stdout
    if args.rules in SOLVE_COST:
        memory, minutes = SOLVE_COST[args.rules]
        print(f"{args.rules} needs {memory} of memory and {minutes}", file=sys.stderr)
    print(f"building the tree of {args.rules} ...", file=sys.stderr)
    stage, unwritten = f"while building the tree of {args.rules}", f"nothing was written to {out}"
    bar = None
    try:
        try:
            tree = build_tree(args.rules)
        except TreeError as err:
            parser.error(str(err))
        print(
            f"{args.rules}: {tree.num_deals:,} deals, {tree.num_nodes:,} histories, "
            f"{tree.num_infosets:,} information sets (built in {tree.build_seconds:.1f} s)",
            file=log,
        )
        stage = "during CFR+"
        bar = tqdm(total=args.iterations, unit="it", desc=f"CFR+ {args.rules}", file=sys.stderr, dynamic_ncols=True)
        print(f"{'iteration':>10} {'seconds':>9} {'exploitability':>15}", file=log)

        def on_measure(iteration: int, seconds: float, exploit: float) -> None:
            nonlocal stage
            stage = f"after {iteration:,} CFR+ iterations"
            bar.update(iteration - bar.n)
            bar.set_postfix(exploitability=f"{exploit:.2e}")
            bar.clear()
            print(f"{iteration:>10} {seconds:>9.2f} {exploit:>15.3e}", file=log)
            bar.refresh()

        result = solve(tree.rules, args.iterations, args.target, tree=tree, on_measure=on_measure)
        bar.close()
        del tree  # the policy holds what it needs; the tree's arrays go before the files are written
        # Writing takes moments: a first Ctrl-C meanwhile waits for the files to be whole.
        stage, unwritten = "while writing the files", "the files not yet renamed into place were not written"
        with StopRequest("writing the files first; press Ctrl-C again to stop at once") as stop:
            paths = save_outputs(result, out)
        if stop.requested and stop.signal is not None:
            print(f"interrupted while writing the files; they were finished first, in {out}", file=sys.stderr)
            exit_interrupted(stop.signal)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        print(f"\ninterrupted {stage}; {unwritten}", file=sys.stderr)
        exit_interrupted()
    except MemoryError:
        if bar is not None:
            bar.close()
        parser.exit(
            1,
            f"{parser.prog}: error: out of memory {stage} (a {args.rules} solve needs "
            f"{SOLVE_COST.get(args.rules, ('under 1 GB',))[0]} of memory); {unwritten}\n",
        )
    except (ValueError, CheckpointWriteError) as err:  # NaN in the figures, a full disk
        parser.exit(1, f"{parser.prog}: error: {err}\n")
    report = {**result.summary(), **paths}
    if args.json:
        print(json_text(report))
    else:
        if result.target_met:
            reached = (
                f"exploitability {result.exploitability:.2e} after {result.iterations:,} iterations "
                f"({result.seconds:.1f} s), within the target {result.target:g}; player 0 (moving first) scores "
                f"{result.first_player_score:.6f} at the equilibrium"
            )
        else:
            reached = (
                f"NOT an equilibrium to the target {result.target:g}: exploitability {result.exploitability:.2e} "
                f"after {result.iterations:,} iterations ({result.seconds:.1f} s; raise --iterations to go on); "
                f"player 0 (moving first) scores {result.first_player_score:.6f} when both seats play this policy"
            )
        print(
            f"{result.rules}: {reached}\npolicy: {paths['policy']} (agent spec solved:path={paths['policy']})\n"
            f"plot: {paths['plot']}"
        )
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
