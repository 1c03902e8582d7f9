"""Bots that play Love Letter from their seat's observation, and :func:`make_agent`.

Every agent has ``act(observation_dict) -> int`` and ``reset(seed=None)``; see
:mod:`loveletter_env.agents.base`. From weakest to strongest:

* ``random``: a uniformly random legal action;
* ``rule``: the rules of thumb good players describe;
* ``belief``: card counting and the action of highest immediate expected value;
* ``ismcts``: information-set Monte Carlo tree search over sampled deals, reading
  opponents' plays through the ``belief`` model (:mod:`.inference`).
"""

from __future__ import annotations

from typing import Any, Callable

from .base import Agent, SeededAgent, hand_distribution, legal_actions_of
from .belief import BeliefAgent
from .ismcts import ISMCTSAgent, determinize
from .random_agent import RandomAgent
from .rule import RuleAgent

_FACTORIES: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "rule": RuleAgent,
    "belief": BeliefAgent,
    "ismcts": ISMCTSAgent,
}

#: The names :func:`make_agent` accepts, weakest first.
AGENT_NAMES: tuple[str, ...] = tuple(_FACTORIES)


def make_agent(name: str, seed: int | None = None, **kwargs: Any) -> Agent:
    """Build a bot by name (one of :data:`AGENT_NAMES`).

    Args:
        name: ``"random"``, ``"rule"``, ``"belief"`` or ``"ismcts"``.
        seed: seed of the agent's own random generator (``None``: fresh entropy).
        **kwargs: passed to the agent's class, e.g. ``iterations=200`` for ``ismcts``.

    Raises:
        ValueError: unknown name, or keyword arguments the agent does not take.
    """
    try:
        factory = _FACTORIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown agent {name!r}; choose one of {list(AGENT_NAMES)}") from None
    try:
        return factory(seed=seed, **kwargs)
    except TypeError as exc:
        raise ValueError(f"bad arguments for agent {name!r}: {exc}") from None


__all__ = [
    "AGENT_NAMES",
    "Agent",
    "BeliefAgent",
    "ISMCTSAgent",
    "RandomAgent",
    "RuleAgent",
    "SeededAgent",
    "determinize",
    "hand_distribution",
    "legal_actions_of",
    "make_agent",
]
