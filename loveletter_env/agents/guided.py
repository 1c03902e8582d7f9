"""Search guided by a trained network: sampled deals, the network's moves and values.

The network (any module with ``forward(obs) -> (logits, value)``, as trained by the
self-play trainer) plays three parts:

* **which moves to search**: the ``width`` legal actions the network's policy rates
  highest from our own observation (its prior);
* **how the others answer**: after each candidate move, the other players act on *their
  own* view of the sampled deal: the network's most likely move (``opponents="greedy"``,
  the default), a sample from its policy (``"network"``) or the card-counting bot (``"belief"``);
* **what a position is worth**: once it is our turn again (after ``depth`` of our own
  decisions, the later ones the network's most likely move), the network's value of our
  observation there is the leaf value; a round that ends first scores 1 if we win, else 0.

* **what the others hold**: hidden cards are sampled as the ``ismcts`` bot samples them
  (:func:`~loveletter_env.agents.ismcts.determinize`), each card an opponent may hold
  weighted by how likely it makes their last play; that play is read through the
  network's policy on their view at the time (``reading="network"``, the default) or
  through the card-counting bot (``reading="belief"``, :mod:`~loveletter_env.agents.opponent_model`).

The next opponent's hand is stratified (every card they may hold gets its share of the
deals), every candidate is scored on the same deals (common random numbers), and all
deals advance in lock step, so each stage of the search is one batched forward pass
rather than one per position. The move with the highest mean value is played; ties go
to the network's preferred move. With ``margin`` > 0 the network's preferred move is
kept unless the best candidate's mean beats it by more than ``margin`` standard errors of
their difference over the same deals: the search overrides the network only where it
measured an advantage, not where sampling noise made one.

How it plays: it plays the move its search values most (a decision, not a sample), and it
uses the network's policy as a whole (the masked softmax) to rank candidates and read plays.
Inside the search the network moves greedily: our own later moves always, the others' by
default (``opponents="network"`` samples them). How a checkpoint plays on its own (its run's
``eval.greedy``, ``greedy=`` of a ``checkpoint:`` spec) does not apply here: the search takes
the network's weights, not that agent.

The network is passed in, or loaded from a checkpoint path through
:func:`~loveletter_env.agents.specs.load_checkpoint_network` (the environment package does
not depend on the training package: that registers the loader).
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import engine
from ..actions import ACTION_CARD, NUM_ACTIONS
from ..cards import CARD_VALUES
from ..engine import GameState
from ..observation import (
    LAYOUT,
    OBSERVATION_SIZE,
    SLICES,
    ObservationView,
    encode_observation,
    move_entries,
    rule_flags,
)
from ..validation import check_int, check_number
from .base import check_turn, view_legal_actions
from .checkpoint_loading import load_checkpoint_network, network_output_problem
from .ismcts import MAX_SEARCH_ITERATIONS, determinize, model_action
from .kept_card import KeptCardSearchAgent
from .opponent_model import model_play_probabilities, play_likelihoods, posterior

#: The card each action plays, by action index.
_ACTION_CARDS = np.array(ACTION_CARD)
#: How the other players are modelled inside the search.
OPPONENT_MODELS = ("greedy", "network", "belief")
#: Whose play model reads opponents' last plays.
PLAY_READINGS = ("network", "belief")
#: The largest ``margin`` (in standard errors): beyond it the search would never override the network.
MAX_MARGIN = 10.0


def load_policy_network(path: str | os.PathLike[str]) -> Any:
    """The network stored in a checkpoint file or run folder (through the loader the training package
    registers: :func:`loveletter_env.agents.checkpoint_loading.load_checkpoint_network`), which refuses,
    naming the file, weights that are not finite real numbers and a network whose outputs are not
    finite on real observations (:func:`~loveletter_env.agents.checkpoint_loading.network_output_problem`):
    the search would otherwise rank moves by NaN."""
    return load_checkpoint_network(path)


def passed_network_problem(network: Any) -> str | None:
    """What is wrong with a network passed in as ``policy``, as a phrase that follows "the policy
    network <class>": its outputs on real observations
    (:func:`~loveletter_env.agents.checkpoint_loading.network_output_problem`), or that it cannot be
    run on them at all; ``None`` when it gives finite logits ``[B, 41]`` and values ``[B]``."""
    try:
        return network_output_problem(network)
    except Exception as error:  # any failure to run it is the problem to name, whatever its type
        return f"cannot be run on observations [B, {OBSERVATION_SIZE}] ({type(error).__name__}: {error})"


class GuidedSearchAgent(KeptCardSearchAgent):
    """Search over sampled deals, guided by a policy/value network.

    Args:
        policy: the network (``forward(obs [B, OBSERVATION_SIZE]) -> (logits [B, 41], value [B])``) or
            the path of a checkpoint / run folder holding one. Required.
        seed: seed of the agent's generator (deals, sampled replies, tie breaks).
        iterations: positions evaluated per decision, the strength/time budget, shared by
            the candidates (each sampled deal is played once per candidate). Every card the
            stratified opponent may hold gets at least one deal, so a budget below the
            candidates times those cards is exceeded (``iterations=1`` may evaluate some 30).
        width: how many of the network's most likely legal actions are searched
            (0: every legal action).
        depth: our own decisions played before the leaf value is read (1: the candidate
            move only; each further one is the network's most likely move).
        opponents: how the others answer, each on their own view of the sampled deal:
            ``"greedy"`` (the network's most likely move), ``"network"`` (a sample from
            its policy) or ``"belief"`` (the card-counting bot).
        reading: whose play model reads an opponent's last play for the card they kept:
            ``"network"`` (the network's policy) or ``"belief"`` (the card-counting bot).
        model_noise: how far opponents may stray from that model (0: they play exactly
            like it; 1: read nothing from plays, count cards only).
        margin: how many standard errors of the paired difference the best candidate's
            mean value must exceed the network's preferred move's by to replace it (0:
            play the best mean).

    Raises:
        ValueError: a missing policy, a network that cannot be run on observations or gives outputs
            that are not finite logits and values of the right shape, or an option out of range,
            named in the message.
    """

    name = "guided"

    def __init__(
        self,
        policy: Any = None,
        seed: int | None = None,
        iterations: int = 300,
        width: int = 4,
        depth: int = 1,
        opponents: str = "greedy",
        reading: str = "network",
        model_noise: float = 0.02,
        margin: float = 0.0,
    ):
        iterations = check_int("iterations", iterations, low=1, high=MAX_SEARCH_ITERATIONS)
        width = check_int("width", width, low=0)
        depth = check_int("depth", depth, low=1)
        if opponents not in OPPONENT_MODELS:
            raise ValueError(f"opponents must be one of {list(OPPONENT_MODELS)}, got {opponents!r}")
        if reading not in PLAY_READINGS:
            raise ValueError(f"reading must be one of {list(PLAY_READINGS)}, got {reading!r}")
        if policy is None:
            raise ValueError("the guided search needs a network: policy=PATH (a checkpoint) or a model object")
        if isinstance(policy, (str, os.PathLike)):
            self.policy_source = os.fspath(policy)
            network = load_policy_network(policy)
        elif callable(policy) and not isinstance(policy, type):
            # Checked here as a checkpoint's network is when loaded: a network that does not fit
            # (or NaN outputs) otherwise fails at the first decision with torch's words, or ranks by NaN.
            problem = passed_network_problem(policy)
            if problem:
                raise ValueError(f"the policy network {type(policy).__name__} {problem}")
            self.policy_source = type(policy).__name__
            network = policy
        else:
            # A class is callable too: it would be "run" by constructing it, at the first decision.
            raise ValueError(f"policy must be a checkpoint path or a network module (an instance), got {policy!r}")
        super().__init__(seed)
        self.network = network
        self.iterations = iterations
        self.width = width
        self.depth = depth
        self.opponents = opponents
        self.model_noise = check_number("model_noise", model_noise, 0, 1)
        self.margin = check_number("margin", margin, 0, MAX_MARGIN)
        self.reading = reading
        self._sampler = np.random.default_rng(0)

    def __repr__(self) -> str:
        return (
            f"GuidedSearchAgent(policy={self.policy_source!r}, seed={self._seed!r}, iterations={self.iterations}, "
            f"width={self.width}, depth={self.depth}, opponents={self.opponents!r}, reading={self.reading!r}, "
            f"model_noise={self.model_noise}, margin={self.margin})"
        )

    def choose_by_search(self, observation: Mapping[str, Any], view: ObservationView, legal: list[int]) -> int:
        check_turn(view, legal)  # a mask of another position would reach the engine as an illegal move
        return self.search(view, np.asarray(observation["observation"], dtype=np.float32), legal)

    def search(self, view: ObservationView, vector: np.ndarray, legal: list[int]) -> int:
        """The candidate with the highest mean leaf value over the sampled deals.

        ``vector`` is the observation ``view`` was decoded from (the network reads it).
        """
        logits, _ = self._forward([vector])
        prior = logits[0]
        ranked = sorted(legal, key=lambda a: -prior[a])  # sorted() is stable: ties keep index order
        candidates = ranked[: self.width] if self.width else ranked
        if len(candidates) == 1:
            return candidates[0]
        rng = self.rng
        self._sampler = np.random.default_rng(rng.getrandbits(63))
        old_card = self.memory.old_card(view)
        held = self.memory.last_kept(view)
        likelihoods = self.read_plays(view, held)
        states: list[GameState] = []
        weights: list[float] = []
        for hand_model, weight in self._strata(view, likelihoods, max(1, self.iterations // len(candidates))):
            deal = determinize(view, rng, old_card, hand_model)
            for action in candidates:
                state = deal.clone()
                engine.step(state, action)
                states.append(state)
            weights.append(weight)
        values = np.asarray(self.evaluate(states, rng)).reshape(len(weights), len(candidates))
        return candidates[self.pick_candidate(values, np.asarray(weights))]

    def pick_candidate(self, values: np.ndarray, weights: np.ndarray) -> int:
        """The index of the candidate to play, from ``values[deal, candidate]`` (candidates in the
        network's order of preference, every one scored on the same deals) and each deal's weight.

        The highest weighted mean wins (the first of equals); with ``margin`` > 0 it must beat the
        network's preferred move (index 0) by more than ``margin`` standard errors of the weighted
        mean of their per-deal differences, else index 0 is played.
        """
        means = [0.0] * values.shape[1]
        for deal_weight, deal_values in zip(weights.tolist(), values.tolist()):  # summed in deal order, as always
            for candidate, value in enumerate(deal_values):
                means[candidate] += deal_weight * value
        best = max(range(len(means)), key=means.__getitem__)  # max() keeps the first (most likely) of equals
        if best == 0 or self.margin == 0:
            return best
        differences = values[:, best] - values[:, 0]
        gain = means[best] - means[0]
        standard_error = math.sqrt(float(np.sum(weights**2 * (differences - gain) ** 2)))
        return best if gain > self.margin * standard_error else 0

    def read_plays(self, view: ObservationView, held: int) -> dict[int, dict[int, float]]:
        """For each opponent, P(their last play | the card they kept) for each card they may hold
        (:func:`~loveletter_env.agents.opponent_model.play_likelihoods`), their play read through the
        network's policy (``reading="network"``) or the card-counting bot (``"belief"``)."""
        model = self._network_play_probabilities if self.reading == "network" else model_play_probabilities
        return {k: play_likelihoods(view, k, held, self.model_noise, model) for k in range(1, view.num_players)}

    def _network_play_probabilities(self, views: Sequence[ObservationView], card: int) -> list[float]:
        """For each view, P(the network, on it, plays ``card``) under its policy over the legal
        moves: one batched pass for all of them."""
        masks = np.zeros((len(views), NUM_ACTIONS), dtype=bool)
        for row, view in zip(masks, views):
            row[list(view_legal_actions(view))] = True
        logits, _ = self._forward([encode_view(view) for view in views])
        return _masked_softmax(logits, masks)[:, np.equal(_ACTION_CARDS, card)].sum(axis=1).tolist()

    @staticmethod
    def _strata(
        view: ObservationView, likelihoods: dict[int, dict[int, float]], deals: int
    ) -> list[tuple[dict[int, dict[int, float]], float]]:
        """How to sample ``deals`` deals, as (hand model for :func:`determinize`, weight) pairs.

        The hand of the next opponent whose card we do not know is stratified: each value
        it may be gets deals in proportion to its probability (at least one), weighted so
        that the strata add up to that probability. Which card they hold decides most of a
        move's outcome (a Guard's guess, a Baron's comparison), so fixing it per stratum
        removes most of the sampling noise between candidates.
        """
        stratified = next((k for k in range(1, view.num_players) if view.in_round(k) and not view.known_cards[k]), None)
        if stratified is None:
            return [(likelihoods, 1.0 / deals)] * deals
        strata = []
        for value, probability in sorted(posterior(view, stratified, likelihoods[stratified]).items()):
            count = max(1, round(deals * probability))
            strata += [({**likelihoods, stratified: {value: 1.0}}, probability / count)] * count
        return strata

    def evaluate(self, states: list[GameState], rng: random.Random) -> list[float]:
        """Each state's value for seat 0 (the searching player), in [0, 1]: every state
        advances (other players by the opponent model, our later decisions by the
        network) until our ``depth``-th decision after the root is due, whose network
        value is read, or the round ends (1 if we are among the winners)."""
        values = [0.0] * len(states)
        own_moves_left = [self.depth - 1] * len(states)
        active = list(range(len(states)))
        while active:
            leaves: list[int] = []
            network_movers: list[int] = []
            still_active: list[int] = []
            for i in active:
                state = states[i]
                if state.round_over:
                    values[i] = 1.0 if 0 in state.round_winners else 0.0
                elif state.current == 0 and own_moves_left[i] == 0:
                    leaves.append(i)
                else:
                    still_active.append(i)
                    if state.current == 0:
                        own_moves_left[i] -= 1
                    legal = engine.legal_actions(state)
                    if len(legal) == 1:
                        engine.step(state, legal[0])
                    elif state.current != 0 and self.opponents == "belief":
                        engine.step(state, model_action(state, list(legal), rng))
                    else:
                        network_movers.append(i)
            if leaves:
                _, leaf_values = self._forward([encode_observation(states[i], 0) for i in leaves])
                for i, value in zip(leaves, leaf_values):
                    values[i] = (float(value) + 1.0) / 2.0  # the value head predicts +1 win / -1 loss
            if network_movers:
                self._network_moves([states[i] for i in network_movers])
            active = still_active
        return values

    def _network_moves(self, states: list[GameState]) -> None:
        """One move in each state by the network on the mover's own view: its most likely
        move, except the others' under ``opponents="network"``, a sample from its policy."""
        vectors = [encode_observation(state, state.current) for state in states]
        masks = np.zeros((len(states), NUM_ACTIONS), dtype=bool)
        for row, state in enumerate(states):
            masks[row, list(engine.legal_actions(state))] = True
        logits, _ = self._forward(vectors)
        scores = np.where(masks, logits, -np.inf)
        greedy = scores.argmax(axis=1).tolist()
        sampled = (scores + self._sampler.gumbel(size=scores.shape)).argmax(axis=1).tolist()
        for row, state in enumerate(states):
            sample = state.current != 0 and self.opponents == "network"
            engine.step(state, sampled[row] if sample else greedy[row])

    def _forward(self, vectors: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The network's logits ``[B, 41]`` and values ``[B]`` for a batch of observation vectors."""
        import torch  # only an agent that holds a network gets here: the package does not import torch itself

        with torch.no_grad():
            logits, value = self.network(torch.from_numpy(np.stack(vectors)))
        return logits.float().numpy(), value.float().numpy()


def _masked_softmax(logits: np.ndarray, masks: np.ndarray) -> np.ndarray:
    scores = np.where(masks, logits, -np.inf)
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    return scores / scores.sum(axis=1, keepdims=True)


def encode_view(view: ObservationView) -> np.ndarray:
    """The observation vector a view was decoded from (the inverse of :func:`decode_observation`)."""
    obs = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    field = {f.name: obs[SLICES[f.name]].reshape(f.shape) for f in LAYOUT}  # views into obs
    for card in view.hand:
        field["hand"][card - 1] += 1
    for card in view.face_up:
        field["face_up"][card - 1] += 1
    for k in range(view.num_players):
        for j, card in enumerate(view.discards[k]):
            field["discards"][k, j, card - 1] = 1
            field["discard_counts"][k, card - 1] += 1
        field["present"][k] = 1
        field["out"][k] = view.out[k]
        field["protected"][k] = view.protected[k]
        field["tokens"][k] = view.tokens[k]
        if k:
            if view.known_cards[k]:
                field["known_card"][k - 1, view.known_cards[k] - 1] = 1
            for value in view.ruled_out[k]:
                field["ruled_out"][k - 1, value - 1] = 1
            field["seen_by"][k - 1] = view.seen_by[k]
    if view.to_act is not None:
        field["to_act"][view.to_act] = 1
    field["deck_size"][0] = view.deck_size
    field["unseen"][:] = [view.unseen[v] for v in CARD_VALUES]
    field["tokens_to_win"][0] = view.tokens_to_win
    field["num_players"][view.num_players - 2] = 1
    field["rules"][:] = rule_flags(view.rules())
    if view.dealt:
        field["dealt"][view.dealt - 1] = 1
    if view.drawn:
        field["drawn"][view.drawn - 1] = 1
    for slot, move in enumerate(view.moves):
        field["moves"][slot, move_entries(move)] = 1
    return obs
