"""What the project's pydantic schemas (replay files, training configs) share: their
strictness and their error messages.

Files and configs are validated by pydantic models. :func:`explain` turns pydantic's
errors into the sentences the rest of the project uses (``"<where> must be <rule>, got
<value!r>"``, as :mod:`loveletter_env.validation` words them), with ``where`` written the
way each format names its places (``ppo.learning_rate``, ``round 2, step 5: action``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from .validation import shown

#: Types as written (no ``"3"`` for 3, no ``true`` for 1), no NaN or infinity, no unknown keys.
STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

#: Errors shown in one message; the rest are counted.
MAX_ERRORS_SHOWN = 3

_RULES = {
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "float_type": "must be a finite number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "dataclass_type": "must be a mapping",
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "literal_error": "must be {expected}",
    "too_short": "must hold at least {min_length} {items}",
    "too_long": "must hold at most {max_length} {items}",
    "string_too_long": "must be at most {max_length} characters long",
    "missing": "is missing",
    "extra_forbidden": "is not a known key",
    "unexpected_keyword_argument": "is not a known key",
    "invalid_key": "is not a text key",
    "recursion_loop": "is nested too deeply",
}
#: Errors whose sentence does not end with the value.
_NO_VALUE = {"missing", "extra_forbidden", "unexpected_keyword_argument", "invalid_key", "recursion_loop"}


def _whole_number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: An ``int`` that may be written as a whole float (YAML reads ``1e6`` as a float).
WholeNumber = Annotated[int, BeforeValidator(_whole_number)]


def _number(value: Any) -> str:
    """A bound as written: ``1`` for ``1.0``, ``2**63`` for 9223372036854775808."""
    if isinstance(value, int) and value > 2**32 and value & (value - 1) == 0:
        return f"2**{value.bit_length() - 1}"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def sentence(error: Any, where: Callable[[Sequence[Any]], str], hint: Callable[[Any], str] | None = None) -> str:
    """One pydantic error (an item of ``ValidationError.errors()``) in the project's words, with
    ``hint(error)`` after it (`` (did you mean 'high'?)``) where one is given."""
    text = _sentence(error, where)
    return text + hint(error) if hint is not None else text


def _sentence(error: Any, where: Callable[[Sequence[Any]], str]) -> str:
    loc, kind, ctx = tuple(error["loc"]), error["type"], error.get("ctx") or {}
    if kind == "value_error":  # a validator's own message: "must ...", or one that names its field itself
        message = str(ctx["error"])
        if loc and message.startswith(f"{loc[-1]} "):
            loc = loc[:-1]
        if not loc:
            return message
        return f"{where(loc)}{' ' if message.startswith('must') else ': '}{message}"
    if kind == "recursion_loop":
        loc = loc[:4]
    rule = _RULES.get(kind)
    if rule is None:
        rule = error["msg"][:1].lower() + error["msg"][1:]
    else:
        length = ctx.get("min_length", ctx.get("max_length"))
        rule = rule.format(items="item" if length == 1 else "items", **{k: _number(v) for k, v in ctx.items()})
    text = f"{where(loc)} {rule}"
    return text if kind in _NO_VALUE else f"{text}, got {shown(error['input'])}"


def explain(
    error: ValidationError, where: Callable[[Sequence[Any]], str], hint: Callable[[Any], str] | None = None
) -> str:
    """Every error of ``error`` as a sentence (at most :data:`MAX_ERRORS_SHOWN`), joined by ``; ``
    (``hint``: see :func:`sentence`)."""
    sentences = list(dict.fromkeys(sentence(e, where, hint) for e in error.errors(include_url=False)))
    more = len(sentences) - MAX_ERRORS_SHOWN
    return "; ".join(sentences[:MAX_ERRORS_SHOWN]) + (f" (and {more} more)" if more > 0 else "")


def dotted(loc: Sequence[Any]) -> str:
    """``("eval", "opponents", 0)`` -> ``eval.opponents[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text


class StrictModel(BaseModel):
    """A model with the :data:`STRICT` settings. (Its errors are ``pydantic.ValidationError``, a
    ``ValueError``; :func:`explain` words them. A custom ``__init__`` could word them at once, but
    pydantic then builds nested models through it, and the error's place is lost.)"""

    model_config = STRICT
