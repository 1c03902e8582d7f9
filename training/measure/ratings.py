"""Ratings from a set of played episodes, independent of the order they were played in.

Each episode is a Luce choice: the winner of a group is picked with probability
``strength[i] / sum(strength of the group)``. :func:`fit_ratings` finds the strengths of
greatest likelihood (Hunter's minorise-maximise iteration, 2004) and reports them on the
Elo scale: a 400-point gap means 10-to-1 odds in a head-to-head episode.

Two properties make the league table read as one story:

- the fit uses every episode at once, so the order of play does not matter (online
  ratings such as openskill weigh the latest episodes most);
- in a round robin where every group plays as many episodes, the fitted rating is
  strictly increasing with the share of episodes won, so ranking by rating and by win
  share agree.

A shared win (several winners after a showdown tie) gives each winner an equal part of
one win. One virtual episode per pair of agents, won half by each, keeps the ratings
finite when an agent wins everything or nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

#: Rating of an agent of average strength (geometric mean of the strengths).
BASE_RATING = 1500.0
#: Elo points per factor of 10 in strength.
ELO_SCALE = 400.0


def fit_ratings(
    names: Sequence[str],
    episodes: Sequence[tuple[Sequence[str], Sequence[str]]],
    tolerance: float = 1e-10,
    max_iterations: int = 100_000,
) -> dict[str, float]:
    """Elo-scale ratings of ``names`` from ``episodes``, each ``(group, winners)``.

    Args:
        names: every rated agent (distinct).
        episodes: one ``(group, winners)`` per episode: the agents who played it and the
            ones who won it (a non-empty subset of the group).
        tolerance: stop when no strength changes by more than this factor.
        max_iterations: upper bound on the iterations.

    Raises:
        ValueError: fewer than two agents; an episode that names an unknown agent, names one
            twice, has fewer than two agents, or has no winner in its group.
    """
    known = set(names)
    if len(known) != len(names):
        raise ValueError(f"agent names must be distinct, got {list(names)}")
    if len(names) < 2:  # a rating says how agents compare: one alone has none (the fit would divide by zero)
        raise ValueError(f"ratings need at least two agents, got {list(names)}")
    # Episodes of the same group are interchangeable: count them and sum the win credit.
    played: dict[tuple[str, ...], float] = defaultdict(float)
    credit: dict[str, float] = dict.fromkeys(names, 0.0)
    for group, winners in episodes:
        members = tuple(sorted(group))
        # A name twice would count an agent as two players, or one win as two shares of it; a
        # group of one agent is no contest: such episodes are mistakes, not data.
        if (
            len(set(members)) != len(members)
            or len(members) < 2
            or not set(members) <= known
            or not winners
            or len(set(winners)) != len(winners)
            or not set(winners) <= set(members)
        ):
            raise ValueError(
                f"an episode must be a group of two or more distinct known agents and its distinct winners, "
                f"got {group!r}, {winners!r}"
            )
        played[members] += 1.0
        for winner in winners:
            credit[winner] += 1.0 / len(winners)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            played[tuple(sorted((first, second)))] += 1.0
            credit[first] += 0.5
            credit[second] += 0.5
    strength = dict.fromkeys(names, 1.0)
    groups_of: dict[str, list[tuple[tuple[str, ...], float]]] = {name: [] for name in names}
    for members, count in played.items():
        for name in members:
            groups_of[name].append((members, count))
    for _ in range(max_iterations):
        totals = {members: sum(strength[n] for n in members) for members in played}
        updated = {
            name: credit[name] / sum(count / totals[members] for members, count in groups_of[name]) for name in names
        }
        # Only ratios matter: pin the geometric mean to 1.
        mean_log = sum(math.log(s) for s in updated.values()) / len(updated)
        updated = {name: s / math.exp(mean_log) for name, s in updated.items()}
        change = max(abs(math.log(updated[n] / strength[n])) for n in names)
        strength = updated
        if change < tolerance:
            break
    return {name: BASE_RATING + ELO_SCALE * math.log10(strength[name]) for name in names}
