"""Measure agents against each other: ``python -m training.evaluate``.

The function API, used by the self-play trainer::

    from training.evaluate import evaluate
    result = evaluate(["belief", "rule"], num_players=2, rounds=1000, seed=0)
    result.win_rate[0], result.ci95[0], result.to_dict()

Agent specs are bot names (``"ismcts"``, with keyword arguments as
``"ismcts:iterations=100"``), checkpoint paths (loaded by
``training.checkpoint.load_agent``), ``"package.module:factory"`` (a callable returning
an agent) or agent objects. Seats rotate so that every lineup slot plays every seat
equally; each episode's deal and each agent's generator are seeded from
``(seed, episode index)`` alone, so results do not depend on ``workers``.

League mode (``--league a b c``) plays every pair and rates them with openskill,
writing a Markdown table, a CSV file and a PNG bar chart.
"""

from __future__ import annotations

import argparse
import copy
import csv
import itertools
import json
import math
import multiprocessing
import os
import pickle
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from loveletter_env.agents import AGENT_NAMES, Agent
from loveletter_env.agents.specs import AgentSpec, accepts_seed, agent_label, resolve_agent
from loveletter_env.env import EPISODE_KINDS, raw_env

Z_95 = 1.959963984540054


# Statistics -----------------------------------------------------------------------


def wilson_interval(successes: float, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (``(0, 1)`` with no trials)."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


class EpisodeRecord(NamedTuple):
    """One episode's outcome, by lineup slot."""

    winners: tuple[int, ...]  # slots that won (several after a shared showdown)
    first_slot: int  # slot of the player who moved first (round 1 for whole games)
    turns: int
    rounds: int


@dataclass
class EvaluationResult:
    """Outcome of :func:`evaluate`. Lists are indexed by lineup slot.

    ``win_rate[i]`` counts every episode slot ``i`` won, shared wins included, so the
    rates may add up to a little more than 1; ``shared_rate`` is the share of episodes
    with several winners.
    """

    agents: list[str]
    num_players: int
    episode: str
    episodes: int
    seed: int
    wins: list[int]
    win_rate: list[float]
    ci95: list[tuple[float, float]]
    shared_rate: float
    mean_round_length: float
    mean_rounds_per_episode: float
    first_seat_win_rate: float
    first_seat_ci95: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every figure."""
        d = asdict(self)
        d["ci95"] = [list(c) for c in self.ci95]
        d["first_seat_ci95"] = list(self.first_seat_ci95)
        return d

    def summary(self) -> str:
        """A human-readable table of the figures."""
        unit = "rounds" if self.episode == "round" else "games"
        lines = [f"{self.episodes} {unit}, {self.num_players} players, seed {self.seed}"]
        width = max(len(a) for a in self.agents)
        for i, name in enumerate(self.agents):
            lo, hi = self.ci95[i]
            lines.append(f"  slot {i}  {name:<{width}}  win rate {self.win_rate[i]:6.1%}  (95% CI {lo:.1%} - {hi:.1%})")
        lo, hi = self.first_seat_ci95
        lines.append(f"  first player wins {self.first_seat_win_rate:.1%} (95% CI {lo:.1%} - {hi:.1%})")
        lines.append(f"  mean round length {self.mean_round_length:.2f} turns; shared wins {self.shared_rate:.1%}")
        if self.episode == "game":
            lines.append(f"  mean rounds per game {self.mean_rounds_per_episode:.2f}")
        return "\n".join(lines)


def summarize(
    records: Sequence[EpisodeRecord], labels: list[str], num_players: int, episode: str, seed: int
) -> EvaluationResult:
    """Aggregate episode records into an :class:`EvaluationResult`."""
    n_ep = len(records)
    wins = [sum(1 for r in records if slot in r.winners) for slot in range(len(labels))]
    first_wins = sum(1 for r in records if r.first_slot in r.winners)
    rounds = sum(r.rounds for r in records)
    return EvaluationResult(
        agents=labels,
        num_players=num_players,
        episode=episode,
        episodes=n_ep,
        seed=seed,
        wins=wins,
        win_rate=[w / n_ep if n_ep else 0.0 for w in wins],
        ci95=[wilson_interval(w, n_ep) for w in wins],
        shared_rate=sum(1 for r in records if len(r.winners) > 1) / n_ep if n_ep else 0.0,
        mean_round_length=sum(r.turns for r in records) / rounds if rounds else 0.0,
        mean_rounds_per_episode=rounds / n_ep if n_ep else 0.0,
        first_seat_win_rate=first_wins / n_ep if n_ep else 0.0,
        first_seat_ci95=wilson_interval(first_wins, n_ep),
    )


# Playing ----------------------------------------------------------------------------


def episode_seeds(seed: int, index: int, count: int) -> list[int]:
    """``count`` independent 32-bit seeds for episode ``index`` of a run seeded ``seed``
    (the first seeds the deal, the others the slots' agents)."""
    return [int(s) for s in np.random.SeedSequence(entropy=seed, spawn_key=(index,)).generate_state(count)]


def play_episode(agents: Sequence[Agent], env: raw_env, index: int, seed: int) -> EpisodeRecord:
    """Play episode ``index`` with ``agents`` (one per slot; slot ``i`` sits at seat
    ``(i + index) % n``) and return its record."""
    n = env.num_players
    seeds = episode_seeds(seed, index, n + 1)
    seat_slot = [(s - index) % n for s in range(n)]
    for slot, agent in enumerate(agents):
        reset = getattr(agent, "reset", None)
        if callable(reset):
            reset(seed=seeds[slot + 1]) if accepts_seed(reset) else reset()
    env.reset(seed=seeds[0])
    game = env.game
    first_slot = seat_slot[game.current]
    turns = 0
    while not all(env.terminations.values()):
        agent_name = env.agent_selection
        seat = env.agent_name_mapping[agent_name]
        slot = seat_slot[seat]
        action = agents[slot].act(env.observe(agent_name))
        try:
            env.step(int(action))
        except ValueError as exc:
            raise ValueError(
                f"agent in slot {slot} ({agent_label(agents[slot])}) chose an illegal action: {exc}"
            ) from exc
        turns += 1
    winners = game.round_winners if env.episode == "round" else game.game_winners
    return EpisodeRecord(tuple(sorted(seat_slot[w] for w in winners)), first_slot, turns, game.round)


_WORKER: dict[str, Any] = {}


def _init_worker(specs: Sequence[AgentSpec], num_players: int, episode: str, rules: str) -> None:
    _WORKER["agents"] = [resolve_agent(s) for s in specs]
    _WORKER["env"] = raw_env(num_players=num_players, episode=episode, rules=rules)


def _play_chunk(task: tuple[int, int, int]) -> list[EpisodeRecord]:
    start, stop, seed = task
    return [play_episode(_WORKER["agents"], _WORKER["env"], i, seed) for i in range(start, stop)]


def _play_chunk_in_worker(task: tuple[int, int, int]) -> list[EpisodeRecord]:
    """:func:`_play_chunk` for a pool worker: an exception that cannot be pickled back
    to the parent would hang the pool, so it travels as a ``RuntimeError`` with its text."""
    try:
        return _play_chunk(task)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        raise


def _start_method() -> str:
    """``fork`` where it is safe: workers start at once and need no importable
    ``__main__`` (stdin, notebooks). Once torch is loaded its thread pools make forked
    children hang, so then ``spawn`` (the caller's main module must be importable, as
    multiprocessing always requires with spawn)."""
    if "fork" in multiprocessing.get_all_start_methods() and "torch" not in sys.modules:
        return "fork"
    return "spawn"


def _lineup(agents: Sequence[AgentSpec], num_players: int) -> list[AgentSpec]:
    if isinstance(agents, (str, os.PathLike)) or not isinstance(agents, Sequence) or not agents:
        raise ValueError(f"agents must be a non-empty sequence of agent specs, got {agents!r}")
    if len(agents) > num_players:
        raise ValueError(f"{len(agents)} agents given for a {num_players}-player table")
    fill = agents[-1]
    if isinstance(fill, (str, os.PathLike)):
        return list(agents) + [fill] * (num_players - len(agents))
    # An agent object may keep per-seat memory, so every extra seat gets its own copy.
    try:
        extra = [copy.deepcopy(fill) for _ in range(num_players - len(agents))]
    except Exception as error:
        raise ValueError(
            f"cannot copy agent {fill!r} to fill the remaining seats ({error}); pass one agent object per seat"
        ) from None
    return list(agents) + extra


def evaluate(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    rounds: int = 1000,
    episode: str = "round",
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    rules: str = "classic",
) -> EvaluationResult:
    """Play ``rounds`` episodes and measure every lineup slot.

    Args:
        agents: one spec per lineup slot (see :func:`resolve_agent`); with fewer than
            ``num_players`` the last is repeated.
        num_players: 2, 3 or 4.
        rounds: number of episodes (rounds, or games when ``episode="game"``).
        episode: ``"round"`` or ``"game"``.
        seed: the whole run's seed: deals and agents' generators derive from it.
        workers: processes to play in; results do not depend on it (agent objects must
            then be picklable).
        progress: show a tqdm progress bar.
        rules: the rule preset.

    Returns:
        An :class:`EvaluationResult`.
    """
    labels, records = play_matches(agents, num_players, rounds, episode, seed, workers, progress, rules)
    return summarize(records, labels, num_players, episode, seed)


def play_matches(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    rounds: int = 1000,
    episode: str = "round",
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    rules: str = "classic",
) -> tuple[list[str], list[EpisodeRecord]]:
    """Like :func:`evaluate`, but return the slot labels and every episode's record."""
    if isinstance(num_players, bool) or num_players not in (2, 3, 4):
        raise ValueError(f"num_players must be 2, 3 or 4, got {num_players!r}")
    if episode not in EPISODE_KINDS:
        raise ValueError(f"episode must be one of {EPISODE_KINDS}, got {episode!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    lineup = _lineup(agents, num_players)
    labels = [agent_label(s) for s in lineup]
    # Resolve once here so a bad spec fails fast, before any process starts.
    resolved = [resolve_agent(s) for s in lineup]
    chunk = max(1, min(50, rounds // (workers * 8) or 1))
    tasks = [(i, min(i + chunk, rounds), seed) for i in range(0, rounds, chunk)]

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=rounds, unit=episode, desc=" vs ".join(labels), dynamic_ncols=True)
    records: list[EpisodeRecord] = []
    try:
        if workers == 1:
            _init_worker([], num_players, episode, rules)
            _WORKER["agents"] = resolved
            for task in tasks:
                records += _play_chunk(task)
                if bar:
                    bar.update(task[1] - task[0])
        else:
            ctx = multiprocessing.get_context(_start_method())
            with ctx.Pool(workers, initializer=_init_worker, initargs=(lineup, num_players, episode, rules)) as pool:
                for task, part in zip(tasks, pool.imap(_play_chunk_in_worker, tasks)):
                    records += part
                    if bar:
                        bar.update(task[1] - task[0])
    finally:
        _WORKER.clear()
        if bar:
            bar.close()
    return labels, records


# League -----------------------------------------------------------------------------


@dataclass
class LeagueEntry:
    """One agent's line in the league table."""

    agent: str
    mu: float
    sigma: float
    ordinal: float  # mu - 3 sigma: the conservative rating the table is sorted by
    episodes: int
    win_rate: float


def league(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    rounds: int = 200,
    episode: str = "round",
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    rules: str = "classic",
) -> list[LeagueEntry]:
    """Round robin: every group of ``num_players`` distinct agents plays ``rounds``
    episodes; openskill (Plackett-Luce) rates every episode in order. Returns the
    table, best first."""
    from openskill.models import PlackettLuce

    if len(agents) < num_players:
        raise ValueError(f"a {num_players}-player league needs at least {num_players} agents, got {len(agents)}")
    labels = [agent_label(a) for a in agents]
    if len(set(labels)) != len(labels):
        raise ValueError(f"league agents must be distinct, got {labels}")
    model = PlackettLuce()
    ratings = {name: model.rating(name=name) for name in labels}
    played = dict.fromkeys(labels, 0)
    won = dict.fromkeys(labels, 0)
    for group_index, group in enumerate(itertools.combinations(range(len(agents)), num_players)):
        names = [labels[i] for i in group]
        _, records = play_matches(
            [agents[i] for i in group], num_players, rounds, episode, seed + group_index, workers, progress, rules
        )
        for record in records:
            teams = [[ratings[name]] for name in names]
            ranks = [1 if slot in record.winners else 2 for slot in range(num_players)]
            for name, [rating] in zip(names, model.rate(teams, ranks=ranks)):
                ratings[name] = rating
            for slot, name in enumerate(names):
                played[name] += 1
                won[name] += slot in record.winners
    table = [
        LeagueEntry(name, r.mu, r.sigma, r.ordinal(), played[name], won[name] / played[name])
        for name, r in ratings.items()
    ]
    return sorted(table, key=lambda e: e.ordinal, reverse=True)


def league_markdown(table: Sequence[LeagueEntry]) -> str:
    """The league table in Markdown."""
    rows = [
        "| rank | agent | rating (mu - 3 sigma) | mu | sigma | episodes | win rate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rank, e in enumerate(table, 1):
        rows.append(
            f"| {rank} | {e.agent} | {e.ordinal:.2f} | {e.mu:.2f} | {e.sigma:.2f} | {e.episodes} | {e.win_rate:.1%} |"
        )
    return "\n".join(rows)


def write_league(table: Sequence[LeagueEntry], out_dir: Path) -> list[Path]:
    """Write ``league.md``, ``league.csv`` and ``league.png`` (a bar chart) into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path, png = out_dir / "league.md", out_dir / "league.csv", out_dir / "league.png"
    md.write_text(league_markdown(table) + "\n")
    with csv_path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["rank", "agent", "ordinal", "mu", "sigma", "episodes", "win_rate"])
        for rank, e in enumerate(table, 1):
            writer.writerow(
                [rank, e.agent, f"{e.ordinal:.4f}", f"{e.mu:.4f}", f"{e.sigma:.4f}", e.episodes, f"{e.win_rate:.4f}"]
            )
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(table)), 3.5))
    ax.bar(
        [e.agent for e in table], [e.mu for e in table], yerr=[3 * e.sigma for e in table], capsize=4, color="tab:blue"
    )
    ax.set_ylabel("openskill mu (error bar: 3 sigma)")
    ax.set_title("Love Letter league")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return [md, csv_path, png]


# Command line -----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description="Play Love Letter agents against each other and report win rates with 95% (Wilson) "
        "confidence intervals, or rate a league of agents with openskill.",
        epilog="Agents: " + ", ".join(AGENT_NAMES) + " (options as ismcts:iterations=100), a checkpoint path "
        "or run folder, or package.module:factory. Examples:\n"
        "  python -m training.evaluate belief rule --rounds 2000\n"
        "  python -m training.evaluate ismcts random --players 4 --games 50 --workers 2\n"
        "  python -m training.evaluate --league random rule belief --out league/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("agents", nargs="*", help="one agent per lineup slot (the last fills the remaining seats)")
    parser.add_argument(
        "--league", nargs="+", metavar="AGENT", help="round robin between these agents, rated with openskill"
    )
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4), help="table size (default 2)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument(
        "--rounds", type=int, help="play this many single rounds (default 1000; per group in a league: 200)"
    )
    length.add_argument("--games", type=int, help="play this many whole games instead of rounds")
    parser.add_argument("--rules", default="classic", help="rule preset (default classic)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="processes to play in; results do not depend on it")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--out", type=Path, default=Path("league"), help="league output folder (default ./league)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if bool(args.agents) == bool(args.league):
        which = "not both" if args.agents else "none were given"
        parser.error(f"give the agents to evaluate, or --league AGENT AGENT ... ({which})")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    for name in ("rounds", "games", "workers"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be a positive integer, got {value}")
    episode = "game" if args.games else "round"
    count = args.games or args.rounds or (200 if args.league else 1000)
    progress = not args.no_progress
    try:
        if args.league:
            table = league(args.league, args.players, count, episode, args.seed, args.workers, progress, args.rules)
            paths = write_league(table, args.out)
            if args.json:
                print(json.dumps([asdict(e) for e in table], indent=2))
            else:
                print(league_markdown(table))
                print("written: " + ", ".join(str(p) for p in paths))
            return 0
        result = evaluate(args.agents, args.players, count, episode, args.seed, args.workers, progress, args.rules)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
