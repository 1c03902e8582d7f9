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

    The trainer allocates one buffer and :meth:`reset` s it before each rollout. Each
    :meth:`add` writes one contiguous block of rows, and nothing here asks the device for a
    value (no boolean-mask indexing, no ``.item()``): on CUDA the rollout never waits for
    the buffer. Writes that have nowhere to go (a seat with no open decision) land in one
    spare row past ``capacity``, which no reader looks at.

    Observations and masks can be written in place: :meth:`next_rows` gives the rows the
    next :meth:`add` fills, for the env to write its next step into
    (``env.step(actions, out=obs, mask_out=masks)``); :meth:`add` then finds them there and
    copies nothing.
    """

    def __init__(self, capacity: int, num_games: int, device: torch.device):
        self.capacity, self.num_games, self.device = capacity, num_games, torch.device(device)
        spare = capacity + 1  # the row that takes writes with nowhere to go
        # The env's bytes, kept as bytes: a quarter of float32's memory; the network converts.
        self.obs = torch.zeros(capacity, OBSERVATION_SIZE, dtype=OBSERVATION_DTYPE, device=device)
        self.masks = torch.zeros(capacity, NUM_ACTIONS, dtype=torch.bool, device=device)
        self.actions = torch.zeros(capacity, dtype=torch.long, device=device)
        self.logprobs = torch.zeros(capacity, device=device)
        self.values = torch.zeros(capacity, device=device)
        self.rewards = torch.zeros(spare, device=device)
        self.terminal = torch.zeros(spare, dtype=torch.bool, device=device)
        self.next_index = torch.full((spare,), -1, dtype=torch.long, device=device)
        self.pending = torch.full((num_games, MAX_PLAYERS), -1, dtype=torch.long, device=device)
        self._row_ids = torch.arange(capacity, device=device)
        self.size = 0
        self.blocks: list[tuple[int, int]] = []  # [start, end) of each add, in order

    def fits(self, capacity: int, num_games: int, device: torch.device) -> bool:
        """Whether this buffer has the shape a rollout of ``num_games`` games needs."""
        return (self.capacity, self.num_games, self.device) == (capacity, num_games, torch.device(device))

    def next_rows(self, count: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(obs, masks)``: views of the rows the next :meth:`add` of ``count`` decisions
        fills (contiguous), or None when they would not fit."""
        k0, k1 = self.size, self.size + count
        if k1 > self.capacity:
            return None
        return self.obs[k0:k1], self.masks[k0:k1]

    def reset(self) -> None:
        """Empty the buffer for a new rollout (rows are cleared as :meth:`add` reuses them)."""
        self.pending.fill_(-1)
        self.size = 0
        self.blocks = []

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
        """Record the decisions seats ``seats`` of games ``games`` just made (each game at
        most once). ``obs`` and ``masks`` may be the rows :meth:`next_rows` gave, already filled."""
        k0, k1 = self.size, self.size + games.numel()
        if k1 > self.capacity:
            raise ValueError(f"the rollout buffer holds {self.capacity:,} decisions; {k1:,} do not fit")
        for rows, given in ((self.obs[k0:k1], obs), (self.masks[k0:k1], masks)):
            if not _same_rows(rows, given):
                rows.copy_(given)
        self.actions[k0:k1].copy_(actions)
        self.logprobs[k0:k1].copy_(logprobs)
        self.values[k0:k1].copy_(values)
        self.rewards[k0:k1].zero_()
        self.terminal[k0:k1].fill_(False)
        self.next_index[k0:k1].fill_(-1)
        k = self._row_ids[k0:k1]
        previous = self.pending[games, seats]
        self.next_index[torch.where(previous >= 0, previous, self.capacity)] = k
        self.pending[games, seats] = k
        self.size = k1
        self.blocks.append((k0, k1))

    def close_episodes(self, done: torch.Tensor, rewards: torch.Tensor) -> None:
        """The games where bool ``done`` ``[num_games]`` holds just ended, with per-seat
        ``rewards`` ``[num_games, 4]`` (the other games' rows are ignored)."""
        open_ = torch.where(done.unsqueeze(-1) & (self.pending >= 0), self.pending, self.capacity)
        self.rewards[open_] = rewards.to(self.rewards.dtype)
        self.terminal[open_] = True
        self.pending.masked_fill_(done.unsqueeze(-1), -1)

    def batch(self, gamma: float, gae_lambda: float) -> RolloutBatch:
        """Advantages and returns, keeping only decisions whose outcome is known."""
        n = self.size
        adv, ret, resolved = compute_gae(
            self.rewards[:n],
            self.values[:n],
            self.terminal[:n],
            self.next_index[:n],
            gamma,
            gae_lambda,
            blocks=self.blocks,
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


def _same_rows(rows: torch.Tensor, given: torch.Tensor) -> bool:
    """Whether ``given`` is ``rows`` itself (a view of the same memory, laid out alike)."""
    return (
        given.data_ptr() == rows.data_ptr()
        and given.shape == rows.shape
        and given.stride() == rows.stride()
        and given.dtype == rows.dtype
        and given.device == rows.device
    )
