"""Milliseconds per ``ismcts`` decision: the compiled search against the Python reference.

Positions come from seeded rounds of ``belief`` bots; at each one, an ``ismcts`` agent
seeded with the position's index decides twice, once with its playouts on the compiled
core and once with the Python reference loop (``use_core=False``), one right after the
other (which goes first alternating), so that a change of load on the machine hits both
timings alike. Both must make the same move (a mismatch is reported and fails the command,
exit status 1; a bad argument exits 2, a Ctrl-C 130). Times are wall-clock; the machine's
load over the run is reported with them. The process's
first round and compiled decision are timed apart, before anything else runs: they include
loading (or, with an empty cache, compiling) the env's and the search's kernels.

    python -m loveletter_env.agents.ismcts_bench --players 2 4 --positions 40
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tqdm import tqdm

from ..aec import raw_env
from ..machine_load import load_line, machine_load
from ..validation import MAX_SEED
from .belief import BeliefAgent
from .ismcts import ISMCTSAgent


def positions(num_players: int, count: int, seed: int) -> list[Mapping[str, Any]]:
    """``count`` observations of the player to act, from rounds of ``belief`` bots seeded from ``seed``:
    the bots ``seed``, ``seed + 1``, ..., the rounds likewise. :class:`ValueError` naming ``--seed``
    where one of those seeds would pass 2**63 - 1."""
    found: list[Mapping[str, Any]] = []
    env = raw_env(num_players=num_players, episode="round")
    bots = [BeliefAgent(seed=_seed_after(seed, s)) for s in range(num_players)]
    episode = 0
    while len(found) < count:
        env.reset(seed=_seed_after(seed, episode))
        for bot in bots:
            bot.reset()
        episode += 1
        while not all(env.terminations.values()) and len(found) < count:
            observation = env.observe(env.agent_selection)
            if observation["action_mask"].sum() > 1:  # a forced move involves no search
                found.append(observation)
            env.step(bots[int(env.agent_selection.rsplit("_", 1)[1])].act(observation))
    return found


def _seed_after(seed: int, offset: int) -> int:
    """``seed + offset``, the seed of a bot or of a round (a round may offer no choice, so how many
    rounds the positions take is known only once played)."""
    if not 0 <= seed <= MAX_SEED - offset:
        raise ValueError(
            f"--seed {seed}: the positions' bots and rounds are seeded from it on, up to {seed} + {offset} here, "
            f"and a seed must be in 0..2**63 - 1; give a smaller --seed"
        )
    return seed + offset


def first_use_seconds(num_players: int, iterations: int) -> float:
    """Seconds of a process's first round dealt and first compiled decision, before anything
    else of the env or the search has run: with numba's cache filled, what loading the env's and
    the search's kernels takes (the first use of all compiles them)."""
    start = time.perf_counter()
    env = raw_env(num_players=num_players, episode="round")
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    while observation["action_mask"].sum() == 1:  # a forced move involves no search
        env.step(int(observation["action_mask"].argmax()))
        observation = env.observe(env.agent_selection)
    ISMCTSAgent(seed=0, iterations=iterations).act(observation)
    return time.perf_counter() - start


def time_decisions(
    observations: Sequence[Mapping[str, Any]], iterations: int, progress: bool, label: str
) -> dict[bool, tuple[float, list[int]]]:
    """For the compiled search (``True``) and the Python reference (``False``): (milliseconds per
    decision, the moves) over ``observations``. Each position is decided by both, one right after
    the other, the compiled one first at even positions and second at odd ones: the speed-up is
    a ratio, and a load change between two blocks of timings would land in it."""
    moves: dict[bool, list[int]] = {True: [], False: []}
    elapsed = {True: 0.0, False: 0.0}
    for i, observation in enumerate(tqdm(observations, desc=label, disable=not progress, leave=False)):
        for use_core in (True, False) if i % 2 == 0 else (False, True):
            agent = ISMCTSAgent(seed=i, iterations=iterations)
            agent.use_core = use_core
            start = time.perf_counter()
            moves[use_core].append(agent.act(observation))
            elapsed[use_core] += time.perf_counter() - start
    return {path: (1000.0 * elapsed[path] / len(observations), moves[path]) for path in (True, False)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loveletter_env.agents.ismcts_bench",
        description=__doc__.split("\n\n")[0],
        epilog="Both paths decide each position one right after the other, in wall-clock time. Exit status 1 "
        "when their moves differ at a position, 2 for a bad argument, 130 when interrupted (Ctrl-C).",
    )
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], choices=[2, 3, 4], help="table sizes")
    parser.add_argument("--positions", type=int, default=40, help="decisions timed per table size (default 40)")
    parser.add_argument("--iterations", type=int, default=300, help="ismcts iterations per decision (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the positions' rounds")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    if args.positions < 1 or args.iterations < 1 or args.seed < 0:
        parser.error("--positions and --iterations must be at least 1, --seed at least 0")
    try:
        mismatches = _run(parser, args)
    except KeyboardInterrupt:
        # A sentence, not a traceback; 130 (128 + SIGINT) is what a shell reports for Ctrl-C.
        print(
            "\ninterrupted; the tables printed above were timed in full, the one under way is not reported",
            file=sys.stderr,
        )
        raise SystemExit(130) from None
    if mismatches:
        print("error: the compiled search and the Python reference chose different moves", file=sys.stderr)
        return 1
    return 0


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Time every table of ``args`` and print its line; returns how many moves differed."""
    progress = not args.no_progress
    print(f"ismcts, {args.iterations} iterations, {args.positions} positions per table; wall-clock time")
    mismatches = 0
    start_load = machine_load()
    # Timed before the positions are played, which would load the env's kernels untimed.
    first = first_use_seconds(args.players[0], args.iterations)
    print(f"  first round and compiled decision in this process (kernels loaded or compiled): {first:.2f} s")
    for num_players in args.players:
        try:
            observations = positions(num_players, args.positions, args.seed)
        except ValueError as err:
            parser.error(str(err))
        timed = time_decisions(observations, args.iterations, progress, f"{num_players} players")
        (core_ms, core_moves), (python_ms, python_moves) = timed[True], timed[False]
        differ = sum(a != b for a, b in zip(core_moves, python_moves))
        mismatches += differ
        print(
            f"  {num_players} players: compiled {core_ms:7.1f} ms/decision, python reference {python_ms:7.1f} "
            f"ms/decision, {python_ms / core_ms:5.1f}x; moves differ at {differ} of {len(observations)} positions"
        )
    print(f"  {load_line(start_load, machine_load())}")
    return mismatches


if __name__ == "__main__":
    sys.exit(main())
