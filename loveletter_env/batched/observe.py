"""Observation vectors for N games at once, bit for bit those of
:func:`loveletter_env.observation.encode_observation`.

Like the scalar encoder, the vector starts at zero and every card the observer can see
adds 1 at its flat position (one ``scatter_add_`` for all one-hot fields); the fields
that hold numbers or flags are copied into their slices. Positions come from
:data:`loveletter_env.observation.SLICES`, so the layout lives in one place. Every entry
is a small whole number, exact in float32, so the order of the additions cannot matter.
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
#: Width of one seat's block in the ``discards`` field.
_SEAT_DISCARDS = DECK_SIZE * NUM_CARD_TYPES
_SHAPES = {f.name: f.shape for f in LAYOUT}


def encode_observations(state: BatchedState, observers: Tensor, rules: Rules, out: Tensor | None = None) -> Tensor:
    """float32 [N, OBSERVATION_SIZE]: game ``g`` seen from seat ``observers[g]``.

    ``out``, if given (float32 [N, OBSERVATION_SIZE], contiguous, on the state's device),
    receives the result and is returned: writing straight into rollout storage saves
    allocating a fresh array per step, which on CPU can cost more than the encoding.
    """
    t = tables_for(state.device)
    n = state.num_games
    num_players = state.num_players[:, None]
    offsets = torch.arange(MAX_SEATS, device=state.device)
    present = offsets < num_players  # [N, 4], by offset from the observer
    seat = (observers[:, None] + offsets) % num_players  # the seat at each offset (padding wraps)
    others, other_present = seat[:, 1:], present[:, 1:]

    # One-hot cards: own hand, every seat's discards in order, face-up cards, known cards;
    # a card the observer cannot see becomes 0, which adds nothing.
    acting = (observers == state.current) & ~state.round_over
    discards = state.discards.gather(1, seat[:, :, None].expand(n, MAX_SEATS, DECK_SIZE))
    known = at_seat(state.known, observers).gather(1, others)
    cards = torch.cat(
        [
            at_seat(state.hands, observers)[:, None],
            state.drawn.masked_fill(~acting, 0)[:, None],
            discards.masked_fill(~present[:, :, None], 0).view(n, -1),
            state.deck[:, 1 : 1 + FACE_UP_CARDS_2P].masked_fill((state.num_players != 2)[:, None], 0),
            known.masked_fill(~other_present, 0),
        ],
        dim=1,
    ).long()
    seen = (cards != 0).to(torch.float32)
    positions = cards.sub_(1).clamp_(min=0).add_(t.card_blocks)  # in place: no page faults
    obs = torch.zeros(n, OBSERVATION_SIZE, device=state.device) if out is None else out.zero_()
    obs.scatter_add_(1, positions, seen)

    field = lambda name: obs[:, SLICES[name]].view(n, *_SHAPES[name])  # noqa: E731

    # Numbers and flags, each copied (and converted to float32) into its slice.
    discarded = state.discarded.gather(1, seat[:, :, None].expand(n, MAX_SEATS, NUM_CARD_TYPES))
    field("discard_counts").copy_(discarded.masked_fill(~present[:, :, None], 0))
    ruled = state.ruled_out.gather(1, others).masked_fill(~other_present, 0)
    field("ruled_out").copy_((ruled[:, :, None] & t.value_bits) != 0)
    knows_me = state.known.gather(2, observers[:, None, None].expand(n, MAX_SEATS, 1)).squeeze(2)
    field("seen_by").copy_((knows_me.gather(1, others) != 0) & other_present)
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
    located = field("hand") + field("face_up") + field("discard_counts").sum(1) + field("known_card").sum(1)
    field("unseen").copy_(t.card_counts - located)
    return obs
