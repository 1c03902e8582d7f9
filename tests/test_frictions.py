"""Small frictions of the command-line tools: narration that says whose card is whose,
the card reference and confirmations of ``training.play``, league tables that tell one
story, progress lines without a progress bar, percentages that add up."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from loveletter_env.cards import BARON, CARD_COUNTS, CARD_VALUES, KING, PRINCESS, card_name
from loveletter_env.engine import TurnEvent
from loveletter_env.render import CARD_EFFECTS, card_reference, narrate
from loveletter_env.rules import PRESETS
from training.ratings import fit_ratings


@pytest.mark.parametrize(
    "viewer, expected",
    [
        (0, "You played Baron on player_1: your King against player_1's Princess. You are out."),
        (1, "player_0 played Baron on you: your Princess against player_0's King. player_0 is out."),
        (2, "player_0 played Baron on player_1. player_0 is out."),
    ],
    ids=["actor", "target", "onlooker"],
)
def test_baron_narration_says_whose_card_is_whose(viewer, expected):
    event = TurnEvent(round=1, player=0, card=BARON, target=1, actor_card=KING, target_card=PRINCESS, eliminated=(0,))
    assert narrate(event, viewer) == expected


def test_card_reference_lists_every_card_with_value_copies_and_effect():
    text = card_reference()
    for value in CARD_VALUES:
        line = next(line for line in text.splitlines()[1:] if line.split()[1] == card_name(value))
        assert line.split()[0] == str(value) and line.split()[2] == str(CARD_COUNTS[value])
        assert CARD_EFFECTS[value] in line
    assert "Handmaid does not protect from the King" in card_reference(PRESETS["king_ignores_handmaid"])
    assert "Handmaid does not protect" not in text


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
