"""Playing lineups of agents: seeded episodes with rotating seats, in one process or several.

- :func:`episode_seeds` / :func:`play_episode`: one episode, its deal and every agent's
  generator seeded from ``(seed, episode index)`` alone, slot ``i`` at seat ``(i + index) % n``;
  with duplicate deals the deal comes from ``(seed, index // n)`` instead, so episodes
  ``k*n .. k*n+n-1`` play one deal once in every seat rotation (:func:`duplicate_deal_seed`);
- :func:`play_matches`: many episodes, in this process, in a pool of worker processes or on
  a Ray cluster (results do not depend on where they are played).
- :func:`check_play`: what would stop a run before its first episode, checked in one place for
  :func:`play_matches`, a league (all its agents at once) and the command line.

One scheduler serves every place: :func:`run_episodes` cuts the run in chunks of consecutive
episodes, hands them to an :class:`EpisodeRunner` (:class:`InProcessRunner`,
:class:`ProcessPoolRunner`, :class:`training.measure.ray_cluster.RayRunner`), gathers the records in
episode order and shows the progress bar. A worker builds its agents and env once
(:class:`EpisodePlayer`, from a :class:`MatchSetup`) and plays chunk after chunk.

The single-process path keeps its agents and env in its runner, so one evaluation can run
inside another (an agent that evaluates while it plays). Pool workers keep theirs in
:data:`_POOL_PLAYER`, which only pool workers ever fill.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from loveletter_env.aec import raw_env
from loveletter_env.agents import Agent
from loveletter_env.agents.base import checked_act
from loveletter_env.agents.specs import AgentSpec, agent_label, reset_agent, resolve_agent
from loveletter_env.replay import AgentInfo, decision_details, save_replay
from loveletter_env.rules import check_rules_for_table
from loveletter_env.validation import check_episode, check_int, check_num_players, check_seed
from loveletter_env.wrappers.recorder import RecordReplay
from training.measure.stats import EpisodeRecord

#: The most episodes one run plays: a hundred million take hours even for the fastest bots,
#: and their records alone gigabytes; a count past it is a typo, refused before anything is
#: played rather than left to exhaust the memory.
MAX_EPISODES = 100_000_000


class PlayInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`play_matches`: carries the slot labels and the records of the
    episodes finished by then (the first ones in order, so they are the start of the same
    seeded run), so a command line can report them."""

    def __init__(self, labels: list[str], records: list[EpisodeRecord], total: int):
        super().__init__(f"interrupted after {len(records)} of {total} episodes")
        self.labels, self.records, self.total = labels, records, total


def episode_seeds(seed: int, index: int, count: int) -> list[int]:
    """``count`` independent 32-bit seeds for episode ``index`` of a run seeded ``seed``
    (the first seeds the deal, the others the slots' agents)."""
    return [int(s) for s in np.random.SeedSequence(entropy=seed, spawn_key=(index,)).generate_state(count)]


def duplicate_deal_seed(seed: int, index: int, num_players: int) -> int:
    """The seed of episode ``index``'s deal with duplicate deals: the one its group of
    ``num_players`` consecutive episodes (``k*n .. k*n+n-1``) shares, where a plain run seeds
    every episode's deal on its own (the first of :func:`episode_seeds`)."""
    return episode_seeds(seed, index // num_players, 1)[0]


def check_duplicate_rounds(rounds: int, num_players: int, flag: str = "duplicate=True", name: str = "rounds") -> None:
    """Raise ``ValueError`` unless ``rounds`` episodes make whole duplicate deals (a multiple of the
    table size). ``flag`` and ``name`` are what the caller calls the mode and the count, so that a
    command line can name its options (``"--duplicate"``, ``"--rounds"``)."""
    if rounds % num_players:
        raise ValueError(
            f"{flag} plays each deal once per seat rotation, so {name} must be a multiple of "
            f"{num_players} (the table size); got {rounds}"
        )


@dataclass(frozen=True)
class ReplaySaving:
    """Save every ``every``-th episode as a replay in ``directory`` (``episode_<index>.json``);
    ``labels`` names each lineup slot in the files."""

    directory: Path
    every: int = 1
    labels: tuple[str, ...] = ()

    def path(self, index: int) -> Path | None:
        return self.directory / f"episode_{index:06d}.json" if index % self.every == 0 else None


def play_episode(
    agents: Sequence[Agent],
    env: raw_env,
    index: int,
    seed: int,
    replays: ReplaySaving | None = None,
    duplicate: bool = False,
) -> EpisodeRecord:
    """Play episode ``index`` with ``agents`` (one per slot; slot ``i`` sits at seat
    ``(i + index) % n``) and return its record; ``replays`` says whether to save it and
    ``duplicate`` whether the deal is the one of its group (see :func:`duplicate_deal_seed`)."""
    n = env.num_players
    seeds = episode_seeds(seed, index, n + 1)
    if duplicate:
        seeds[0] = duplicate_deal_seed(seed, index, n)
    seat_slot = [(s - index) % n for s in range(n)]
    for slot, agent in enumerate(agents):
        reset_agent(agent, seeds[slot + 1])
    replay_path = replays.path(index) if replays else None
    recorder = None
    if replays and replay_path:
        labels = replays.labels or tuple(agent_label(a) for a in agents)
        infos = [AgentInfo(labels[seat_slot[s]], labels[seat_slot[s]], {}, seeds[seat_slot[s] + 1]) for s in range(n)]
        metadata = {"source": "training.evaluate", "run_seed": seed, "episode_index": index}
        env = recorder = RecordReplay(env, infos, metadata=metadata)
    env.reset(seed=seeds[0])
    game = env.game
    assert game is not None  # reset() dealt it
    first_slot = seat_slot[game.current]
    turns = 0
    while not all(env.terminations.values()):
        agent_name = env.agent_selection
        seat = env.agent_name_mapping[agent_name]
        slot = seat_slot[seat]
        observation = env.observe(agent_name)
        if recorder is not None:
            recorder.set_details(decision_details(agents[slot], observation, seat, n))
        env.step(checked_act(agents[slot], observation, name=f"in slot {slot} ({agent_label(agents[slot])})"))
        turns += 1
    if recorder is not None and recorder.last_replay is not None and replay_path is not None:
        save_replay(recorder.last_replay, replay_path)
    winners = game.round_winners if env.episode == "round" else game.game_winners
    return EpisodeRecord(tuple(sorted(seat_slot[w] for w in winners)), first_slot, turns, game.round)


@dataclass(frozen=True)
class MatchSetup:
    """What to play, apart from how many episodes and where: the lineup, the table, the rules,
    the run's seed, duplicate deals and replay saving. Build one with :meth:`of`, which checks
    it. It is sent once to every worker (so it must pickle: agent specs are strings, paths or
    picklable agent objects)."""

    lineup: tuple[Any, ...]
    num_players: int
    episode: str
    rules: str
    seed: int
    replays: ReplaySaving | None = None
    duplicate: bool = False

    @classmethod
    def of(
        cls,
        agents: Sequence[AgentSpec],
        num_players: int = 2,
        episode: str = "round",
        rules: str = "classic",
        seed: int = 0,
        duplicate: bool = False,
        save_replays: str | os.PathLike | None = None,
        save_replays_every: int = 1,
    ) -> MatchSetup:
        """A checked setup (the arguments are those of :func:`training.measure.evaluation.evaluate`):
        ``agents`` filled to ``num_players`` slots (the replay folder is made when play starts)."""
        check_num_players(num_players)
        check_episode(episode)
        # Named here, before any worker starts: a worker that failed to build its env would be
        # replaced by the pool again and again, and the run would never end.
        check_rules_for_table(rules, num_players)
        seed = check_seed(seed)  # None would draw fresh entropy per episode: no duplicate deals, no reproducibility
        if not isinstance(duplicate, bool):
            raise ValueError(f"duplicate must be True or False, got {duplicate!r}")
        lineup = _lineup(agents, num_players)
        replays = None
        if save_replays is not None:
            check_int("save_replays_every", save_replays_every, low=1)
            replays = ReplaySaving(Path(save_replays), save_replays_every, tuple(agent_label(s) for s in lineup))
        return cls(tuple(lineup), num_players, episode, rules, seed, replays, duplicate)

    @property
    def labels(self) -> list[str]:
        """How results and progress bars name the lineup's slots."""
        return [agent_label(s) for s in self.lineup]


class EpisodePlayer:
    """A worker's agents and env for one :class:`MatchSetup`, built once, playing any
    chunk of its episodes (``agents``: already resolved ones, else resolved from the lineup)."""

    def __init__(self, setup: MatchSetup, agents: Sequence[Agent] | None = None):
        self.setup = setup
        self.agents = list(agents) if agents is not None else [resolve_agent(s) for s in setup.lineup]
        self.env = raw_env(num_players=setup.num_players, episode=setup.episode, rules=setup.rules)

    def play(self, chunk: range) -> list[EpisodeRecord]:
        """The records of episodes ``chunk`` (indices of the run), in order."""
        setup = self.setup
        return [play_episode(self.agents, self.env, i, setup.seed, setup.replays, setup.duplicate) for i in chunk]


def portable_error(exc: Exception) -> Exception:
    """``exc`` itself if it survives pickling, else a ``RuntimeError`` with its text: an exception
    that cannot travel back from a worker would hang a process pool or lose its message."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class EpisodeRunner(Protocol):
    """Where the chunks of a run are played: this process, a process pool or a Ray cluster
    (:class:`training.measure.ray_cluster.RayRunner`). :func:`run_episodes` drives any of them."""

    #: How many chunks it plays at once (sets the chunk size).
    workers: int

    def map(self, chunks: Sequence[range]) -> Iterator[list[EpisodeRecord]]:
        """Every chunk's records, in the order of ``chunks`` (whatever order they finish in)."""
        ...

    def close(self) -> None:
        """Stop the workers (unfinished chunks included) and free what the runner holds."""
        ...


class Cluster(Protocol):
    """Machines elsewhere to play on (:class:`training.measure.ray_cluster.RayCluster`): this
    module drives one through this method alone, so it never imports the cluster's module."""

    def runner(self, setup: MatchSetup, progress: bool = False) -> AbstractContextManager[EpisodeRunner]:
        """Connected to the cluster inside the block, yielding a runner of ``setup``'s chunks."""
        ...


class InProcessRunner:
    """Plays every chunk in this process, with agents already resolved. Its agents and env
    live in this object, so one evaluation can run inside another (an agent that evaluates
    while it plays)."""

    workers = 1

    def __init__(self, setup: MatchSetup, agents: Sequence[Agent]):
        self._player = EpisodePlayer(setup, agents)

    def map(self, chunks: Sequence[range]) -> Iterator[list[EpisodeRecord]]:
        return (self._player.play(chunk) for chunk in chunks)

    def close(self) -> None:
        pass


#: A pool worker's player (set by :func:`_init_pool_worker` in worker processes only).
_POOL_PLAYER: dict[str, EpisodePlayer] = {}
#: Why a pool worker could not build its player (set by :func:`_init_pool_worker`).
_POOL_ERROR: dict[str, Exception] = {}


def _init_pool_worker(setup: MatchSetup) -> None:
    # An initializer that raises is not reported: the pool starts another worker in its place,
    # which fails alike, for ever (the run hangs, printing tracebacks). The error is kept and
    # raised by the first chunk instead, which ends the run with it.
    try:
        _POOL_PLAYER["player"] = EpisodePlayer(setup)
    except Exception as exc:
        _POOL_ERROR["error"] = portable_error(exc)


def _play_in_pool_worker(chunk: range) -> list[EpisodeRecord]:
    if "error" in _POOL_ERROR:
        raise _POOL_ERROR["error"]
    try:
        return _POOL_PLAYER["player"].play(chunk)
    except Exception as exc:
        raise portable_error(exc) from None


class ProcessPoolRunner:
    """Plays the chunks in ``workers`` processes of this machine."""

    def __init__(self, setup: MatchSetup, workers: int):
        self.workers = workers
        ctx = multiprocessing.get_context(_start_method())
        # Workers start with Ctrl-C ignored (inherited, across spawn's exec too): the
        # parent alone handles it and ends them, instead of each printing a traceback.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _in_main_thread() else None
        try:
            others = set(multiprocessing.active_children())
            self._pool = ctx.Pool(workers, initializer=_init_pool_worker, initargs=(setup,))
            # The workers the pool started (it starts them before it returns), watched by map.
            self._workers = [p for p in multiprocessing.active_children() if p not in others]
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def map(self, chunks: Sequence[range]) -> Iterator[list[EpisodeRecord]]:
        return self._watched(self._pool.imap(_play_in_pool_worker, chunks), len(chunks))

    def _watched(self, results: Any, count: int) -> Iterator[list[EpisodeRecord]]:
        # A worker that dies (killed for memory, a crash in compiled code, an agent's os._exit or
        # SystemExit) is replaced by the pool, and the chunk it played is lost: waiting for it
        # would never end. No worker ends on its own while the run goes on, so one that has
        # ended stops the run.
        for _ in range(count):
            while True:
                try:
                    part = results.next(timeout=WORKER_CHECK_S)
                    break
                except multiprocessing.TimeoutError:
                    self._check_workers()
            yield part

    def _check_workers(self) -> None:
        for worker in self._workers:
            code = worker.exitcode
            if code is not None:
                how = f"exit code {code}" if code >= 0 else f"signal {-code}"
                raise RuntimeError(
                    f"a worker process died ({how}) and the episodes it was given with it, so the run is "
                    "stopped (out of memory? an agent that exits or crashes? its traceback, if any, is above)"
                )

    def close(self) -> None:
        # Pool.terminate can wait for ever: a worker it kills while the worker holds the result
        # queue's lock leaves the pool's task thread blocked on that lock, and terminate joins
        # that thread (CPython's multiprocessing; seen under load when a worker's error ends a
        # run). The workers are ended by then, or as daemons at exit, and the pool's threads are
        # daemons: after a bounded wait the run goes on with its result or its error.
        closing = threading.Thread(target=self._terminate, name="pool terminate", daemon=True)
        closing.start()
        closing.join(TERMINATE_WAIT_S)

    def _terminate(self) -> None:
        self._pool.terminate()
        self._pool.join()


#: Seconds :meth:`ProcessPoolRunner.close` waits for the pool to end (it takes well under one).
TERMINATE_WAIT_S = 10.0
#: Seconds between two looks at whether a :class:`ProcessPoolRunner`'s workers are alive, while
#: it waits for a chunk.
WORKER_CHECK_S = 0.5


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _start_method() -> str:
    """``fork`` where it is safe: workers start at once and need no importable
    ``__main__`` (stdin, notebooks). Once torch is loaded its thread pools make forked
    children hang, so then ``spawn`` (the caller's main module must be importable, as
    multiprocessing always requires with spawn)."""
    if "fork" in multiprocessing.get_all_start_methods() and "torch" not in sys.modules:
        return "fork"
    return "spawn"


def episode_chunks(rounds: int, workers: int) -> list[range]:
    """Episodes ``0 .. rounds-1`` cut in consecutive chunks: about 8 per worker (so that
    workers finishing at different speeds even out), at most 50 episodes each (so that
    progress shows and Ctrl-C keeps most of the work)."""
    size = max(1, min(50, rounds // (workers * 8)))
    return [range(i, min(i + size, rounds)) for i in range(0, rounds, size)]


def run_episodes(
    runner: EpisodeRunner, rounds: int, labels: Sequence[str], progress: bool = False, unit: str = "round"
) -> list[EpisodeRecord]:
    """Play episodes ``0 .. rounds-1`` on ``runner`` and return their records in order, with a
    progress bar if asked. Ctrl-C raises :class:`PlayInterrupted` with the records of the
    chunks finished in order by then. The runner is closed in every case."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=rounds, unit=unit, desc=" vs ".join(labels), dynamic_ncols=True)
    records: list[EpisodeRecord] = []
    try:
        chunks = episode_chunks(rounds, runner.workers)
        for chunk, part in zip(chunks, runner.map(chunks)):
            records += part
            if bar:
                bar.update(len(chunk))
    except KeyboardInterrupt:
        # A second Ctrl-C while the workers stop stops the waiting, not the report: the records
        # are played and kept, and without them the command would say it played nothing.
        # Workers left behind are daemons, which end with this process.
        with contextlib.suppress(KeyboardInterrupt):
            _close(runner, bar)
        raise PlayInterrupted(list(labels), records, rounds) from None
    except BaseException:
        _close(runner, bar)
        raise
    _close(runner, bar)
    return records


def _close(runner: EpisodeRunner, bar: Any) -> None:
    """Close the runner, then the progress bar (if any), whatever the runner's close raises."""
    try:
        runner.close()
    finally:
        if bar:
            bar.close()


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


def check_agents_play(agents: Sequence[Any], rules: str) -> None:
    """``ValueError`` for an agent that can only play other rules: a solved policy plays the
    rung it was solved for, and would otherwise be refused at its first move, once the match
    (and a league's groups file) had started."""
    from loveletter_env.agents.solved import SolvedAgent

    for agent in agents:
        if isinstance(agent, SolvedAgent) and agent.rules != rules:
            raise ValueError(
                f"solved policy {agent.path!r} plays {agent.rules}, the rung it was solved for, not {rules}: "
                f"give --rules {agent.rules}"
            )


def check_counts(setup: MatchSetup, rounds: int, workers: int) -> None:
    """Raise ``ValueError`` unless ``rounds`` episodes of ``setup`` can be played in ``workers``
    processes: a count in ``1 .. MAX_EPISODES`` (whole deals with duplicate deals), a positive
    worker count. Part of :func:`check_play`."""
    check_int("rounds", rounds, low=1, high=MAX_EPISODES)
    check_int("workers", workers, low=1)
    if setup.duplicate:
        check_duplicate_rounds(rounds, setup.num_players)


def check_play(setup: MatchSetup, rounds: int, workers: int, agents: Sequence[AgentSpec] | None = None) -> list[Agent]:
    """Raise ``ValueError`` for what would stop ``rounds`` episodes of ``setup`` in ``workers``
    processes before the first (:meth:`MatchSetup.of` has checked the lineup, table and rules):
    the counts (:func:`check_counts`), a spec that does not resolve, an agent that cannot play
    the rules (:func:`check_agents_play`). Returns the agents resolved, in order: ``agents``
    where given (a league checks all of its agents at once), else the lineup's, which
    :func:`play_matches` then plays with, so that no checkpoint is loaded twice."""
    check_counts(setup, rounds, workers)
    resolved = [resolve_agent(s) for s in (setup.lineup if agents is None else agents)]
    check_agents_play(resolved, setup.rules)
    return resolved


def play_matches(
    setup: MatchSetup,
    rounds: int = 1000,
    workers: int = 1,
    progress: bool = False,
    ray: Cluster | None = None,
    before_play: Callable[[], object] | None = None,
) -> tuple[list[str], list[EpisodeRecord]]:
    """Play ``rounds`` episodes of ``setup`` in ``workers`` processes (or on ``ray``); return
    the slot labels and every episode's record (see :func:`training.measure.evaluation.evaluate`).
    ``before_play`` is called once the run is checked (:func:`check_play`), before anything is
    played or made: what a caller must do only for a run that will play."""
    labels = setup.labels
    # Checked (and resolved, once) here so a bad spec fails fast, before any worker starts (and
    # before the replay folder is made, so a bad spec leaves no empty folder behind).
    resolved = check_play(setup, rounds, workers)
    if before_play is not None:
        before_play()
    if setup.replays is not None:
        setup.replays.directory.mkdir(parents=True, exist_ok=True)
    if ray is not None:
        with ray.runner(setup, progress) as remote:
            return labels, run_episodes(remote, rounds, labels, progress, setup.episode)
    runner: EpisodeRunner = InProcessRunner(setup, resolved) if workers == 1 else ProcessPoolRunner(setup, workers)
    return labels, run_episodes(runner, rounds, labels, progress, setup.episode)
