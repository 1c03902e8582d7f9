"""Elo ratings (``training.measure.ratings``): independent of the order of play, on the Elo
scale, finite for an agent that never wins."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from training.measure.ratings import fit_ratings


def _episodes(strength: dict[str, float], rounds: int, seed: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    rng = random.Random(seed)
    episodes = []
    for group in itertools.combinations(sorted(strength), 2):
        for _ in range(rounds):
            odds = strength[group[0]] / (strength[group[0]] + strength[group[1]])
            episodes.append((group, (group[0],) if rng.random() < odds else (group[1],)))
    return episodes


def test_ratings_do_not_depend_on_the_order_of_play_and_follow_the_win_share():
    strength = {"a": 1.0, "b": 1.05, "c": 1.1, "d": 0.4}  # close agents: online ratings could order them any way
    episodes = _episodes(strength, 200, seed=3)
    ratings = fit_ratings(list(strength), episodes)
    assert fit_ratings(list(strength), episodes[::-1]) == pytest.approx(ratings, abs=1e-6)
    share = {n: sum(n in winners for _, winners in episodes) for n in strength}
    assert sorted(strength, key=ratings.get) == sorted(strength, key=share.get)


def test_ratings_recover_the_odds_on_the_elo_scale():
    ratings = fit_ratings(["strong", "weak"], _episodes({"strong": 10.0, "weak": 1.0}, 20_000, seed=1))
    assert ratings["strong"] - ratings["weak"] == pytest.approx(400, abs=15)  # 10-to-1 odds are 400 points


def test_ratings_stay_finite_for_an_agent_that_never_wins_and_split_shared_wins():
    episodes = [(("a", "b"), ("a",))] * 50 + [(("a", "b"), ("a", "b"))] * 10
    ratings = fit_ratings(["a", "b"], episodes)
    assert all(math.isfinite(r) for r in ratings.values()) and ratings["a"] > ratings["b"]
    with pytest.raises(ValueError, match="known agents"):
        fit_ratings(["a", "b"], [(("a", "c"), ("a",))])


@pytest.mark.parametrize(
    "names, episodes, match",
    [
        ([], [], "at least two agents"),  # used to divide by zero
        (["a"], [], "at least two agents"),
        # Each used to be fitted as if it were data.
        (["a", "b"], [(("a", "a"), ("a",))], "two or more distinct known agents"),
        (["a", "b"], [(("a",), ("a",))], "two or more distinct known agents"),
        (["a", "b"], [(("a", "b"), ("a", "a"))], "distinct winners"),
    ],
)
def test_episodes_that_are_no_contest_are_refused(names, episodes, match):
    with pytest.raises(ValueError, match=match):
        fit_ratings(names, episodes)
