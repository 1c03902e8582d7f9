"""Action numbers (loveletter_env.actions): encoding, decoding and naming, and the refusal of what is no action."""

from __future__ import annotations

import re

import gymnasium
import numpy as np
import pytest

import loveletter_env
from loveletter_env.actions import ACTIONS, NO_TARGET, decode_action, describe_action, encode_action, guard_action
from loveletter_env.cards import BARON, COUNTESS, FULL_DECK, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from loveletter_env.engine import IllegalActionError


@pytest.mark.parametrize("bad", [41, -1, 100, "3", None], ids=repr)
def test_decode_action_refuses_non_actions(bad):
    with pytest.raises(ValueError, match="action"):
        decode_action(bad)


def test_encode_action_refuses_plays_that_have_no_action():
    with pytest.raises(ValueError, match="Guard"):
        encode_action(GUARD, 1, GUARD)
    with pytest.raises(ValueError, match="Priest"):
        encode_action(PRIEST, 0)


# SPEC's table ----------------------------------------------------------------------

#: SPEC's action table for indices 21..40, written out (Guard 0..20 follows its formula below).
SPEC_ACTIONS = {
    21: (GUARD, NO_TARGET, 0),
    22: (PRIEST, 1, 0),
    23: (PRIEST, 2, 0),
    24: (PRIEST, 3, 0),
    25: (PRIEST, NO_TARGET, 0),
    26: (BARON, 1, 0),
    27: (BARON, 2, 0),
    28: (BARON, 3, 0),
    29: (BARON, NO_TARGET, 0),
    30: (HANDMAID, NO_TARGET, 0),
    31: (PRINCE, 0, 0),
    32: (PRINCE, 1, 0),
    33: (PRINCE, 2, 0),
    34: (PRINCE, 3, 0),
    35: (KING, 1, 0),
    36: (KING, 2, 0),
    37: (KING, 3, 0),
    38: (KING, NO_TARGET, 0),
    39: (COUNTESS, NO_TARGET, 0),
    40: (PRINCESS, NO_TARGET, 0),
}


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_action_layout_is_specs_table_at_every_table_size(num_players):
    """Every index means what SPEC's table says: networks and recorded games depend on it."""
    expected = {(t - 1) * 7 + (g - 2): (GUARD, t, g) for t in (1, 2, 3) for g in range(2, 9)} | SPEC_ACTIONS
    assert sorted(expected) == list(range(41))
    assert [tuple(a) for a in ACTIONS] == [expected[i] for i in range(41)]
    assert all(encode_action(*play) == i for i, play in expected.items())
    env = loveletter_env.env(num_players=num_players)
    assert env.action_space("player_0") == gymnasium.spaces.Discrete(41)


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


# Refusing what is no action, and naming actions -------------------------------------


@pytest.mark.parametrize("bad", [True, False, 3.0, np.float64(3.0), np.array(3.5), np.array([3])], ids=repr)
def test_decode_action_refuses_bools_floats_and_arrays_not_truncates_them(bad):
    """``True`` is no action 1, and ``int(np.array(3.5))`` would have been action 3."""
    with pytest.raises(ValueError, match=r"^action must be an integer in \[0, 41\), got "):
        decode_action(bad)
    with pytest.raises(ValueError, match=r"^action must be an integer"):
        describe_action(bad)


def test_decode_action_takes_python_and_numpy_integers():
    assert decode_action(np.int64(22)) == decode_action(22) == decode_action(np.array(22)) == (PRIEST, 1, 0)


@pytest.mark.parametrize(
    "args, name",
    [
        ((True, 1, 2), "card"),
        ((1.0, 1, 2), "card"),
        ((PRIEST, 1.0), "offset"),
        ((GUARD, 1, True), "guess"),
        (([1],), "card"),
    ],
    ids=repr,
)
def test_encode_action_refuses_arguments_that_are_no_integers(args, name):
    """``1.0`` and ``True`` hash as 1: a table lookup alone took them (and a list was a TypeError)."""
    with pytest.raises(ValueError, match=rf"^encode_action's {name} must be an integer, got "):
        encode_action(*args)
    assert encode_action(np.int64(PRIEST), np.int64(1)) == 22


@pytest.mark.parametrize(
    "action, num_players, words",
    [
        (23, 2, "Priest on seat +2, past the 2-player table"),
        (24, 3, "Priest on seat +3, past the 3-player table"),
        (33, 2, "Prince on seat +2, past the 2-player table"),
        (7, 2, "Guard on seat +2, past the 2-player table, naming Priest"),
    ],
)
def test_an_offset_past_the_table_is_never_named_as_a_seat(action, num_players, words):
    """Offset 2 at a 2-player table wrapped onto the actor: "Priest on player_0", in the very
    error that refuses it."""
    assert describe_action(action, 0, num_players) == words
    assert describe_action(22, 1, 2) == "Priest on player_0"  # an offset of the table names its seat


def test_an_illegal_offset_past_the_table_is_named_as_such_in_the_error():
    env = loveletter_env.env(num_players=2)
    env.reset(seed=0, options={"deck": list(FULL_DECK), "first_player": 0})
    with pytest.raises(IllegalActionError, match=r"^action 23 \(Priest on seat \+2, past the 2-player table\) is not"):
        env.step(23)


@pytest.mark.parametrize(
    "actor, num_players, message",
    [
        (5, 2, "actor must be a seat in 0..1, got 5"),
        (True, 2, "actor must be a seat in 0..1, got True"),
        (0, 7, "num_players must be 2, 3 or 4, got 7"),
        (0, 0, "num_players must be 2, 3 or 4, got 0"),  # was a ZeroDivisionError
        (0, None, "describe_action takes actor and num_players together, got actor=0 and num_players=None"),
        (None, 3, "describe_action takes actor and num_players together, got actor=None and num_players=3"),
    ],
)
def test_describe_action_refuses_a_seat_or_table_that_is_none(actor, num_players, message):
    for action in (22, 25):  # with a target, and with none
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            describe_action(action, actor, num_players)
