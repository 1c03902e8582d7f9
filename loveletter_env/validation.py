"""Shared argument checks and the limits they check against.

Every public entry point (engine, envs, bots, evaluation, play, training config) checks
its arguments with these helpers before it changes anything, so a bad value always gets
the same kind of message: ``"<name> must be <rule>, got <value!r>"``, the value cut short
by :func:`shown`. Each helper returns the value normalised (numpy integers become ``int``,
numbers become ``float``) so callers store plain Python types.

This module depends on nothing else in the package: anything may import it.
"""

from __future__ import annotations

import math
import numbers
import os
import reprlib
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

#: Table sizes the game supports.
MIN_PLAYERS, MAX_PLAYERS = 2, 4
PLAYER_COUNTS: tuple[int, ...] = tuple(range(MIN_PLAYERS, MAX_PLAYERS + 1))
#: What one episode of an env is: a single round, or rounds until a player holds the token target.
EPISODE_KINDS: tuple[str, ...] = ("round", "game")
#: Largest seed. Every generator the package seeds takes it (torch's take up to 2**64 - 1,
#: numpy's, Python's and Gymnasium's any non-negative integer); 63 bits also fit a signed int64,
#: so a seed can be stored or derived from anywhere without wrapping.
MAX_SEED = 2**63 - 1

T = TypeVar("T")


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


class _ShortRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        try:
            return super().repr_int(x, level)
        except ValueError:  # past Python's limit on converting integers to text
            return f"<an integer of more than {sys.get_int_max_str_digits()} digits>"


_SHORT = _ShortRepr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict = 3, 8, 8


def shown(value: Any) -> str:
    """``repr(value)`` cut short, for messages that echo a bad value: a 5 MB string, a
    long list, a deep or a self-referring value or a 5,000-digit integer is not repeated
    back whole (nor breaks the message)."""
    return _SHORT.repr(value)


def _fail(name: str, rule: str, value: Any) -> ValueError:
    return ValueError(f"{name} must be {rule}, got {shown(value)}")


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
    try:
        number = float(value)
    except OverflowError:  # an int or a Fraction past any float (an agent spec reads "1000...0" as one)
        raise _fail(name, rule, value) from None
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


@overload
def check_seed(value: Any, name: str = ..., allow_none: Literal[False] = ...) -> int: ...
@overload
def check_seed(value: Any, name: str = ..., allow_none: bool = ...) -> int | None: ...
def check_seed(value: Any, name: str = "seed", allow_none: bool = False) -> int | None:
    """A seed as an ``int``: an integer (Python or numpy, not a ``bool``) in ``0..MAX_SEED``.

    ``allow_none`` admits ``None`` (returned as is) where it means "fresh entropy". Floats,
    even whole ones, are refused: ``1.9`` would otherwise deal what ``1`` deals.
    """
    if value is None and allow_none:
        return None
    if not is_int(value) or not 0 <= value <= MAX_SEED:
        rule = "a non-negative integer below 2**63"
        raise _fail(name, f"None or {rule}" if allow_none else rule, value)
    return int(value)


def check_episode(value: Any, name: str = "episode") -> str:
    """One of :data:`EPISODE_KINDS`."""
    return check_choice(name, value, EPISODE_KINDS)


def check_writable(name: str, path: str | os.PathLike[str], folder: bool = False) -> Path:
    """``path`` as a :class:`~pathlib.Path` if a file can be written there (with ``folder``:
    if ``path`` is a folder, or can be made one, that files can be written in); else
    ``ValueError("<name> '<path>' cannot be written: <why>")``; ``TypeError`` naming ``name`` for
    what is no path.

    Tools call this before long work whose result goes to ``path``, so that a bad path is
    named before the work, not after it is lost. Missing folders are not created: the
    check creates and removes an empty file in the nearest folder that exists, which is
    where they would be created (asking the system for permissions would not do: they say
    nothing of read-only or virtual file systems, and all yes to root).
    """
    if not isinstance(path, (str, os.PathLike)):  # Path(3) would fail naming no argument
        raise TypeError(f"{name} must be a path (text or os.PathLike), got {shown(path)}")
    path = Path(path)
    if "\0" in str(path):  # the system refuses such names, and pathlib with an unhelpful message
        raise ValueError(f"{name} {str(path)!r} cannot be written: it contains a NUL character")
    try:
        # Looking a path up can fail itself (a name too long for the system, a folder that may
        # not be searched): the tools catch ValueError, so the OSError is worded as one.
        is_folder = path.is_dir()
        existing = path if folder else path.parent
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        existing_is_folder = existing.is_dir()
    except OSError as err:
        raise ValueError(f"{name} {str(path)!r} cannot be written: looking it up fails ({err.strerror})") from None
    if not folder and is_folder:
        raise ValueError(f"{name} {str(path)!r} cannot be written: it is a folder")
    if not existing_is_folder:
        raise ValueError(f"{name} {str(path)!r} cannot be written: {str(existing)!r} is a file, not a folder")
    probe = existing / f".write-check.{os.getpid()}.tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT))
        os.unlink(probe)
    except OSError as err:
        raise ValueError(
            f"{name} {str(path)!r} cannot be written: creating a file in {str(existing)!r} fails ({err.strerror})"
        ) from None
    return path


def check_new_file(name: str, path: str | os.PathLike[str], replace: bool = False) -> Path:
    """:func:`check_writable`, and ``ValueError`` where a file is already at ``path``, unless
    ``replace``: a tool writes over a file only when told it may (its ``--force``)."""
    path = check_writable(name, path)
    if path.exists() and not replace:
        raise ValueError(f"{name} {str(path)!r} already exists: pass --force to replace it")
    return path


__all__ = [
    "EPISODE_KINDS",
    "MAX_PLAYERS",
    "MAX_SEED",
    "MIN_PLAYERS",
    "PLAYER_COUNTS",
    "check_choice",
    "check_episode",
    "check_int",
    "check_new_file",
    "check_num_players",
    "check_number",
    "check_seat",
    "check_seed",
    "check_writable",
    "int_rule",
    "is_int",
    "shown",
]
