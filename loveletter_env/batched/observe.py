"""Observation vectors for N games at once, bit for bit those of
:func:`loveletter_env.observation.encode_observation`.

Every field of :data:`loveletter_env.observation.LAYOUT` is computed as a ``[N, *shape]``
tensor and copied (with its conversion to float32) into its slice of the output, whose
positions come from :data:`loveletter_env.observation.SLICES`: the layout lives in one
place. One-hot cards are row lookups in an identity table. Every entry is a small whole
number, exact in float32, so sums cannot round.
"""

from __future__ import annotations

import torch

from ..cards import DECK_SIZE, NUM_CARD_TYPES
from ..engine import FACE_UP_CARDS_2P
from ..observation import LAYOUT, OBSERVATION_SIZE, SLICES
from ..rules import Rules
from .engine import at_seat
from .state import BatchedState
from .tables import MAX_SEATS, tables_for

Tensor = torch.Tensor
_SHAPES = {f.name: f.shape for f in LAYOUT}


def _one_hot(cards: Tensor, scratch: Tensor | None = None) -> Tensor:
    """float32 [*cards.shape, 8]: one-hot card values (0, "no card", gives zeros), looked up
    as rows of an identity table: cheaper on CPU than comparing against the values.
    ``scratch`` (float32 [cards.numel(), 8]) receives the rows instead of a new tensor."""
    table = tables_for(cards.device).card_one_hot
    rows = torch.index_select(table, 0, cards.reshape(-1).long(), out=scratch)
    return rows.view(*cards.shape, NUM_CARD_TYPES)


def discard_scratch(num_games: int, device: str | torch.device) -> Tensor:
    """A workspace for :func:`encode_observations`' ``scratch`` argument."""
    return torch.empty(num_games * MAX_SEATS * DECK_SIZE, NUM_CARD_TYPES, device=device)


def encode_observations(
    state: BatchedState,
    observers: Tensor,
    rules: Rules,
    out: Tensor | None = None,
    scratch: Tensor | None = None,
) -> Tensor:
    """float32 [N, OBSERVATION_SIZE]: game ``g`` seen from seat ``observers[g]``.

    ``out``, if given (float32 [N, OBSERVATION_SIZE], contiguous, on the state's device),
    receives the result and is returned: writing straight into rollout storage saves
    allocating a fresh array per step. ``scratch`` (from :func:`discard_scratch`) is reused
    for the largest intermediate, the one-hot discards. On CPU, fresh large allocations
    can cost more than the encoding itself (page faults), hence both.
    """
    t = tables_for(state.device)
    n = state.num_games
    num_players = state.num_players[:, None]
    offsets = torch.arange(MAX_SEATS, device=state.device)
    present = offsets < num_players  # [N, 4], by offset from the observer
    seat = (observers[:, None] + offsets) % num_players  # the seat at each offset (padding wraps)
    others, other_present = seat[:, 1:], present[:, 1:]

    # Every field is written in full below (the LAYOUT tiles the vector), so no zeroing.
    obs = torch.zeros(n, OBSERVATION_SIZE, device=state.device) if out is None else out
    field = lambda name: obs[:, SLICES[name]].view(n, *_SHAPES[name])  # noqa: E731

    # Cards the observer sees, one-hot; a card they cannot see is 0, whose row is zeros.
    acting = (observers == state.current) & ~state.round_over
    hand = _one_hot(at_seat(state.hands, observers)) + _one_hot(state.drawn.masked_fill(~acting, 0))
    face_up = _one_hot(state.deck[:, 1 : 1 + FACE_UP_CARDS_2P].masked_fill((state.num_players != 2)[:, None], 0))
    known = _one_hot(at_seat(state.known, observers).gather(1, others).masked_fill(~other_present, 0))
    discards = state.discards.gather(1, seat[:, :, None].expand(n, MAX_SEATS, DECK_SIZE))
    field("hand").copy_(hand)
    field("face_up").copy_(face_up.sum(1))
    field("known_card").copy_(known)
    field("discards").copy_(_one_hot(discards.masked_fill(~present[:, :, None], 0), scratch))

    # Numbers and flags, each copied (and converted to float32) into its slice.
    discarded = state.discarded.gather(1, seat[:, :, None].expand(n, MAX_SEATS, NUM_CARD_TYPES))
    field("discard_counts").copy_(discarded.masked_fill(~present[:, :, None], 0))
    ruled = state.ruled_out.gather(1, others).masked_fill(~other_present, 0)
    field("ruled_out").copy_((ruled[:, :, None] & t.value_bits) != 0)
    knows_me = state.seen.gather(2, observers[:, None, None].expand(n, MAX_SEATS, 1)).squeeze(2)
    field("seen_by").copy_(knows_me.gather(1, others) & other_present)
    field("present").copy_(present)
    field("out").copy_(state.out.gather(1, seat) & present)
    field("protected").copy_(state.protected.gather(1, seat) & present)
    field("tokens").copy_(state.tokens.gather(1, seat).masked_fill(~present, 0))
    to_act_offset = (state.current - observers) % state.num_players
    field("to_act").copy_((offsets == to_act_offset[:, None]) & ~state.round_over[:, None])
    field("deck_size").copy_(DECK_SIZE - state.next_card[:, None])
    field("tokens_to_win").copy_(state.tokens_to_win[:, None])
    field("num_players").copy_(offsets[:3] == (num_players - 2))
    field("rules")[:, 0] = float(rules.discard_sum_tiebreak)
    field("rules")[:, 1] = float(rules.king_ignores_handmaid)
    # Copies whose place the observer cannot name: all, less every card seen above.
    located = hand + face_up.sum(1) + field("discard_counts").sum(1) + known.sum(1)
    field("unseen").copy_(t.card_counts - located)
    return obs
