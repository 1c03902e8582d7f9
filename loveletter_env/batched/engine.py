"""The rules over N games at once: legal masks, one turn, round set-up.

Each function mirrors one phase of the scalar engine (:mod:`loveletter_env.engine`) and
the knowledge rules of :mod:`loveletter_env.knowledge`. Per-game choices become boolean
masks; a per-game seat becomes a ``gather``/``scatter_`` index, so an update touches one
entry per game instead of a whole per-seat table. No function reads a tensor value back
to the host, so a CUDA step never synchronises.

Functions update the :class:`BatchedState` in place. The fields a caller may hold on
to between steps (``current``, ``round_over``, ``round_winners``, ``tokens``) are
replaced by new tensors instead of written into, so earlier references stay valid.
``rules`` only selects code paths; it is not data.
"""

from __future__ import annotations

import torch

from ..cards import BARON, DECK_SIZE, GUARD, HANDMAID, KING, NUM_CARD_TYPES, PRIEST, PRINCE, PRINCESS
from ..engine import FACE_UP_CARDS_2P
from ..rules import Rules
from .state import BatchedState
from .tables import MAX_SEATS, tables_for

Tensor = torch.Tensor


# Per-game indexing helpers -------------------------------------------------------------


def at_seat(values: Tensor, seats: Tensor) -> Tensor:
    """``values[g, seats[g]]`` for a per-seat tensor ``values`` [N, 4, ...]."""
    index = seats.view(-1, *([1] * (values.dim() - 1))).expand(-1, 1, *values.shape[2:])
    return values.gather(1, index).squeeze(1)


def _put(values: Tensor, index: Tensor, new: Tensor, where: Tensor) -> None:
    """``values[g, index[g]] = new[g]`` in the games ``where`` (in place, ``values`` [N, K])."""
    index = index[:, None]
    old = values.gather(1, index).squeeze(1)
    values.scatter_(1, index, torch.where(where, new, old).to(values.dtype)[:, None])


def _column_index(seats: Tensor) -> Tensor:
    """long [N, 4]: flat positions of ``known[g, observer, seats[g]]`` for observers 0..3."""
    return torch.arange(0, MAX_SEATS * MAX_SEATS, MAX_SEATS, device=seats.device) + seats[:, None]


def _column(known: Tensor, seats: Tensor) -> Tensor:
    """int8 [N, 4]: ``known[g, :, seats[g]]``, what every observer knows of that seat."""
    return known.view(known.shape[0], -1).gather(1, _column_index(seats))


def _put_column(known: Tensor, seats: Tensor, column: Tensor, where: Tensor) -> None:
    """``known[g, :, seats[g]] = column[g]`` in the games ``where`` (in place)."""
    flat, index = known.view(known.shape[0], -1), _column_index(seats)
    flat.scatter_(1, index, torch.where(where[:, None], column, flat.gather(1, index)))


def _relative_seats(state: BatchedState, seats: Tensor) -> Tensor:
    """long [N, 4]: the seat at offset 0..3 from ``seats`` (padding offsets wrap; mask them)."""
    return (seats[:, None] + torch.arange(MAX_SEATS, device=seats.device)) % state.num_players[:, None]


# Legal actions -------------------------------------------------------------------------


def legal_mask(state: BatchedState, rules: Rules) -> Tensor:
    """bool [N, 41]: the actions the player to act may take (all False once a round is over).

    An action is legal when the hand allows its card (with the Countess rule) and its
    target can be chosen: two row lookups, by hand and by the set of choosable players.
    """
    t = tables_for(state.device)
    player = state.current
    hand = at_seat(state.hands, player).long() * 9 + state.drawn.long()

    others = _relative_seats(state, player)[:, 1:]  # seats at offsets 1..3
    exists = torch.arange(1, MAX_SEATS, device=state.device) < state.num_players[:, None]
    in_round = exists & ~state.out.gather(1, others)
    choosable = in_round & ~state.protected.gather(1, others)
    king_choosable = in_round if rules.king_ignores_handmaid else choosable
    code = (torch.cat([choosable, king_choosable], 1) * t.target_code_bits).sum(1)

    mask = t.hand_actions.index_select(0, hand) & t.target_actions.index_select(0, code)
    return mask & ~state.round_over[:, None]


# Knowledge (mirrors loveletter_env.knowledge) ---------------------------------------------


def _forget_hand(state: BatchedState, seats: Tensor, where: Tensor) -> None:
    """``on_hand_replaced``: every fact about the hand of ``seats`` is void (games ``where``)."""
    _put_column(state.known, seats, torch.zeros_like(state.known[:, :, 0]), where)
    _put_column(state.seen, seats, torch.zeros_like(state.seen[:, :, 0]), where)
    _put(state.ruled_out, seats, torch.zeros_like(state.ruled_out[:, 0]), where)


def _learn(state: BatchedState, observer: Tensor, player: Tensor, card: Tensor, where: Tensor) -> None:
    """``learn``: ``observer`` has seen that ``player`` holds ``card`` (games ``where``)."""
    _put(state.known.view(state.num_games, -1), observer * MAX_SEATS + player, card, where)
    _put(state.seen.view(state.num_games, -1), observer * MAX_SEATS + player, where, where)


# Cards leaving hands ----------------------------------------------------------------------


def _discard(state: BatchedState, seats: Tensor, cards: Tensor, where: Tensor) -> None:
    """``seats`` discard ``cards`` face up after their earlier discards (games ``where``)."""
    count = at_seat(state.num_discards, seats).long()
    slot = seats * DECK_SIZE + count.clamp(max=DECK_SIZE - 1)
    _put(state.discards.view(state.num_games, -1), slot, cards, where)
    _put(state.num_discards, seats, count + 1, where)
    copies = state.discarded.view(state.num_games, -1)
    value_slot = seats * NUM_CARD_TYPES + (cards.long() - 1).clamp(min=0)
    _put(copies, value_slot, copies.gather(1, value_slot[:, None]).squeeze(1) + 1, where)


def _eliminate(state: BatchedState, seats: Tensor, where: Tensor) -> None:
    """``seats`` are out (games ``where``): their hand is discarded face up without effect."""
    _put(state.out, seats, torch.ones_like(where), where)
    _put(state.protected, seats, torch.zeros_like(where), where)
    hand = at_seat(state.hands, seats)
    _discard(state, seats, hand, where & (hand != 0))
    _put(state.hands, seats, torch.zeros_like(hand), where)
    _forget_hand(state, seats, where)


# One turn ----------------------------------------------------------------------------------


def play_turn(state: BatchedState, actions: Tensor, rules: Rules) -> None:
    """Every game's player to act plays ``actions`` (long [N], assumed legal); the turn
    resolves and the next one begins, or the round ends (``round_over``, ``round_winners``,
    tokens). Games whose round is already over are left unchanged."""
    t = tables_for(state.device)
    live = ~state.round_over
    card, offset, guess = t.action_fields[actions].unbind(1)
    player = state.current
    has_target = (offset >= 0) & live
    target = torch.where(has_target, (player + offset) % state.num_players, player)

    actor_card = _play_card(state, player, card, live)
    player_out, target_out = _resolve_effect(state, card, guess, player, target, actor_card, live, has_target)
    _eliminate(state, torch.where(player_out, player, target), player_out | target_out)
    _end_turn(state, rules, live)


def _play_card(state: BatchedState, player: Tensor, card: Tensor, live: Tensor) -> Tensor:
    """The player discards ``card`` and keeps the other one (``on_card_played``); returns
    the card they keep."""
    drawn = state.drawn
    kept = torch.where(drawn != card, drawn, at_seat(state.hands, player))
    _put(state.hands, player, kept, live)
    state.drawn = drawn.masked_fill(live, 0)
    _discard(state, player, card, live)
    # Whoever knew the player held this value can no longer tell which copy was played.
    column = _column(state.known, player)
    dropped = column == card[:, None]
    _put_column(state.known, player, column.masked_fill(dropped, 0), live)
    _put_column(state.seen, player, _column(state.seen, player) & ~dropped, live)
    return kept


def _resolve_effect(
    state: BatchedState,
    card: Tensor,
    guess: Tensor,
    player: Tensor,
    target: Tensor,
    actor_card: Tensor,
    live: Tensor,
    has_target: Tensor,
) -> tuple[Tensor, Tensor]:
    """Apply the played card's effect. Returns whether it puts the player out and whether
    it puts the target out (bool [N] each; never both)."""
    target_card = at_seat(state.hands, target).masked_fill(~has_target, 0)
    plays = lambda value: (card == value) & has_target  # noqa: E731
    target_out = torch.zeros_like(live)

    # Guard: a right guess puts the target out; a wrong one is public proof they lack it.
    guard = plays(GUARD)
    hit = guard & (target_card == guess)
    target_out |= hit
    miss_bit = tables_for(state.device).value_bits[(guess - 1).clamp(min=0)]
    _put(state.ruled_out, target, at_seat(state.ruled_out, target) | miss_bit, guard & ~hit)

    # Priest and Baron: the player learns the target's card; with a Baron the target
    # learns the player's too, and the lower card is out.
    baron = plays(BARON)
    _learn(state, player, target, target_card, plays(PRIEST) | baron)
    _learn(state, target, player, actor_card, baron)
    player_out = baron & (actor_card < target_card)
    target_out |= baron & (target_card < actor_card)

    # Prince: the target discards their hand without effect and draws a replacement (the
    # set-aside card once the deck is empty); a discarded Princess puts them out.
    prince = plays(PRINCE)
    _discard(state, target, target_card, prince)
    _forget_hand(state, target, prince)
    princess_discarded = prince & (target_card == PRINCESS)
    target_out |= princess_discarded
    draws = prince & ~princess_discarded
    from_deck = state.next_card < DECK_SIZE
    top = state.deck.gather(1, state.next_card.long().clamp(max=DECK_SIZE - 1)[:, None]).squeeze(1)
    _put(state.hands, target, torch.where(from_deck, top, state.deck[:, 0]).masked_fill(~draws, 0), prince)
    state.next_card = state.next_card + (draws & from_deck).to(torch.int8)

    # King: the two trade hands; what anyone knew moves with the card, then each trader
    # knows what the other now holds (``on_king_trade``).
    king = plays(KING)
    _put(state.hands, player, target_card, king)
    _put(state.hands, target, actor_card, king)
    known_of_player, known_of_target = _column(state.known, player), _column(state.known, target)
    _put_column(state.known, player, known_of_target, king)
    _put_column(state.known, target, known_of_player, king)
    # The new holders cannot tell whether moved knowledge still held: not ``seen``.
    nobody = torch.zeros_like(state.seen[:, :, 0])
    _put_column(state.seen, player, nobody, king)
    _put_column(state.seen, target, nobody, king)
    ruled_player, ruled_target = at_seat(state.ruled_out, player), at_seat(state.ruled_out, target)
    _put(state.ruled_out, player, ruled_target, king)
    _put(state.ruled_out, target, ruled_player, king)
    _learn(state, player, target, actor_card, king)
    _learn(state, target, player, target_card, king)

    # Handmaid protects the player; the Princess, played, puts the player out.
    _put(state.protected, player, live, live & (card == HANDMAID))
    player_out |= live & (card == PRINCESS)
    return player_out, target_out


def _end_turn(state: BatchedState, rules: Rules, live: Tensor) -> None:
    """End the round if one player remains or the deck is empty; else the next player in
    the round begins their turn."""
    alive = ~state.out
    last_standing = alive.sum(1) == 1
    over = live & (last_standing | (state.next_card >= DECK_SIZE))
    winners = torch.where(last_standing[:, None], alive, showdown_winners(state, alive, rules)) & over[:, None]
    state.round_over = state.round_over | over
    state.round_winners = torch.where(over[:, None], winners, state.round_winners)
    state.tokens = state.tokens + winners.to(torch.int8)
    state.drawn = state.drawn.masked_fill(over, 0)

    # The next seat in turn order that is still in the round (one exists: two or more are in).
    after = _relative_seats(state, state.current)[:, 1:]
    nxt = after.gather(1, alive.gather(1, after).to(torch.int8).argmax(1, keepdim=True)).squeeze(1)
    _begin_turn(state, nxt, live & ~over)


def showdown_winners(state: BatchedState, alive: Tensor, rules: Rules) -> Tensor:
    """bool [N, 4]: who wins when the deck runs out: highest card; then (``classic``) the
    highest sum of discards; whoever is still tied shares the round."""
    hands = state.hands.masked_fill(~alive, 0)
    tied = alive & (hands == hands.amax(1, keepdim=True))
    if rules.discard_sum_tiebreak:
        values = tables_for(state.device).card_values
        sums = (state.discarded * values).sum(2).masked_fill(~tied, -1)
        tied = tied & (sums == sums.amax(1, keepdim=True))
    return tied


def _begin_turn(state: BatchedState, player: Tensor, where: Tensor) -> None:
    """In games ``where``, ``player`` starts a turn: Handmaid protection ends, they draw,
    and failed Guard guesses against them no longer hold (``on_draw``)."""
    state.current = torch.where(where, player, state.current)
    _put(state.protected, player, torch.zeros_like(where), where)
    _put(state.ruled_out, player, torch.zeros_like(state.ruled_out[:, 0]), where)
    top = state.deck.gather(1, state.next_card.long().clamp(max=DECK_SIZE - 1)[:, None]).squeeze(1)
    state.drawn = torch.where(where, top, state.drawn)
    state.next_card = state.next_card + where.to(torch.int8)


# Round set-up ----------------------------------------------------------------------------


def start_rounds(state: BatchedState, decks: Tensor, first_player: Tensor, where: Tensor) -> None:
    """In games ``where``, deal a new round from ``decks`` (int8 [N, 16], top first) with
    ``first_player`` to start. Tokens carry over (zero them first for a new game)."""
    per_seat, per_slot = where[:, None], where[:, None, None]
    n = state.num_players
    state.deck = torch.where(per_seat, decks, state.deck)
    present = state.present
    # Set-aside card, the 2-player face-up cards, then one card each from the first player.
    first_deal = 1 + FACE_UP_CARDS_2P * (n == 2)
    seats = torch.arange(MAX_SEATS, device=state.device)
    deal_index = first_deal[:, None] + (seats - first_player[:, None]) % n[:, None]
    dealt = state.deck.gather(1, deal_index.clamp(max=DECK_SIZE - 1)).masked_fill(~present, 0)
    state.hands = torch.where(per_seat, dealt, state.hands)
    state.next_card = torch.where(where, (first_deal + n).to(torch.int8), state.next_card)
    state.out = torch.where(per_seat, ~present, state.out)
    state.protected.masked_fill_(per_seat, False)
    state.discards.masked_fill_(per_slot, 0)
    state.num_discards.masked_fill_(per_seat, 0)
    state.discarded.masked_fill_(per_slot, 0)
    state.known.masked_fill_(per_slot, 0)
    state.seen.masked_fill_(per_slot, False)
    state.ruled_out.masked_fill_(per_seat, 0)
    state.round_over = state.round_over & ~where
    state.round_winners = state.round_winners & ~per_seat
    _begin_turn(state, first_player, where)
