"""Who sits in the learner's other seats: :class:`training.learn.seating.Seating`'s draws."""

from __future__ import annotations

import numpy as np

from training.learn.config import load_config
from training.learn.seating import OpponentKind, Seating


def test_weights_too_large_to_add_up_still_draw_in_proportion():
    """Weights are relative: two of 1e308 are an even split, though their sum overflows to inf."""
    opponents = load_config(None, ["opponents.current=1e308", "opponents.bots=1e308"]).opponents
    seating = Seating(opponents, np.full(4000, 2), run_seed=0)
    seating.draw(np.arange(4000), np.random.default_rng(0), pool_size=1)
    shares = np.bincount(seating.kind, minlength=len(OpponentKind)) / 4000
    assert shares[OpponentKind.PAST] == 0 and abs(shares[OpponentKind.BOTS] - 0.5) < 0.05


def test_draws_follow_the_weights_seat_the_learner_everywhere_and_repeat_with_the_seed():
    """Kinds in proportion to their weights (a weight of 0 never drawn), the learner in each
    seat of every table size alike, and the same draws from the same generator state."""
    overrides = ["opponents.current=1", "opponents.past=0", "opponents.bots=3", "opponents.bot_names=[rule,random]"]
    opponents = load_config(None, overrides).opponents
    sizes = np.resize([2, 3, 4], 6000)
    draws = []
    for _ in range(2):
        seating = Seating(opponents, sizes, run_seed=0)
        seating.draw(np.arange(len(sizes)), np.random.default_rng(7), pool_size=3)
        draws.append((seating.kind.copy(), seating.learner_seat.copy(), list(seating.bot_name)))
    kind, seat, _ = draws[0]
    assert all(np.array_equal(a, b) for a, b in zip(draws[0][:2], draws[1][:2])) and draws[0][2] == draws[1][2]
    shares = np.bincount(kind, minlength=len(OpponentKind)) / len(kind)
    assert shares[OpponentKind.PAST] == 0 and abs(shares[OpponentKind.BOTS] - 0.75) < 0.03
    for players in (2, 3, 4):
        seats = np.bincount(seat[sizes == players], minlength=players) / (sizes == players).sum()
        assert len(seats) == players and np.all(abs(seats - 1 / players) < 0.04)


def test_past_opponents_wait_for_a_first_snapshot():
    """With the pool still empty, a past episode cannot be played: its share goes to the others."""
    opponents = load_config(None, ["opponents.current=0", "opponents.past=1"]).opponents
    seating = Seating(opponents, np.full(50, 2), run_seed=0)
    seating.draw(np.arange(50), np.random.default_rng(0), pool_size=0)
    assert (seating.kind == OpponentKind.CURRENT).all()
