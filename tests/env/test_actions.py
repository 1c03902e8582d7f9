"""Action numbers (loveletter_env.actions): encoding and decoding, and the refusal of what is no action."""

from __future__ import annotations

import re

import numpy as np
import pytest

from loveletter_env.actions import ACTIONS, decode_action, encode_action, guard_action
from loveletter_env.cards import GUARD, PRIEST


@pytest.mark.parametrize("bad", [41, -1, 100, "3", None], ids=repr)
def test_decode_action_refuses_non_actions(bad):
    with pytest.raises(ValueError, match="action"):
        decode_action(bad)


def test_encode_action_refuses_plays_that_have_no_action():
    with pytest.raises(ValueError, match="Guard"):
        encode_action(GUARD, 1, GUARD)
    with pytest.raises(ValueError, match="Priest"):
        encode_action(PRIEST, 0)


# Guard actions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "offset, guess, message",
    [
        (1, True, "Guard guess must be an integer in 2..8, got True"),  # used to give -1
        (1, 9, "Guard guess must be an integer in 2..8, got 9"),  # used to give Guard on +2 naming Priest
        (1, 1, "Guard guess must be an integer in 2..8, got 1"),
        (1, 2.0, "Guard guess must be an integer in 2..8, got 2.0"),
        (0, 3, "Guard target offset must be an integer in 1..3, got 0"),
        (4, 3, "Guard target offset must be an integer in 1..3, got 4"),
        (True, 3, "Guard target offset must be an integer in 1..3, got True"),
    ],
)
def test_guard_action_refuses_what_is_no_guard_action(offset, guess, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        guard_action(offset, guess)


def test_guard_action_covers_every_guard_play_once():
    indices = {guard_action(o, g): (o, g) for o in (1, 2, 3) for g in range(2, 9)}
    assert sorted(indices) == list(range(21))
    assert all(ACTIONS[i] == (GUARD, o, g) for i, (o, g) in indices.items())
    assert guard_action(np.int64(2), np.int8(5)) == guard_action(2, 5)
