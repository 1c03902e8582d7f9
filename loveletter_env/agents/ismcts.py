"""Information-set Monte Carlo tree search (ISMCTS).

Each iteration samples one *determinization*: a full game state consistent with what
this seat has seen (opponents' unknown hands, the set-aside card and the deck order
drawn from the unseen cards, respecting known cards and values ruled out by failed
Guards). The iteration then walks one shared tree with that state and the engine.

Tree nodes are reached by the public sequence of actions, which every player sees, so
one tree serves every seat. At each node the player to act chooses by UCB1 over the
actions legal in this determinization, with statistics kept per *hand of that player*:
the node plus the cards the actor holds is the actor's information set (for the root
player this is exact; for an opponent it is the part of their information that
matters most), so opponents in the tree act on their own cards, not on ours. Rewards
are the round outcome per seat. The action visited most at the root is played.

The engine runs the game: :class:`~loveletter_env.engine.GameState` is built from the
decoded view (seat offset ``k`` becomes seat ``k``, so the searching player is seat 0)
and :func:`~loveletter_env.engine.step` plays it out; rollouts past the tree use a
cheap heuristic that, like the bots, only uses what the acting seat knows.
"""

from __future__ import annotations

import math
import random
from typing import Any, Mapping

from .. import engine
from ..actions import ACTION_CARD, BARON_BASE, PRINCE_BASE, PRINCESS_ACTION, guard_action
from ..cards import BARON, CARD_VALUES, DECK_SIZE, FULL_DECK, GUARD, PRINCESS
from ..engine import GameState
from ..observation import ObservationView, decode_observation
from ..rules import Rules
from .base import SeededAgent, legal_actions_of, other_card
from .memory import KeptCardMemory

#: Rejection-sampling tries before ruled-out values are ignored (only an inconsistent view needs it).
_SAMPLING_TRIES = 64


def determinize(view: ObservationView, rng: random.Random, old_card: int = 0) -> GameState:
    """A full game state consistent with ``view``, for the seat to act (seat 0 in the result).

    Opponents' unknown hands are drawn from the unseen cards, avoiding the values a
    failed Guard ruled out for them; the remaining unseen cards are shuffled into the
    set-aside card and the draw pile. ``old_card`` (the card the others may know we
    hold, 0 if unknown) only fills the knowledge table.

    Raises ``ValueError`` when the view is not of the seat to act.
    """
    if view.to_act != 0 or len(view.hand) != 2:
        raise ValueError("determinize needs the observation of the player to act (two cards in hand)")
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
            banned = view.ruled_out[k] if attempt < _SAMPLING_TRIES else frozenset()
            i = next((i for i, v in enumerate(rest) if v not in banned), -1)
            if i < 0:
                ok = False
                break
            hands[k] = rest.pop(i)
        if ok:
            break
    if len(rest) != view.deck_size + 1:
        raise ValueError(
            f"inconsistent view: {len(rest)} unseen cards left for the set-aside card and a deck of {view.deck_size}"
        )
    hands[0], drawn = view.hand
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

    state = GameState(
        n,
        Rules(
            name="determinized",
            tokens_to_win=(view.tokens_to_win,) * 3,
            discard_sum_tiebreak=view.discard_sum_tiebreak,
            king_ignores_handmaid=view.king_ignores_handmaid,
        ),
    )
    state.tokens = list(view.tokens)
    state.round = 1
    state.deck = deck
    state.next_card = DECK_SIZE - view.deck_size
    state.hands = hands
    state.drawn = drawn
    state.current = 0
    state.out = list(view.out)
    state.protected = list(view.protected)
    state.discards = [list(d) for d in view.discards]
    for k in range(1, n):
        state.known[0][k] = view.known_cards[k]
        if view.seen_by[k]:
            state.known[k][0] = old_card or hands[0]
        state.ruled_out[k] = sum(1 << v for v in view.ruled_out[k])
    state.turn = sum(len(d) for d in view.discards)
    state.round_over = False
    return state


def rollout_action(state: GameState, legal: list[int], rng: random.Random) -> int:
    """A quick, sensible move for the player to act, from what that player knows:
    hit a known card, never throw the Princess away, else a random legal move."""
    p, n = state.current, state.num_players
    hand = (state.hands[p], state.drawn)
    known = state.known[p]
    legal_set = set(legal)
    for t in range(1, n):
        card = known[(p + t) % n]
        if not card:
            continue
        if GUARD in hand and card != GUARD and guard_action(t, card) in legal_set:
            return guard_action(t, card)
        if card == PRINCESS and PRINCE_BASE + t in legal_set:
            return PRINCE_BASE + t
        kept = other_card(hand, BARON)
        if BARON in hand and card < kept and BARON_BASE + t in legal_set:
            return BARON_BASE + t
    # Prince on yourself discards the other card: never when it is the Princess.
    keep_princess = PRINCESS in hand
    options = [a for a in legal if a != PRINCESS_ACTION and not (keep_princess and a == PRINCE_BASE)]
    return rng.choice(options or legal)


class _Node:
    """A public action sequence: children by action, bandit statistics by (actor's hand, action)."""

    __slots__ = ("children", "stats")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        # (hand key, action) -> [visits, total reward of the actor, availability]
        self.stats: dict[tuple[int, int], list[float]] = {}


class ISMCTSAgent(SeededAgent):
    """Information-set MCTS with one determinization per iteration.

    Args:
        seed: seed of the agent's generator (determinizations, tie breaks, rollouts).
        iterations: search iterations per decision (the strength/time budget).
        exploration: the UCB1 exploration constant.
    """

    name = "ismcts"

    def __init__(self, seed: int | None = None, iterations: int = 300, exploration: float = 0.7):
        super().__init__(seed)
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
        if not exploration >= 0:
            raise ValueError(f"exploration must be >= 0, got {exploration!r}")
        self.iterations = iterations
        self.exploration = float(exploration)
        self.memory = KeptCardMemory()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.memory.clear()

    def __repr__(self) -> str:
        return f"ISMCTSAgent(seed={self._seed!r}, iterations={self.iterations}, exploration={self.exploration})"

    def act(self, observation: Mapping[str, Any]) -> int:
        legal = legal_actions_of(observation)
        view = decode_observation(observation["observation"])
        action = legal[0] if len(legal) == 1 else self.search(view, legal)
        self.memory.remember(view, other_card(view.hand, ACTION_CARD[action]))
        return action

    def search(self, view: ObservationView, legal: list[int]) -> int:
        """Run the search from ``view`` and return the most visited legal root action."""
        rng = self.rng
        root = _Node()
        old_card = self.memory.old_card(view)
        for _ in range(self.iterations):
            self._iterate(root, determinize(view, rng, old_card), rng)
        visits = {a: 0.0 for a in legal}
        for (_, a), (n, _, _) in root.stats.items():
            if a in visits:
                visits[a] += n
        top = max(visits.values())
        return rng.choice([a for a, n in visits.items() if n == top])

    def _iterate(self, root: _Node, state: GameState, rng: random.Random) -> None:
        path: list[tuple[_Node, tuple[int, int], int]] = []  # node, stats key, actor
        node = root
        expanded = False
        while not state.round_over:
            legal = engine.legal_actions(state)
            actor = state.current
            if expanded:
                action = rollout_action(state, legal, rng)
            else:
                hand = _hand_key(state)
                stats = node.stats
                untried = []
                for a in legal:
                    entry = stats.get((hand, a))
                    if entry is None:
                        untried.append(a)
                    else:
                        entry[2] += 1
                if untried:
                    action = rng.choice(untried)
                    stats[(hand, action)] = [0.0, 0.0, 1.0]
                    expanded = True
                else:
                    action = self._select(stats, hand, legal)
                path.append((node, (hand, action), actor))
                node = node.children.setdefault(action, _Node()) if not expanded else node
            engine.step(state, action)
        winners = state.round_winners
        share = 1.0 / len(winners)
        for node, key, actor in path:
            entry = node.stats[key]
            entry[0] += 1
            if actor in winners:
                entry[1] += share

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
