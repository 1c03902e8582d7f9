"""loveletter_env.validation: one message format for every argument check, values normalised."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loveletter_env.validation import (
    EPISODE_KINDS,
    PLAYER_COUNTS,
    check_choice,
    check_episode,
    check_int,
    check_num_players,
    check_number,
    check_seat,
)


def test_valid_values_come_back_as_plain_python_types():
    value = check_int("rounds", np.int64(3), low=1)
    assert value == 3 and type(value) is int
    assert type(check_number("noise", np.float32(0.5), 0, 1)) is float
    assert check_num_players(np.int8(4)) == 4 and PLAYER_COUNTS == (2, 3, 4)
    assert check_seat("first_player", 2, 3) == 2
    assert check_episode("game") == "game" and EPISODE_KINDS == ("round", "game")


@pytest.mark.parametrize(
    "check, message",
    [
        (lambda: check_int("rounds", 0, low=1), "rounds must be a positive integer, got 0"),
        (lambda: check_int("width", -1, low=0), "width must be a non-negative integer, got -1"),
        (lambda: check_int("depth", 9, 1, 4), "depth must be an integer in 1..4, got 9"),
        (lambda: check_int("rounds", True, low=1), "rounds must be a positive integer, got True"),
        (lambda: check_int("rounds", 2.0, low=1), "rounds must be a positive integer, got 2.0"),
        (lambda: check_number("noise", math.nan, 0, 1), "noise must be a number between 0 and 1, got nan"),
        (lambda: check_number("noise", "high", 0, 1), "noise must be a number between 0 and 1, got 'high'"),
        (lambda: check_number("exploration", -0.5, low=0), "exploration must be a number >= 0, got -0.5"),
        (lambda: check_number("lr", math.inf), "lr must be a finite number, got inf"),
        (lambda: check_num_players(5), "num_players must be 2, 3 or 4, got 5"),
        (lambda: check_seat("first_player", 3, 3), "first_player must be a seat in 0..2, got 3"),
        (lambda: check_episode("match"), "episode must be one of \\('round', 'game'\\), got 'match'"),
        (lambda: check_choice("mode", [1], ("a", "b")), "mode must be one of \\('a', 'b'\\), got \\[1\\]"),
    ],
)
def test_bad_values_name_the_argument_the_rule_and_the_value(check, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        check()
