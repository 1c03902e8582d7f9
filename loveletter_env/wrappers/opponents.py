"""The Gymnasium env's opponents: one agent per other seat, from agent specs.

An opponent is anything with ``act(observation_dict) -> int`` and, optionally,
``reset(seed=None)`` (see :mod:`loveletter_env.agents.base`). Each one is described by an
agent spec, resolved by :func:`loveletter_env.agents.specs.resolve_agent` exactly as
``python -m training.evaluate`` resolves its agents: a bot name with options
(``"ismcts:iterations=100"``), a checkpoint path or run folder (playing as its run's
evaluations played it; ``"checkpoint:path=FILE,greedy=False"`` samples), a
``"package.module:factory"``, or an agent object used as given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any

from ..agents.base import Agent
from ..agents.specs import AgentSpec, resolve_agent
from ..validation import MAX_SEED, check_seed, is_int, shown

#: One opponent's description (kept under this name for the env's signature).
OpponentSpec = AgentSpec


def make_opponent(spec: OpponentSpec, seed: int | None = None) -> Agent:
    """One agent from a spec (bot name with options, checkpoint path, factory or agent object)."""
    return resolve_agent(spec, seed=seed, role="opponent")


def make_opponents(spec: OpponentSpec | Sequence[OpponentSpec], count: int, seed: int | None = None) -> list[Agent]:
    """``count`` opponents: one spec for all of them, or a sequence of exactly ``count``.

    With one spec each opponent is built separately (its own generator), except an
    agent object, which is shared: pass a sequence to give each seat its own object.
    ``seed`` (``None``: fresh entropy) seeds the opponent at position ``i`` with ``seed + i``.
    """
    if not is_int(count) or count < 1:
        raise ValueError(f"count must be a positive integer (the number of opponents), got {shown(count)}")
    seed = check_seed(seed, allow_none=True)
    specs: list[Any]
    if isinstance(spec, str) or hasattr(spec, "__fspath__") or callable(getattr(spec, "act", None)):
        specs = [spec] * count
    else:
        if isinstance(spec, Set):
            # A set has no order: which seat each opponent takes would change with the hash seed.
            raise ValueError(
                f"opponents must be a list or tuple, one per other seat in turn order, not a set (it has no order); "
                f"got {shown(spec)}"
            )
        if isinstance(spec, (bytes, Mapping)) or not isinstance(spec, Iterable):
            raise ValueError(
                f"opponents must be an agent spec (a bot name such as 'rule', a checkpoint path, an agent) or a "
                f"list of {count}, one per other seat; got {shown(spec)}"
            )
        specs = list(spec)
        if len(specs) != count:
            raise ValueError(f"expected {count} opponent(s), one per other seat, got {len(specs)}: {specs!r}")
    # Seat i is seeded seed + i, wrapping past MAX_SEED: a seed near the top stays a valid seed.
    return [make_opponent(s, seed=None if seed is None else (seed + i) % (MAX_SEED + 1)) for i, s in enumerate(specs)]
