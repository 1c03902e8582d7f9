"""Strict JSON reading, for text that comes from outside: replay files (however they
arrive) and the web app's requests.

Python's ``json`` module reads more than JSON and more than the project can use: ``NaN``
and ``Infinity`` (which no JSON answer could give back), numbers of any length (a
thousand-digit integer costs quadratic time to convert), nesting deep enough to exhaust
the stack, a key given twice (the last one silently wins, so two readers may disagree
about what a file says) and lone UTF-16 surrogates (strings no UTF-8 answer can hold).
:func:`read_json` refuses each of them with a ``ValueError`` that names the problem, in
time linear in the text whatever it holds (a few times what ``json.loads`` takes).
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

#: The escapes of UTF-16 surrogates (``\\ud800`` to ``\\udfff``), which JSON allows only in pairs.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: Each byte's part in the nesting: +1 opens, -1 (255 as a signed byte) closes, 2 is a
#: quote, 0 anything else.
_NESTING = bytes(1 if byte in b"[{" else 255 if byte in b"]}" else 2 if byte == ord('"') else 0 for byte in range(256))


def _json_depth(data: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in UTF-8 JSON text (strings skipped).

    Linear in the text, whatever it holds: a few passes of C over its bytes, no recursion
    and no regular expression (one that skips strings restarts at each quote of an unclosed
    string, and a string of ``\\"`` then costs time quadratic in its length).
    """
    if b"\\" in data:
        # In JSON a backslash begins an escape of two bytes; a run of them pairs up from its
        # start, so dropping pairs and then escaped quotes leaves only quotes that delimit.
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    if data.count(b'"') * 8 < len(data):
        # Few strings for the text's length: cutting them out in C costs less than the
        # passes of numpy below over every byte they hold.
        data = b"".join(data.split(b'"')[::2])
    kinds = np.frombuffer(data.translate(_NESTING), dtype=np.int8)
    steps = kinds[kinds != 0]
    quotes = steps == 2
    # A quote opens a string when an even number of quotes came before it; it and all up to
    # the quote that closes the string take no step.
    in_string = np.bitwise_xor.accumulate(quotes.view(np.uint8)).view(bool)
    steps[in_string | quotes] = 0
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    # Bounded as integers are (the docstring's promise), though reading a long float costs
    # linear time: a number of more digits than any float holds is not one this reader takes.
    digits = len(text) - sum(text.count(mark) for mark in "-+.eE")
    if digits > MAX_JSON_DIGITS:
        raise ValueError(f"a number of {digits} digits; at most {MAX_JSON_DIGITS} are read")
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
    # Read as ``json.loads`` reads bytes (UTF-8, 16 or 32); the nesting is counted in UTF-8.
    encoding = "utf-8" if isinstance(raw, str) else json.detect_encoding(raw)
    text = raw if isinstance(raw, str) else raw.decode(encoding, "surrogatepass")

    def utf8() -> bytes:
        return raw if isinstance(raw, bytes) and encoding == "utf-8" else text.encode("utf-8", "surrogatepass")

    # Parsed first: ``json`` stops at the first error (and at its own depth limit), so
    # text that is not JSON costs no more than ``json.loads`` itself.
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        depth = _json_depth(utf8())
        if depth <= MAX_JSON_DEPTH:  # the caller's own stack was nearly full
            raise
        raise ValueError(_too_deep(depth)) from None
    except json.JSONDecodeError as exc:
        # ``json`` words some errors to be followed by a position ("... starting at").
        raise ValueError(f"{exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}") from None
    depth = _json_depth(utf8())
    if depth > MAX_JSON_DEPTH:
        raise ValueError(_too_deep(depth))
    if _holds_lone_surrogate(text, value):
        raise ValueError("a string holds a lone UTF-16 surrogate (\\ud800 to \\udfff), which is not text")
    return value


def _holds_lone_surrogate(text: str, value: Any) -> bool:
    """Whether a string of ``value``, read from ``text``, holds a surrogate that no UTF-8
    can encode: one of the text's own characters, or one its escapes make."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    if _SURROGATE_ESCAPE.search(text) is None:
        return False  # the common case: no escape can have made one
    # Each string encoded on its own: ``json.dumps`` of the value would copy and scan
    # every character of a long string, many times the cost of reading it.
    unseen = [value]
    while unseen:
        item = unseen.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            unseen.extend(item)
            unseen.extend(item.values())
        elif isinstance(item, list):
            unseen.extend(item)
    return False


def _too_deep(depth: int) -> str:
    return f"nested {depth} levels deep; at most {MAX_JSON_DEPTH} are read"
