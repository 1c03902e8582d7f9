"""The rules over N games at once: legal masks, one turn, round set-up.

Each function mirrors one phase of the scalar engine (:mod:`loveletter_env.engine`) and
the knowledge rules of :mod:`loveletter_env.knowledge`, written as whole-batch tensor
operations: per-game choices become boolean masks and ``torch.where``, per-seat lookups
become one-hot seat masks or ``gather``. No function reads a tensor value back to the
host, so a CUDA step never synchronises. Functions update the :class:`BatchedState` in
place by rebinding its fields; ``rules`` only selects code paths (it is not data).
"""

from __future__ import annotations

import torch

from ..cards import BARON, COUNTESS, DECK_SIZE, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from ..engine import FACE_UP_CARDS_2P
from ..rules import Rules
from .state import BatchedState
from .tables import (
    COND_KING_NOBODY,
    COND_KING_OFFSET,
    COND_NOBODY,
    COND_OFFSET,
    MAX_SEATS,
    NUM_CONDITIONS,
    tables_for,
)

Tensor = torch.Tensor


def seat_mask(seats: Tensor) -> Tensor:
    """bool [N, 4]: one-hot of a seat per game."""
    return seats[:, None] == torch.arange(MAX_SEATS, device=seats.device)


def at_seat(values: Tensor, seats: Tensor) -> Tensor:
    """``values[g, seats[g]]`` for a per-seat tensor ``values`` [N, 4, ...]."""
    index = seats.view(-1, *([1] * (values.dim() - 1))).expand(-1, 1, *values.shape[2:])
    return values.gather(1, index).squeeze(1)


def seat_at_offset(state: BatchedState, seats: Tensor, offsets: Tensor) -> Tensor:
    """The seat ``offsets`` places after ``seats`` in turn order (broadcasts)."""
    return (seats + offsets) % (state.num_players if seats.dim() == 1 else state.num_players[:, None])


def _relative_seats(state: BatchedState, seats: Tensor) -> Tensor:
    """long [N, 4]: the seat at offset 0..3 from ``seats`` (padding offsets wrap; mask them)."""
    return (seats[:, None] + torch.arange(MAX_SEATS, device=seats.device)) % state.num_players[:, None]


# Legal actions -------------------------------------------------------------------------


def legal_mask(state: BatchedState, rules: Rules) -> Tensor:
    """bool [N, 41]: the actions the player to act may take (all False once a round is over)."""
    t = tables_for(state.device)
    player = state.current
    hand, drawn = at_seat(state.hands, player), state.drawn
    held = (hand[:, None] == t.card_values) | (drawn[:, None] == t.card_values)  # [N, 8]
    holds = lambda card: held[:, card - 1]  # noqa: E731

    others = _relative_seats(state, player)[:, 1:]  # seats at offsets 1..3
    exists = torch.arange(1, MAX_SEATS, device=state.device) < state.num_players[:, None]
    in_round = exists & ~state.out.gather(1, others)
    choosable = in_round & ~state.protected.gather(1, others)
    king_choosable = in_round if rules.king_ignores_handmaid else choosable

    conditions = torch.ones(state.num_games, NUM_CONDITIONS, dtype=torch.bool, device=state.device)
    conditions[:, COND_NOBODY] = ~choosable.any(1)
    conditions[:, COND_OFFSET : COND_OFFSET + 3] = choosable
    conditions[:, COND_KING_NOBODY] = ~king_choosable.any(1)
    conditions[:, COND_KING_OFFSET : COND_KING_OFFSET + 3] = king_choosable

    mask = held[:, t.action_card - 1] & conditions[:, t.action_condition]
    # The Countess must be played beside a King or a Prince.
    forced = holds(COUNTESS) & (holds(KING) | holds(PRINCE))
    mask = torch.where(forced[:, None], t.action_card == COUNTESS, mask)
    return mask & ~state.round_over[:, None]


# Knowledge (mirrors loveletter_env.knowledge) ---------------------------------------------


def _forget_hand(state: BatchedState, seats: Tensor) -> None:
    """``on_hand_replaced``: every fact about the hands in ``seats`` (bool [N, 4]) is void."""
    state.known = state.known.masked_fill(seats[:, None, :], 0)
    state.ruled_out = state.ruled_out.masked_fill(seats, 0)


def _append_discards(state: BatchedState, cards: Tensor) -> None:
    """Each seat discards ``cards[g, seat]`` face up (0 = nothing), after its earlier discards."""
    t = tables_for(state.device)
    adds = cards != 0
    slot = adds[:, :, None] & (t.slot_ids == state.discard_count[:, :, None])
    state.discards = torch.where(slot, cards[:, :, None].to(torch.int8), state.discards)
    state.discard_count = state.discard_count + adds.to(torch.int8)


def _eliminate(state: BatchedState, seats: Tensor) -> None:
    """``seats`` (bool [N, 4]) are out: their hands are discarded face up without effect."""
    state.out = state.out | seats
    state.protected = state.protected & ~seats
    _append_discards(state, torch.where(seats, state.hands, 0))
    state.hands = state.hands.masked_fill(seats, 0)
    _forget_hand(state, seats)


# One turn ----------------------------------------------------------------------------------


def play_turn(state: BatchedState, actions: Tensor, rules: Rules) -> None:
    """Every game's player to act plays ``actions`` (long [N], assumed legal); the turn
    resolves and the next one begins, or the round ends (``round_over``, ``round_winners``,
    tokens). Games whose round is already over must not be passed a meaningful action:
    they are left unchanged."""
    t = tables_for(state.device)
    live = ~state.round_over
    card = t.action_card[actions]
    offset = t.action_offset[actions]
    player = state.current
    has_target = (offset >= 0) & live
    target = torch.where(has_target, seat_at_offset(state, player, offset.clamp(min=0)), player)
    player_seat, target_seat = seat_mask(player) & live[:, None], seat_mask(target) & has_target[:, None]

    _play_card(state, player_seat, card)
    eliminated = _resolve_effect(state, card, t.action_guess[actions], player_seat, target_seat, live, has_target)
    _eliminate(state, eliminated)
    _end_turn(state, rules, live)


def _play_card(state: BatchedState, player_seat: Tensor, card: Tensor) -> None:
    """The player discards ``card`` and keeps the other one (``on_card_played``)."""
    hand = torch.where(state.drawn != card, state.drawn, at_seat(state.hands, state.current))
    state.hands = torch.where(player_seat, hand[:, None], state.hands)
    state.drawn = state.drawn.masked_fill(player_seat.any(1), 0)
    _append_discards(state, torch.where(player_seat, card[:, None], 0))
    # Whoever knew the player held this value can no longer tell which copy was played.
    forget = player_seat[:, None, :] & (state.known == card[:, None, None])
    state.known = state.known.masked_fill(forget, 0)


def _resolve_effect(
    state: BatchedState,
    card: Tensor,
    guess: Tensor,
    player_seat: Tensor,
    target_seat: Tensor,
    live: Tensor,
    has_target: Tensor,
) -> Tensor:
    """Apply the played card's effect; return the seats it puts out (bool [N, 4])."""
    hands = state.hands
    actor_card = at_seat(hands, state.current)
    target_card = (hands * target_seat).sum(1).to(torch.int8)  # 0 when there is no target
    plays = lambda value: (card == value) & has_target  # noqa: E731
    eliminated = torch.zeros_like(player_seat)

    # Guard: a right guess puts the target out; a wrong one is public proof they lack it.
    guard = plays(GUARD)
    hit = guard & (target_card == guess)
    eliminated |= target_seat & hit[:, None]
    miss_bit = tables_for(state.device).value_bits[(guess - 1).clamp(min=0)]
    state.ruled_out = torch.where(target_seat & (guard & ~hit)[:, None], state.ruled_out | miss_bit[:, None], state.ruled_out)

    # Priest and Baron: the player learns the target's card; with a Baron, the target learns
    # the player's too, and the lower card is out.
    learns = plays(PRIEST) | plays(BARON)
    pair = player_seat[:, :, None] & target_seat[:, None, :]  # [observer = player, player = target]
    state.known = torch.where(pair & learns[:, None, None], target_card[:, None, None], state.known)
    baron = plays(BARON)
    state.known = torch.where(pair.transpose(1, 2) & baron[:, None, None], actor_card[:, None, None], state.known)
    eliminated |= player_seat & (baron & (actor_card < target_card))[:, None]
    eliminated |= target_seat & (baron & (target_card < actor_card))[:, None]

    # Prince: the target discards their hand without effect and draws a replacement
    # (the set-aside card once the deck is empty); a discarded Princess puts them out.
    prince = plays(PRINCE)
    princed = target_seat & prince[:, None]
    _append_discards(state, torch.where(princed, state.hands, 0))
    state.hands = state.hands.masked_fill(princed, 0)
    _forget_hand(state, princed)
    eliminated |= princed & (target_card == PRINCESS)[:, None]
    draws = prince & (target_card != PRINCESS)
    from_deck = state.next_card < DECK_SIZE
    top = state.deck.gather(1, state.next_card.long().clamp(max=DECK_SIZE - 1)[:, None]).squeeze(1)
    replacement = torch.where(from_deck, top, state.deck[:, 0])
    state.hands = torch.where(princed & draws[:, None], replacement[:, None], state.hands)
    state.next_card = state.next_card + (draws & from_deck).to(torch.int8)

    # King: the two trade hands; what anyone knew moves with the card, then each trader
    # knows what the other now holds (``on_king_trade``).
    king = plays(KING)
    swap_p, swap_t = player_seat & king[:, None], target_seat & king[:, None]
    state.hands = torch.where(swap_p, target_card[:, None], torch.where(swap_t, actor_card[:, None], state.hands))
    col_p = (state.known * player_seat[:, None, :]).sum(2)  # [N, observer]: what each knew of the player
    col_t = (state.known * target_seat[:, None, :]).sum(2)
    state.known = torch.where(
        swap_p[:, None, :], col_t[:, :, None], torch.where(swap_t[:, None, :], col_p[:, :, None], state.known)
    ).to(torch.int8)
    ro_p = (state.ruled_out * player_seat).sum(1, keepdim=True)
    ro_t = (state.ruled_out * target_seat).sum(1, keepdim=True)
    state.ruled_out = torch.where(swap_p, ro_t, torch.where(swap_t, ro_p, state.ruled_out)).to(torch.uint8)
    state.known = torch.where(pair & king[:, None, None], actor_card[:, None, None], state.known)
    state.known = torch.where(pair.transpose(1, 2) & king[:, None, None], target_card[:, None, None], state.known)

    # Handmaid protects the player; the Princess, played, puts the player out.
    state.protected = state.protected | (player_seat & ((card == HANDMAID) & live)[:, None])
    eliminated |= player_seat & ((card == PRINCESS) & live)[:, None]
    return eliminated


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
    hands = torch.where(alive, state.hands, 0)
    tied = alive & (hands == hands.amax(1, keepdim=True))
    if rules.discard_sum_tiebreak:
        sums = state.discards.sum(2, dtype=torch.int16)
        best = torch.where(tied, sums, -1).amax(1, keepdim=True)
        tied = tied & (sums == best)
    return tied


def _begin_turn(state: BatchedState, player: Tensor, where: Tensor) -> None:
    """In games ``where``, ``player`` starts a turn: Handmaid protection ends, they draw,
    and failed Guard guesses against them no longer hold (``on_draw``)."""
    starts = seat_mask(player) & where[:, None]
    state.current = torch.where(where, player, state.current)
    state.protected = state.protected & ~starts
    state.ruled_out = state.ruled_out.masked_fill(starts, 0)
    top = state.deck.gather(1, state.next_card.long().clamp(max=DECK_SIZE - 1)[:, None]).squeeze(1)
    state.drawn = torch.where(where, top, state.drawn)
    state.next_card = state.next_card + where.to(torch.int8)


# Round set-up ----------------------------------------------------------------------------


def start_rounds(state: BatchedState, decks: Tensor, first_player: Tensor, where: Tensor) -> None:
    """In games ``where``, deal a new round from ``decks`` (int8 [N, 16], top first) with
    ``first_player`` to start. Tokens carry over (zero them first for a new game)."""
    w1, w2, w3 = where[:, None], where[:, None, None], where[:, None, None]
    n = state.num_players
    state.deck = torch.where(w1, decks, state.deck)
    present = state.present
    # Set-aside card, the 2-player face-up cards, then one card each from the first player.
    first_deal = 1 + FACE_UP_CARDS_2P * (n == 2)
    seats = torch.arange(MAX_SEATS, device=state.device)
    deal_index = first_deal[:, None] + (seats - first_player[:, None]) % n[:, None]
    dealt = state.deck.gather(1, deal_index.clamp(max=DECK_SIZE - 1)).masked_fill(~present, 0)
    state.hands = torch.where(w1, dealt, state.hands)
    state.next_card = torch.where(where, (first_deal + n).to(torch.int8), state.next_card)
    state.out = torch.where(w1, ~present, state.out)
    state.protected = state.protected & ~w1
    state.discards = state.discards.masked_fill(w2, 0)
    state.discard_count = state.discard_count.masked_fill(w1, 0)
    state.known = state.known.masked_fill(w3, 0)
    state.ruled_out = state.ruled_out.masked_fill(w1, 0)
    state.round_over = state.round_over & ~where
    state.round_winners = state.round_winners & ~w1
    _begin_turn(state, first_player, where)
