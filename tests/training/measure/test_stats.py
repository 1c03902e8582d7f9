"""Figures of a match (``training.measure.stats``): percentages that add up and keep shared wins."""

from __future__ import annotations

import pytest

from training.measure.stats import EpisodeRecord, percentages, summarize


def shown_rates(result) -> list[float]:
    return [float(line.split("win rate")[1].split("%")[0]) for line in result.summary().splitlines() if "slot" in line]


@pytest.mark.parametrize("slots", [2, 3])
def test_one_matchups_percentages_add_up_to_100(slots):
    episodes = 2000
    for wins in range(0, episodes + 1, 7):  # 7 of 2000 is 0.35%: rounded alone, 0.4% + 99.7%
        records = [EpisodeRecord((0,), 0, 5, 1)] * wins + [
            EpisodeRecord((1 + i % (slots - 1),), 0, 5, 1) for i in range(episodes - wins)
        ]
        result = summarize(records, [f"agent{i}" for i in range(slots)], slots, "round", 0)
        assert sum(shown_rates(result)) == pytest.approx(100.0), result.summary()
        assert all(abs(s - 100 * r) < 0.1 for s, r in zip(shown_rates(result), result.win_rate, strict=True))


def test_percentages_keep_shared_wins_and_stay_within_a_digit():
    assert percentages([0.0035, 0.9965]) == ["0.3%", "99.7%"]  # the tied digit goes to the larger share
    assert percentages([1 / 3] * 3) == ["33.4%", "33.3%", "33.3%"]
    shared = [0.5505, 0.5005]  # 5.1% of episodes shared: the figures add up to 105.1%
    assert sum(float(p[:-1]) for p in percentages(shared)) == pytest.approx(105.1)


@pytest.mark.parametrize("pair", [(0.8775, 0.1225), (0.1225, 0.8775), (0.0035, 0.9965), (0.4975, 0.5025)])
def test_a_pair_shows_the_same_figures_in_either_order(pair):
    # A league rounds each head-to-head pair once from each side: the two cells must add up.
    forward, backward = percentages(list(pair)), percentages(list(pair[::-1]))
    assert forward == backward[::-1]
    assert sum(float(p[:-1]) for p in forward) == pytest.approx(100.0)


@pytest.mark.parametrize("trials", [1, 2, 7, 10, 100, 2000, 10**6])
def test_the_wilson_interval_holds_the_observed_rate_at_no_wins_and_all_wins(trials):
    from training.measure.stats import wilson_interval

    # At 0 and at every win the bound on the observed side is exactly the rate: rounding had left
    # 2000 wins of 2000 with an interval that stops below 100% (and 0 of 2000 one above 0%).
    assert wilson_interval(0, trials)[0] == 0.0
    assert wilson_interval(trials, trials)[1] == 1.0
    for wins in {0, 1, trials // 3, trials - 1, trials}:
        low, high = wilson_interval(wins, trials)
        assert 0.0 <= low <= wins / trials <= high <= 1.0
