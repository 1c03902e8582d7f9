"""The AEC env's incremental ObservationTracker must equal encode_observation everywhere."""

import random

import numpy as np
import pytest

from loveletter_env import engine
from loveletter_env.cards import FULL_DECK
from loveletter_env.observation import ObservationTracker, encode_observation
from loveletter_env.rules import PRESETS


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("rules", sorted(PRESETS))
def test_tracker_matches_reference_encoding(num_players, rules):
    rng = random.Random(f"{num_players}-{rules}")
    tracker = ObservationTracker(num_players)  # reused across games, as the env does
    compared = 0
    for _ in range(150):
        state = engine.new_game(num_players, rng.sample(FULL_DECK, 16), rng.randrange(num_players), rules)
        while True:
            while not state.round_over:
                # Observe a random subset of seats in a random order: the tracker must not
                # depend on which seats were looked at before.
                for seat in rng.sample(range(num_players), rng.randint(1, num_players)):
                    np.testing.assert_array_equal(tracker.observe(state, seat), encode_observation(state, seat))
                    compared += 1
                legal = engine.legal_actions(state)
                engine.step(state, legal[rng.randrange(len(legal))])
            for seat in range(num_players):
                np.testing.assert_array_equal(tracker.observe(state, seat), encode_observation(state, seat))
            if state.game_over or rng.random() < 0.3:
                break
            engine.start_round(state, rng.sample(FULL_DECK, 16))
    assert compared > 500


def test_tracker_returns_independent_arrays():
    state = engine.new_game(2, FULL_DECK, 0)
    tracker = ObservationTracker(2)
    first = tracker.observe(state, 0)
    first[:] = 99.0
    np.testing.assert_array_equal(tracker.observe(state, 0), encode_observation(state, 0))
