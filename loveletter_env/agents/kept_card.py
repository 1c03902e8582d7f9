"""Which of my two cards the others may know: a memory of the card kept last turn.

The observation says *that* an opponent knows my card (``seen_by``) but not which of
my two cards on my turn is that old one. An agent that remembers the card it kept at
its previous turn can usually tell: a Prince on me voids the memory, and so does a King trade unless I
happened to draw another copy of the card I kept (then the guess may be wrong, which
costs a heuristic a little, never legality).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..actions import ACTION_CARD, NUM_ACTIONS
from ..observation import ObservationView, decode_observation
from .base import SeededAgent, legal_actions_of, other_card


class KeptCardMemory:
    """Remembers the card kept at the last turn of the current round."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._kept = 0
        self._deck_size = -1
        self._discards = -1
        self._tokens = -1

    def old_card(self, view: ObservationView) -> int:
        """The card held before this turn's draw when it is still the one kept last turn, else 0."""
        # The deck check alone, not :meth:`last_kept`'s round check: at a first turn of a new round
        # after a Prince's discard this can still name last round's card, but the bots' published
        # figures and their compiled twin (bot_decisions) were measured with exactly this rule
        # (the searches' :class:`SearchKeptCardMemory` checks the round).
        kept = self._kept if 0 <= view.deck_size < self._deck_size else 0
        # Any discard of mine since last turn other than my own play means a Prince hit me.
        untouched = len(view.discards[0]) == self._discards
        return kept if untouched and kept in view.hand else 0

    def last_kept(self, view: ObservationView) -> int:
        """The card kept at my last turn of this round (what I held while the others
        played since), 0 at my first turn."""
        return self._kept if self._same_round(view) and 0 <= view.deck_size < self._deck_size else 0

    def _same_round(self, view: ObservationView) -> bool:
        """Whether ``view`` is of the round of my last remembered turn."""
        # Every round gives at least one token, so an unchanged token total is the same round: the
        # deck alone cannot tell, as a new round's deck can be smaller than at my last turn of the
        # one before (a round I left early).
        return sum(view.tokens) == self._tokens

    def remember(self, view: ObservationView, kept: int) -> None:
        """Call after choosing: ``kept`` is the card left in hand after this play."""
        self._kept = kept
        self._deck_size = view.deck_size
        self._discards = len(view.discards[0]) + 1
        self._tokens = sum(view.tokens)


class SearchKeptCardMemory(KeptCardMemory):
    """The memory of the search agents: :meth:`old_card` also checks the round, as
    :meth:`last_kept` does.

    At a first turn of a new round after a Prince's discard, the bots' rule can name last
    round's card, and that card may be the one just drawn: a search would then give the
    opponent who saw my new card (a Priest after the Prince) the wrong one in every deal it
    samples. The bots keep their rule (see :meth:`KeptCardMemory.old_card`); no figure or
    compiled twin pins the searches to it.
    """

    def old_card(self, view: ObservationView) -> int:
        """The card held before this turn's draw when it is still the one kept at my last turn
        of this round, else 0."""
        return super().old_card(view) if self._same_round(view) else 0


class _RemembersKeptCard(SeededAgent):
    """A seeded agent with a :class:`KeptCardMemory` (of :attr:`memory_class`) that a new episode clears."""

    memory_class: type[KeptCardMemory] = KeptCardMemory

    def __init__(self, seed: int | None = None):
        super().__init__(seed)
        self.memory = self.memory_class()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.memory.clear()


class KeptCardAgent(_RemembersKeptCard):
    """A bot that remembers the card it kept last turn and passes it to :meth:`decide`."""

    def choose(self, view: ObservationView, legal: list[int]) -> int:
        action = self.decide(view, legal, self.memory.old_card(view))
        self.memory.remember(view, other_card(view.hand, ACTION_CARD[action]))
        return action

    def decide(self, view: ObservationView, legal: list[int], old_card: int) -> int:
        """The action to play; ``old_card`` is the card kept last turn (0 if unknown)."""
        raise NotImplementedError

    remembers_round = True

    def decide_now(self, view: ObservationView, legal: list[int]) -> int:
        return self.decide(view, legal, self.memory.old_card(view))

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None:
        """Remember the card kept by ``action``, as :meth:`choose` does (forced plays skipped, as in play)."""
        if len(legal_actions_of(observation)) > 1:
            view = decode_observation(observation["observation"])
            self.memory.remember(view, other_card(view.hand, ACTION_CARD[action]))


class KeptCardSearchAgent(_RemembersKeptCard):
    """Base of the search agents: remembers the card kept at *every* play, forced ones included.

    The searches read that memory for the deals they sample, so unlike :class:`KeptCardAgent`
    (whose bots skip forced moves, as their published figures were measured) a play with a
    single legal action still updates it, and its :meth:`~SearchKeptCardMemory.old_card` is
    never last round's card.
    """

    memory_class = SearchKeptCardMemory

    def act(self, observation: Mapping[str, Any]) -> int:
        legal = legal_actions_of(observation)
        view = decode_observation(observation["observation"])
        action = legal[0] if len(legal) == 1 else self.choose_by_search(observation, view, legal)
        self.memory.remember(view, other_card(view.hand, ACTION_CARD[action]))
        return action

    def choose_by_search(self, observation: Mapping[str, Any], view: ObservationView, legal: list[int]) -> int:
        """Pick one of ``legal`` (at least two); ``view`` is ``observation`` decoded."""
        raise NotImplementedError

    remembers_round = True
    #: A search's choice comes from many draws of its generator: probabilities are estimated.
    exact_probabilities = False
    #: Searches run per decision by :meth:`action_probabilities` (each from its own seed).
    probability_samples = 16

    def action_probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        """float64 [41]: how often the search picks each action over
        :attr:`probability_samples` searches, each with its generator seeded from the
        agent's seed and the sample's number, or from fresh entropy for an agent with no seed
        (an estimate; changes nothing)."""
        legal = legal_actions_of(observation)
        out = np.zeros(NUM_ACTIONS, dtype=np.float64)
        if len(legal) == 1:
            out[legal[0]] = 1.0
            return out
        view = decode_observation(observation["observation"])
        saved = self.rng
        try:
            for sample in range(self.probability_samples):
                # Unseeded, the agent's draws are fresh ones (as act's are), not "None/0"'s for all.
                self.rng = random.Random() if self._seed is None else random.Random(f"{self._seed}/{sample}")
                out[self.choose_by_search(observation, view, legal)] += 1.0
        finally:
            self.rng = saved
        return out / self.probability_samples

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None:
        """Remember the card kept by ``action``, as :meth:`act` does (forced plays included)."""
        view = decode_observation(observation["observation"])
        self.memory.remember(view, other_card(view.hand, ACTION_CARD[action]))


@contextlib.contextmanager
def estimating_with(agent: Any, samples: int | None) -> Iterator[None]:
    """Inside the block, ``agent`` estimates its probabilities from ``samples`` searches per
    decision (:attr:`KeptCardSearchAgent.probability_samples`); its own setting is put back
    after, since the agent is the caller's and its later use must find it. Nothing changes for
    ``samples`` ``None`` or an agent whose probabilities are exact."""
    if samples is None or getattr(agent, "exact_probabilities", True):
        yield
        return
    own = agent.probability_samples
    agent.probability_samples = samples
    try:
        yield
    finally:
        agent.probability_samples = own
