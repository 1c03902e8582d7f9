"""Who sits in the seats the learner does not control, game by game.

Each episode of each game of the batch draws an :class:`OpponentKind` with the config's
weights (``opponents.current/past/bots``):

- ``CURRENT``: every seat is the learning network, and every seat's decisions are trained on;
- ``PAST``: one seat is the learner, the others a snapshot from the :class:`OpponentPool`
  (earlier weights, so the learner keeps beating what it used to be);
- ``BOTS``: one seat is the learner, the others heuristic bots (``rule`` and ``random``
  decide for the whole batch in one compiled call, :mod:`loveletter_env.agents.batched_bots`,
  on the GPU when self-play runs there; other bots act in Python, one game at a time: keep their share small).

:class:`Seating` holds the draw for every game (kind, learner seat, bot name) and the bots
themselves; the trainer asks it to redraw the games whose episode just ended.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np
import torch

from loveletter_env.agents import Agent
from loveletter_env.agents.batched_bots import BATCHED_BOTS, BatchedBots
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.observation import OBSERVATION_VERSION
from loveletter_env.validation import MAX_PLAYERS
from training.learn.checkpoint import model_payload
from training.learn.config import OpponentConfig
from training.learn.ppo import ActorCritic
from training.learn.runtime import derive_seed


class OpponentKind(IntEnum):
    """What plays the non-learner seats of a game's episode (stored as ints in :attr:`Seating.kind`)."""

    CURRENT = 0
    PAST = 1
    BOTS = 2


class OpponentPool:
    """Earlier weights of the learner, kept on the CPU, oldest first.

    Only one snapshot plays per rollout (drawn uniformly), so the rollout needs a single
    extra forward pass per step whatever the pool size. Each snapshot keeps its network's
    ``hidden_sizes`` and observation layout: a frozen agent of another shape may sit in the
    pool (a best response wider than its target, or a target trained on an older
    observation layout, :mod:`training.exploitability.learned_response`).
    """

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.hidden_sizes: list[list[int]] = []
        self.observation_versions: list[int] = []
        self.labels: list[int] = []  # the update each snapshot was taken at

    def __len__(self) -> int:
        return len(self.snapshots)

    def add(self, model: ActorCritic, label: int) -> None:
        """Keep a copy of ``model``'s weights (the oldest snapshot goes once the pool is full)."""
        payload = model_payload(model)
        self.snapshots.append(payload["state_dict"])
        self.hidden_sizes.append(payload["hidden_sizes"])
        self.observation_versions.append(model.observation_version)
        self.labels.append(label)
        if len(self.snapshots) > self.max_size:
            for kept in (self.snapshots, self.hidden_sizes, self.observation_versions, self.labels):
                kept.pop(0)

    def sample(self, rng: np.random.Generator) -> int:
        """The index of a uniformly drawn snapshot."""
        return int(rng.integers(len(self.snapshots)))

    def state(self) -> dict[str, Any]:
        """What a checkpoint stores to restore the pool."""
        return {
            "snapshots": self.snapshots,
            "hidden_sizes": self.hidden_sizes,
            "observation_versions": self.observation_versions,
            "labels": self.labels,
        }

    def load_state(
        self,
        state: dict[str, Any],
        default_hidden_sizes: list[int],
        default_observation_version: int = OBSERVATION_VERSION,
    ) -> None:
        """Restore the pool from :meth:`state`; checkpoints written before the pool kept
        shapes (or layouts) held snapshots of ``default_hidden_sizes`` (or
        ``default_observation_version``: the checkpoint's own) only."""
        self.snapshots = list(state["snapshots"])
        self.labels = [int(x) for x in state["labels"]]
        shapes = state.get("hidden_sizes") or [default_hidden_sizes] * len(self.snapshots)
        self.hidden_sizes = [[int(h) for h in sizes] for sizes in shapes]
        layouts = state.get("observation_versions") or [default_observation_version] * len(self.snapshots)
        self.observation_versions = [int(v) for v in layouts]

    def build(self, index: int, into: ActorCritic | None = None) -> ActorCritic:
        """Snapshot ``index`` as a network: loaded into ``into`` when that has its shape and
        layout (no allocation per rollout), else a new :class:`ActorCritic` on ``into``'s device."""
        sizes, layout = self.hidden_sizes[index], self.observation_versions[index]
        if into is None or list(into.hidden_sizes) != sizes or into.observation_version != layout:
            device = next(into.parameters()).device if into is not None else torch.device("cpu")
            into = ActorCritic(sizes, observation_version=layout).to(device).eval()
        into.load_state_dict(self.snapshots[index])
        return into


class Seating:
    """The opponent kind, learner seat and bot of every game of the batch, and the bots.

    Args:
        config: the run's ``opponents`` section.
        num_players: table size of every game.
        run_seed: the run's seed (each bot's generator derives from it, its game and seat).
    """

    def __init__(self, config: OpponentConfig, num_players: np.ndarray, run_seed: int):
        self.config = config
        self.num_players = num_players
        self.run_seed = run_seed
        n = len(num_players)
        self.kind = np.zeros(n, dtype=np.int64)
        self.learner_seat = np.zeros(n, dtype=np.int64)
        self.bot_name: list[str] = [""] * n
        self._bots: dict[tuple[int, str], list[Agent]] = {}
        self._batched: dict[str, BatchedBots] = {}  # by bot name; slot game * MAX_PLAYERS + seat

    def batched_bots(self, name: str) -> BatchedBots:
        """The compiled ``name`` bots of every game and seat, seeded as :meth:`bots_for` seeds them."""
        if name not in self._batched:
            games = range(len(self.num_players))
            seeds = [derive_seed(self.run_seed, 4, g, seat) for g in games for seat in range(MAX_PLAYERS)]
            self._batched[name] = BATCHED_BOTS[name](seeds)
        return self._batched[name]

    def draw(self, games: np.ndarray, rng: np.random.Generator, pool_size: int) -> None:
        """Redraw opponent kind, learner seat and bots for ``games`` (new episodes)."""
        o = self.config
        weights = np.array([o.current, o.past if pool_size else 0.0, o.bots], dtype=float)
        if weights.max() > np.finfo(float).max / len(weights):
            # Relative weights near the float limit (1e308 each) could overflow their sum to
            # inf and every share to 0; scaled by the largest they keep their ratios. Only
            # then: other weights keep the shares (and a seeded run's draws) they always had.
            weights /= weights.max()
        if weights.sum() == 0:  # only "past" was asked for and the pool is empty
            weights[OpponentKind.CURRENT] = 1.0
        kinds = rng.choice(len(OpponentKind), size=len(games), p=weights / weights.sum())
        seats = rng.integers(0, self.num_players[games])
        self.kind[games] = kinds
        self.learner_seat[games] = seats
        for g, kind in zip(games.tolist(), kinds.tolist()):
            if kind == OpponentKind.BOTS:
                name = o.bot_names[int(rng.integers(len(o.bot_names)))]
                self.bot_name[g] = name
                if name in BATCHED_BOTS:
                    self.batched_bots(name).reset(g * MAX_PLAYERS + np.arange(MAX_PLAYERS))
                    continue
                for bot in self.bots_for(g, name):
                    reset = getattr(bot, "reset", None)
                    if reset is not None:
                        reset()

    def bots_for(self, game: int, name: str) -> list[Agent]:
        """One bot per seat (bots remember things about their own seat within a round)."""
        key = (game, name)
        if key not in self._bots:
            self._bots[key] = [
                resolve_agent(name, seed=derive_seed(self.run_seed, 4, game, seat)) for seat in range(MAX_PLAYERS)
            ]
        return self._bots[key]

    def bot_actions(self, games: np.ndarray, seat: np.ndarray, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The bots' moves in ``games``, on the observation of their own seat: compiled bots
        one call per bot name, other bots one game at a time in Python. On a CUDA device,
        when every bot is compiled, they decide there (no copy to the host)."""
        names = np.array([self.bot_name[g] for g in games.tolist()])
        compiled = np.isin(names, list(BATCHED_BOTS))
        slots = games * MAX_PLAYERS + seat[games]  # each game's acting bot, as the compiled bots number them
        if obs.is_cuda and compiled.all():
            picked_on_device = torch.empty(len(games), dtype=torch.int64, device=obs.device)
            for name in set(names.tolist()):
                rows = names == name
                index = torch.from_numpy(np.flatnonzero(rows)).to(obs.device)
                picked_on_device[index] = self.batched_bots(name).act_on_device(slots[rows], obs[index], mask[index])
            return picked_on_device
        obs_np, mask_np = obs.cpu().numpy(), mask.cpu().numpy().astype(np.int8)
        picked = np.zeros(len(games), dtype=np.int64)
        for name in set(names[compiled].tolist()):
            rows = names == name
            picked[rows] = self.batched_bots(name).act(slots[rows], obs_np[rows], mask_np[rows])
        for i in np.flatnonzero(~compiled).tolist():
            g = int(games[i])
            bot = self.bots_for(g, self.bot_name[g])[seat[g]]
            # Python bots get the AEC env's float32 observation; the batched env's are bytes.
            observation = obs_np[i].astype(np.float32)
            picked[i] = bot.act({"observation": observation, "action_mask": mask_np[i]})
        return torch.from_numpy(picked).to(obs.device)
