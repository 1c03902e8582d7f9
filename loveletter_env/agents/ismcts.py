"""Information-set Monte Carlo tree search (ISMCTS), single observer.

Each iteration samples one *determinization*: a full game state consistent with what
this seat has seen. Opponents' unknown hands come from the unseen cards, never a value
a failed Guard ruled out, weighted by how likely each makes their last play *if they
play like the card-counting bot* (:mod:`~loveletter_env.agents.opponent_model`); the rest of
the unseen cards become the set-aside card and the deck order. The iteration then walks
one tree with that state and the engine.

At the root, each of the few actions the card-counting bot rates best (given those
same model-based hand probabilities) is played out on the same deals with the same
playout seeds (common random numbers), and the one with the most wins is chosen. Below
the root (``tree_depth > 1``) tree nodes are public action sequences (every action is
public in Love Letter); at our own decisions the statistics are kept per *our hand* at
that node, which with the public history is our information set, and UCB1 with
availability counts chooses. Opponents are modelled by their information sets: at their
turns they play the card-counting bot on their own view of the determinized state
(:func:`seat_view`), never on cards they cannot see, and so do all players in the
playout below the tree. The reward is winning the round.

The engine does the rest: :class:`~loveletter_env.engine.GameState` is built from the
decoded view (seat offset ``k`` becomes seat ``k``, so the searching player is seat 0)
and :func:`~loveletter_env.engine.step` plays it out.

That Python loop is the reference. At ``tree_depth=1`` (the default) the agent runs the
same loop compiled (:mod:`~loveletter_env.agents.compiled_belief`): the deals are sampled
with a copy of the agent's generator, draw for draw, and played out on core records by a
compiled card-counting bot, so the moves are the reference's, at a tenth of the time or
less (``python -m loveletter_env.agents.ismcts_bench`` measures both).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import engine
from ..cards import CARD_COUNTS, CARD_VALUES, DECK_SIZE, FULL_DECK
from ..core import layout, record_from_state
from ..engine import GameState
from ..observation import ObservationView, event_of_move, move_view, view_rule_fields
from ..rules import FACE_UP_CARDS_2P
from ..validation import check_int, check_number
from .base import check_turn
from .belief import action_scores, belief_action
from .compiled_belief import SAMPLING_TRIES, model_weights, search_deals
from .kept_card import KeptCardSearchAgent
from .opponent_model import play_likelihoods, posterior

#: Rejection-sampling tries before ruled-out values are ignored (only an inconsistent view needs
#: it); the compiled deal loop bakes the same number in.
_SAMPLING_TRIES = SAMPLING_TRIES


def determinize(
    view: ObservationView,
    rng: random.Random,
    old_card: int = 0,
    likelihoods: Mapping[int, Mapping[int, float]] | None = None,
) -> GameState:
    """A full game state consistent with ``view``, for the seat to act (seat 0 in the result).

    Opponents' unknown hands are drawn from the unseen cards, avoiding the values a
    failed Guard ruled out for them; each unseen copy of value ``v`` is weighted by
    ``likelihoods[k][v]`` for seat offset ``k`` (how likely ``v`` makes their last play,
    :func:`~loveletter_env.agents.opponent_model.play_likelihoods`; missing: plain counting).
    Deals are drawn again while a seat has no card of positive weight left; when none of
    the tries deals every seat, the last ignores the rulings and, for a seat whose cards all
    weigh 0, the likelihoods.
    The remaining unseen cards are shuffled into the set-aside card and the draw pile.
    ``old_card`` (the card the others may know we hold, 0 if unknown) only fills the
    knowledge table.

    Raises ``ValueError`` when the view is not of the seat to act.
    """
    hands, deck = sample_deal(view, rng, likelihoods)
    return deal_state(view, hands, deck, old_card)


def sample_deal(
    view: ObservationView,
    rng: random.Random,
    likelihoods: Mapping[int, Mapping[int, float]] | None = None,
) -> tuple[list[int], tuple[int, ...]]:
    """The hidden part of a :func:`determinize` deal: every seat offset's kept card (ours
    is the card kept, :func:`kept_and_drawn`; 0 for seats out of the round) and the round's 16-card deck tuple.

    Raises ``ValueError`` when the view is not of the seat to act.
    """
    _require_player_to_act(view)
    n = view.num_players
    pool = [v for v in CARD_VALUES for _ in range(view.unseen[v])]
    hands = [0] * n
    hidden = [k for k in range(1, n) if view.in_round(k) and not view.known_cards[k]]
    for k in range(1, n):
        if view.in_round(k) and view.known_cards[k]:
            hands[k] = view.known_cards[k]
    for attempt in range(_SAMPLING_TRIES + 1):
        rng.shuffle(pool)
        rest = pool[:]
        ok = True
        for k in hidden:
            # The hand is one of the cards left, weighted by how likely the player's
            # last play was with it (a failed Guard's value is impossible).
            banned = view.ruled_out[k] if attempt < _SAMPLING_TRIES else frozenset()
            weight_of = likelihoods.get(k) if likelihoods else None
            weights = [0.0 if v in banned else (weight_of.get(v, 0.0) if weight_of else 1.0) for v in rest]
            total = sum(weights)
            if total <= 0.0 and attempt == _SAMPLING_TRIES:
                # No card left makes their last play likely (a model_noise of 0 and a play the
                # model never makes): count cards only, as the posterior does, rather than call
                # a consistent view inconsistent.
                weights, total = [1.0] * len(rest), float(len(rest))
            if total <= 0.0:
                ok = False
                break
            pick, i = rng.random() * total, 0
            while pick >= weights[i] and i < len(rest) - 1:
                pick -= weights[i]
                i += 1
            hands[k] = rest.pop(i)
        if ok:
            break
    if len(rest) != view.deck_size + 1:
        raise ValueError(
            f"inconsistent view: {len(rest)} unseen cards left for the set-aside card and a deck of {view.deck_size}"
        )
    hands[0] = kept_and_drawn(view)[0]
    set_aside, draw_pile = rest[0], rest[1:]

    # The deck tuple: set-aside card, then cards already out of the pile (face-up cards
    # first, as the engine deals them), then the draw pile; only index 0 and the pile matter.
    gone = list(FULL_DECK)
    for card in [set_aside, *draw_pile]:
        gone.remove(card)
    for card in view.face_up:
        gone.remove(card)
    deck = (set_aside, *view.face_up, *gone, *draw_pile)
    assert len(deck) == DECK_SIZE
    return hands, deck


def kept_and_drawn(view: ObservationView) -> tuple[int, int]:
    """The card the player to act kept and the one it just drew (the view tells them apart).

    A view that does not say which card was drawn (``drawn`` 0: one rebuilt for another seat's
    past play by :func:`~loveletter_env.agents.opponent_model.decision_view`) takes the higher
    card as the one drawn: either may have been, and a deal needs one on top of the deck."""
    if view.drawn == 0:
        low, high = sorted(view.hand)
        return low, high
    kept = list(view.hand)
    kept.remove(view.drawn)
    return kept[0], view.drawn


def _require_player_to_act(view: ObservationView) -> None:
    if view.to_act != 0 or len(view.hand) != 2:
        raise ValueError("determinize needs the observation of the player to act (two cards in hand)")


def _in_play_of(view: ObservationView) -> tuple[int, ...] | None:
    """The cards in play of the ladder rung ``view`` comes from (whose face-up cards are all the
    others), or ``None`` when it shows the printed rules' face-up cards."""
    if not view.face_up or (view.num_players == 2 and len(view.face_up) == FACE_UP_CARDS_2P):
        return None
    in_play = list(FULL_DECK)
    for card in view.face_up:
        in_play.remove(card)
    return tuple(in_play)


def deal_state(view: ObservationView, hands: Sequence[int], deck: Sequence[int], old_card: int = 0) -> GameState:
    """The :func:`determinize` game state of ``view`` with the hidden cards of :func:`sample_deal`."""
    n = view.num_players
    state = GameState(
        n,
        view.rules("determinized", _in_play_of(view)),
    )
    state.tokens = list(view.tokens)
    state.round = 1
    state.deck = tuple(deck)
    state.next_card = DECK_SIZE - view.deck_size
    state.hands = list(hands)
    state.drawn = kept_and_drawn(view)[1]
    state.current = 0
    state.out = list(view.out)
    state.protected = list(view.protected)
    state.discards = [list(d) for d in view.discards]
    for k in range(1, n):
        state.known[0][k] = view.known_cards[k]
        if view.seen_by[k]:
            state.known[k][0] = old_card or hands[0]
            state.seen[k][0] = True
        state.ruled_out[k] = sum(1 << v for v in view.ruled_out[k])
    # Seat 0's own cards and the moves as it knows them: its observation of this state is
    # the one the view came from, move record included.
    state.dealt = (view.dealt,) + (0,) * (n - 1)
    state.history = [event_of_move(move) for move in view.moves]
    state.turn = len(view.moves)
    state.round_over = False
    state.legal = None  # the engine caches legal actions; fields were set by hand
    return state


def deal_constraints(
    view: ObservationView, hidden: Sequence[int], likelihoods: Mapping[int, Mapping[int, float]] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the compiled deal loop (:func:`~.compiled_belief.search_deals`) knows of the hidden
    cards, as :func:`sample_deal` reads it from ``view``: the pool of unseen cards (by value), each
    ``hidden`` seat's ruled-out values (a bit per value), whether its hand is weighted by
    ``likelihoods``, and those weights (seat x value)."""
    pool = np.array([v for v in CARD_VALUES for _ in range(view.unseen[v])], dtype=np.int64)
    banned = np.zeros(layout.MAX_SEATS, dtype=np.int64)
    weighted = np.zeros(layout.MAX_SEATS, dtype=np.bool_)
    table = np.zeros((layout.MAX_SEATS, 9))
    for k in hidden:
        banned[k] = sum(1 << (v - 1) for v in view.ruled_out[k])
        weight_of = likelihoods.get(k) if likelihoods else None
        if weight_of:
            weighted[k] = True
            for v, weight in weight_of.items():
                table[k, v] = weight
    return pool, banned, weighted, table


def seat_view(state: GameState, seat: int) -> ObservationView:
    """What ``seat`` sees of ``state``, as :func:`decode_observation` would return it
    from :func:`encode_observation`, built directly (the search needs it every move,
    and the round trip through the vector costs ten times as much; a test checks the
    two agree)."""
    n = state.num_players
    order = [(seat + k) % n for k in range(n)]
    hand = tuple(sorted(state.hand_of(seat)))
    face_up = tuple(sorted(state.face_up))
    unseen = dict(CARD_COUNTS)
    for card in (*hand, *face_up):
        unseen[card] -= 1
    for pile in state.discards:
        for card in pile:
            unseen[card] -= 1
    known_row = state.known[seat]
    known = (0,) + tuple(known_row[p] for p in order[1:])
    for card in known[1:]:
        if card:
            unseen[card] -= 1
    return ObservationView(
        num_players=n,
        hand=hand,
        discards=tuple(tuple(state.discards[p]) for p in order),
        face_up=face_up,
        known_cards=known,
        ruled_out=(frozenset(),) + tuple(_RULED_OUT_SETS[state.ruled_out[p]] for p in order[1:]),
        seen_by=(False,) + tuple(state.seen[p][seat] for p in order[1:]),
        out=tuple(state.out[p] for p in order),
        protected=tuple(state.protected[p] for p in order),
        tokens=tuple(state.tokens[p] for p in order),
        to_act=None if state.round_over else (state.current - seat) % n,
        deck_size=state.deck_remaining,
        tokens_to_win=state.tokens_to_win,
        **view_rule_fields(state.rules),
        unseen=unseen,
        dealt=state.dealt[seat],
        drawn=state.drawn if seat == state.current else 0,
        moves=tuple(move_view(event, seat, n) for event in state.history),
    )


#: ruled_out bit mask -> the frozenset of values it names.
_RULED_OUT_SETS = tuple(frozenset(v for v in CARD_VALUES if mask >> v & 1) for mask in range(1 << 9))


def model_action(state: GameState, legal: Sequence[int], rng: random.Random) -> int:
    """How the search expects a player to move outside our own tree decisions: the
    card-counting bot, on that player's own view of the determinized state."""
    if len(legal) == 1:
        return legal[0]
    return belief_action(seat_view(state, state.current), legal, rng)


class _Node:
    """A public action sequence: children by action, bandit statistics by (actor's hand, action)."""

    __slots__ = ("children", "stats", "candidates")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        # (our hand key, legal actions) -> the actions worth searching (the belief bot's best few)
        self.candidates: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        # (hand key, action) -> [visits, total reward of the actor, availability]
        self.stats: dict[tuple[int, int], list[float]] = {}


#: The most playouts (or positions) a search spends on one decision: some ten minutes of a
#: core, inside compiled code that a Ctrl-C does not stop, and far below the 64-bit counts
#: that compiled code takes (a larger one wrapped round to a search of nothing).
MAX_SEARCH_ITERATIONS = 10_000_000


def check_search_settings(iterations: Any, exploration: Any, model_noise: Any) -> tuple[int, float, float]:
    """The settings the searches over sampled deals share (:class:`ISMCTSAgent` and the search
    best response), checked: playouts per decision (1..:data:`MAX_SEARCH_ITERATIONS`), the UCB1
    constant (at least 0) and the noise of the opponent model (0..1); a ``ValueError`` names a
    bad one."""
    return (
        check_int("iterations", iterations, low=1, high=MAX_SEARCH_ITERATIONS),
        check_number("exploration", exploration, low=0),
        check_number("model_noise", model_noise, 0, 1),
    )


class ISMCTSAgent(KeptCardSearchAgent):
    """Information-set MCTS over sampled deals.

    Args:
        seed: seed of the agent's generator (deals, playouts, tie breaks).
        iterations: playouts per decision, the strength/time budget (shared by the root
            candidates: each deal is played once per candidate).
        exploration: the UCB1 constant of our decisions below the root (``tree_depth > 1``).
        width: at our own decisions, search only the ``width`` actions the card-counting
            bot rates best (a Guard alone has up to 21 ways to be played; most are
            hopeless and would each cost playouts). 0 searches every legal action.
        tree_depth: how many of our own decisions per playout the tree searches; the
            later ones follow the model. 1 (the default, and the strongest we measured
            at 300 iterations) searches the root only.
        model_noise: how far opponents are assumed to stray from the card-counting bot
            when their last play is read for the card they kept (0: they play exactly
            like it; 1: read nothing from plays, count cards only).
    """

    name = "ismcts"
    #: Play ``tree_depth=1`` searches on the compiled core (:mod:`.compiled_belief`); False runs
    #: the Python reference loop, which makes the same moves more slowly.
    use_core: bool = True

    def __init__(
        self,
        seed: int | None = None,
        iterations: int = 300,
        exploration: float = 0.7,
        width: int = 4,
        tree_depth: int = 1,
        model_noise: float = 0.1,
    ):
        super().__init__(seed)
        self.iterations, self.exploration, self.model_noise = check_search_settings(
            iterations, exploration, model_noise
        )
        self.width = check_int("width", width, low=0)
        self.tree_depth = check_int("tree_depth", tree_depth, low=1)

    def __repr__(self) -> str:
        return (
            f"ISMCTSAgent(seed={self._seed!r}, iterations={self.iterations}, "
            f"exploration={self.exploration}, width={self.width}, tree_depth={self.tree_depth}, "
            f"model_noise={self.model_noise})"
        )

    def choose_by_search(self, observation: Mapping[str, Any], view: ObservationView, legal: list[int]) -> int:
        check_turn(view, legal)  # a mask of another position fails deep in the scoring, or is searched
        return self.search(view, legal)

    def search(self, view: ObservationView, legal: list[int]) -> int:
        """Run the search from ``view`` and return the root action of highest mean reward.

        Every root candidate is tried on the *same* determinizations and playout seeds
        (common random numbers): the hidden cards are what makes one playout differ most
        from another, so comparing candidates on the same deals removes most of the
        noise. Ties go to the action the card-counting bot prefers.
        """
        rng = self.rng
        old_card = self.memory.old_card(view)
        held = self.memory.last_kept(view)
        likelihoods = {k: play_likelihoods(view, k, held, self.model_noise) for k in range(1, view.num_players)}
        beliefs = {k: posterior(view, k, lk) for k, lk in likelihoods.items() if lk}
        candidates = self._ranked(action_scores(view, legal, old_card, beliefs), legal)
        if len(candidates) == 1:
            return candidates[0]
        if self.tree_depth == 1 and self.use_core:
            return self._search_on_core(view, old_card, likelihoods, candidates)
        root = _Node()
        totals = dict.fromkeys(candidates, 0.0)
        for _ in range(max(1, self.iterations // len(candidates))):
            deal = determinize(view, rng, old_card, likelihoods)
            playout_seed = rng.getrandbits(64)
            for action in candidates:
                totals[action] += self._iterate(root, deal.clone(), random.Random(playout_seed), action)
        return max(candidates, key=totals.__getitem__)  # max() keeps the first of equals

    def _search_on_core(
        self,
        view: ObservationView,
        old_card: int,
        likelihoods: Mapping[int, Mapping[int, float]],
        candidates: list[int],
    ) -> int:
        """:meth:`search` at ``tree_depth=1`` with the playouts compiled: the same deals, seeds
        and moves as the Python loop below, played on core records by the compiled belief bot."""
        _require_player_to_act(view)
        rng = self.rng
        n = view.num_players
        hidden = [k for k in range(1, n) if view.in_round(k) and not view.known_cards[k]]
        # Everything but the hidden cards is the same in every deal: one record, rewritten per deal.
        hands = [kept_and_drawn(view)[0]] + [view.known_cards[k] if view.in_round(k) else 0 for k in range(1, n)]
        record = record_from_state(deal_state(view, hands, FULL_DECK, old_card))
        pool, banned, weighted, table = deal_constraints(view, hidden, likelihoods)
        totals = np.zeros(len(candidates))
        version, words, gauss = rng.getstate()
        mt = np.array(words, dtype=np.uint32)
        left = search_deals(
            record,
            max(1, self.iterations // len(candidates)),
            pool,
            np.array(hidden, dtype=np.int64),
            banned,
            weighted,
            table,
            np.array(view.face_up, dtype=np.int64),
            mt,
            np.array(candidates, dtype=np.int64),
            model_weights(),
            totals,
        )
        rng.setstate((version, tuple(mt.tolist()), gauss))
        if left >= 0:
            raise ValueError(
                f"inconsistent view: {left} unseen cards left for the set-aside card and a deck of {view.deck_size}"
            )
        return candidates[int(np.argmax(totals))]  # argmax keeps the first of equals, as max() does

    def _iterate(self, root: _Node, state: GameState, rng: random.Random, first: int) -> float:
        """One iteration: play ``first`` at the root, descend the tree on this
        determinization, expand one of our own untried actions, play the rest out with
        the model, back the result up; return our reward."""
        hand = _hand_key(state)
        root.stats.setdefault((hand, first), [0.0, 0.0, 0.0])
        path: list[tuple[_Node, tuple[int, int]]] = [(root, (hand, first))]  # our decisions
        engine.step(state, first)
        node: _Node | None = root.children.setdefault(first, _Node()) if self.tree_depth > 1 else None
        depth = 1
        while not state.round_over:
            legal = tuple(engine.legal_actions(state))
            if node is None:  # past the tree
                action = model_action(state, legal, rng)
            elif state.current != 0 or len(legal) == 1:
                # Opponents act on their own information, as the model does; forced moves need no statistics.
                action = model_action(state, legal, rng)
                node = node.children.setdefault(action, _Node())
            else:
                hand = _hand_key(state)
                stats = node.stats
                # Outcomes differ between determinizations (a Guard hits in one, misses in
                # another), so the same node may offer different legal actions.
                options = node.candidates.get((hand, legal))
                if options is None:
                    options = node.candidates[(hand, legal)] = self._candidates(state, legal)
                untried = []
                for a in options:
                    entry = stats.get((hand, a))
                    if entry is None:
                        untried.append(a)
                    else:
                        entry[2] += 1
                depth += 1
                if depth > self.tree_depth:
                    action = model_action(state, legal, rng)
                    node = None
                elif untried:
                    action = rng.choice(untried)
                    stats[(hand, action)] = [0.0, 0.0, 1.0]
                    path.append((node, (hand, action)))
                    node = None
                else:
                    action = self._select(stats, hand, options)
                    path.append((node, (hand, action)))
                    node = node.children.setdefault(action, _Node())
            engine.step(state, action)
        winners = state.round_winners
        reward = 1.0 / len(winners) if 0 in winners else 0.0
        for node, key in path:
            entry = node.stats[key]
            entry[0] += 1
            entry[1] += reward
        return reward

    def _candidates(self, state: GameState, legal: Sequence[int]) -> list[int]:
        return self._ranked(action_scores(seat_view(state, 0), list(legal)), legal)

    def _ranked(self, scores: dict[int, float], legal: Sequence[int]) -> list[int]:
        """The ``width`` best of ``legal`` by ``scores``, best first (all with width 0)."""
        ranked = sorted(legal, key=lambda a: -scores[a])
        return ranked[: self.width] if self.width else ranked

    def _select(self, stats: dict, hand: int, legal: list[int]) -> int:
        best, best_value = legal[0], -math.inf
        c = self.exploration
        for a in legal:
            n, total, avail = stats[(hand, a)]
            value = total / n + c * math.sqrt(math.log(avail) / n)
            if value > best_value:
                best, best_value = a, value
        return best


def _hand_key(state: GameState) -> int:
    """The actor's two cards, order-free, as one small integer."""
    a, b = state.hands[state.current], state.drawn
    return a * 9 + b if a <= b else b * 9 + a
