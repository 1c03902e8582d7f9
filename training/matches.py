"""Playing lineups of agents: seeded episodes with rotating seats, in one process or several.

- :func:`episode_seeds` / :func:`play_episode`: one episode, its deal and every agent's
  generator seeded from ``(seed, episode index)`` alone, slot ``i`` at seat ``(i + index) % n``;
- :func:`play_matches`: many episodes, in this process or in a pool of worker processes
  (results do not depend on the number of workers).

The single-process path keeps its agents and env in local variables, so one evaluation
can run inside another (an agent that evaluates while it plays). Worker processes keep
theirs in :data:`_WORKER`, which only pool workers ever fill.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from loveletter_env.agents import Agent
from loveletter_env.agents.specs import AgentSpec, accepts_seed, agent_label, resolve_agent
from loveletter_env.env import raw_env
from loveletter_env.validation import check_episode, check_int, check_num_players

from .stats import EpisodeRecord


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


def _play_chunk(agents: Sequence[Agent], env: raw_env, task: tuple[int, int, int]) -> list[EpisodeRecord]:
    start, stop, seed = task
    return [play_episode(agents, env, i, seed) for i in range(start, stop)]


#: A pool worker's agents and env (set by :func:`_init_worker` in worker processes only).
_WORKER: dict[str, Any] = {}


def _init_worker(specs: Sequence[AgentSpec], num_players: int, episode: str, rules: str) -> None:
    _WORKER["agents"] = [resolve_agent(s) for s in specs]
    _WORKER["env"] = raw_env(num_players=num_players, episode=episode, rules=rules)


def _play_chunk_in_worker(task: tuple[int, int, int]) -> list[EpisodeRecord]:
    """:func:`_play_chunk` for a pool worker: an exception that cannot be pickled back
    to the parent would hang the pool, so it travels as a ``RuntimeError`` with its text."""
    try:
        return _play_chunk(_WORKER["agents"], _WORKER["env"], task)
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
    """Play ``rounds`` episodes; return the slot labels and every episode's record.

    The arguments are those of :func:`training.evaluate.evaluate`.
    """
    check_num_players(num_players)
    check_episode(episode)
    check_int("rounds", rounds, low=1)
    check_int("workers", workers, low=1)
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
            env = raw_env(num_players=num_players, episode=episode, rules=rules)
            for task in tasks:
                records += _play_chunk(resolved, env, task)
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
        if bar:
            bar.close()
    return labels, records
