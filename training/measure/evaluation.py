"""Measure agents against each other: :func:`evaluate`, the function behind ``python -m training.evaluate``.

Used by the self-play trainer::

    from training.measure.evaluation import evaluate
    result = evaluate(["belief", "rule"], num_players=2, rounds=1000, seed=0)
    result.win_rate[0], result.ci95[0], result.to_dict()

Agent specs are resolved by :func:`loveletter_env.agents.specs.resolve_agent`: bot names
(``"ismcts"``, with options as ``"ismcts:iterations=100"``), checkpoint paths or run
folders, ``"package.module:factory"`` (a callable returning an agent) or agent objects.
Seats rotate so that every lineup slot plays every seat equally; each episode's deal and
each agent's generator are seeded from ``(seed, episode index)`` alone, so results do
not depend on ``workers``, nor on playing on a Ray cluster (see
:mod:`training.measure.ray_cluster`). With duplicate deals every deal is played once in each
seat rotation and the intervals are taken over per-deal scores, which cancels much of the
luck of the deal.

The work is done by :mod:`training.measure.matches` (playing episodes, worker processes) and
:mod:`training.measure.stats` (:class:`~training.measure.stats.EvaluationResult`, intervals);
leagues are :mod:`training.measure.league`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from loveletter_env.agents.specs import AgentSpec
from training.measure.matches import MatchSetup, play_matches
from training.measure.ray_cluster import RayCluster
from training.measure.stats import EvaluationResult, summarize

__all__ = ["EvaluationResult", "evaluate"]


def evaluate(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    rounds: int = 1000,
    episode: str = "round",
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    rules: str = "classic",
    save_replays: str | Path | None = None,
    save_replays_every: int = 1,
    ray: RayCluster | None = None,
    duplicate: bool = False,
    before_play: Callable[[], object] | None = None,
) -> EvaluationResult:
    """Play ``rounds`` episodes and measure every lineup slot.

    Args:
        agents: one spec per lineup slot (see :func:`loveletter_env.agents.specs.resolve_agent`); with fewer than
            ``num_players`` the last is repeated.
        num_players: 2, 3 or 4.
        rounds: number of episodes (rounds, or games when ``episode="game"``).
        episode: ``"round"`` or ``"game"``.
        seed: the whole run's seed: deals and agents' generators derive from it.
        workers: processes to play in; results do not depend on it (agent objects must
            then be picklable).
        progress: show a tqdm progress bar.
        rules: the rule preset.
        save_replays: a folder to save episodes in as replay files (``episode_<index>.json``,
            see :mod:`loveletter_env.replay`); ``None`` saves nothing.
        save_replays_every: save only every K-th episode (0, K, 2K, ...).
        ray: play on a Ray cluster instead (see :class:`training.measure.ray_cluster.RayCluster`; ``workers`` is then
            ignored); results do not depend on it either.
        duplicate: play every deal once in each seat rotation (episodes ``k*n .. k*n+n-1`` share
            a deal, ``n`` the table size) and take the intervals over per-deal scores (see
            :func:`training.measure.stats.per_deal_interval`); ``rounds`` must then be a multiple of ``n``.
        before_play: called once every argument is checked and the agents are loaded, before the
            first episode (and before the replay folder is made): what must be done only for a run
            that will play, such as the command's ``--force`` removing an earlier run's replays.

    Returns:
        An :class:`EvaluationResult`.

    Raises:
        ValueError: a bad argument, such as ``rounds`` not a multiple of ``num_players`` with ``duplicate``.
    """
    setup = MatchSetup.of(agents, num_players, episode, rules, seed, duplicate, save_replays, save_replays_every)
    labels, records = play_matches(setup, rounds, workers, progress, ray, before_play)
    return summarize(records, labels, num_players, episode, seed, duplicate, rules)


# Command line -----------------------------------------------------------------------
