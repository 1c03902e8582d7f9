"""A search best response: information-set MCTS that models one fixed agent by its own policy.

This is IS-MCTS-BR (Timbers et al., "Approximate exploitability: learning a best response",
2020): a search that plays *against a known policy* rather than against a search of its own.
Its score against the agent is a lower bound on the agent's exploitability, usually a
tighter one than a learned best response's, because the search plans afresh at every
decision with the agent's exact play in its model.

At each of its decisions the search runs ``iterations`` walks from the current information
set. Each walk:

* samples a **determinization**: the other seats' kept cards, the set-aside card and the draw
  pile, from the unseen cards, as :func:`~loveletter_env.agents.ismcts.sample_deal` does. Each
  other seat's card is weighted by how likely *the agent* was to make that seat's last play with
  each candidate card (:func:`~loveletter_env.agents.opponent_model.play_likelihoods` with the
  agent's own action probabilities as the model, plus a small ``model_noise`` floor because the
  view of that past decision is rebuilt approximately);
* plays it out on a compiled-core record (:mod:`loveletter_env.core.kernels`): at the
  agent's decisions the walk **samples the agent's own policy**, evaluated on the observation
  the core writes for the agent's seat; at the search's own decisions it descends a tree of
  the search's information sets (keyed by the previous one, the action taken there and the
  observation now: perfect recall) by UCB1, adds one new information set per walk, and below
  it every seat plays the agent's policy;
* backs up the search's score (1 for a win alone, 1/k for a win shared by k, 0 for a loss).

Every root action is walked on the same deals with the same generator seeds (common random
numbers), and the one with the highest total score is played; equals go to the action the
agent itself prefers in the search's seat.

The agent's probabilities come from :class:`AgentPolicy`: a network's masked softmax (or its
argmax when it plays greedily) through its batch interface, an exact bot's
``action_probabilities``, or a search agent's estimate from a few searches per decision
(``probability_samples``). Each distinct observation is asked once and cached, since the same
view of the agent recurs across walks. The agent's own memory of the round (what the search
bots remember about the card they kept) is not replayed inside the walks: the model asks it
as a fresh agent at each observation.

Rounds of 2, 3 and 4 players are searched: the search holds one seat and the agent every other
one, the table at which a seat's best-response gain (and so NashConv) is defined.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..actions import ACTION_CARD, NUM_ACTIONS
from ..core import kernels, layout, record_from_state
from ..observation import OBSERVATION_SIZE, ObservationView
from ..validation import check_int
from .base import check_turn, view_legal_actions
from .guided import encode_view
from .ismcts import check_search_settings, deal_state, kept_and_drawn, sample_deal
from .kept_card import KeptCardSearchAgent, estimating_with
from .opponent_model import one_view_at_a_time, play_likelihoods

_HANDS = layout.HANDS
_DECK = layout.DECK
_CURRENT = layout.CURRENT
_ROUND_OVER = layout.ROUND_OVER
_ROUND_WINNERS = layout.ROUND_WINNERS
_NUM_PLAYERS = layout.NUM_PLAYERS
_SEEN = layout.SEEN  # seat s has seen seat t's card: SEEN + s * MAX_SEATS + t (we are seat 0)

#: The most observations :class:`AgentPolicy` keeps answers for before it starts afresh.
CACHE_LIMIT = 200_000


class AgentPolicy:
    """The target agent's action probabilities at any observation, cached per observation.

    Args:
        agent: the agent being exploited. A network agent (with ``action_probabilities_batch``)
            is asked through its batch interface; any other through ``action_probabilities``.
        probability_samples: for agents whose probabilities are estimated by sampling (the
            search agents, ``exact_probabilities = False``), the searches per decision of the
            estimate (``None``: the agent's own setting).
    """

    def __init__(self, agent: Any, probability_samples: int | None = None):
        if not callable(getattr(agent, "action_probabilities", None)) and not callable(
            getattr(agent, "action_probabilities_batch", None)
        ):
            raise TypeError(
                f"agent {agent!r} cannot give its action probabilities (no action_probabilities method): "
                "a search best response needs them to model it"
            )
        self.agent = agent
        self.exact = bool(getattr(agent, "exact_probabilities", True))
        self.samples = None
        if probability_samples is not None and not self.exact:
            self.samples = check_int("probability_samples", probability_samples, low=1)
        self._batch = getattr(agent, "action_probabilities_batch", None)
        self._cache: dict[bytes, np.ndarray] = {}
        self.queries = 0

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """float64 [41]: the agent's probability of each action at observation ``obs`` (float32
        [OBSERVATION_SIZE]) with legal actions ``mask`` (0/1 [41])."""
        key = obs.tobytes()
        probs = self._cache.get(key)
        if probs is None:
            self.queries += 1
            if self._batch is not None:
                probs = np.asarray(self._batch(obs[None, :], mask[None, :].astype(bool)), dtype=np.float64)[0]
            else:
                if hasattr(self.agent, "reset"):
                    self.agent.reset()  # a fresh round's memory: see the module docstring
                probs = self._ask(obs, mask)
            probs = np.where(mask > 0, probs, 0.0)
            total = probs.sum()
            if not total > 0:
                raise ValueError(f"agent {self.agent!r} gave no probability to any legal action")
            probs = probs / total
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = probs
        return probs

    def _ask(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The agent's own ``action_probabilities``, with :attr:`samples` searches per decision
        where given, for the question only (:func:`~.kept_card.estimating_with`)."""
        with estimating_with(self.agent, self.samples):
            probs = self.agent.action_probabilities({"observation": obs, "action_mask": mask.astype(np.int8)})
        return np.asarray(probs, dtype=np.float64)

    def play_probability(self, view: ObservationView, card: int) -> float:
        """P(the agent, holding ``view.hand``, plays ``card``) (the model
        :func:`~loveletter_env.agents.opponent_model.play_likelihoods` takes)."""
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        mask[list(view_legal_actions(view))] = 1
        probs = self(encode_view(view), mask)
        return float(sum(p for a, p in enumerate(probs) if p and ACTION_CARD[a] == card))


class _InfoSet:
    """The search's statistics at one of its information sets: visits and total score per action."""

    __slots__ = ("visits", "scores")

    def __init__(self) -> None:
        self.visits: dict[int, int] = {}
        self.scores: dict[int, float] = {}


class SearchBestResponse(KeptCardSearchAgent):
    """IS-MCTS best response to a fixed agent (see the module docstring).

    Args:
        target: the agent to exploit, or an :class:`AgentPolicy` of it (the model the search
            samples at the agent's decisions; it is not played through ``act``).
        seed: seed of the search's generator (deals, the agent's sampled moves, tie breaks).
        iterations: walks per decision.
        exploration: the UCB1 constant at the search's own decisions (scores lie in [0, 1]).
        model_noise: the floor added to the agent's likelihood of its last play when the
            other seat's card is sampled (0: trust the rebuilt past view fully; 1: count cards only).
    """

    name = "search_br"

    def __init__(
        self,
        target: Any,
        seed: int | None = None,
        iterations: int = 1000,
        exploration: float = 0.7,
        model_noise: float = 0.05,
    ):
        super().__init__(seed)
        self.policy = target if isinstance(target, AgentPolicy) else AgentPolicy(target)
        self.iterations, self.exploration, self.model_noise = check_search_settings(
            iterations, exploration, model_noise
        )

    def __repr__(self) -> str:
        return (
            f"SearchBestResponse(target={self.policy.agent!r}, seed={self._seed!r}, iterations={self.iterations}, "
            f"exploration={self.exploration}, model_noise={self.model_noise})"
        )

    def choose_by_search(self, observation: Mapping[str, Any], view: ObservationView, legal: list[int]) -> int:
        check_turn(view, legal)  # before the agent is asked about a position that is not this one
        # Where the walks cannot tell actions apart, play what the agent itself would here.
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        mask[legal] = 1
        prior = self.policy(np.asarray(observation["observation"], dtype=np.float32), mask)
        return self.search(view, sorted(legal, key=lambda a: -prior[a]))

    def search(self, view: ObservationView, candidates: list[int]) -> int:
        """Run about ``iterations`` walks from ``view`` (the searching seat to act) and return the
        root action of the highest total score (the first of equals in ``candidates``).

        Every candidate is tried on the same deals with the same generator seeds for the rest
        of the walk (common random numbers): the deal is what makes one walk's score differ
        most from another's, and comparing candidates on the same deals removes most of that
        noise. Below the root, each candidate's walks share one tree.
        """
        rng = self.rng
        old_card = self.memory.old_card(view)
        held = self.memory.last_kept(view)
        n = view.num_players
        play_model = one_view_at_a_time(self.policy.play_probability)  # one at a time: its answers are cached per view
        likelihoods = {k: play_likelihoods(view, k, held, self.model_noise, play_model) for k in range(1, n)}
        # Everything but the hidden cards is the same in every deal: one record, rewritten per deal.
        hands = [kept_and_drawn(view)[0]] + [view.known_cards[k] if view.in_round(k) else 0 for k in range(1, n)]
        base = record_from_state(deal_state(view, hands, _PLACEHOLDER_DECK, old_card))
        # Each agent's observation says whether we have seen its card; the determinized state omits it.
        for k in range(1, n):
            base[_SEEN + k] = bool(view.known_cards[k])
        tree: dict[tuple[int, int, bytes], _InfoSet] = {}
        root = _InfoSet()
        scratch = _Scratch()
        totals = np.zeros(len(candidates))
        for _ in range(max(1, self.iterations // len(candidates))):
            hands, deck = sample_deal(view, rng, likelihoods)
            walk_seed = rng.getrandbits(64)
            for i, action in enumerate(candidates):
                record = base.copy()
                record[_HANDS : _HANDS + n] = hands
                record[_DECK : _DECK + len(deck)] = deck
                totals[i] += self._walk(record, root, tree, [action], random.Random(walk_seed), scratch)
        return candidates[int(np.argmax(totals))]  # argmax keeps the first of equals

    def _walk(
        self,
        record: np.ndarray,
        root: _InfoSet,
        tree: dict[tuple[int, int, bytes], _InfoSet],
        legal: list[int],
        rng: random.Random,
        scratch: _Scratch,
    ) -> float:
        """One walk from the root on ``record`` (the searching seat is seat 0), choosing among
        ``legal`` there; returns its score."""
        path: list[tuple[_InfoSet, int]] = []
        obs, mask = scratch.obs, scratch.mask
        info: _InfoSet | None = root
        options = legal
        in_tree, expanded = True, False
        parent, last_action = -1, -1
        while not record[_ROUND_OVER]:
            seat = int(record[_CURRENT])
            if seat == 0 and in_tree:
                if info is None:  # the search acts again: find its information set
                    kernels.observe_into(record, 0, obs)
                    key = (parent, last_action, obs.tobytes())
                    info = tree.get(key)
                    if info is None and not expanded:
                        info = tree[key] = _InfoSet()
                        expanded = True
                    options = [a for a in range(NUM_ACTIONS) if int(kernels.legal_bits(record)) >> a & 1]
                if info is not None:
                    if len(options) == 1:
                        action = options[0]
                    else:
                        action = self._select(info, options, rng)
                        path.append((info, action))
                    parent, last_action = id(info), action
                    info = None
                    kernels.play(record, action)
                    continue
                in_tree = False  # a second new information set: the rest is played out
            # The agent's move, or either seat's below the tree: the agent's own policy.
            kernels.observe_into(record, seat, obs)
            kernels.legal_mask_into(record, mask)
            kernels.play(record, _sample(self.policy(obs, mask), rng))
        winners = record[_ROUND_WINNERS : _ROUND_WINNERS + int(record[_NUM_PLAYERS])]
        score = 1.0 / int(np.count_nonzero(winners)) if winners[0] else 0.0
        for node, action in path:
            node.visits[action] = node.visits.get(action, 0) + 1
            node.scores[action] = node.scores.get(action, 0.0) + score
        return score

    def _select(self, node: _InfoSet, options: list[int], rng: random.Random) -> int:
        untried = [a for a in options if a not in node.visits]
        if untried:
            return untried[0] if len(untried) == 1 else rng.choice(untried)
        log_total = math.log(max(1, sum(node.visits[a] for a in options)))
        c = self.exploration
        best, best_value = options[0], -math.inf
        for a in options:
            n = node.visits[a]
            value = node.scores[a] / n + c * math.sqrt(log_total / n)
            if value > best_value:
                best, best_value = a, value
        return best


class _Scratch:
    """Buffers one search reuses for every walk."""

    def __init__(self) -> None:
        self.obs = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
        self.mask = np.zeros(NUM_ACTIONS, dtype=np.int8)


def _sample(probs: np.ndarray, rng: random.Random) -> int:
    """An action drawn from ``probs`` with ``rng`` (the highest-probability one when it is certain)."""
    top = int(np.argmax(probs))
    if probs[top] >= 1.0:
        return top
    pick = rng.random()
    cumulative = 0.0
    last = top
    for a in np.flatnonzero(probs):
        cumulative += probs[a]
        last = int(a)
        if pick < cumulative:
            return last
    return last


#: Any deck: :meth:`SearchBestResponse.search` overwrites the deck of every deal it samples.
_PLACEHOLDER_DECK = tuple(range(16))
