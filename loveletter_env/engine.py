"""The Love Letter rules as a state machine.

The whole game lives in one :class:`GameState`; :func:`step` applies one action to it,
:func:`legal_actions` lists what the player to act may do, and :func:`start_round` deals
a new round from a deck the caller shuffled. There is no hidden state and no random
number generator in here: shuffling belongs to whoever drives the engine, so the same
decks and actions always give the same game. Nothing here imports gymnasium,
pettingzoo or torch.

:func:`step` changes the state in place, which keeps the hot path cheap; search code
takes a :meth:`GameState.clone` first.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

from . import knowledge
from .actions import (
    ACTION_CARD,
    ACTION_GUESS,
    ACTION_OFFSET,
    BARON_BASE,
    BARON_NO_TARGET,
    COUNTESS_ACTION,
    GUARD_NO_TARGET,
    HANDMAID_ACTION,
    KING_BASE,
    KING_NO_TARGET,
    NO_TARGET,
    PRIEST_BASE,
    PRIEST_NO_TARGET,
    PRINCE_BASE,
    PRINCESS_ACTION,
    action_index,
    describe_action,
)
from .cards import (
    BARON,
    COUNTESS,
    DECK_SIZE,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)
from .cards import validate_deck as validate_deck  # re-exported: callers check decks through the engine
from .rules import CLASSIC, Rules, check_rules_for_table, resolve_rules
from .rules import FACE_UP_CARDS_2P as FACE_UP_CARDS_2P  # re-exported: the kernels read it here
from .validation import MAX_PLAYERS, MIN_PLAYERS, check_num_players, check_seat, shown


class IllegalActionError(ValueError):
    """An action that is not legal for the player to act. Nothing was changed."""

    def __init__(self, action: int, legal: Sequence[int], player: int, num_players: int):
        self.action = action
        self.legal = tuple(legal)
        self.player = player
        index = action_index(action)
        try:
            if index is None:
                raise ValueError
            what = f"action {index} ({describe_action(index, player, num_players)})"
        except ValueError:  # shown: a 100,000-character string or a 5,000-digit number is not echoed whole
            what = f"action {shown(action)} (actions are integers 0..40)"
        legal_words = ", ".join(f"{a} ({describe_action(a, player, num_players)})" for a in self.legal)
        self.num_players = num_players
        super().__init__(f"{what} is not legal for player_{player}; legal actions: {legal_words}")

    def __reduce__(self):
        # Rebuild from the constructor's arguments, so the error crosses process boundaries.
        return (type(self), (self.action, self.legal, self.player, self.num_players))


class TurnEvent(NamedTuple):
    """What happened in one turn, hidden parts included (narration filters by viewer).

    ``target`` is a seat (not an offset), -1 when the card had no target.
    ``actor_card``/``target_card`` carry the cards the effect involved: the Baron's two
    compared cards, the King's traded cards (given, received), the card a Priest saw,
    the card a Prince made the target discard, and for a Guard the target's card when
    the guess was right (0 otherwise).

    ``drawn`` is the card the player drew to begin the turn, ``discarded`` the card the
    move forced face up out of a hand besides the one played (a Guard's hit, a Baron's
    loser, a Prince's target, the other card of whoever played the Princess; 0 if none),
    and ``replacement`` the card a Prince's target drew in its place (0 if none).
    """

    round: int
    player: int
    card: int
    target: int = -1
    guess: int = 0
    actor_card: int = 0
    target_card: int = 0
    eliminated: tuple[int, ...] = ()
    drawn: int = 0
    discarded: int = 0
    replacement: int = 0


class GameState:
    """Everything about a game in progress. Seats are 0..num_players-1.

    Round fields: ``deck`` is this round's 16 cards (index 0 = top, the set-aside card;
    then the face-up cards: 3 in 2-player rounds, more on a ladder rung, see
    :meth:`~loveletter_env.rules.Rules.face_up_count`), ``next_card`` the index of
    the next card to draw. ``hands[p]`` is the card ``p`` holds (0 = none, when out);
    the player to act also holds ``drawn``; ``dealt[p]`` is the card ``p`` was dealt this
    round. ``known``, ``seen`` and ``ruled_out`` are the
    knowledge tables described in :mod:`loveletter_env.knowledge`.
    """

    __slots__ = (
        "num_players",
        "rules",
        "tokens",
        "round",
        "deck",
        "next_card",
        "set_aside_drawn",
        "hands",
        "dealt",
        "drawn",
        "current",
        "out",
        "protected",
        "discards",
        "known",
        "ruled_out",
        "turn",
        "round_over",
        "round_winners",
        "game_over",
        "game_winners",
        "history",
        "legal",
        "seen",
    )
    # The knowledge tables (filled by knowledge.reset, so declared here for type checkers).
    known: list[list[int]]
    seen: list[list[bool]]
    ruled_out: list[int]

    def __init__(self, num_players: int, rules: Rules = CLASSIC):
        num_players = check_num_players(num_players)
        self.num_players = num_players
        self.rules = check_rules_for_table(rules, num_players)
        self.tokens = [0] * num_players
        self.round = 0
        self.deck: tuple[int, ...] = ()
        self.next_card = 0
        self.set_aside_drawn = False
        self.hands = [0] * num_players
        self.dealt: tuple[int, ...] = (0,) * num_players
        self.drawn = 0
        self.current = 0
        self.out = [False] * num_players
        self.protected = [False] * num_players
        self.discards: list[list[int]] = [[] for _ in range(num_players)]
        knowledge.reset(self, num_players)
        self.turn = 0
        self.round_over = True
        self.round_winners: tuple[int, ...] = ()
        self.game_over = False
        self.game_winners: tuple[int, ...] = ()
        self.history: list[TurnEvent] = []
        self.legal: tuple[int, ...] | None = None  # cache of legal_actions(); None = stale

    def clone(self) -> GameState:
        """A deep copy that shares nothing mutable with this state."""
        c = GameState.__new__(GameState)
        c.num_players = self.num_players
        c.rules = self.rules
        c.tokens = self.tokens[:]
        c.round = self.round
        c.deck = self.deck
        c.next_card = self.next_card
        c.set_aside_drawn = self.set_aside_drawn
        c.hands = self.hands[:]
        c.dealt = self.dealt
        c.drawn = self.drawn
        c.current = self.current
        c.out = self.out[:]
        c.protected = self.protected[:]
        c.discards = [d[:] for d in self.discards]
        c.known = [k[:] for k in self.known]
        c.seen = [k[:] for k in self.seen]
        c.ruled_out = self.ruled_out[:]
        c.turn = self.turn
        c.round_over = self.round_over
        c.round_winners = self.round_winners
        c.game_over = self.game_over
        c.game_winners = self.game_winners
        c.history = self.history[:]
        c.legal = self.legal
        return c

    # Read-only conveniences -------------------------------------------------------
    @property
    def set_aside(self) -> int:
        """The face-down set-aside card (hidden from every player)."""
        return self.deck[0]

    @property
    def face_up(self) -> tuple[int, ...]:
        """The face-up cards: 3 at 2 players, more on a ladder rung, none at 3 or 4 players."""
        return self.deck[1 : 1 + self.rules.face_up_count(self.num_players)]

    @property
    def deck_remaining(self) -> int:
        """Cards left in the draw pile."""
        return DECK_SIZE - self.next_card

    def hand_of(self, player: int) -> tuple[int, ...]:
        """The cards ``player`` holds: two for the player to act, else one (none if out)."""
        if player == self.current and self.drawn:
            return (self.hands[player], self.drawn)
        return (self.hands[player],) if self.hands[player] else ()

    @property
    def tokens_to_win(self) -> int:
        return self.rules.tokens_needed(self.num_players)

    def __repr__(self) -> str:
        return (
            f"GameState(players={self.num_players}, rules={self.rules.name!r}, round={self.round}, "
            f"turn={self.turn}, current={self.current}, hands={self.hands}, drawn={self.drawn}, "
            f"deck_remaining={self.deck_remaining}, out={self.out}, protected={self.protected}, "
            f"discards={self.discards}, tokens={self.tokens})"
        )


# Round and game set-up ----------------------------------------------------------------


def new_game(num_players: int, deck: Sequence[int], first_player: int = 0, rules: str | Rules = CLASSIC) -> GameState:
    """A new game, with its first round dealt from ``deck`` (top card first)."""
    state = GameState(num_players, resolve_rules(rules))
    start_round(state, deck, first_player)
    return state


def start_round(state: GameState, deck: Sequence[int], first_player: int | None = None) -> None:
    """Deal a new round from ``deck`` (a permutation of the 16 cards, top first; on a
    ladder rung, positions 1 to 16 - k hold the face-up cards, see
    :meth:`~loveletter_env.rules.Rules.check_deck`).

    ``first_player`` defaults to the previous round's winner (the lowest seat among
    several). Tokens carry over; everything else about the round starts afresh. Raises
    ``ValueError`` while a round is still being played (it ends with a winner and a token,
    not by being dealt over) and once the game is over.
    """
    if state.game_over:
        raise ValueError("the game is over; start a new game instead of a new round")
    if not state.round_over:
        raise ValueError(
            f"round {state.round} is still being played (turn {state.turn}, player_{state.current} to act): "
            "finish it before dealing the next one"
        )
    n = state.num_players
    if first_player is None:
        if not state.round_winners:
            raise ValueError("first_player is required for the first round")
        first_player = min(state.round_winners)
    first_player = check_seat("first_player", first_player, n)
    state.deck = state.rules.check_deck(deck)
    state.round += 1
    state.turn = 0
    state.set_aside_drawn = False
    state.out = [False] * n
    state.protected = [False] * n
    state.discards = [[] for _ in range(n)]
    knowledge.reset(state, n)
    state.round_over = False
    state.round_winners = ()
    state.history = []
    # Set-aside card, then the face-up cards, then one card each in turn order.
    dealt = 1 + state.rules.face_up_count(n)
    hands = [0] * n
    for i in range(n):
        hands[(first_player + i) % n] = state.deck[dealt + i]
    state.hands = hands
    state.dealt = tuple(hands)
    state.next_card = dealt + n
    _begin_turn(state, first_player)


def _begin_turn(state: GameState, player: int) -> None:
    state.legal = None
    state.current = player
    state.protected[player] = False  # Handmaid protection lasts until the owner's next turn
    state.drawn = state.deck[state.next_card]
    state.next_card += 1
    knowledge.on_draw(state, player)


# Legal actions ----------------------------------------------------------------------


#: _OTHER_SEATS[n][player] lists (offset bit, seat) for every other seat at a table of n.
_OTHER_SEATS = {
    n: [tuple((1 << t, (p + t) % n) for t in range(1, n)) for p in range(n)]
    for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)
}


def _choosable_mask(state: GameState, player: int, ignore_protection: bool = False) -> int:
    """Bit ``t`` set for each seat offset t (1..n-1) whose player a card may choose."""
    out, protected = state.out, state.protected
    mask = 0
    for bit, seat in _OTHER_SEATS[state.num_players][player]:
        if not out[seat] and (ignore_protection or not protected[seat]):
            mask |= bit
    return mask


def _card_actions(card: int, others: tuple[int, ...], king_others: tuple[int, ...]) -> list[int]:
    """The actions that play ``card`` when the other seats at offsets ``others`` can be
    chosen (``king_others`` for the King, which may ignore the Handmaid)."""
    if card == GUARD:
        return [(t - 1) * 7 + g for t in others for g in range(7)] if others else [GUARD_NO_TARGET]
    if card == PRIEST:
        return [PRIEST_BASE + t for t in others] if others else [PRIEST_NO_TARGET]
    if card == BARON:
        return [BARON_BASE + t for t in others] if others else [BARON_NO_TARGET]
    if card == HANDMAID:
        return [HANDMAID_ACTION]
    if card == PRINCE:
        # The player who plays the Prince may always choose themselves.
        return [PRINCE_BASE] + [PRINCE_BASE + t for t in others]
    if card == KING:
        return [KING_BASE + t for t in king_others] if king_others else [KING_NO_TARGET]
    if card == COUNTESS:
        return [COUNTESS_ACTION]
    return [PRINCESS_ACTION]  # playing the Princess is legal, and loses the round


@functools.cache
def legal_actions_holding(a: int, b: int, others_mask: int, king_mask: int) -> tuple[int, ...]:
    """Legal actions holding cards ``a`` and ``b`` when bit ``t`` of ``others_mask``
    (``king_mask`` for the King) is set for each seat offset ``t`` a card may choose.

    Only a few thousand combinations exist, so the answer is memoised: the hot path
    of every game is then two bit masks and a dictionary look-up.
    """
    if COUNTESS in (a, b) and (KING in (a, b) or PRINCE in (a, b)):
        return (COUNTESS_ACTION,)  # the Countess must be played beside a King or a Prince
    others = tuple(t for t in (1, 2, 3) if others_mask >> t & 1)
    king_others = tuple(t for t in (1, 2, 3) if king_mask >> t & 1)
    actions = set(_card_actions(a, others, king_others)) | set(_card_actions(b, others, king_others))
    return tuple(sorted(actions))


def legal_actions(state: GameState) -> tuple[int, ...]:
    """The sorted action indices the player to act may take (empty once the round is over)."""
    if state.legal is None:
        if state.round_over:
            state.legal = ()
        else:
            player = state.current
            others = _choosable_mask(state, player)
            king = _choosable_mask(state, player, True) if state.rules.king_ignores_handmaid else others
            state.legal = legal_actions_holding(state.hands[player], state.drawn, others, king)
    return state.legal


def legal_mask(state: GameState) -> list[int]:
    """``legal_actions`` as a 0/1 list of length 41."""
    mask = [0] * 41
    for a in legal_actions(state):
        mask[a] = 1
    return mask


# Applying an action -----------------------------------------------------------------


def _eliminate(state: GameState, player: int) -> None:
    """``player`` is out: their hand is discarded face up without effect."""
    state.out[player] = True
    state.protected[player] = False
    if state.hands[player]:
        state.discards[player].append(state.hands[player])
        state.hands[player] = 0
    knowledge.on_hand_replaced(state, player)


def _draw_replacement(state: GameState) -> int:
    """The card a Prince's target draws: the top of the deck, or the set-aside card."""
    if state.next_card < DECK_SIZE:
        card = state.deck[state.next_card]
        state.next_card += 1
        return card
    state.set_aside_drawn = True
    return state.deck[0]


def step(state: GameState, action: int) -> TurnEvent:
    """The player to act plays ``action``; the turn resolves and the next one begins.

    Returns the :class:`TurnEvent` (also appended to ``state.history``). Raises
    :class:`IllegalActionError` (a ``ValueError``) for an action that is not legal,
    changing nothing.
    """
    if state.round_over:
        raise ValueError("the round is over; call start_round() to deal the next one")
    legal = state.legal if state.legal is not None else legal_actions(state)
    if type(action) is not int:
        # numpy integers and 0-d integer arrays are welcome; floats and bools are not truncated.
        index = action_index(action)
        if index is None:
            raise IllegalActionError(action, legal, state.current, state.num_players)
        action = index
    if action not in legal:
        raise IllegalActionError(action, legal, state.current, state.num_players)
    n = state.num_players
    player = state.current
    card = ACTION_CARD[action]
    offset = ACTION_OFFSET[action]
    guess = ACTION_GUESS[action]
    hands = state.hands
    drawn = state.drawn

    # Play one card; keep the other.
    if state.drawn != card:
        hands[player] = state.drawn
    state.drawn = 0
    state.discards[player].append(card)
    knowledge.on_card_played(state, player, card)

    target = -1 if offset == NO_TARGET else (player + offset) % n
    actor_card = target_card = discarded = replacement = 0
    eliminated: tuple[int, ...] = ()

    if target >= 0:
        if card == GUARD:
            if hands[target] == guess:
                target_card = discarded = guess
                _eliminate(state, target)
                eliminated = (target,)
            else:
                knowledge.on_guard_missed(state, target, guess)
        elif card == PRIEST:
            target_card = hands[target]
            knowledge.reveal_card(state, player, target, target_card)
        elif card == BARON:
            actor_card, target_card = hands[player], hands[target]
            knowledge.reveal_card(state, player, target, target_card)
            knowledge.reveal_card(state, target, player, actor_card)
            if actor_card < target_card:
                discarded = actor_card
                _eliminate(state, player)
                eliminated = (player,)
            elif target_card < actor_card:
                discarded = target_card
                _eliminate(state, target)
                eliminated = (target,)
        elif card == PRINCE:
            target_card = discarded = hands[target]
            state.discards[target].append(target_card)
            hands[target] = 0
            knowledge.on_hand_replaced(state, target)
            if target_card == PRINCESS:
                _eliminate(state, target)
                eliminated = (target,)
            else:
                hands[target] = replacement = _draw_replacement(state)
        elif card == KING:
            actor_card, target_card = hands[player], hands[target]
            hands[player], hands[target] = target_card, actor_card
            knowledge.on_king_trade(state, player, target, actor_card, target_card)
    elif card == HANDMAID:
        state.protected[player] = True
    elif card == PRINCESS:
        discarded = hands[player]
        _eliminate(state, player)
        eliminated = (player,)

    # tuple.__new__ skips NamedTuple's keyword-handling __new__: this line runs every turn.
    event = tuple.__new__(
        TurnEvent,
        (state.round, player, card, target, guess, actor_card, target_card, eliminated, drawn, discarded, replacement),
    )
    state.history.append(event)
    state.turn += 1
    _end_turn(state)
    return event


def _end_turn(state: GameState) -> None:
    """Check for the end of the round; otherwise the next player in the round begins."""
    n = state.num_players
    out = state.out
    if out.count(False) == 1:
        _finish_round(state, (out.index(False),))
    elif state.next_card >= DECK_SIZE:
        _finish_round(state, showdown_winners(state, [p for p in range(n) if not out[p]]))
    else:
        nxt = (state.current + 1) % n
        while out[nxt]:
            nxt = (nxt + 1) % n
        _begin_turn(state, nxt)


def showdown_winners(state: GameState, alive: Sequence[int]) -> tuple[int, ...]:
    """Who wins when the deck runs out: highest card; then (``classic``) highest sum
    of discards; whoever is still tied shares the round."""
    best = max(state.hands[p] for p in alive)
    tied = [p for p in alive if state.hands[p] == best]
    if len(tied) > 1 and state.rules.discard_sum_tiebreak:
        best_sum = max(sum(state.discards[p]) for p in tied)
        tied = [p for p in tied if sum(state.discards[p]) == best_sum]
    return tuple(tied)


def _finish_round(state: GameState, winners: tuple[int, ...]) -> None:
    state.legal = None
    state.round_over = True
    state.round_winners = winners
    state.drawn = 0
    for p in winners:
        state.tokens[p] += 1
    target = state.tokens_to_win
    game_winners = tuple(p for p in range(state.num_players) if state.tokens[p] >= target)
    if game_winners:
        state.game_over = True
        state.game_winners = game_winners
