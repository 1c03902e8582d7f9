"""Observation vectors for N games at once, bit for bit those of
:func:`loveletter_env.observation.encode_observation`.

Each field of :data:`loveletter_env.observation.LAYOUT` is computed as a ``[N, *shape]``
tensor and the fields are concatenated in layout order, so the layout lives in one place.
Every entry is a small whole number, exact in float32, so sums are order-independent.
One-hot fields are row lookups in constant tables (``F.embedding``), which on CPU is
several times faster than comparing against the card values.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..cards import DECK_SIZE
from ..engine import FACE_UP_CARDS_2P
from ..observation import LAYOUT, OBSERVATION_SIZE
from ..rules import Rules
from .engine import at_seat
from .state import BatchedState
from .tables import MAX_SEATS, tables_for

Tensor = torch.Tensor


def encode_observations(state: BatchedState, observers: Tensor, rules: Rules) -> Tensor:
    """float32 [N, OBSERVATION_SIZE]: game ``g`` seen from seat ``observers[g]``."""
    t = tables_for(state.device)
    one_hot = lambda cards: F.embedding(cards.long(), t.card_one_hot)  # noqa: E731  (0 -> zeros)
    n = state.num_games
    num_players = state.num_players[:, None]
    offsets = torch.arange(MAX_SEATS, device=state.device)
    present = offsets < num_players  # [N, 4], by offset from the observer
    absent_other = ~present[:, 1:]
    seat = (observers[:, None] + offsets) % num_players  # the seat at each offset (padding wraps)

    acting = (observers == state.current) & ~state.round_over
    hand = one_hot(at_seat(state.hands, observers)) + one_hot(state.drawn.masked_fill(~acting, 0))

    discarded = state.discards.gather(1, seat[:, :, None].expand(n, MAX_SEATS, DECK_SIZE))
    discards = one_hot(discarded.masked_fill(~present[:, :, None], 0))  # [N, 4, 16, 8]
    discard_counts = discards.view(n, MAX_SEATS, -1) @ t.slot_sum  # [N, 4, 8], exact small integers

    face_up_cards = state.deck[:, 1 : 1 + FACE_UP_CARDS_2P].masked_fill((state.num_players != 2)[:, None], 0)
    face_up = one_hot(face_up_cards).sum(1)

    known_row = at_seat(state.known, observers)  # [N, player]: what the observer knows of each
    known_card = one_hot(known_row.gather(1, seat)[:, 1:].masked_fill(absent_other, 0))
    ruled = state.ruled_out.gather(1, seat)[:, 1:].masked_fill(absent_other, 0)
    knows_me = state.known.gather(2, observers[:, None, None].expand(n, MAX_SEATS, 1)).squeeze(2)

    to_act_offset = (state.current - observers) % state.num_players
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
        "ruled_out": F.embedding(ruled.long(), t.mask_bits),
        "seen_by": ((knows_me.gather(1, seat) != 0) & present)[:, 1:],
        "present": present,
        "out": state.out.gather(1, seat) & present,
        "protected": state.protected.gather(1, seat) & present,
        "tokens": state.tokens.gather(1, seat).masked_fill(~present, 0),
        "to_act": (offsets == to_act_offset[:, None]) & ~state.round_over[:, None],
        "deck_size": (DECK_SIZE - state.next_card)[:, None],
        "tokens_to_win": state.tokens_to_win[:, None],
        "num_players": offsets[:3] == (num_players - 2),
        "rules": rule_flags.expand(n, 2),
        "unseen": unseen,
    }
    obs = torch.cat([fields[f.name].reshape(n, -1).to(torch.float32) for f in LAYOUT], dim=1)
    assert obs.shape[1] == OBSERVATION_SIZE, "observation layout changed: update batched.observe"
    return obs
