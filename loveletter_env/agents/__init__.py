"""Bots that play Love Letter from their seat's observation, and :func:`make_agent`.

Every agent has ``act(observation_dict) -> int`` and ``reset(seed=None)``; see
:mod:`loveletter_env.agents.base`. From weakest to strongest:

* ``random``: a uniformly random legal action;
* ``rule``: the rules of thumb good players describe;
* ``belief``: card counting and the action of highest immediate expected value;
* ``ismcts``: information-set Monte Carlo tree search over sampled deals, reading
  opponents' plays through the ``belief`` model (:mod:`.opponent_model`);
* ``guided``: search over sampled deals guided by a trained network
  (``guided:policy=PATH``), which picks the moves to search, models the others and
  values the positions (:mod:`.guided`).

Descriptions of agents (``"ismcts:iterations=100"``, checkpoint paths, ``"package.module:factory"``)
become agents through :func:`loveletter_env.agents.specs.resolve_agent`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..validation import check_seed
from .base import Agent, SeededAgent, hand_distribution, legal_actions_of
from .belief import BeliefAgent
from .guided import GuidedSearchAgent
from .ismcts import ISMCTSAgent, determinize
from .random_agent import RandomAgent
from .rule import RuleAgent

_FACTORIES: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "rule": RuleAgent,
    "belief": BeliefAgent,
    "ismcts": ISMCTSAgent,
    "guided": GuidedSearchAgent,
}

#: The names :func:`make_agent` accepts, weakest first.
AGENT_NAMES: tuple[str, ...] = tuple(_FACTORIES)


def agent_options(name: str) -> tuple[str, ...]:
    """The keyword options bot ``name`` takes besides ``seed`` (``ismcts``: ``iterations``, ...)."""
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = inspect.signature(_FACTORIES[name]).parameters.values()
    return tuple(p.name for p in params if p.name != "seed" and p.kind in named)


def make_agent(name: str, seed: int | None = None, **kwargs: Any) -> Agent:
    """Build a bot by name (one of :data:`AGENT_NAMES`).

    Args:
        name: ``"random"``, ``"rule"``, ``"belief"`` or ``"ismcts"``.
        seed: seed of the agent's own random generator (``None``: fresh entropy), an integer
            in ``0..MAX_SEED`` (:func:`loveletter_env.validation.check_seed`).
        **kwargs: passed to the agent's class, e.g. ``iterations=200`` for ``ismcts``
            (:func:`agent_options` lists them).

    Raises:
        ValueError: unknown name, a bad seed, options the agent does not take (the message
            lists the ones it does), or option values it refuses.
    """
    try:
        factory = _FACTORIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown agent {name!r}; choose one of {list(AGENT_NAMES)}") from None
    seed = check_seed(seed, allow_none=True)
    options = agent_options(name)
    unknown = sorted(set(kwargs) - set(options))
    if unknown:
        takes = f"its options are {', '.join(options)}" if options else "it takes no options"
        raise ValueError(f"bad arguments for agent {name!r}: no option {', '.join(map(repr, unknown))}; {takes}")
    try:
        return factory(seed=seed, **kwargs)
    except TypeError as exc:  # e.g. an option of a type the agent cannot compare
        raise ValueError(f"bad arguments for agent {name!r}: {exc}") from None


__all__ = [
    "AGENT_NAMES",
    "Agent",
    "BeliefAgent",
    "GuidedSearchAgent",
    "ISMCTSAgent",
    "RandomAgent",
    "RuleAgent",
    "SeededAgent",
    "agent_options",
    "determinize",
    "hand_distribution",
    "legal_actions_of",
    "make_agent",
]
