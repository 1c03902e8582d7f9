"""What the documentation says of the observation against the layout the code defines.

The pages (``docs/*.md``, ``docs/api/*.md``, the README) and the docstrings of
``loveletter_env`` (which the API pages render, ``#:`` comments included) state the
observation's size, bound, dtype and version in several places; each statement is checked
against values computed from the layout, so a layout change that leaves one of them behind
fails here. The patterns are the ways the pages write these facts: a space
(``Box(0, 16, (1382,), float32)``), a shape (``(646,)``, ``float32[1382]``), a bound
(``whole numbers in 0..16``) and a version (``observation version 2``, ``version 1 (646
entries)``, ``the observation (version 2)``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

import pytest
from conftest import ROOT

import loveletter_env.aec
import loveletter_env.observation
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.aec import OBSERVATION_HIGH, raw_env
from loveletter_env.cards import DECK_SIZE
from loveletter_env.observation import LAYOUT_SIZES, MAX_MOVES, OBSERVATION_SIZE, OBSERVATION_VERSION
from loveletter_env.rules import CLASSIC
from loveletter_env.validation import PLAYER_COUNTS

DTYPE = "float32"
HIGH = int(OBSERVATION_HIGH)
#: Sizes of layouts that are not the current one: as a shape, they describe a vector the env no longer gives.
OLD_SIZES = {size for version, size in LAYOUT_SIZES.items() if version != OBSERVATION_VERSION}

#: Up to ``n`` characters within one clause (no sentence end, no semicolon).
_CLAUSE = r"(?:(?!\.\s|;).){{0,{n}}}?"
_NUMBER = r"(\d[\d,]*)"

BOX = re.compile(
    r"Box\(\s*(?P<low>-?[\d.]+)\s*,\s*(?P<high>[\d.]+)\s*,\s*\(\s*(?P<size>\d+)\s*,?\s*\)\s*,\s*"
    r"(?:np\.|numpy\.)?(?P<dtype>\w+)\s*\)"
)
SHAPE = re.compile(r"(?<![\w.\]])(?:\((\d+),\)|\[(\d+)\])")
VECTOR = re.compile(rf"{DTYPE}\s*\[\s*{_NUMBER}\s*\]")
#: "whole numbers in 0..16", "each a whole number 0..16", "each in [0, 16]" (not "is not a whole number in 0..31").
BOUND = re.compile(
    r"(?<!not a )whole numbers?\b" + _CLAUSE.format(n=60) + r"(?:\b0\s*\.\.\s*(\d+)|\[\s*0\s*,\s*(\d+)\s*\])",
    re.IGNORECASE,
)
NAMED_VERSION = re.compile(r"observation\s+(?:layout\s+)?version\s+(\d+)", re.IGNORECASE)
SIZED_VERSION = re.compile(rf"version\s+(\d+)\s*\(\s*{_NUMBER}\s+(?:\w+\s+)?entries", re.IGNORECASE)
THE_OBSERVATIONS_VERSION = re.compile(
    r"(?:observation|information state)\**\s*\((?:observation\s+)?(?:layout\s+)?version\s+(\d+)", re.IGNORECASE
)
VERSION_NAMED_CURRENT = re.compile(r"version\s+(\d+)" + _CLAUSE.format(n=100) + r"\bOBSERVATION_VERSION\b")


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def stale_statements(text: str) -> list[str]:
    """Every statement of ``text`` about the observation that the current layout contradicts."""
    text = " ".join(text.split())  # statements wrap across lines
    found = []
    for box in BOX.finditer(text):
        if int(box["size"]) == NUM_ACTIONS:
            continue  # the action mask's space
        if (float(box["low"]), float(box["high"]), int(box["size"]), box["dtype"]) != (
            0,
            HIGH,
            OBSERVATION_SIZE,
            DTYPE,
        ):
            found.append(f"{box[0]!r}: the observation space is Box(0, {HIGH}, ({OBSERVATION_SIZE},), {DTYPE})")
    for shape in SHAPE.finditer(text):
        if int(shape[1] or shape[2]) in OLD_SIZES:
            found.append(f"{shape[0]!r}: the shape of an old layout; the observation has {OBSERVATION_SIZE} entries")
    for vector in VECTOR.finditer(text):
        if _number(vector[1]) != OBSERVATION_SIZE:
            found.append(f"{vector[0]!r}: the observation is {DTYPE}[{OBSERVATION_SIZE}]")
    for bound in BOUND.finditer(text):
        if int(bound[1] or bound[2]) != HIGH:
            found.append(f"{bound[0]!r}: every entry is a whole number in 0..{HIGH}")
    for version in NAMED_VERSION.finditer(text):
        if int(version[1]) not in LAYOUT_SIZES:
            found.append(f"{version[0]!r}: the observation versions are {sorted(LAYOUT_SIZES)}")
    for version in SIZED_VERSION.finditer(text):
        if LAYOUT_SIZES.get(int(version[1])) != _number(version[2]):
            found.append(f"{version[0]!r}: the versions' sizes are {LAYOUT_SIZES}")
    for pattern in (THE_OBSERVATIONS_VERSION, VERSION_NAMED_CURRENT):
        for version in pattern.finditer(text):
            if int(version[1]) != OBSERVATION_VERSION:
                found.append(f"{version[0]!r}: the current observation version is {OBSERVATION_VERSION}")
    return found


def _comment_blocks(source: str) -> Iterator[tuple[int, str]]:
    """The ``#:`` comments (documentation of the attribute below them), one block each."""
    block: list[str] = []
    for number, line in enumerate([*source.splitlines(), ""], 1):
        stripped = line.strip()
        if stripped.startswith("#:"):
            block.append(stripped[2:])
        elif block:
            yield number - len(block), " ".join(block)
            block = []


def _docstrings(source: str) -> Iterator[tuple[int, str]]:
    """Every docstring of a module (its own, its classes' and functions', and the strings
    that follow an attribute), with the line it starts on."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            for index, statement in enumerate(body):
                is_string = (
                    isinstance(statement, ast.Expr)
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                )
                follows_attribute = index > 0 and isinstance(body[index - 1], (ast.Assign, ast.AnnAssign))
                if is_string and (index == 0 or follows_attribute):
                    yield statement.lineno, statement.value.value


def documentation() -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every page and every docstring the checks read."""
    pages = [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "api").glob("*.md")), ROOT / "README.md"]
    for page in pages:
        yield page.relative_to(ROOT).as_posix(), page.read_text(encoding="utf-8")
    for module in sorted((ROOT / "loveletter_env").rglob("*.py")):
        source = module.read_text(encoding="utf-8")
        where = module.relative_to(ROOT).as_posix()
        for line, text in [*_docstrings(source), *_comment_blocks(source)]:
            yield f"{where}:{line}", text


def test_the_expected_values_are_the_env_s_own():
    space = raw_env().observation_space("player_0")["observation"]
    assert (space.low.min(), space.high.max(), space.shape, space.dtype.name) == (0, HIGH, (OBSERVATION_SIZE,), DTYPE)


def test_no_page_or_docstring_states_another_observation_size_bound_dtype_or_version():
    found = [f"{where}: {problem}" for where, text in documentation() for problem in stale_statements(text)]
    assert found == []


def test_the_move_record_s_slots_are_given_as_the_most_moves_a_round_holds():
    """Every turn begins with a draw, so a round holds at most as many moves as cards are
    left to draw once it is dealt; the pages say the record has that many slots."""
    assert max(DECK_SIZE - 1 - CLASSIC.face_up_count(n) - n for n in PLAYER_COUNTS) == MAX_MOVES
    for text in (
        (ROOT / "docs" / "environment.md").read_text(encoding="utf-8"),
        loveletter_env.aec.__doc__,
        loveletter_env.observation.__doc__,
    ):
        flat = " ".join(str(text).split())
        assert f"{MAX_MOVES} slots" in flat and "the most moves a round can hold" in flat


def test_the_checks_read_the_pages_and_the_docstrings_they_name():
    where = [place for place, _ in documentation()]
    assert "docs/environment.md" in where and "docs/api/env.md" in where and "README.md" in where
    assert "loveletter_env/aec.py:1" in where and "loveletter_env/tree.py:1" in where
    assert any(place.startswith("loveletter_env/observation/__init__.py:") for place in where)


@pytest.mark.parametrize(
    "stale",
    [
        "``Dict(observation=Box(0, 16, (646,), float32), action_mask=Box(0, 1, (41,), int8))``",
        "observation=Box(0.0, 255.0, (1382,), np.float32)",
        "observation=Box(0, 16, (1382,), uint8)",
        "that seat's observation (float32 [646])",
        "an observation of shape (646,)",
        "Every entry is a small whole number (0..255): the AEC env hands it out as float32.",
        "small whole numbers stored as float32, each in [0, 15]",
        "The vector is the player's information state (observation version 1): everything",
        "The env's observation (version 1) is the player's information state",
        "* ``loveletter_v0`` (observation layout version 1,\n  :data:`OBSERVATION_VERSION`): initial release.",
        "a network of observation version 3 reads",
        "version 2 (646 entries)",
    ],
)
def test_a_stale_statement_is_caught(stale):
    assert stale_statements(stale)


@pytest.mark.parametrize(
    "current",
    [
        "``Dict(observation=Box(0, 16, (1382,), float32), action_mask=Box(0, 1, (41,), int8))``",
        "spaces.Box(0.0, OBSERVATION_HIGH, (OBSERVATION_SIZE,), np.float32)",
        "small whole numbers stored as float32, each in [0, 16]",
        "The vector is the player's **information state** (observation version 2): everything",
        "Total size: 1382 (`OBSERVATION_SIZE`), version 2; version 1 is the first 646 entries.",
        "measured with observation version 1 (646 float32 entries)",
        "* ``loveletter_v0``: initial release, observation layout version 1 (646 entries).",
        "observation layout version 2 (1382 entries, the current\n:data:`~.observation.OBSERVATION_VERSION`)",
        "``-1 - i`` when entry ``i`` is not a whole number in 0..31 (no env observation has one)",
        "a seed in 0..2**63 - 1, an action in 0..40, a seat in [0, 3]",
    ],
)
def test_a_current_statement_passes(current):
    assert stale_statements(current) == []
