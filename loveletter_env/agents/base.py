"""The agent protocol every bot (and every trained policy) follows, and small helpers.

An agent is any object with ``act(observation) -> int``, where ``observation`` is the
env's dict ``{"observation": float32 vector, "action_mask": int8[41]}`` of the player
to act, and optionally ``reset(seed=None)``, called at the start of every episode (and
with a seed when the caller wants the agent's own randomness reproducible).

Bots read the vector only through :func:`loveletter_env.decode_observation`: what an
agent may use is exactly what its seat has seen.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from .. import engine
from ..actions import NUM_ACTIONS
from ..cards import CARD_VALUES, GUARD, KING, PRINCE
from ..knowledge import ruled_out_after_play
from ..observation import ObservationView, decode_observation
from ..validation import check_seed


@runtime_checkable
class Agent(Protocol):
    """Anything that picks an action index from an observation dict."""

    def act(self, observation: Mapping[str, Any]) -> int: ...


@runtime_checkable
class ProbabilisticAgent(Agent, Protocol):
    """An agent that can say how likely it is to play each action (what an exact best
    response needs).

    ``action_probabilities(observation)`` returns float64 [41]: the probability of each
    action at this decision (0 for illegal ones), in the mode the agent plays, and changes
    nothing. An agent whose choice depends on earlier decisions of the round has
    ``remembers_round = True``; it is queried after ``reset()`` and one
    ``replay_action(observation, action)`` per earlier decision of the round, which moves
    its memory on as if it had played ``action``. ``exact_probabilities = False`` marks
    probabilities estimated by sampling (the search agents).
    """

    remembers_round: bool
    exact_probabilities: bool

    def action_probabilities(self, observation: Mapping[str, Any]) -> np.ndarray: ...

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None: ...


_T = TypeVar("_T")


class _ChoiceEnumerator:
    """A stand-in for ``random.Random`` whose ``choice`` follows a given path of picks,
    recording how many options each pick had (see :func:`choice_distribution`)."""

    def __init__(self, path: list[int]):
        self.path = path
        self.widths: list[int] = []

    def choice(self, options: Sequence[_T]) -> _T:
        if not options:
            raise IndexError("Cannot choose from an empty sequence")
        depth = len(self.widths)
        self.widths.append(len(options))
        return options[self.path[depth] if depth < len(self.path) else 0]

    def __getattr__(self, name: str) -> Any:
        raise TypeError(f"exact action probabilities support rng.choice only; the agent called rng.{name}")


def choice_distribution(decide: Callable[[Any], int]) -> np.ndarray:
    """float64 [41]: the exact probability of each action ``decide(rng)`` returns when
    every ``rng.choice`` it makes is uniform: every path of picks is followed once and
    weighted by the product of ``1 / len(options)`` along it."""
    out = np.zeros(NUM_ACTIONS, dtype=np.float64)
    path: list[int] = []
    while True:
        rng = _ChoiceEnumerator(path)
        action = decide(rng)
        widths = rng.widths
        out[action] += float(np.prod([1.0 / w for w in widths])) if widths else 1.0
        path = (path + [0] * len(widths))[: len(widths)]
        # The next path: the last pick that has an option left moves on; the later ones restart.
        while path and path[-1] + 1 >= widths[len(path) - 1]:
            path.pop()
        if not path:
            return out
        path[-1] += 1


def one_hot(action: int) -> np.ndarray:
    """float64 [41] with probability 1 on ``action``."""
    out = np.zeros(NUM_ACTIONS, dtype=np.float64)
    out[action] = 1.0
    return out


def action_mask_of(observation: Mapping[str, Any]) -> np.ndarray:
    """The action mask of an observation dict as booleans [41], checked.

    Raises ``ValueError`` when there is no mask, when it is no action mask (another length,
    values other than 0 and 1), or when it has no legal action (the agent is not to act).
    """
    try:
        mask = np.asarray(observation["action_mask"])
    except (KeyError, TypeError, IndexError):  # IndexError: an array given in place of the dict
        raise ValueError("an agent needs the env's observation dict with an 'action_mask' entry") from None
    # A mask of another length or of other values would let an agent play an action that is none.
    if mask.shape != (NUM_ACTIONS,) or mask.dtype.kind not in "biuf" or not ((mask == 0) | (mask == 1)).all():
        raise ValueError(
            f"an action mask holds {NUM_ACTIONS} entries of 0 or 1, got shape {mask.shape} and dtype {mask.dtype}"
            + ("" if mask.shape != (NUM_ACTIONS,) or mask.dtype.kind not in "biuf" else " with other values")
        )
    legal = mask.astype(bool)
    if not legal.any():
        raise ValueError("the action mask has no legal action: this agent is not the one to act")
    return legal


def legal_actions_of(observation: Mapping[str, Any]) -> list[int]:
    """The legal action indices in an observation dict (from its ``action_mask``).

    Raises ``ValueError`` as :func:`action_mask_of` does.
    """
    return [int(a) for a in np.flatnonzero(action_mask_of(observation))]


class AgentError(ValueError):
    """An agent broke the protocol: its ``act`` returned something that is not a legal action."""


def checked_act(agent: Agent, observation: Mapping[str, Any], name: str | None = None) -> int:
    """``agent.act(observation)`` as an ``int``, checked against the observation's mask.

    Tools that seat agents they did not write (evaluation, play, opponents) call this, so
    a faulty agent is named with what it returned instead of failing somewhere inside
    the env. ``name`` defaults to the agent's ``repr``.

    Raises:
        AgentError: the returned value is not an integer (``None``, a float, a bool...),
            is outside ``0..40``, or is not legal in this observation.
    """
    action = agent.act(observation)
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action.item()
    label = repr(agent) if name is None else name
    mask = np.asarray(observation["action_mask"])
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise AgentError(
            f"agent {label} returned {action!r} ({type(action).__name__}) from act(); "
            f"it must return an action index (an int in 0..{len(mask) - 1})"
        )
    if not 0 <= action < len(mask):
        raise AgentError(f"agent {label} returned action {action!r} from act(); action indices are 0..{len(mask) - 1}")
    if not mask[action]:
        legal = [int(a) for a in np.flatnonzero(mask)]
        raise AgentError(f"agent {label} returned action {int(action)}, which is not legal here (legal: {legal})")
    return int(action)


class SeededAgent:
    """Base class for the bots: a private ``random.Random`` that ``reset(seed)`` reseeds.

    Args:
        seed: seed of the agent's own generator (``None``: fresh entropy), an integer in
            ``0..MAX_SEED`` (:func:`~loveletter_env.validation.check_seed`).
    """

    name = "agent"

    def __init__(self, seed: int | None = None):
        self._seed = check_seed(seed, allow_none=True)
        self.rng = random.Random(self._seed)

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; with ``seed``, reseed the agent's generator."""
        if seed is not None:
            self._seed = check_seed(seed)
            self.rng = random.Random(self._seed)

    def act(self, observation: Mapping[str, Any]) -> int:
        legal = legal_actions_of(observation)
        if len(legal) == 1:
            return legal[0]
        return self.choose(decode_observation(observation["observation"]), legal)

    def choose(self, view: ObservationView, legal: list[int]) -> int:
        """Pick one of ``legal`` (at least two) from what the seat sees."""
        raise NotImplementedError

    #: See :class:`ProbabilisticAgent`.
    remembers_round = False
    exact_probabilities = True

    def action_probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        """float64 [41]: the exact probability of each action :meth:`act` may return here,
        over the picks of the agent's generator (changes nothing, the generator included)."""
        legal = legal_actions_of(observation)
        if len(legal) == 1:
            return one_hot(legal[0])
        view = decode_observation(observation["observation"])
        return choice_distribution(lambda rng: self._decision_with(rng, view, legal))

    def _decision_with(self, rng: Any, view: ObservationView, legal: list[int]) -> int:
        """What :meth:`choose` returns when its generator is ``rng``, with no other change."""
        saved = self.rng
        self.rng = rng
        try:
            return self.decide_now(view, legal)
        finally:
            self.rng = saved

    def decide_now(self, view: ObservationView, legal: list[int]) -> int:
        """:meth:`choose` without its side effects (memory); the agents that remember override it."""
        return self.choose(view, legal)

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None:
        """Move the agent's memory on as if it had played ``action`` here (no memory: nothing)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self._seed!r})"


def view_legal_actions(view: ObservationView) -> tuple[int, ...]:
    """The legal actions of the seat that ``view`` belongs to, holding ``view.hand``."""
    choosable = king_choosable = 0
    for t in range(1, view.num_players):
        if view.in_round(t):
            king_choosable |= 1 << t
            if not view.protected[t]:
                choosable |= 1 << t
    king_choosable = view.rules().king_choosable(choosable, king_choosable)
    a, b = view.hand
    return engine.legal_actions_holding(a, b, choosable, king_choosable)


def check_turn(view: ObservationView, legal: Sequence[int]) -> None:
    """Refuse a decision that is not ``view``'s seat's to make: a ``ValueError`` when the view is
    not of the seat to act (another seat's turn, no two cards in hand), or when ``legal`` (the
    action mask's moves) is not exactly the view's legal actions (:func:`view_legal_actions`).

    The env pairs every observation with its own mask, and for those this never raises: it stops a
    mask paired with another position's observation, on which a search would otherwise fail deep
    inside (a deal it cannot sample, an engine step it calls illegal) or play a move the mask forbids.
    """
    if view.to_act != 0 or len(view.hand) != 2:
        raise ValueError(
            "this observation is not of the seat to act (its seat holds "
            f"{len(view.hand)} card{'s' if len(view.hand) != 1 else ''} and it is "
            f"{'nobody' if view.to_act is None else 'seat offset ' + str(view.to_act)}'s turn), yet its action "
            "mask allows a move: the mask belongs to another observation"
        )
    expected = view_legal_actions(view)
    if tuple(legal) != expected:
        raise ValueError(
            f"the action mask allows {list(legal)}, but this observation's legal actions are {list(expected)}: "
            "the mask is not this observation's"
        )


def hand_distribution(view: ObservationView, offset: int) -> dict[int, float]:
    """Probability of each card value in the hand of the player at seat ``offset``.

    A known card is certain. Otherwise the hand is one of the unseen copies, with the
    values a failed Guard ruled out removed (unless that leaves nothing, which can only
    follow from an inconsistent view). Players who are out hold nothing: ``{}``.
    """
    if not view.in_round(offset) or offset == 0:
        return {}
    known = view.known_cards[offset]
    if known:
        return {known: 1.0}
    weights = {v: view.unseen[v] for v in CARD_VALUES if view.unseen[v] and v not in view.ruled_out[offset]}
    if not weights:
        weights = {v: view.unseen[v] for v in CARD_VALUES if view.unseen[v]}
    total = sum(weights.values())
    return {v: w / total for v, w in weights.items()} if total else {}


def move_rulings(view: ObservationView) -> list[int]:
    """Per seat offset, a bit mask (bit ``v`` for value ``v``) of the values failed Guards
    prove that seat's card lacks, read from the move record.

    The rulings of ``view.ruled_out`` and one more fact: a player who draws and then plays
    a value ruled out of their card has played the drawn card and kept the old one, so the
    ruling stands (:func:`~loveletter_env.knowledge.ruled_out_after_play`). Offset 0 holds
    the rulings on the observer's card before this turn's draw, which are what the others
    know of the card it keeps when it plays one of those values.
    """
    masks = [0] * view.num_players
    for move in view.moves:
        masks[move.actor] = ruled_out_after_play(masks[move.actor], move.card)
        target = move.target
        if target is not None:
            if move.card == GUARD and move.guess and target not in move.out:
                masks[target] |= 1 << move.guess
            elif move.card == PRINCE:
                masks[target] = 0
            elif move.card == KING:
                masks[move.actor], masks[target] = masks[target], masks[move.actor]
        for seat in move.out:
            masks[seat] = 0
    for k in range(1, view.num_players):
        for value in view.ruled_out[k]:
            masks[k] |= 1 << value
    return masks


def with_move_rulings(view: ObservationView, masks: Sequence[int] | None = None) -> ObservationView:
    """``view`` whose ``ruled_out`` also holds the rulings the move record proves
    (``masks``, by default :func:`move_rulings`; the observer's own entry stays empty)."""
    masks = move_rulings(view) if masks is None else masks
    ruled: tuple[frozenset, ...] = (frozenset(),) + tuple(
        frozenset(v for v in CARD_VALUES if masks[k] >> v & 1) for k in range(1, len(masks))
    )
    return view if ruled == view.ruled_out else dataclasses.replace(view, ruled_out=ruled)


def other_card(hand: tuple[int, ...], played: int) -> int:
    """The card kept after playing ``played`` from a two-card ``hand`` (0 if none)."""
    cards = list(hand)
    if played in cards:
        cards.remove(played)
    return cards[0] if cards else 0
