"""Shared argument checks and the limits they check against.

Every public entry point (engine, envs, bots, evaluation, play, training config) checks
its arguments with these helpers before it changes anything, so a bad value always gets
the same kind of message: ``"<name> must be <rule>, got <value!r>"``. Each helper returns
the value normalised (numpy integers become ``int``, numbers become ``float``) so callers
store plain Python types.

This module depends on nothing else in the package: anything may import it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any, TypeVar

#: Table sizes the game supports.
MIN_PLAYERS, MAX_PLAYERS = 2, 4
PLAYER_COUNTS: tuple[int, ...] = tuple(range(MIN_PLAYERS, MAX_PLAYERS + 1))
#: What one episode of an env is: a single round, or rounds until a player holds the token target.
EPISODE_KINDS: tuple[str, ...] = ("round", "game")

T = TypeVar("T")


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def _fail(name: str, rule: str, value: Any) -> ValueError:
    return ValueError(f"{name} must be {rule}, got {value!r}")


def is_int(value: Any) -> bool:
    """An integer (``int`` or numpy integer), and not a ``bool``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def int_rule(low: int | None = None, high: int | None = None) -> str:
    """The words :func:`check_int` uses for a range, e.g. ``"a positive integer"``."""
    if low is not None and high is not None:
        return f"an integer in {low}..{high}"
    if low == 1:
        return "a positive integer"
    if low == 0:
        return "a non-negative integer"
    if low is not None:
        return f"an integer >= {low}"
    if high is not None:
        return f"an integer <= {high}"
    return "an integer"


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) in ``low..high`` (inclusive, either
    bound optional); else ``ValueError("<name> must be an integer in low..high, got ...")``."""
    if not is_int(value) or (low is not None and value < low) or (high is not None and value > high):
        raise _fail(name, int_rule(low, high), value)
    return int(value)


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    """``value`` as a ``float`` if it is a finite real number (not a bool) in ``[low, high]``
    (either bound optional); else ``ValueError`` naming ``name`` and the range."""
    if low is not None and high is not None:
        rule = f"a number between {_number_text(low)} and {_number_text(high)}"
    elif low is not None:
        rule = f"a number >= {_number_text(low)}"
    elif high is not None:
        rule = f"a number <= {_number_text(high)}"
    else:
        rule = "a finite number"
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise _fail(name, rule, value)
    number = float(value)
    if not math.isfinite(number) or (low is not None and number < low) or (high is not None and number > high):
        raise _fail(name, rule, value)
    return number


def check_choice(name: str, value: T, choices: Collection[T]) -> T:
    """``value`` if it is one of ``choices``; else ``ValueError("<name> must be one of ...")``."""
    try:
        known = value in choices
    except (TypeError, ValueError):  # unhashable values; arrays, whose == is elementwise
        known = False
    if not known:
        raise _fail(name, f"one of {tuple(choices)}", value)
    return value


def check_num_players(value: Any, name: str = "num_players") -> int:
    """A supported table size (:data:`PLAYER_COUNTS`) as an ``int``."""
    if not is_int(value) or not MIN_PLAYERS <= value <= MAX_PLAYERS:
        raise _fail(name, ", ".join(map(str, PLAYER_COUNTS[:-1])) + f" or {PLAYER_COUNTS[-1]}", value)
    return int(value)


def check_seat(name: str, value: Any, num_players: int) -> int:
    """A seat index of a ``num_players`` table as an ``int``."""
    if not is_int(value) or not 0 <= value < num_players:
        raise _fail(name, f"a seat in 0..{num_players - 1}", value)
    return int(value)


def check_episode(value: Any, name: str = "episode") -> str:
    """One of :data:`EPISODE_KINDS`."""
    return check_choice(name, value, EPISODE_KINDS)


__all__ = [
    "EPISODE_KINDS",
    "MAX_PLAYERS",
    "MIN_PLAYERS",
    "PLAYER_COUNTS",
    "check_choice",
    "check_episode",
    "check_int",
    "check_num_players",
    "check_number",
    "check_seat",
    "int_rule",
    "is_int",
]
