"""Strict JSON reading (:mod:`loveletter_env.strict_json`): what it refuses, that it counts
nesting right whatever the strings hold, and that hostile text costs it time linear in
its length, a small multiple of ``json.loads`` on the same bytes."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import pytest

from loveletter_env.replay import MAX_REPLAY_BYTES
from loveletter_env.strict_json import MAX_JSON_DEPTH, read_json

#: The most ``read_json`` may take over ``json.loads`` on the same bytes: generous, since
#: both are timed on a shared machine; a check that is quadratic in the text takes
#: thousands of times longer at this size.
SLOWDOWN_LIMIT = 20


def _nested(depth: int, inner: object = 0) -> object:
    value = inner
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _fill(unit: bytes, head: bytes = b"", tail: bytes = b"", size: int = MAX_REPLAY_BYTES) -> bytes:
    """``head``, then ``unit`` as often as fits, then ``tail``: text of about ``size`` bytes."""
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def _fastest(read: Callable[[bytes], object], raw: bytes) -> float:
    start = time.perf_counter()
    with contextlib.suppress(ValueError, RecursionError):
        read(raw)
    return time.perf_counter() - start


def _slowdown(raw: bytes, repeats: int = 5) -> float:
    """``read_json``'s time over ``json.loads``'s on ``raw``, each the fastest of
    ``repeats`` runs taken in turn (so that a busy moment slows both)."""
    strict, plain = [], []
    for _ in range(repeats):
        plain.append(_fastest(json.loads, raw))
        strict.append(_fastest(read_json, raw))
    return min(strict) / min(plain)


# Each shape is a whole replay's worth of text that ``json.loads`` reads to its end, so
# that its time is the measure of the work the text asks for.
HOSTILE_TEXTS = {
    # A string of escaped quotes that never closes: quadratic for a check that restarts at
    # each quote.
    "unclosed escaped quotes": _fill(b'\\"', head=b'"'),
    "closed escaped quotes": _fill(b'\\"', head=b'"', tail=b'"'),
    "backslashes": _fill(b"\\\\", head=b'"', tail=b'"'),
    "unclosed backslashes": _fill(b"\\", head=b'"'),
    "escaped backslash then quote": _fill(b'\\\\\\"', head=b'"', tail=b'"'),
    "brackets in a string": _fill(b"[", head=b'"', tail=b'"'),
    "many small strings": _fill(b'"ab",', head=b"[", tail=b'"a"]'),
    "many empty strings": _fill(b'"",', head=b"[", tail=b'""]'),
    "strings of brackets in lists": _fill(b'["[{"],', head=b"[", tail=b"[]]"),
    "many small objects": _fill(b'{"a":"]"},', head=b"[", tail=b"{}]"),
    # Deep nesting that ``json`` can read (a single nest past the interpreter's recursion
    # limit stops it after a thousand levels; see the scaling test below).
    # (A tenth of the size: ``json`` takes a second or more to build the whole of them.)
    "deep nests, one after another": _fill(b"[" * 400 + b"]" * 400 + b",", b"[", b"0]", MAX_REPLAY_BYTES // 10),
    "nests as deep as allowed": _fill(
        json.dumps(_nested(MAX_JSON_DEPTH - 1)).encode() + b",", b"[", b"0]", MAX_REPLAY_BYTES // 10
    ),
    "a surrogate pair then a long string": _fill(b"a", head=b'"\\ud83d\\ude00', tail=b'"'),
}


@pytest.mark.parametrize("raw", HOSTILE_TEXTS.values(), ids=HOSTILE_TEXTS.keys())
def test_hostile_text_costs_a_small_multiple_of_json_loads(raw):
    slowdown = _slowdown(raw)
    for _ in range(2):  # a busy moment on a shared machine can slow one run: measure again
        if slowdown <= SLOWDOWN_LIMIT:
            break
        slowdown = min(slowdown, _slowdown(raw, repeats=9))
    assert slowdown <= SLOWDOWN_LIMIT, f"read_json took {slowdown:.1f} times as long as json.loads"


def test_a_single_nest_past_the_recursion_limit_costs_time_linear_in_its_depth():
    """``json.loads`` gives up on it after about a thousand levels, so its time is no
    measure here: eight times the depth may take about eight times as long, not 64 times
    (both sizes too large for the processor's caches, which would flatter the smaller)."""

    def fastest(depth: int) -> float:
        raw = b"[" * depth + b"]" * depth
        return min(_fastest(read_json, raw) for _ in range(5))

    growth = fastest(4_000_000) / fastest(500_000)
    assert growth < 24, f"8 times the depth took {growth:.0f} times as long"
    with pytest.raises(ValueError, match=f"nested {MAX_REPLAY_BYTES} levels deep; at most 32 are read"):
        read_json(b"[" * MAX_REPLAY_BYTES + b"]" * MAX_REPLAY_BYTES)


def test_the_replay_command_names_an_unclosed_string_once(tmp_path):
    path = tmp_path / "hostile.json"
    path.write_bytes(b'"' + b'\\"' * 20_000)  # took 17 s when the nesting check was quadratic
    result = subprocess.run(
        [sys.executable, "-m", "training.replay", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr
    assert "Unterminated string starting at line 1, column 1" in result.stderr


# Nesting is counted outside strings, however their escapes run -----------------------

#: Strings whose quotes, backslashes and brackets a nesting count that misreads escapes
#: would take for structure.
TRICKY_STRINGS = [
    '"',
    "\\",
    '\\"',
    '\\\\"',
    "[",
    "]{",
    '"[',
    '\\"[',
    "\\\\",
    "\\u005c",
    'a"b\\',
    "\u00e9[",
    "\U0001f600",
]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_strings_of_quotes_backslashes_and_brackets_do_not_count_as_nesting(encoding):
    """Text nested as deep as allowed is read, one level more is refused and named."""
    depth = MAX_JSON_DEPTH
    rng = np.random.default_rng(0)
    for _ in range(30):
        strings = [str(s) for s in rng.choice(TRICKY_STRINGS, size=4)]
        value = _nested(depth - 2, [*strings, {"".join(strings): strings[0]}])
        text = json.dumps(value, ensure_ascii=bool(rng.integers(2)))
        assert read_json(text) == value
        assert read_json(text.encode(encoding)) == value
        too_deep = json.dumps([value, strings])
        with pytest.raises(ValueError, match=f"nested {depth + 1} levels deep; at most {MAX_JSON_DEPTH} are read"):
            read_json(too_deep.encode(encoding))


@pytest.mark.parametrize(
    "text, message",
    [
        ('"abc', "Unterminated string starting at line 1, column 1"),
        ('{"a": "b\x01"}', "Invalid control character at line 1, column 9"),
        ("[1,]", "Expecting value at line 1, column 4"),
        ('"\\ud800"', "a string holds a lone UTF-16 surrogate"),
        ('["\\udfff", "\\ud83d\\ude00"]', "a string holds a lone UTF-16 surrogate"),
        ('"\ud800"', "a string holds a lone UTF-16 surrogate"),
        ("[" * 40 + "]" * 40, "nested 40 levels deep; at most 32 are read"),
        ("[" * 5000, "nested 5000 levels deep; at most 32 are read"),
        ("9" * 41, "a number of 41 digits; at most 40 are read"),
        ("0." + "1" * 100, "a number of 101 digits; at most 40 are read"),
        ("[-" + "1" * 60 + ".5e-3]", "a number of 62 digits; at most 40 are read"),
        ("NaN", "NaN is not a number (JSON has no NaN or Infinity)"),
        ("[1e400]", "1e400 is out of range for a number"),
        ('{"a": 1, "a": 2}', "the key 'a' is given twice in one object"),
    ],
)
def test_refusals_name_the_problem_once(text, message):
    with pytest.raises(ValueError) as refusal:
        read_json(text)
    assert str(refusal.value).startswith(message)
    assert " at at " not in str(refusal.value)


def test_surrogate_pairs_and_escaped_backslashes_before_u_are_text():
    assert read_json('["\\ud83d\\ude00", "\\\\ud800"]') == ["\U0001f600", "\\ud800"]


def test_every_float_json_writes_is_read_back():
    """The digit bound refuses no float that ``json.dumps`` writes (17 significant digits, a
    3-digit exponent at most)."""
    values = [5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, 0.1 + 0.2, -1 / 3, 123456789.12345679]
    assert read_json(json.dumps(values)) == values
