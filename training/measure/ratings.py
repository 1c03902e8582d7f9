"""Ratings from a set of played episodes, independent of the order they were played in.

Each episode is a Luce choice: the winner of a group is picked with probability
``strength[i] / sum(strength of the group)``. :func:`fit_ratings` finds the strengths of
greatest likelihood (Newton's method on their logarithms, where the likelihood is concave)
and reports them on the Elo scale: a 400-point gap means 10-to-1 odds in a head-to-head
episode.

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
import numbers
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

#: Rating of an agent of average strength (geometric mean of the strengths).
BASE_RATING = 1500.0
#: Elo points per factor of 10 in strength.
ELO_SCALE = 400.0
#: A Newton step below this (a log-strength change, 1e-4 Elo points) that does not shrink is
#: taken for rounding noise: the fit has converged as far as floating point goes.
NOISE_STEP = 1e-6


def fit_ratings(
    names: Sequence[str],
    episodes: Sequence[tuple[Sequence[str], Sequence[str]]],
    tolerance: float = 1e-10,
    max_iterations: int = 1000,
) -> dict[str, float]:
    """Elo-scale ratings of ``names`` from ``episodes``, each ``(group, winners)``.

    Args:
        names: every rated agent (distinct).
        episodes: one ``(group, winners)`` per episode: the agents who played it and the
            ones who won it (a non-empty subset of the group).
        tolerance: stop when no strength changes by more than this factor (in natural logarithm).
        max_iterations: upper bound on the iterations (Newton's method needs a few dozen at most).

    Raises:
        ValueError: fewer than two agents; an episode that names an unknown agent, names one
            twice, has fewer than two agents, or has no winner in its group; a ``tolerance`` that is
            no positive number or ``max_iterations`` no whole number ``>= 1``.
        RuntimeError: the fit did not converge in ``max_iterations``.
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not 0 < tolerance < math.inf:
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, numbers.Integral) or max_iterations < 1:
        raise ValueError(f"max_iterations must be a whole number >= 1, got {max_iterations!r}")
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
    # Hunter's minorise-maximise iteration (2004) was used here: it crawls where some agent wins
    # nearly everything (100,000 iterations left a league of ten 48 points short, silently).
    # Newton's method on the log-strengths reaches the optimum in a few dozen steps.
    index = {name: i for i, name in enumerate(names)}
    groups = [(np.array([index[n] for n in members]), count) for members, count in played.items()]
    wins = np.array([credit[name] for name in names])
    n = len(names)

    def log_likelihood(theta: np.ndarray) -> float:
        total = float(wins @ theta)
        for members, count in groups:
            top = theta[members].max()
            total -= count * (top + math.log(float(np.exp(theta[members] - top).sum())))
        return total

    theta = np.zeros(n)
    last_step = math.inf
    for _ in range(max_iterations):
        gradient = wins.copy()
        curvature = np.zeros((n, n))
        for members, count in groups:
            p = np.exp(theta[members] - theta[members].max())
            p /= p.sum()
            gradient[members] -= count * p
            curvature[np.ix_(members, members)] += count * (np.diag(p) - np.outer(p, p))
        # Only ratios matter: the likelihood is flat along a common shift of the log-strengths (its
        # only flat direction, as every pair met at least in its virtual episode). Adding that
        # direction to the curvature makes it invertible, and the step keeps the mean, since the
        # gradient sums to zero (every episode's credit is one win).
        step = np.linalg.solve(curvature + 1.0 / n, gradient)
        step_size = float(np.abs(step).max())
        # Near the optimum each step is about the square of the last; one that is tiny and no smaller
        # than the last is rounding (the gradient is a difference of large sums), not distance to go.
        if step_size < tolerance or (step_size < NOISE_STEP and step_size >= last_step):
            theta += step
            break
        last_step = step_size
        # Far from the optimum a full step can overshoot: halve it until the likelihood does not
        # fall (beyond rounding).
        current = log_likelihood(theta)
        size = 1.0
        while size > 1e-9 and log_likelihood(theta + size * step) < current - 1e-12 * abs(current):
            size /= 2
        theta += size * step
    else:
        raise RuntimeError(
            f"fit_ratings did not converge in {max_iterations} iterations (the last step changed a strength "
            f"by a factor of e^{step_size:.1e})"
        )
    theta -= theta.mean()  # the geometric mean of the strengths is 1: its agent rates BASE_RATING
    return {name: BASE_RATING + ELO_SCALE * float(theta[index[name]]) / math.log(10) for name in names}
