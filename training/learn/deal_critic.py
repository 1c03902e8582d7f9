"""A critic that also sees the cards hidden from the player: an asymmetric actor-critic.

PPO's advantage of a decision is the return it led to less a baseline, the critic's value.
Any baseline that does not depend on the action drawn leaves the policy gradient unbiased,
and it need not be a function of what the player sees: the policy still acts on its
observation alone, but its advantages may be measured against the value of the whole deal.
The policy ``pi(a | I)`` depends on the information set ``I`` only, so for any state ``h``
in ``I``, ``sum_a grad pi(a | I) * b(h) = b(h) * grad 1 = 0``.

In a two-player round most of the outcome's spread is the cards the player cannot see: the
opponent's hand, the set-aside card and the order of the deck. A critic of the observation
alone must leave that spread in every advantage, where it is noise the policy follows; a
critic of the deal takes it out (Pinto et al., "Asymmetric Actor Critic", RSS 2018, uses
the same split of what the actor and the critic are shown). Only training uses the critic:
the trained network, its checkpoint and its play are as without it.

:func:`hidden_cards` lists those cards for each game's player to act, and :class:`DealCritic`
values a decision from its observation and them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from loveletter_env.batched.state import BatchedState
from loveletter_env.cards import DECK_SIZE, NUM_CARD_TYPES
from loveletter_env.observation import OBSERVATION_SIZE
from loveletter_env.validation import MAX_PLAYERS
from training.learn.ppo import ObservationLinear, SparseObservations

#: Entries of :func:`hidden_cards`: each other seat's hand, the set-aside card and the next
#: card to draw (one value each, as one-hots), and the counts of the rest of the deck.
HIDDEN_CARD_FEATURES = NUM_CARD_TYPES * (MAX_PLAYERS - 1 + 3)


def hidden_cards(state: BatchedState, seats: torch.Tensor) -> torch.Tensor:
    """uint8 ``[N, HIDDEN_CARD_FEATURES]``: for seat ``seats[g]`` of game ``g``, the cards it
    cannot see: the hand of each other seat in turn order (seat + 1, + 2, + 3; zeros where
    there is none), the set-aside card, the next card to draw, and how many of each value
    the deck holds after it. Values are one-hot over the card values 1..8."""
    n, device = state.num_games, state.device
    games = torch.arange(n, device=device)
    step = torch.arange(1, MAX_PLAYERS, device=device)
    players = state.num_players.unsqueeze(-1)
    # Seat s + k in turn order at this table; past its last other seat, a padding seat (no hand).
    others = torch.where(step < players, (seats.to(device).unsqueeze(-1) + step) % players, MAX_PLAYERS - 1)
    deck = state.deck.long()
    position = torch.arange(DECK_SIZE, device=device)
    next_card = state.next_card.long().unsqueeze(-1)
    upcoming = deck.gather(1, next_card.clamp(max=DECK_SIZE - 1)).where(next_card < DECK_SIZE, 0)
    later = deck.where(position > next_card, 0)
    singles = torch.cat([state.hands[games.unsqueeze(-1), others].long(), deck[:, :1], upcoming], dim=1)
    one_hot = nn.functional.one_hot(singles, NUM_CARD_TYPES + 1)[..., 1:].reshape(n, -1)
    counts = nn.functional.one_hot(later, NUM_CARD_TYPES + 1)[..., 1:].sum(1)
    return torch.cat([one_hot, counts], dim=1).to(torch.uint8)


class DealCritic(nn.Module):
    """The value of a decision from its observation and the :func:`hidden_cards` of its
    player: ``forward(obs, hidden) -> value [B]``.

    A network of its own, the policy network's shape (``hidden_sizes``) with the hidden
    cards added to its input: the policy network's trunk, heads, loss and gradient clipping
    stay exactly as without it, and only the advantages its policy loss weighs change.
    """

    def __init__(self, hidden_sizes: Sequence[int], generator: torch.Generator | None = None):
        super().__init__()
        widths = [int(h) for h in hidden_sizes]
        self.observation_layer = ObservationLinear(OBSERVATION_SIZE, widths[0])
        self.hidden_layer = nn.Linear(HIDDEN_CARD_FEATURES, widths[0], bias=False)
        deeper: list[nn.Module] = []
        for before, after in zip(widths, widths[1:]):
            deeper += [nn.ReLU(), nn.Linear(before, after)]
        self.deeper = nn.Sequential(*deeper, nn.ReLU())
        self.value = nn.Linear(widths[-1], 1)
        with torch.no_grad():
            linear = [self.observation_layer, self.hidden_layer, *(m for m in deeper if isinstance(m, nn.Linear))]
            for layer, gain in [*((m, np.sqrt(2)) for m in linear), (self.value, 1.0)]:
                nn.init.orthogonal_(layer.weight, gain=float(gain), generator=generator)
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)

    def forward(self, obs: torch.Tensor | SparseObservations, hidden: torch.Tensor) -> torch.Tensor:
        first = self.observation_layer(obs) + self.hidden_layer(hidden.to(self.hidden_layer.weight.dtype))
        return self.value(self.deeper(first)).squeeze(-1)
