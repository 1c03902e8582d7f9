"""The state of N games as a struct of arrays.

Every field's first dimension is the game. Seats are padded to 4; a padding seat is
permanently "out", so the rules that skip players who are out skip it too, and the
observation masks it with ``present``. Small dtypes keep a game at 192 bytes
(:meth:`BatchedState.nbytes_per_game`).

Conventions shared with the scalar engine (:class:`loveletter_env.engine.GameState`):
card value 0 means "no card" / "unknown"; ``deck`` index 0 is the top (the set-aside
card); ``known[g, observer, player]`` is the card ``observer`` knows ``player`` holds.
One difference of representation: ``ruled_out`` stores value ``v`` at bit ``v - 1``
(the scalar engine uses bit ``v``) so that 8 values fit a ``uint8``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from ..cards import DECK_SIZE, NUM_CARD_TYPES
from ..core import layout
from ..core.layout import MAX_SEATS
from ..validation import shown


@dataclass
class BatchedState:
    """N Love Letter games. Shapes: ``[N]``, ``[N, 4]`` (per seat), ``[N, 4, 16]``, ``[N, 4, 4]``."""

    num_players: torch.Tensor  # long [N]: 2..4
    tokens_to_win: torch.Tensor  # int8 [N]: target for this table size and rule preset
    tokens: torch.Tensor  # int8 [N, 4]
    deck: torch.Tensor  # int8 [N, 16]: this round's cards, top first
    next_card: torch.Tensor  # int8 [N]: index of the next card to draw (16 = empty)
    hands: torch.Tensor  # int8 [N, 4]: the card each seat keeps (0 = none)
    drawn: torch.Tensor  # int8 [N]: the second card of the player to act (0 once the round is over)
    current: torch.Tensor  # long [N]: seat to act
    out: torch.Tensor  # bool [N, 4]: out of the round (padding seats always)
    protected: torch.Tensor  # bool [N, 4]: Handmaid protection
    discards: torch.Tensor  # int8 [N, 4, 16]: discards in order, 0 = empty slot
    num_discards: torch.Tensor  # int8 [N, 4]: filled slots of ``discards``
    discarded: torch.Tensor  # int8 [N, 4, 8]: copies of each value 1..8 discarded this round
    known: torch.Tensor  # int8 [N, 4, 4]: known[g, observer, player]
    seen: torch.Tensor  # bool [N, 4, 4]: seen[g, observer, player], the player can tell (knowledge.py)
    ruled_out: torch.Tensor  # uint8 [N, 4]: bit v-1 set = a failed Guard proved value v absent
    round_over: torch.Tensor  # bool [N]
    round_winners: torch.Tensor  # bool [N, 4]: winners of the round that just ended

    @property
    def num_games(self) -> int:
        return self.deck.shape[0]

    @property
    def device(self) -> torch.device:
        return self.deck.device

    @property
    def present(self) -> torch.Tensor:
        """bool [N, 4]: the seat exists at this table."""
        return torch.arange(MAX_SEATS, device=self.device) < self.num_players[:, None]

    def tensors(self) -> dict[str, torch.Tensor]:
        """The fields by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def nbytes_per_game(self) -> int:
        """Bytes of state one game occupies."""
        return sum(t[0].numel() * t.element_size() for t in self.tensors().values())

    def clone(self) -> BatchedState:
        """A deep copy."""
        return BatchedState(**{k: v.clone() for k, v in self.tensors().items()})

    def to(self, device: str | torch.device) -> BatchedState:
        """A copy on ``device``."""
        return BatchedState(**{k: v.to(device) for k, v in self.tensors().items()})

    def copy_(self, other: BatchedState) -> None:
        """Overwrite every field with ``other``'s (same shapes)."""
        for name, t in other.tensors().items():
            getattr(self, name).copy_(t)


def state_from_records(records: np.ndarray) -> BatchedState:
    """A :class:`BatchedState` copy of compiled-core records (uint8 [N, RECORD_SIZE], see
    :mod:`loveletter_env.core.layout`): the same games in this module's representation.

    Raises:
        ValueError: ``records`` is not such an array (another dtype would be cast to the
            fields' bytes, a value past a byte wrapped, rather than read as records)."""
    if not (
        isinstance(records, np.ndarray)
        and records.dtype == np.uint8
        and records.ndim == 2
        and records.shape[1] == layout.RECORD_SIZE
    ):
        is_array = isinstance(records, np.ndarray)
        got = f"{records.dtype} array of shape {list(records.shape)}" if is_array else shown(records)
        raise ValueError(f"records must be a uint8 array of shape [N, {layout.RECORD_SIZE}], got {got}")
    r = torch.from_numpy(np.ascontiguousarray(records))
    n = r.shape[0]

    def block(at: int, *shape: int, dtype: torch.dtype = torch.int8) -> torch.Tensor:
        size = int(np.prod(shape)) if shape else 1
        values = r[:, at : at + size].reshape(n, *shape) if shape else r[:, at]
        # A copy even where the dtype is already uint8 (a view otherwise): the state must
        # never write into the records it was made from.
        return values.to(dtype, copy=True)

    return BatchedState(
        num_players=block(layout.NUM_PLAYERS, dtype=torch.long),
        tokens_to_win=block(layout.TOKENS_TO_WIN),
        tokens=block(layout.TOKENS, MAX_SEATS),
        deck=block(layout.DECK, DECK_SIZE),
        next_card=block(layout.NEXT_CARD),
        hands=block(layout.HANDS, MAX_SEATS),
        drawn=block(layout.DRAWN),
        current=block(layout.CURRENT, dtype=torch.long),
        out=block(layout.OUT, MAX_SEATS, dtype=torch.bool),
        protected=block(layout.PROTECTED, MAX_SEATS, dtype=torch.bool),
        discards=block(layout.DISCARDS, MAX_SEATS, DECK_SIZE),
        num_discards=block(layout.NUM_DISCARDS, MAX_SEATS),
        discarded=block(layout.DISCARDED, MAX_SEATS, NUM_CARD_TYPES),
        known=block(layout.KNOWN, MAX_SEATS, MAX_SEATS),
        seen=block(layout.SEEN, MAX_SEATS, MAX_SEATS, dtype=torch.bool),
        ruled_out=block(layout.RULED_OUT, MAX_SEATS, dtype=torch.uint8),
        round_over=block(layout.ROUND_OVER, dtype=torch.bool),
        round_winners=block(layout.ROUND_WINNERS, MAX_SEATS, dtype=torch.bool),
    )
