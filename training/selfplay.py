"""Self-play PPO on the batched engine: ``python -m training.selfplay``.

One network plays every seat. Each episode of each of the ``env.num_games`` parallel
games draws who it plays against (``opponents`` in the config):

- ``current``: every seat is the learning network, and every seat's decisions are trained on;
- ``past``: one seat is the learner, the others a snapshot from a pool of earlier weights
  (so the learner keeps beating what it used to be, instead of chasing its own tail);
- ``bots``: one seat is the learner, the others heuristic bots from
  :mod:`loveletter_env.agents` (they act in Python, one game at a time: keep their share small).

Each iteration collects a rollout, computes advantages over each seat's own decisions
(:func:`training.ppo.compute_gae`), runs :func:`training.ppo.ppo_update`, and every so
often evaluates against the bots with :func:`training.evaluate.evaluate` and saves.

Outputs in ``<out_dir>/<run_name>/``: ``config.yaml``, ``latest.pt``, ``best.pt`` (best
evaluation), ``snapshots/update_<n>.pt``, ``metrics.csv``, ``tb/`` (TensorBoard) and
``learning_curve.png``. ``--resume <run folder>`` continues from ``latest.pt``.
"""

from __future__ import annotations

import argparse
import copy
import csv
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tqdm import tqdm

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE

from .checkpoint import CheckpointError, build_model, load_checkpoint, model_payload, save_checkpoint
from .config import ConfigError, TrainConfig, from_dict, load_config, save_config, to_dict
from .ppo import (
    ActorCritic,
    PolicyAgent,
    RolloutBatch,
    action_log_prob,
    compute_gae,
    learning_rate,
    ppo_update,
    sample_actions,
)

#: Opponent kinds of a game's episode (indices into ``KIND_NAMES``).
CURRENT, PAST, BOTS = 0, 1, 2
KIND_NAMES = ("current", "past", "bots")
MAX_SEATS = 4
#: Config keys that say where a run executes, not what it computes: --resume may change them.
MACHINE_KEYS = ("device", "torch_threads")

EnvFactory = Callable[..., Any]


def pick_device(name: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' was requested but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(name)


def default_env_factory(**kwargs: Any) -> Any:
    """The batched engine (imported lazily so the rest of this module loads without it)."""
    from loveletter_env.batched import BatchedLoveLetter

    return BatchedLoveLetter(**kwargs)


def derive_seed(*parts: int) -> int:
    """A 63-bit seed mixed from several integers (run seed, stream id, update...)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


# ---------------------------------------------------------------------------------
# Opponent pool
# ---------------------------------------------------------------------------------
class OpponentPool:
    """Earlier weights of the learner, kept on the CPU, oldest first.

    Only one snapshot plays per rollout (drawn uniformly), so the rollout needs a single
    extra forward pass per step whatever the pool size.
    """

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.labels: list[int] = []  # the update each snapshot was taken at

    def __len__(self) -> int:
        return len(self.snapshots)

    def add(self, model: torch.nn.Module, label: int) -> None:
        self.snapshots.append({k: v.detach().cpu().clone() for k, v in model.state_dict().items()})
        self.labels.append(label)
        if len(self.snapshots) > self.max_size:
            self.snapshots.pop(0)
            self.labels.pop(0)

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(len(self.snapshots)))

    def state(self) -> dict[str, Any]:
        return {"snapshots": self.snapshots, "labels": self.labels}

    def load_state(self, state: dict[str, Any]) -> None:
        self.snapshots = list(state["snapshots"])
        self.labels = [int(x) for x in state["labels"]]


# ---------------------------------------------------------------------------------
# Rollout buffer: learner decisions linked per (game, seat)
# ---------------------------------------------------------------------------------
class RolloutBuffer:
    """Learner decisions of one rollout, in the order they were made.

    ``pending[g, s]`` is the index of seat ``s``'s latest decision in game ``g`` whose
    outcome is still open. The seat's next decision becomes its successor
    (``next_index``); the end of the episode closes it with the seat's reward.
    """

    def __init__(self, capacity: int, num_games: int, device: torch.device):
        self.obs = torch.zeros(capacity, OBSERVATION_SIZE, device=device)
        self.masks = torch.zeros(capacity, NUM_ACTIONS, dtype=torch.bool, device=device)
        self.actions = torch.zeros(capacity, dtype=torch.long, device=device)
        self.logprobs = torch.zeros(capacity, device=device)
        self.values = torch.zeros(capacity, device=device)
        self.rewards = torch.zeros(capacity, device=device)
        self.terminal = torch.zeros(capacity, dtype=torch.bool, device=device)
        self.next_index = torch.full((capacity,), -1, dtype=torch.long, device=device)
        self.pending = torch.full((num_games, MAX_SEATS), -1, dtype=torch.long, device=device)
        self.size = 0

    def add(self, games, seats, obs, masks, actions, logprobs, values) -> None:
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
            obs=self.obs[:n][keep], masks=self.masks[:n][keep], actions=self.actions[:n][keep],
            logprobs=self.logprobs[:n][keep], values=self.values[:n][keep],
            advantages=adv[keep], returns=ret[keep],
        )


# ---------------------------------------------------------------------------------
# Metrics: CSV, TensorBoard, plot
# ---------------------------------------------------------------------------------
TRAIN_COLUMNS = (
    "update", "global_step", "elapsed_s", "turns_per_s", "learning_rate", "learner_decisions",
    "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance",
    "win_rate_vs_past", "win_rate_vs_bots", "episodes",
)


class MetricsLog:
    """One CSV row per update (evaluation columns filled when an evaluation ran) and the
    same scalars in TensorBoard."""

    def __init__(self, run_dir: Path, eval_opponents: Sequence[str], resume_update: int | None):
        self.path = run_dir / "metrics.csv"
        self.columns = list(TRAIN_COLUMNS)
        for name in eval_opponents:
            self.columns += [f"eval_win_rate_{name}", f"eval_ci95_low_{name}", f"eval_ci95_high_{name}"]
        rows: list[dict[str, str]] = []
        if resume_update is not None and self.path.exists():
            # Rows written after the checkpoint we resume from would be repeated: drop them.
            with self.path.open(newline="") as f:
                rows = [r for r in csv.DictReader(f) if int(r["update"]) <= resume_update]
        self._file = self.path.open("w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns)
        self._writer.writeheader()
        self._writer.writerows(rows)
        self._file.flush()
        from torch.utils.tensorboard import SummaryWriter

        self.tb = SummaryWriter(str(run_dir / "tb"), purge_step=None if resume_update is None else resume_update + 1)

    def write(self, row: dict[str, Any]) -> None:
        self._writer.writerow({k: row.get(k, "") for k in self.columns})
        self._file.flush()
        step = int(row["global_step"])
        for key, value in row.items():
            if key not in ("update", "global_step") and isinstance(value, (int, float)) and math.isfinite(value):
                group = "eval" if key.startswith("eval_") else "train"
                self.tb.add_scalar(f"{group}/{key}", value, step)

    def close(self) -> None:
        self._file.close()
        self.tb.close()


def plot_learning_curve(csv_path: Path, png_path: Path) -> Path | None:
    """PNG of evaluation win rates, training win rates and policy entropy against turns played."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with csv_path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None

    def plot(ax: Any, key: str, **kwargs: Any) -> None:
        pts = [(float(r["global_step"]), float(r[key])) for r in rows if r.get(key) not in (None, "", "nan")]
        if pts:
            ax.plot(*zip(*pts), **kwargs)

    fig, (ax_eval, ax_train, ax_ent) = plt.subplots(1, 3, figsize=(15, 4))
    for key in [c for c in rows[0] if c.startswith("eval_win_rate_")]:
        name = key.removeprefix("eval_win_rate_")
        plot(ax_eval, key, marker="o", label=f"vs {name}")
        band = [(float(r["global_step"]), float(r[f"eval_ci95_low_{name}"]), float(r[f"eval_ci95_high_{name}"]))
                for r in rows if r.get(key) not in (None, "")]
        if band:
            ax_eval.fill_between(*zip(*band), alpha=0.2, color=ax_eval.lines[-1].get_color())
    ax_eval.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax_eval.set(title="evaluation win rate", xlabel="turns played", ylim=(0, 1))
    for key in ("win_rate_vs_past", "win_rate_vs_bots"):
        plot(ax_train, key, label=key.replace("_", " "))
    ax_train.set(title="training win rate (learner seat)", xlabel="turns played", ylim=(0, 1))
    plot(ax_ent, "entropy")
    ax_ent.set(title="policy entropy (legal actions)", xlabel="turns played")
    for ax in (ax_eval, ax_train):
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path


# ---------------------------------------------------------------------------------
# The trainer
# ---------------------------------------------------------------------------------
@dataclass
class EvalResult:
    """Win rate of the learner's seat against one opponent, with its 95% (Wilson) interval."""

    win_rate: float
    ci95: tuple[float, float]
    rounds: int


class SelfPlayTrainer:
    """Runs a :class:`~training.config.TrainConfig`: rollouts, PPO updates, evaluation, checkpoints.

    Args:
        config: the run's config (validated).
        run_dir: output folder (created).
        resume: continue from ``run_dir/latest.pt``.
        pool: a ready-made opponent pool; with ``grow_pool=False`` it stays frozen (the
            exploitability tool trains against one fixed checkpoint this way).
        grow_pool: add snapshots of the learner every ``opponents.snapshot_every`` updates.
        env_factory: builds the batched env from ``BatchedLoveLetter``'s keyword arguments.
        progress: show a tqdm progress bar.
    """

    def __init__(
        self,
        config: TrainConfig,
        run_dir: str | Path,
        resume: bool = False,
        pool: OpponentPool | None = None,
        grow_pool: bool = True,
        env_factory: EnvFactory = default_env_factory,
        progress: bool = True,
    ):
        self.config = config.validate()
        self.run_dir = Path(run_dir)
        self.device = pick_device(config.device)
        self.env_factory = env_factory
        self.progress = progress
        self.grow_pool = grow_pool
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)

        seed = config.seed
        self.model = ActorCritic(config.model.hidden_sizes, generator=torch.Generator().manual_seed(seed)).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.ppo.learning_rate, eps=1e-5)
        # Separate streams: acting (on the rollout device), minibatch order, opponent draws.
        self.act_gen = torch.Generator(device=self.device).manual_seed(derive_seed(seed, 1))
        self.update_gen = torch.Generator().manual_seed(derive_seed(seed, 2))
        self.rng = np.random.default_rng(derive_seed(seed, 3))
        self.pool = pool if pool is not None else OpponentPool(config.opponents.pool_size)
        self.opponent_model = copy.deepcopy(self.model).eval()
        self.update = 0
        self.global_step = 0
        self.best_score = -math.inf
        self.last_eval: dict[str, EvalResult] = {}

        if resume:
            self._restore(load_checkpoint(self.run_dir / "latest.pt", map_location="cpu"))
        else:
            if config.model.init_from:
                self._initialise_from(config.model.init_from)
            if len(self.pool) == 0:  # the starting weights are the first past opponent
                self.pool.add(self.model, label=0)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        save_config(config, self.run_dir / "config.yaml")

    # -- state -----------------------------------------------------------------------
    def _training_state(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "act_generator": self.act_gen.get_state(),
            "act_device": self.device.type,
            "update_generator": self.update_gen.get_state(),
            "numpy_rng": self.rng.bit_generator.state,
            "pool": self.pool.state(),
            "best_score": self.best_score,
        }

    def _restore(self, ckpt: dict[str, Any]) -> None:
        saved, current = to_dict(from_dict(TrainConfig, ckpt["config"])), to_dict(self.config)
        for key in MACHINE_KEYS:  # where it runs does not change what the run is
            saved.pop(key), current.pop(key)
        if saved != current:
            raise ConfigError(
                "the config differs from the one the checkpoint was trained with; resume with the run's own config.yaml"
            )
        if "training" not in ckpt:
            raise CheckpointError("this checkpoint was exported without its training state and cannot be resumed")
        state = ckpt["training"]
        self.model.load_state_dict(build_model(ckpt).state_dict())
        self.optimizer.load_state_dict(state["optimizer"])
        if state["act_device"] == self.device.type:
            self.act_gen.set_state(state["act_generator"])
        else:  # CPU and CUDA generators have different states: start a fresh stream
            self.act_gen.manual_seed(derive_seed(self.config.seed, 1, int(ckpt["update"])))
        self.update_gen.set_state(state["update_generator"])
        self.rng.bit_generator.state = state["numpy_rng"]
        self.pool.load_state(state["pool"])
        self.best_score = float(state["best_score"])
        self.update = int(ckpt["update"])
        self.global_step = int(ckpt["global_step"])

    def _initialise_from(self, path: str) -> None:
        source = load_checkpoint(path)
        if list(source["model"]["hidden_sizes"]) != list(self.config.model.hidden_sizes):
            raise ConfigError(
                f"model.init_from {path!r} has hidden_sizes {source['model']['hidden_sizes']}, "
                f"but model.hidden_sizes is {self.config.model.hidden_sizes}"
            )
        self.model.load_state_dict(build_model(source).state_dict())

    def checkpoint_payload(self, with_training_state: bool = True) -> dict[str, Any]:
        payload = {
            "model": model_payload(self.model),
            "config": to_dict(self.config),
            "update": self.update,
            "global_step": self.global_step,
            "evaluation": {k: {"win_rate": v.win_rate, "ci95": list(v.ci95), "rounds": v.rounds}
                           for k, v in self.last_eval.items()},
        }
        if with_training_state:
            payload["training"] = self._training_state()
        return payload

    def save(self) -> None:
        """``latest.pt`` (everything resume needs) and a weights-only numbered snapshot."""
        save_checkpoint(self.run_dir / "latest.pt", self.checkpoint_payload())
        save_checkpoint(self.run_dir / "snapshots" / f"update_{self.update:05d}.pt",
                        self.checkpoint_payload(with_training_state=False))

    # -- seating ---------------------------------------------------------------------
    def _draw_seating(self, games: np.ndarray) -> None:
        """Redraw opponent kind, learner seat and bots for ``games`` (new episodes)."""
        o = self.config.opponents
        weights = np.array([o.current, o.past if len(self.pool) else 0.0, o.bots], dtype=float)
        if weights.sum() == 0:  # only "past" was asked for and the pool is empty
            weights[CURRENT] = 1.0
        kinds = self.rng.choice(3, size=len(games), p=weights / weights.sum())
        seats = self.rng.integers(0, self.num_players_np[games])
        self.kind[games] = kinds
        self.learner_seat[games] = seats
        for g, kind in zip(games.tolist(), kinds.tolist()):
            if kind == BOTS:
                name = o.bot_names[int(self.rng.integers(len(o.bot_names)))]
                self.bot_name[g] = name
                for bot in self._bots_for(g, name):
                    if hasattr(bot, "reset"):
                        bot.reset()

    def _bots_for(self, game: int, name: str) -> list[Any]:
        """One bot per seat (bots remember things about their own seat within a round)."""
        key = (game, name)
        if key not in self.bots:
            from loveletter_env.agents import make_agent

            self.bots[key] = [
                make_agent(name, seed=derive_seed(self.config.seed, 4, game, seat)) for seat in range(MAX_SEATS)
            ]
        return self.bots[key]

    # -- rollout ---------------------------------------------------------------------
    def _make_env(self) -> None:
        env_cfg = self.config.env
        n = env_cfg.num_games
        sizes = [env_cfg.num_players[i % len(env_cfg.num_players)] for i in range(n)]
        self.env = self.env_factory(
            num_games=n, num_players=sizes, rules=env_cfg.rules, episode=env_cfg.episode,
            device=str(self.device), seed=derive_seed(self.config.seed, 5, self.update),
        )
        self.num_players_np = np.array(sizes)
        self.kind = np.zeros(n, dtype=np.int64)
        self.learner_seat = np.zeros(n, dtype=np.int64)
        self.bot_name: list[str] = [""] * n
        self.bots: dict[tuple[int, str], list[Any]] = {}
        self._draw_seating(np.arange(n))
        self.obs, self.mask = self.env.reset()

    @torch.no_grad()
    def collect_rollout(self) -> tuple[RolloutBuffer, dict[str, float]]:
        """Play ``rollout_steps`` turns in every game; return the learner's decisions."""
        cfg = self.config.env
        n, device = cfg.num_games, self.device
        buffer = RolloutBuffer(n * cfg.rollout_steps, n, device)
        if len(self.pool):
            self.opponent_model.load_state_dict(self.pool.snapshots[self.pool.sample(self.rng)])
        game_ids = torch.arange(n, device=device)
        wins = {PAST: [0, 0], BOTS: [0, 0]}  # [wins, episodes] of the learner seat
        episodes = 0
        self.model.eval()
        for _ in range(cfg.rollout_steps):
            obs, mask = self.obs, self.mask
            seat_t = self.env.current_player.to(device)
            seat = seat_t.cpu().numpy()
            learner = (self.kind == CURRENT) | (seat == self.learner_seat)
            snapshot = (self.kind == PAST) & ~learner
            bot = (self.kind == BOTS) & ~learner
            actions = torch.zeros(n, dtype=torch.long, device=device)

            rows = torch.from_numpy(np.flatnonzero(learner)).to(device)
            if rows.numel():
                logits, values = self.model(obs[rows])
                chosen = sample_actions(logits, mask[rows], self.act_gen)
                actions[rows] = chosen
                buffer.add(game_ids[rows], seat_t[rows], obs[rows], mask[rows], chosen,
                           action_log_prob(logits, mask[rows], chosen), values)
            if snapshot.any():
                rows = torch.from_numpy(np.flatnonzero(snapshot)).to(device)
                logits, _ = self.opponent_model(obs[rows])
                actions[rows] = sample_actions(logits, mask[rows], self.act_gen, greedy=self.config.opponents.past_greedy)
            if bot.any():
                rows = torch.from_numpy(np.flatnonzero(bot)).to(device)
                actions[rows] = self._bot_actions(rows.cpu().numpy(), seat, obs[rows], mask[rows])

            self.obs, self.mask, rewards, dones, _ = self.env.step(actions)
            self.global_step += n
            if dones.any():
                done_t = dones.nonzero().squeeze(-1)
                buffer.close_episodes(done_t, rewards[done_t].to(device))
                done = done_t.cpu().numpy()
                episodes += len(done)
                learner_reward = rewards[done_t].cpu().numpy()[np.arange(len(done)), self.learner_seat[done]]
                for kind in (PAST, BOTS):
                    sel = self.kind[done] == kind
                    wins[kind][0] += int((learner_reward[sel] > 0).sum())
                    wins[kind][1] += int(sel.sum())
                self._draw_seating(done)  # the finished games start new episodes: new opponents
        stats = {
            "win_rate_vs_past": wins[PAST][0] / wins[PAST][1] if wins[PAST][1] else float("nan"),
            "win_rate_vs_bots": wins[BOTS][0] / wins[BOTS][1] if wins[BOTS][1] else float("nan"),
            "episodes": episodes,
        }
        return buffer, stats

    def _bot_actions(self, games: np.ndarray, seat: np.ndarray, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Bots act one game at a time in Python, on the observation dict of their own seat."""
        obs_np, mask_np = obs.cpu().numpy(), mask.cpu().numpy().astype(np.int8)
        picked = [
            self._bots_for(g, self.bot_name[g])[seat[g]].act({"observation": o, "action_mask": m})
            for g, o, m in zip(games.tolist(), obs_np, mask_np)
        ]
        return torch.tensor(picked, dtype=torch.long, device=obs.device)

    # -- evaluation ------------------------------------------------------------------
    def evaluate(self) -> dict[str, EvalResult]:
        """Win rate of the current weights against each ``eval.opponents`` bot, through
        :func:`training.evaluate.evaluate` (seats rotated by that tool)."""
        from loveletter_env.agents import make_agent

        from .evaluate import evaluate

        cfg = self.config.eval
        model = copy.deepcopy(self.model).to("cpu").eval()
        results = {}
        for i, name in enumerate(cfg.opponents):
            learner = PolicyAgent(model, greedy=cfg.greedy, seed=derive_seed(self.config.seed, 6, self.update))
            others = [make_agent(name, seed=derive_seed(self.config.seed, 7, self.update, i, k))
                      for k in range(cfg.num_players - 1)]
            res = evaluate([learner, *others], num_players=cfg.num_players, rounds=cfg.rounds, episode="round",
                           seed=derive_seed(self.config.seed, 8, self.update, i) % 2**32, progress=False,
                           rules=self.config.env.rules)
            low, high = res.ci95[0]
            results[name] = EvalResult(float(res.win_rate[0]), (float(low), float(high)), cfg.rounds)
        return results

    # -- main loop -------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run until ``total_steps`` turns; return a summary (final step, evaluation, paths)."""
        cfg = self.config
        resume_update = self.update if self.update else None
        log = MetricsLog(self.run_dir, cfg.eval.opponents if cfg.eval.every else [], resume_update)
        self._make_env()
        bar = tqdm(total=cfg.total_steps, initial=min(self.global_step, cfg.total_steps), unit="turn",
                   unit_scale=True, dynamic_ncols=True, disable=not self.progress, desc=cfg.run_name)
        start, start_step = time.perf_counter(), self.global_step
        try:
            while self.global_step < cfg.total_steps:
                lr = learning_rate(cfg.ppo, self.global_step / cfg.total_steps)
                for group in self.optimizer.param_groups:
                    group["lr"] = lr
                buffer, roll_stats = self.collect_rollout()
                batch = buffer.batch(cfg.ppo.gamma, cfg.ppo.gae_lambda)
                bar.update(min(self.global_step, cfg.total_steps) - bar.n)
                if len(batch) == 0:
                    continue  # rollouts this short resolved no decision yet: nothing to learn from
                self.model.train()
                stats = ppo_update(self.model, self.optimizer, batch, cfg.ppo, self.update_gen)
                self.update += 1
                bar.update(min(self.global_step, cfg.total_steps) - bar.n)

                if self.grow_pool and self.update % cfg.opponents.snapshot_every == 0:
                    self.pool.add(self.model, label=self.update)
                finished = self.global_step >= cfg.total_steps
                row: dict[str, Any] = {
                    "update": self.update, "global_step": self.global_step,
                    "elapsed_s": round(time.perf_counter() - start, 2),
                    "turns_per_s": round((self.global_step - start_step) / (time.perf_counter() - start), 1),
                    "learning_rate": lr, "learner_decisions": len(batch), **roll_stats, **stats,
                }
                if cfg.eval.every and (self.update % cfg.eval.every == 0 or finished):
                    self.last_eval = self.evaluate()
                    for name, res in self.last_eval.items():
                        row[f"eval_win_rate_{name}"] = res.win_rate
                        row[f"eval_ci95_low_{name}"], row[f"eval_ci95_high_{name}"] = res.ci95
                    bar.set_postfix({f"vs {k}": f"{v.win_rate:.0%}" for k, v in self.last_eval.items()})
                    score = self.last_eval[cfg.eval.best_by].win_rate
                    if score > self.best_score:
                        self.best_score = score
                        save_checkpoint(self.run_dir / "best.pt", self.checkpoint_payload(with_training_state=False))
                log.write(row)
                if self.update % cfg.save_every == 0 or finished:
                    self.save()
        finally:
            bar.close()
            log.close()
        plot = plot_learning_curve(log.path, self.run_dir / "learning_curve.png")
        elapsed = time.perf_counter() - start
        return {
            "run_dir": str(self.run_dir),
            "update": self.update,
            "global_step": self.global_step,
            "turns_per_s": (self.global_step - start_step) / elapsed if elapsed > 0 else float("nan"),
            "evaluation": {k: vars(v) for k, v in self.last_eval.items()},
            "plot": str(plot) if plot else None,
        }


# ---------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.selfplay",
        description="Train a Love Letter agent by masked self-play PPO on the batched engine.",
        epilog="Example: python -m training.selfplay --config configs/4p.yaml --set ppo.learning_rate=3e-4",
    )
    parser.add_argument("--config", help="YAML config file (default: the built-in defaults, as configs/default.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted override, repeatable, e.g. --set ppo.learning_rate=3e-4 --set env.num_players=[2,3,4]")
    parser.add_argument("--run-name", help="shorthand for --set run_name=NAME")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), help="shorthand for --set device=...")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its latest.pt")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.resume:
            run_dir = Path(args.resume)
            if args.config or args.overrides or args.run_name:
                parser.error("--resume continues a run with its own config.yaml; drop --config/--set/--run-name")
            if not (run_dir / "latest.pt").is_file() or not (run_dir / "config.yaml").is_file():
                parser.error(f"--resume: {str(run_dir)!r} is not a run folder (needs config.yaml and latest.pt)")
            config = load_config(run_dir / "config.yaml", [f"device={args.device}"] if args.device else [])
        else:
            overrides = list(args.overrides)
            if args.run_name:
                overrides.append(f"run_name={args.run_name}")
            if args.device:
                overrides.append(f"device={args.device}")
            config = load_config(args.config, overrides)
            run_dir = Path(config.out_dir) / config.run_name
            if (run_dir / "latest.pt").exists():
                parser.error(f"{str(run_dir)!r} already holds a run: pass --resume {run_dir} or another --run-name")
        trainer = SelfPlayTrainer(config, run_dir, resume=bool(args.resume), progress=not args.no_progress)
    except (ConfigError, CheckpointError) as err:
        parser.error(str(err))
    summary = trainer.train()
    print(f"done: {summary['global_step']:,} turns in {summary['update']} updates "
          f"({summary['turns_per_s']:,.0f} turns/s); outputs in {summary['run_dir']}")
    for name, res in summary["evaluation"].items():
        low, high = res["ci95"]
        print(f"  vs {name}: win rate {res['win_rate']:.1%} (95% CI {low:.1%}-{high:.1%}) over {res['rounds']} rounds")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
