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


@pytest.mark.parametrize(
    "successes, trials, problem",
    [
        (-1, 10, "successes"),  # used to fail with "math domain error"
        (11, 10, "successes"),
        (1, 0, "successes"),  # used to give (0, 1) as if nothing had been counted
        (float("nan"), 10, "successes"),  # used to give (0, 1)
        (float("inf"), 10, "successes"),
        (5, -3, "trials"),  # used to give (0, 1)
        (1, float("nan"), "trials"),
        (1, 2.5, "trials"),
    ],
)
def test_the_wilson_interval_refuses_counts_that_are_no_proportion(successes, trials, problem):
    from training.measure.stats import wilson_interval

    with pytest.raises(ValueError, match=rf"^wilson_interval: {problem}"):
        wilson_interval(successes, trials)


def test_the_wilson_interval_matches_the_formula_worked_by_hand():
    from training.measure.stats import wilson_interval

    # 5 of 10: centre 0.5, half-width z/(1+z²/10)·sqrt(0.025 + z²/400) = 0.2634 (Wilson 1927).
    assert wilson_interval(5, 10) == pytest.approx((0.2365931, 0.7634069), abs=1e-7)
    assert wilson_interval(0.5, 1) == pytest.approx((0.0546208, 0.9453792), abs=1e-7)  # a shared win of one


@pytest.mark.parametrize(
    "records, labels, problem",
    [
        ([EpisodeRecord((0,), 0, 5, 1)], ["a"], "2 players but 1 label"),  # the second slot's wins were dropped
        ([EpisodeRecord((0,), 0, 5, 1)], ["a", "b", "c"], "2 players but 3 labels"),
        ([EpisodeRecord((2,), 0, 5, 1)], ["a", "b"], "episode 0 .* winners"),  # won by nobody in the lineup
        ([EpisodeRecord((0,), 0, 5, 1), EpisodeRecord((), 0, 5, 1)], ["a", "b"], "episode 1 .* winners"),
        ([EpisodeRecord((0, 0), 0, 5, 1)], ["a", "b"], "episode 0 .* winners"),
        ([EpisodeRecord((0,), 2, 5, 1)], ["a", "b"], "episode 0 .* first_slot"),
    ],
)
def test_summarize_refuses_records_that_do_not_fit_the_lineup(records, labels, problem):
    with pytest.raises(ValueError, match=problem):
        summarize(records, labels, 2, "round", 0)


@pytest.mark.parametrize("score", [float("nan"), 1.5, -0.25])
def test_per_deal_interval_refuses_a_score_outside_0_to_1(score):
    from training.measure.stats import per_deal_interval

    deals = [[EpisodeRecord((0,), 0, 5, 1)] * 2] * 3
    # A NaN used to fail inside statistics.stdev with an AttributeError; 1.5 was clipped out of sight.
    with pytest.raises(ValueError, match=r"^per_deal_interval: a score must be in \[0, 1\]"):
        per_deal_interval(deals, lambda record: score)


def test_per_deal_interval_is_the_mean_of_the_deals_plus_or_minus_z_standard_errors():
    import math
    import statistics

    from training.measure.stats import Z_95, per_deal_interval

    # Deals of 3 rotations scoring 1/3, 2/3, 1/3, 1 and 0 (a shared win counts ½ in the last).
    won = [(0,), (1,), (2,), (0,), (0,), (1,), (0,), (2,), (2,), (0,), (0,), (0,), (1,), (2,), (0, 1)]
    deals = [[EpisodeRecord(w, 0, 5, 1) for w in won[i : i + 3]] for i in range(0, 15, 3)]
    scores = [1 / 3, 2 / 3, 1 / 3, 1.0, 1 / 6]
    half = Z_95 * statistics.stdev(scores) / math.sqrt(5)
    expected = (statistics.fmean(scores) - half, statistics.fmean(scores) + half)
    share = per_deal_interval(deals, lambda r: (0 in r.winners) / len(r.winners))
    assert share == pytest.approx(expected, abs=1e-12)
