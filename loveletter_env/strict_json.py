"""Strict JSON reading, for text that comes from outside: replay files (however they
arrive) and the web app's requests.

Python's ``json`` module reads more than JSON and more than the project can use: ``NaN``
and ``Infinity`` (which no JSON answer could give back), numbers of any length (a
thousand-digit integer costs quadratic time to convert), nesting deep enough to exhaust
the stack, a key given twice (the last one silently wins, so two readers may disagree
about what a file says) and lone UTF-16 surrogates (strings no UTF-8 answer can hold).
:func:`read_json` refuses each of them with a ``ValueError`` that names the problem.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

#: JSON nesting the text may use (a replay needs 6 levels; a request 3).
MAX_JSON_DEPTH = 32
#: Digits a JSON number may have (a 64-bit seed has 20).
MAX_JSON_DIGITS = 40

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _json_depth(raw: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text (strings skipped), without recursion."""
    codes = np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max(initial=0))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:50]} is out of range for a number")
    return value


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_DIGITS:
        raise ValueError(f"a number of {digits} digits; at most {MAX_JSON_DIGITS} are read")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key[:50]!r} is given twice in one object")
        found[key] = value
    return found


def read_json(raw: str | bytes) -> Any:
    """The value of strict JSON text: no NaN or Infinity, numbers of at most
    :data:`MAX_JSON_DIGITS` digits, nesting of at most :data:`MAX_JSON_DEPTH` levels, no
    key twice in an object, no lone surrogate in a string. Raises ``ValueError`` naming the
    problem (the caller bounds the size of the text)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    depth = _json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested {depth} levels deep; at most {MAX_JSON_DEPTH} are read")
    try:
        value = json.loads(
            data,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone UTF-16 surrogate (\\ud800 to \\udfff), which is not text") from None
    return value
