"""Observation vectors for N games at once, bit for bit those of
:func:`loveletter_env.observation.encode_observation`.

Each field of :data:`loveletter_env.observation.LAYOUT` is computed as a ``[N, *shape]``
tensor and the fields are concatenated in layout order, so the layout lives in one place.
Every entry is a small whole number, exact in float32, so sums are order-independent.
"""

from __future__ import annotations

import torch

from ..cards import DECK_SIZE
from ..engine import FACE_UP_CARDS_2P
from ..observation import LAYOUT, OBSERVATION_SIZE
from ..rules import Rules
from .engine import at_seat
from .state import BatchedState
from .tables import MAX_SEATS, tables_for

Tensor = torch.Tensor


def _one_hot(values: Tensor) -> Tensor:
    """float32 [..., 8]: one-hot of card values 1..8 (value 0 gives all zeros)."""
    return (values[..., None] == tables_for(values.device).card_values).to(torch.float32)


def encode_observations(state: BatchedState, observers: Tensor, rules: Rules) -> Tensor:
    """float32 [N, OBSERVATION_SIZE]: game ``g`` seen from seat ``observers[g]``."""
    t = tables_for(state.device)
    n = state.num_games
    num_players = state.num_players[:, None]
    offsets = torch.arange(MAX_SEATS, device=state.device)
    present = offsets < num_players  # [N, 4], by offset from the observer
    seat = (observers[:, None] + offsets) % num_players  # the seat at each offset
    others_present = present[:, 1:, None]

    own = at_seat(state.hands, observers)
    acting = (observers == state.current) & ~state.round_over
    hand = _one_hot(own) + _one_hot(state.drawn.masked_fill(~acting, 0))

    discards = state.discards.gather(1, seat[:, :, None].expand(n, MAX_SEATS, DECK_SIZE))
    discards = _one_hot(discards.masked_fill(~present[:, :, None], 0))  # [N, 4, 16, 8]
    discard_counts = discards.sum(2)

    two_players = (state.num_players == 2)[:, None]
    face_up = _one_hot(state.deck[:, 1 : 1 + FACE_UP_CARDS_2P]).sum(1) * two_players

    known_row = at_seat(state.known, observers)  # [N, player]: what the observer knows
    known_card = _one_hot(known_row.gather(1, seat)[:, 1:]) * others_present
    ruled = state.ruled_out.gather(1, seat)[:, 1:, None] & t.value_bits
    ruled_out = (ruled != 0).to(torch.float32) * others_present
    knows_me = state.known.gather(2, observers[:, None, None].expand(n, MAX_SEATS, 1)).squeeze(2)
    seen_by = ((knows_me.gather(1, seat) != 0) & present)[:, 1:]

    to_act_offset = (state.current - observers) % state.num_players
    to_act = (offsets == to_act_offset[:, None]) & ~state.round_over[:, None]

    unseen = t.card_counts - hand - face_up - discard_counts.sum(1) - known_card.sum(1)
    rule_flags = torch.tensor(
        [rules.discard_sum_tiebreak, rules.king_ignores_handmaid], dtype=torch.float32, device=state.device
    )
    fields = {
        "hand": hand,
        "discards": discards,
        "discard_counts": discard_counts,
        "face_up": face_up,
        "known_card": known_card,
        "ruled_out": ruled_out,
        "seen_by": seen_by,
        "present": present,
        "out": state.out.gather(1, seat) & present,
        "protected": state.protected.gather(1, seat) & present,
        "tokens": state.tokens.gather(1, seat) * present,
        "to_act": to_act,
        "deck_size": (DECK_SIZE - state.next_card)[:, None],
        "tokens_to_win": state.tokens_to_win[:, None],
        "num_players": offsets[:3] == (num_players - 2),
        "rules": rule_flags.expand(n, 2),
        "unseen": unseen,
    }
    parts = [fields[f.name].reshape(n, -1).to(torch.float32) for f in LAYOUT]
    obs = torch.cat(parts, dim=1)
    assert obs.shape[1] == OBSERVATION_SIZE, "observation layout changed: update batched.observe"
    return obs
