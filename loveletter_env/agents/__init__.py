"""Bots that play Love Letter from their seat's observation: the registry :data:`BOTS`, and
:func:`make_agent`.

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

:data:`BOTS` is the one list of the bots: the command lines (through :data:`AGENT_NAMES`,
:func:`make_agent` and the agent specs) and the web app (its choice of opponents and the
values a request may set) read it, so a bot added there is offered everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..validation import PLAYER_COUNTS, check_seed
from .base import Agent, SeededAgent, action_mask_of, hand_distribution, legal_actions_of
from .belief import BeliefAgent
from .guided import MAX_MARGIN, OPPONENT_MODELS, PLAY_READINGS, GuidedSearchAgent
from .ismcts import ISMCTSAgent, determinize
from .random_agent import RandomAgent
from .rule import RuleAgent

#: The kind of a :class:`BotOption` that names a trained network.
CHECKPOINT = "checkpoint"


@dataclass(frozen=True)
class BotOption:
    """One keyword option of a bot, with the values a person may choose for it (the web app
    refuses others): a whole number (``kind`` ``int``) or a number (``float``) in
    ``low..high``, one of ``choices`` (``str``), or a checkpoint (:data:`CHECKPOINT`).

    The range bounds what a request may cost, not what the bot accepts: a program that
    calls :func:`make_agent` may pass any value the bot's class takes (its constructor
    checks them)."""

    kind: type | str
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == CHECKPOINT:
            return "a checkpoint offered at start-up"
        if self.kind is str:
            return "one of " + ", ".join(self.choices)
        return f"{'a whole number' if self.kind is int else 'a number'} in {self.low:g}..{self.high:g}"


@dataclass(frozen=True)
class Bot:
    """A bot of the registry: its class (called with ``seed=`` and the options), a line
    about how it plays, every keyword option its class takes besides ``seed`` (in the
    class's order), and the table sizes it plays."""

    factory: Callable[..., Agent]
    description: str
    options: Mapping[str, BotOption] = field(default_factory=dict)
    table_sizes: tuple[int, ...] = PLAYER_COUNTS

    @property
    def needs_checkpoint(self) -> bool:
        """Whether it plays only with a trained network (an option of kind :data:`CHECKPOINT`)."""
        return any(option.kind == CHECKPOINT for option in self.options.values())


#: Every bot by name, weakest first: the one list the command lines and the web app read.
BOTS: dict[str, Bot] = {
    "random": Bot(RandomAgent, "a uniformly random legal action"),
    "rule": Bot(RuleAgent, "the rules of thumb good players describe"),
    "belief": Bot(BeliefAgent, "card counting, then the action of highest immediate expected value"),
    "ismcts": Bot(
        ISMCTSAgent,
        "information-set Monte Carlo tree search over sampled deals, reading plays through the belief model",
        {
            "iterations": BotOption(int, 1, 2000),
            "exploration": BotOption(float, 0.0, 10.0),
            "width": BotOption(int, 0, 16),
            "tree_depth": BotOption(int, 1, 4),
            "model_noise": BotOption(float, 0.0, 1.0),
        },
    ),
    "guided": Bot(
        GuidedSearchAgent,
        "search over sampled deals guided by a trained network (guided:policy=PATH)",
        {
            "policy": BotOption(CHECKPOINT),
            "iterations": BotOption(int, 1, 2000),
            "width": BotOption(int, 0, 16),
            "depth": BotOption(int, 1, 4),
            "opponents": BotOption(str, choices=OPPONENT_MODELS),
            "reading": BotOption(str, choices=PLAY_READINGS),
            "model_noise": BotOption(float, 0.0, 1.0),
            "margin": BotOption(float, 0.0, MAX_MARGIN),
        },
    ),
}

#: The names :func:`make_agent` accepts, weakest first.
AGENT_NAMES: tuple[str, ...] = tuple(BOTS)


def agent_options(name: str) -> tuple[str, ...]:
    """The keyword options bot ``name`` takes besides ``seed`` (``ismcts``: ``iterations``, ...)."""
    return tuple(BOTS[name].options)


def make_agent(name: str, seed: int | None = None, **kwargs: Any) -> Agent:
    """Build a bot by name (one of :data:`AGENT_NAMES`).

    Args:
        name: ``"random"``, ``"rule"``, ``"belief"``, ``"ismcts"`` or ``"guided"`` (which needs
            ``policy=``).
        seed: seed of the agent's own random generator (``None``: fresh entropy), an integer
            in ``0..MAX_SEED`` (:func:`loveletter_env.validation.check_seed`).
        **kwargs: passed to the agent's class, e.g. ``iterations=200`` for ``ismcts``
            (:func:`agent_options` lists them).

    Raises:
        ValueError: unknown name, a bad seed, options the agent does not take (the message
            lists the ones it does), or option values it refuses.
    """
    try:
        factory = BOTS[name].factory
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
    "BOTS",
    "CHECKPOINT",
    "Agent",
    "BeliefAgent",
    "Bot",
    "BotOption",
    "GuidedSearchAgent",
    "ISMCTSAgent",
    "RandomAgent",
    "RuleAgent",
    "SeededAgent",
    "action_mask_of",
    "agent_options",
    "determinize",
    "hand_distribution",
    "legal_actions_of",
    "make_agent",
]
