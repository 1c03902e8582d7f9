"""Rollout storage: the learner's decisions of one rollout, linked per (game, seat).

In a turn-based game a decision's "next state" is the same seat's next decision, not the
table's next turn. :class:`RolloutBuffer` records every learner decision and links it to
that seat's following decision in the same game; the end of an episode closes each seat's
last open decision with the seat's reward. :meth:`RolloutBuffer.batch` then hands the links
to :func:`training.learn.ppo.compute_gae` and keeps the decisions whose outcome is known.
"""

from __future__ import annotations

import torch

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.batched import OBSERVATION_DTYPE
from loveletter_env.observation import OBSERVATION_SIZE
from loveletter_env.validation import MAX_PLAYERS
from training.learn.ppo import RolloutBatch, compute_gae


class RolloutBuffer:
    """Learner decisions of one rollout, in the order they were made.

    ``pending[g, s]`` is the index of seat ``s``'s latest decision in game ``g`` whose
    outcome is still open. The seat's next decision becomes its successor
    (``next_index``); the end of the episode closes it with the seat's reward.
    """

    def __init__(self, capacity: int, num_games: int, device: torch.device):
        # The env's bytes, kept as bytes: a quarter of float32's memory; the network converts.
        self.obs = torch.zeros(capacity, OBSERVATION_SIZE, dtype=OBSERVATION_DTYPE, device=device)
        self.masks = torch.zeros(capacity, NUM_ACTIONS, dtype=torch.bool, device=device)
        self.actions = torch.zeros(capacity, dtype=torch.long, device=device)
        self.logprobs = torch.zeros(capacity, device=device)
        self.values = torch.zeros(capacity, device=device)
        self.rewards = torch.zeros(capacity, device=device)
        self.terminal = torch.zeros(capacity, dtype=torch.bool, device=device)
        self.next_index = torch.full((capacity,), -1, dtype=torch.long, device=device)
        self.pending = torch.full((num_games, MAX_PLAYERS), -1, dtype=torch.long, device=device)
        self.size = 0

    def add(
        self,
        games: torch.Tensor,
        seats: torch.Tensor,
        obs: torch.Tensor,
        masks: torch.Tensor,
        actions: torch.Tensor,
        logprobs: torch.Tensor,
        values: torch.Tensor,
    ) -> None:
        """Record the decisions seats ``seats`` of games ``games`` just made."""
        k = torch.arange(self.size, self.size + games.numel(), device=games.device)
        self.obs[k], self.masks[k], self.actions[k] = obs, masks, actions
        self.logprobs[k], self.values[k] = logprobs, values
        previous = self.pending[games, seats]
        linked = previous >= 0
        self.next_index[previous[linked]] = k[linked]
        self.pending[games, seats] = k
        self.size += games.numel()

    def close_episodes(self, games: torch.Tensor, rewards: torch.Tensor) -> None:
        """Games ``games`` just ended with per-seat ``rewards`` ``[len(games), 4]``."""
        open_ = self.pending[games]
        has = open_ >= 0
        self.rewards[open_[has]] = rewards[has]
        self.terminal[open_[has]] = True
        self.pending[games] = -1

    def batch(self, gamma: float, gae_lambda: float) -> RolloutBatch:
        """Advantages and returns, keeping only decisions whose outcome is known."""
        n = self.size
        adv, ret, resolved = compute_gae(
            self.rewards[:n], self.values[:n], self.terminal[:n], self.next_index[:n], gamma, gae_lambda
        )
        keep = resolved
        return RolloutBatch(
            obs=self.obs[:n][keep],
            masks=self.masks[:n][keep],
            actions=self.actions[:n][keep],
            logprobs=self.logprobs[:n][keep],
            values=self.values[:n][keep],
            advantages=adv[keep],
            returns=ret[keep],
        )
