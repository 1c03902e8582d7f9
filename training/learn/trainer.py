"""The self-play trainer: rollouts, PPO updates, evaluations and checkpoints of one run.

:class:`SelfPlayTrainer` runs a :class:`~training.learn.config.TrainConfig`. Each iteration it
collects a rollout on the batched engine (the learner's decisions into a
:class:`~training.learn.rollout.RolloutBuffer`, the other seats played as
:class:`~training.learn.seating.Seating` draws them), computes advantages over each seat's own
decisions (:func:`training.learn.ppo.compute_gae`), runs :func:`training.learn.ppo.ppo_update`, and
every so often evaluates against the bots (:func:`training.measure.evaluation.evaluate`), logs
(:class:`~training.learn.metrics.MetricsLog`) and saves (:mod:`training.learn.checkpoint`).

Every piece of the trainer's state (network, optimizer, generators, pool, env, seating)
is created in ``__init__``; ``--resume`` restores it from ``latest.pt`` there too.
The command line is :mod:`training.learn.selfplay_command`.
"""

from __future__ import annotations

import copy
import math
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from tqdm import tqdm

from loveletter_env.agents import make_agent
from loveletter_env.observation import layout_name
from loveletter_env.validation import shown
from training.learn.checkpoint import CheckpointError, build_model, load_checkpoint, model_payload, save_checkpoint
from training.learn.config import ConfigError, TrainConfig, dotted_keys, from_dict, save_config, to_dict
from training.learn.interrupt import StopRequest
from training.learn.metrics import MetricsLog, plot_learning_curve
from training.learn.policy_agent import PolicyAgent
from training.learn.ppo import (
    ActorCritic,
    entropy_coef,
    learning_rate,
    ppo_update,
    sample_actions,
    sample_with_log_prob,
)
from training.learn.rollout import RolloutBatch, RolloutBuffer
from training.learn.runtime import claim_run_folder, derive_seed, pick_device
from training.learn.seating import OpponentKind, OpponentPool, Seating
from training.learn.stopwatch import Stopwatch
from training.measure.evaluation import evaluate
from training.measure.plotting import load_plotting
from training.measure.stats import EvaluationResult

#: Config keys that say where a run executes, not what it computes: --resume may change them.
MACHINE_KEYS = ("device", "torch_threads", "tf32")
#: torch's thread count when this module was imported: what ``torch_threads: 0`` means.
_STARTING_THREADS = torch.get_num_threads()

EnvFactory = Callable[..., Any]


def default_env_factory(rules: list[str], rules_weights: list[float] | None = None, **kwargs: Any) -> Any:
    """The batched engine (imported lazily so the rest of this module loads without it): one
    :class:`~loveletter_env.batched.BatchedLoveLetter` for one rule set, a
    :class:`~loveletter_env.batched.mixed.MixedRulesBatched` for a curriculum of several."""
    from loveletter_env.batched import BatchedLoveLetter
    from loveletter_env.batched.mixed import MixedRulesBatched

    if len(rules) == 1:
        return BatchedLoveLetter(rules=rules[0], **kwargs)
    return MixedRulesBatched(rules=rules, weights=rules_weights, **kwargs)


class _Start(NamedTuple):
    """When a call to ``train`` began: wall clock, process CPU time and turn count, and the
    training seconds (wall, CPU) the run had saved before it (non-zero when it resumes)."""

    wall: float
    cpu: float
    step: int
    elapsed_before: float = 0.0
    cpu_before: float = 0.0


def evaluation_line(update: int, global_step: int, results: dict[str, EvaluationResult]) -> str:
    """The learner's evaluation in one line (what a run without a progress bar prints)."""
    figures = ", ".join(
        f"vs {name} {res.win_rate[0]:.1%} ({res.ci95[0][0]:.1%}-{res.ci95[0][1]:.1%})" for name, res in results.items()
    )
    return f"update {update} ({global_step:,} turns): win rate {figures}"


class SelfPlayTrainer:
    """Runs a :class:`~training.learn.config.TrainConfig`: rollouts, PPO updates, evaluation, checkpoints.

    The trainer owns ``run_dir`` (:func:`training.learn.runtime.claim_run_folder`) from its creation
    until :meth:`train` returns, or until :meth:`release` for a trainer that never trains.

    Args:
        config: the run's config (validated).
        run_dir: output folder (created). :class:`~training.learn.runtime.RunFolderError` if it
            cannot be written, another run owns it, or (unless ``resume``) it holds a run.
        resume: continue from ``run_dir/latest.pt``.
        pool: a ready-made opponent pool; with ``grow_pool=False`` it stays frozen (the
            exploitability tool trains against one fixed checkpoint this way).
        grow_pool: add snapshots of the learner every ``opponents.snapshot_every`` updates.
        env_factory: builds the batched env from ``BatchedLoveLetter``'s keyword arguments.
        progress: show a tqdm progress bar.
        after_update: called with the trainer after each PPO update (its ``global_step`` and
            ``model`` already moved on), before the update's metrics row; what it raises ends
            :meth:`train` (a hyperparameter search stops a hopeless trial so).
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
        after_update: Callable[[SelfPlayTrainer], None] | None = None,
    ):
        self.config = config.validate()
        self.after_update = after_update
        self.run_dir = Path(run_dir)
        self.device = pick_device(config.device)
        self.stopwatch = Stopwatch(self.device)
        self.env_factory = env_factory
        self.progress = progress
        self.interrupted = False  # set by train() when Ctrl-C or SIGTERM stopped it
        self.stop_signal: int = signal.SIGINT  # the signal that asked train() to stop
        self.grow_pool = grow_pool
        # Process-wide: 0 puts back the count the process started with, or a run after another
        # in the same process (a sweep's trials, a notebook) would inherit that run's count.
        torch.set_num_threads(config.torch_threads or _STARTING_THREADS)
        if self.device.type == "cuda":
            # Process-wide, like the thread count: TF32 products (config.tf32), or full float32.
            torch.backends.cuda.matmul.allow_tf32 = config.tf32
            torch.backends.cudnn.allow_tf32 = config.tf32

        seed = config.seed
        init_generator = torch.Generator().manual_seed(seed)
        self.model = ActorCritic(config.model.hidden_sizes, generator=init_generator).to(self.device)
        # On CUDA one fused kernel updates every parameter; the CPU keeps torch's default step.
        fused = True if self.device.type == "cuda" else None
        betas = (config.ppo.adam_beta1, config.ppo.adam_beta2)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=config.ppo.learning_rate, betas=betas, eps=1e-5, fused=fused
        )
        # Separate streams: acting (on the rollout device), minibatch order, opponent draws.
        self.act_gen = torch.Generator(device=self.device).manual_seed(derive_seed(seed, 1))
        self.update_gen = torch.Generator().manual_seed(derive_seed(seed, 2))
        self._stage_progress = 0.0  # how far into its schedule stage the current update is
        self.rng = np.random.default_rng(derive_seed(seed, 3))
        self.pool = pool if pool is not None else OpponentPool(config.opponents.pool_size)
        self.opponent_model = copy.deepcopy(self.model).eval()
        # The policy that ppo.magnet_coef pulls towards (magnetic mirror descent); it follows
        # the learner every ppo.magnet_every updates.
        self.magnet = copy.deepcopy(self.model).eval()
        # The running mean of the weights from model.average_from on: the run's final network.
        self.average = copy.deepcopy(self.model).eval()
        self.averaged_updates = 0
        self.update = 0
        self.global_step = 0
        self.best_score = -math.inf
        self.last_eval: dict[str, EvaluationResult] = {}
        self.buffer: RolloutBuffer | None = None  # the rollouts' storage, made by the first one

        # The folder is this trainer's from here until train() returns: checked writable, not
        # in use by another run and, for a new run, holding none to overwrite.
        # The starting weights are read first: a missing or foreign file leaves no folder behind.
        if not resume and config.model.init_from:
            self._initialise_from(config.model.init_from)
        self.run_lock = claim_run_folder(self.run_dir, resume=resume)
        try:
            if resume:
                self._restore(load_checkpoint(self.run_dir / "latest.pt", map_location="cpu"))
            else:
                if len(self.pool) == 0:  # the starting weights are the first past opponent
                    self.pool.add(self.model, label=0)
            save_config(config, self.run_dir / "config.yaml")
            # The keys of the schedule stage in force (the whole config when there is no schedule).
            self.stage = config.stage_index(self.global_step)
            self.active = config.at_step(self.global_step)
            self._make_env()
        except BaseException:
            self.run_lock.release()
            raise

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
            "magnet": self.magnet.state_dict(),
            # Only once it has begun: a run without model.average_from saves no second copy.
            **(
                {"average": self.average.state_dict(), "averaged_updates": self.averaged_updates}
                if self.averaged_updates
                else {}
            ),
        }

    def _restore(self, ckpt: dict[str, Any]) -> None:
        try:
            self._restore_state(ckpt)
        except (ConfigError, CheckpointError):
            raise
        except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as err:
            # A file whose digest holds but whose training state is of another shape (another
            # program's, or a hand-edited one): named, where a traceback would show a key.
            raise CheckpointError(
                f"the run's latest.pt holds no training state this version can resume ({type(err).__name__}: {err})"
            ) from None

    def _restore_state(self, ckpt: dict[str, Any]) -> None:
        saved, current = to_dict(from_dict(TrainConfig, ckpt["config"])), to_dict(self.config)
        for key in (*MACHINE_KEYS, "total_steps"):  # where it runs and how long do not change what the run is
            saved.pop(key), current.pop(key)
        if saved != current:
            was, now = dotted_keys(saved), dotted_keys(current)
            changed = [
                f"{key} {shown(was.get(key))} -> {shown(now.get(key))}" for key in was if was[key] != now.get(key)
            ]
            raise ConfigError(
                f"the config differs from the one the checkpoint was trained with ({'; '.join(changed)}); resume "
                "with the run's own config.yaml (only total_steps, device, torch_threads and tf32 may change)"
            )
        if self.config.total_steps <= int(ckpt["global_step"]):
            raise ConfigError(
                f"total_steps={self.config.total_steps:,} is not beyond the {int(ckpt['global_step']):,} turns "
                "this run has played: to extend it, pass --set total_steps=N with a larger N"
            )
        if "training" not in ckpt:
            raise CheckpointError("this checkpoint was exported without its training state and cannot be resumed")
        state = ckpt["training"]
        self.model.load_state_dict(self._trainable(ckpt, "the run's latest.pt").state_dict())
        # The saved groups carry the saving machine's choice of fused step; keep this machine's.
        fused = self.optimizer.defaults["fused"]
        optimizer_state = state["optimizer"]
        groups = [{**group, "fused": fused} for group in optimizer_state["param_groups"]]
        self.optimizer.load_state_dict({**optimizer_state, "param_groups": groups})
        if state["act_device"] == self.device.type:
            self.act_gen.set_state(state["act_generator"])
        else:  # CPU and CUDA generators have different states: start a fresh stream
            self.act_gen.manual_seed(derive_seed(self.config.seed, 1, int(ckpt["update"])))
        self.update_gen.set_state(state["update_generator"])
        self.rng.bit_generator.state = state["numpy_rng"]
        self.pool.load_state(state["pool"], list(self.config.model.hidden_sizes), ckpt["observation_version"])
        self.best_score = float(state["best_score"])
        self.magnet.load_state_dict(state["magnet"] if "magnet" in state else self.model.state_dict())
        self.averaged_updates = int(state.get("averaged_updates", 0))
        start = self.config.model.average_from
        if start is not None and int(ckpt["global_step"]) < start * self.config.total_steps:
            # Extended so far that the mean's window now starts later: the mean begins again
            # there, one unbroken stretch of the run's last updates, not the old window's
            # updates and then the new one's.
            self.averaged_updates = 0
        if self.averaged_updates:
            self.average.load_state_dict(state["average"])
        self.update = int(ckpt["update"])
        self.global_step = int(ckpt["global_step"])

    def _initialise_from(self, path: str) -> None:
        source = load_checkpoint(path)
        if list(source["model"]["hidden_sizes"]) != list(self.config.model.hidden_sizes):
            raise ConfigError(
                f"model.init_from {path!r} has hidden_sizes {source['model']['hidden_sizes']}, "
                f"but model.hidden_sizes is {self.config.model.hidden_sizes}"
            )
        self.model.load_state_dict(self._trainable(source, f"model.init_from {path!r}").state_dict())
        self.magnet.load_state_dict(self.model.state_dict())

    def _trainable(self, ckpt: dict[str, Any], what: str) -> ActorCritic:
        """The network of ``ckpt`` (named ``what`` in messages), refused unless it reads the
        observation layout training feeds: older layouts play, but a network's input layer
        cannot grow into a new layout's entries."""
        model = build_model(ckpt)
        if model.observation_version != self.model.observation_version:
            raise ConfigError(
                f"{what} holds a network trained on {layout_name(model.obs_size)}, but training uses "
                f"{layout_name(self.model.obs_size)}: such a network still plays (evaluate, play, export), "
                "but training it further needs a new run"
            )
        return model

    def checkpoint_payload(self, with_training_state: bool = True, model: ActorCritic | None = None) -> dict[str, Any]:
        """The checkpoint of the run as it stands: the training weights (or ``model``'s), the
        config and where the run is; with ``with_training_state``, all that resume needs."""
        payload = {
            "model": model_payload(self.model if model is None else model),
            "config": to_dict(self.config),
            "update": self.update,
            "global_step": self.global_step,
            "evaluation": {k: v.slot_figures(0, ci_as_list=True) for k, v in self.last_eval.items()},
        }
        if with_training_state:
            payload["training"] = self._training_state()
        return payload

    def save(self) -> None:
        """``latest.pt`` (everything resume needs) and a weights-only numbered snapshot; once
        ``model.average_from`` has begun, also the running mean as it stands (``mean_<n>.pt``),
        so that ``python -m training.curve --mean`` follows what ``result.pt`` would have been."""
        save_checkpoint(self.run_dir / "latest.pt", self.checkpoint_payload())
        snapshots = self.run_dir / "snapshots"
        save_checkpoint(snapshots / f"update_{self.update:05d}.pt", self.checkpoint_payload(with_training_state=False))
        if self.averaged_updates:
            save_checkpoint(snapshots / f"mean_{self.update:05d}.pt", self.final_payload())

    # -- rollout ---------------------------------------------------------------------
    def _make_env(self) -> None:
        """Start fresh games (the env's seed follows the update, so a resumed run gets new deals)."""
        env_cfg = self.active.env
        n = env_cfg.num_games
        sizes = [env_cfg.num_players[i % len(env_cfg.num_players)] for i in range(n)]
        self.env = self.env_factory(
            num_games=n,
            num_players=sizes,
            rules=env_cfg.rules,
            rules_weights=env_cfg.rules_weights,
            episode=env_cfg.episode,
            device=str(self.device),
            seed=derive_seed(self.config.seed, 5, self.update),
        )
        self.seating = Seating(self.active.opponents, np.array(sizes), self.config.seed)
        self.seating.draw(np.arange(n), self.rng, len(self.pool))
        self.obs, self.mask = self.env.reset()

    def _rollout_buffer(self) -> RolloutBuffer:
        """The trainer's one buffer, emptied; allocated again only when a schedule stage
        changes the number of games or turns."""
        cfg = self.active.env
        capacity, n = cfg.num_games * cfg.rollout_steps, cfg.num_games
        if self.buffer is None or not self.buffer.fits(capacity, n, self.device):
            self.buffer = None  # let the old one go before the new one takes its memory
            self.buffer = RolloutBuffer(capacity, n, self.device)
        self.buffer.reset()
        return self.buffer

    @torch.no_grad()
    def collect_rollout(self) -> tuple[RolloutBuffer, dict[str, float]]:
        """Play ``rollout_steps`` turns in every game; return the learner's decisions.

        The buffer returned is the trainer's own, overwritten by the next rollout."""
        buffer = self._rollout_buffer()
        if len(self.pool):
            self.opponent_model = self.pool.build(self.pool.sample(self.rng), into=self.opponent_model)
        self.model.eval()
        opponents = self.active.opponents
        if opponents.past == 0 and opponents.bots == 0:
            return buffer, self._self_play_rollout(buffer)
        return buffer, self._mixed_rollout(buffer)

    def _self_play_rollout(self, buffer: RolloutBuffer) -> dict[str, float]:
        """The rollout of a table where the learner holds every seat: every game's decision
        is the learner's, so each turn is one forward pass over all games and one contiguous
        block of the buffer, and nothing waits for the device.

        Each turn's observations and masks are kept once: the env writes them straight into
        the block of the buffer that the next turn's decisions fill (the last turn's into the
        trainer's own ``obs`` and ``mask``, which the next rollout's first block copies), and
        builds no ``info``. The finished games are read back once, at the end, to redraw
        their seating in the order the turns ended them (the draws use the run's numpy
        generator, so the run stays the same as one that redraws after every turn)."""
        cfg = self.active.env
        n, device = cfg.num_games, self.device
        game_ids = torch.arange(n, device=device)
        ended = torch.zeros(cfg.rollout_steps, n, dtype=torch.bool, device=device)
        obs, mask = self.obs, self.mask
        for turn in range(cfg.rollout_steps):
            seat = self.env.current_player.to(device)
            with self.stopwatch("forward"):
                logits, values = self.model(obs)
                actions, logprobs = sample_with_log_prob(logits, mask, self.act_gen)
            buffer.add(game_ids, seat, obs, mask, actions, logprobs, values)
            rows = buffer.next_rows(n)
            obs, mask = rows if rows is not None else (self.obs, self.mask)
            with self.stopwatch("env"):
                _, _, rewards, dones, _ = self.env.step(actions, out=obs, mask_out=mask, info=False)
            self.global_step += n
            dones = dones.to(device)
            buffer.close_episodes(dones, rewards.to(device))
            ended[turn].copy_(dones)
        episodes = 0
        for done in ended.cpu().numpy():
            games = np.flatnonzero(done)
            if len(games):
                episodes += len(games)
                self.seating.draw(games, self.rng, len(self.pool))
        return {"win_rate_vs_past": float("nan"), "win_rate_vs_bots": float("nan"), "episodes": episodes}

    def _mixed_rollout(self, buffer: RolloutBuffer) -> dict[str, float]:
        """The rollout of a table with past networks or bots in some seats: each turn the
        learner's, the snapshot's and the bots' games are picked out on the host.

        It keeps only the learner's decisions: the observation, mask, action,
        log-probability and value of each game where the learner is to act. A past
        network's or a bot's action comes from another policy, which PPO's ratio cannot use,
        so those turns are played and dropped; their games still close the learner's open
        decisions when an episode ends. As the learner's games are another subset every
        turn, the env cannot write them into the buffer in place: it writes every game's
        next observation and mask over the trainer's own ``obs`` and ``mask`` (no fresh
        tensors, no ``info``), and the learner's rows are gathered once from those and
        copied into the buffer."""
        cfg = self.active.env
        n, device = cfg.num_games, self.device
        game_ids = torch.arange(n, device=device)
        past, bots = OpponentKind.PAST, OpponentKind.BOTS
        wins = {past: [0, 0], bots: [0, 0]}  # [wins, episodes] of the learner seat
        seating = self.seating
        episodes = 0
        for _ in range(cfg.rollout_steps):
            obs, mask = self.obs, self.mask
            seat_t = self.env.current_player.to(device)
            seat = seat_t.cpu().numpy()
            learner = (seating.kind == OpponentKind.CURRENT) | (seat == seating.learner_seat)
            snapshot = (seating.kind == past) & ~learner
            bot = (seating.kind == bots) & ~learner
            actions = torch.zeros(n, dtype=torch.long, device=device)

            mine = torch.from_numpy(np.flatnonzero(learner)).to(device)
            with self.stopwatch("forward"):
                if mine.numel():
                    my_obs, my_mask = obs[mine], mask[mine]
                    logits, values = self.model(my_obs)
                    chosen, logprobs = sample_with_log_prob(logits, my_mask, self.act_gen)
                    actions[mine] = chosen
                if snapshot.any():
                    rows = torch.from_numpy(np.flatnonzero(snapshot)).to(device)
                    logits, _ = self.opponent_model(obs[rows])
                    actions[rows] = sample_actions(
                        logits, mask[rows], self.act_gen, greedy=self.active.opponents.past_greedy
                    )
            if mine.numel():
                buffer.add(game_ids[mine], seat_t[mine], my_obs, my_mask, chosen, logprobs, values)
            if bot.any():
                with self.stopwatch("bots"):
                    rows = torch.from_numpy(np.flatnonzero(bot)).to(device)
                    actions[rows] = seating.bot_actions(rows.cpu().numpy(), seat, obs[rows], mask[rows])

            with self.stopwatch("env"):
                _, _, rewards, dones, _ = self.env.step(actions, out=self.obs, mask_out=self.mask, info=False)
            self.global_step += n
            if dones.any():
                done_t = dones.nonzero().squeeze(-1)
                buffer.close_episodes(dones.to(device), rewards.to(device))
                done = done_t.cpu().numpy()
                episodes += len(done)
                learner_reward = rewards[done_t].cpu().numpy()[np.arange(len(done)), seating.learner_seat[done]]
                for kind in (past, bots):
                    sel = seating.kind[done] == kind
                    wins[kind][0] += int((learner_reward[sel] > 0).sum())
                    wins[kind][1] += int(sel.sum())
                # The finished games start new episodes: new opponents.
                seating.draw(done, self.rng, len(self.pool))
        return {
            "win_rate_vs_past": wins[past][0] / wins[past][1] if wins[past][1] else float("nan"),
            "win_rate_vs_bots": wins[bots][0] / wins[bots][1] if wins[bots][1] else float("nan"),
            "episodes": episodes,
        }

    # -- evaluation ------------------------------------------------------------------
    def evaluate(self) -> dict[str, EvaluationResult]:
        """The current weights (slot 0) against each ``eval.opponents`` bot, through
        :func:`training.measure.evaluation.evaluate` (seats rotated by that tool)."""
        cfg = self.config.eval
        model = copy.deepcopy(self.model).to("cpu").eval()
        return {
            name: self._play_bots(model, name, cfg.rounds, derive_seed(self.config.seed, 8, self.update, i) % 2**32, i)
            for i, name in enumerate(cfg.opponents)
        }

    def _play_bots(self, model: torch.nn.Module, name: str, rounds: int, seed: int, index: int) -> EvaluationResult:
        """``model`` (slot 0) against ``eval.num_players - 1`` copies of bot ``name``."""
        cfg = self.config.eval
        learner = PolicyAgent(model, greedy=cfg.greedy, seed=derive_seed(self.config.seed, 6, self.update))
        others = [
            make_agent(name, seed=derive_seed(self.config.seed, 7, self.update, index, k))
            for k in range(cfg.num_players - 1)
        ]
        return evaluate(
            [learner, *others],
            num_players=cfg.num_players,
            rounds=rounds,
            episode="round",
            seed=seed,
            progress=False,
            rules=self.config.eval_rules,
            duplicate=cfg.duplicate,
        )

    def pick_result(self) -> dict[str, Any]:
        """Write ``result.pt``, the run's answer, and say how it was chosen.

        ``best.pt`` was picked on short evaluations, so it is often a lucky draw rather than
        a stronger network. When it is not the final weights, both play ``eval.final_rounds``
        more rounds against ``eval.best_by`` on the same fresh deals, and ``best.pt`` becomes
        the result only if it wins more of them; otherwise (and without evaluations) the
        final weights are the result.
        """
        cfg = self.config.eval
        final, payload = self.final_network(), self.final_payload()
        label = f"the mean of the last {self.averaged_updates} updates" if self.averaged_updates else "latest.pt"
        choice: dict[str, Any] = {"path": str(self.run_dir / "result.pt"), "source": label, "figures": {}}
        best_path = self.run_dir / "best.pt"
        if cfg.every and cfg.final_rounds and best_path.is_file():
            best = load_checkpoint(best_path)
            if int(best["update"]) != self.update or self.averaged_updates:
                seed = derive_seed(self.config.seed, 9, self.update) % 2**32
                candidates = {label: copy.deepcopy(final).to("cpu").eval(), "best.pt": build_model(best)}
                results = {
                    name: self._play_bots(model, cfg.best_by, cfg.final_rounds, seed, 0)
                    for name, model in candidates.items()
                }
                choice["figures"] = {name: res.slot_figures(0) for name, res in results.items()}
                if results["best.pt"].win_rate[0] > results[label].win_rate[0]:
                    choice["source"], payload = "best.pt", best
        save_checkpoint(self.run_dir / "result.pt", payload)
        return choice

    def _enter_stage(self) -> None:
        """Switch to the schedule stage due at the current turn count, if it changed: its
        opponents, table sizes and PPO settings apply from the next rollout, on fresh games."""
        stage = self.config.stage_index(self.global_step)
        if stage != self.stage:
            self.stage, self.active = stage, self.config.at_step(self.global_step)
            if not self.progress:
                print(f"update {self.update} ({self.global_step:,} turns): schedule stage {stage} begins", flush=True)
            self._make_env()

    # -- main loop -------------------------------------------------------------------
    def release(self) -> None:
        """Give up the run folder (:meth:`train` does when it returns)."""
        self.run_lock.release()

    def train(self) -> dict[str, Any]:
        """Run until ``total_steps`` turns; return a summary (final step, evaluation, paths).

        The run folder is released when this returns or raises.
        """
        self.run_lock.acquire()  # held already, unless an earlier train() released it
        try:
            return self._train()
        finally:
            self.release()

    def _train(self) -> dict[str, Any]:
        """The training loop: each update plays a rollout, learns from it, logs a row of
        metrics (with an evaluation when one is due) and saves when a save is due."""
        cfg = self.config
        log = self._open_log()
        bar = self._progress_bar()
        began = _Start(time.perf_counter(), time.process_time(), self.global_step, log.elapsed_before, log.cpu_before)
        load_plotting()  # the end-of-run plot then imports nothing while Ctrl-C is ours (load_plotting says why)
        # A first Ctrl-C (or SIGTERM) ends the run after the current update, saved; a second at once.
        stop = StopRequest("stopping after this update, which will be saved; press Ctrl-C again to stop at once")
        stop.install()
        try:
            while self.global_step < cfg.total_steps:
                lr = self._begin_update()
                with self.stopwatch("rollout"):
                    buffer, roll_stats = self.collect_rollout()
                    batch = buffer.batch(self.active.ppo.gamma, self.active.ppo.gae_lambda)
                bar.update(min(self.global_step, cfg.total_steps) - bar.n)
                if len(batch) == 0:  # rollouts this short resolved no decision yet: nothing to learn from
                    if stop.requested or self.global_step >= cfg.total_steps:
                        # The turns played since the last update still count: latest.pt holds
                        # them, so the run ends (or a resume starts) where the summary says.
                        self.save()
                    if stop.requested:
                        self.interrupted = True
                        break
                    continue
                stats = self._learn(batch)
                if self.after_update is not None:
                    self.after_update(self)
                bar.update(min(self.global_step, cfg.total_steps) - bar.n)
                finished = self.global_step >= cfg.total_steps
                row = self._metrics_row(began, lr, len(batch), {**roll_stats, **stats})
                if cfg.eval.every and (self.update % cfg.eval.every == 0 or finished):
                    row.update(self._evaluate_and_keep_best(bar))
                log.write(row)
                self._save_if_due(finished or stop.requested)
                if stop.requested:
                    self.interrupted = True
                    break
        finally:
            stop.uninstall()
            self.stop_signal = stop.signal or self.stop_signal
            bar.close()
            log.close()
        # A stop asked after the loop's last check (in the last update, whose end was saved)
        # still stops the run: its notice promised so, and a caller such as the sweep must
        # learn of it rather than go on to the next trial.
        self.interrupted = self.interrupted or stop.requested
        return self._summary(log, began)

    def _open_log(self) -> MetricsLog:
        """``metrics.csv``, continued from the saved update when the run resumes."""
        cfg = self.config
        opponents = cfg.eval.opponents if cfg.eval.every else []
        return MetricsLog(self.run_dir, opponents, self.update or None, resume_step=self.global_step)

    def _progress_bar(self) -> tqdm:
        cfg = self.config
        return tqdm(
            total=cfg.total_steps,
            initial=min(self.global_step, cfg.total_steps),
            unit="turn",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not self.progress,
            desc=cfg.run_name,
        )

    def _begin_update(self) -> float:
        """Enter the schedule stage due now and set its learning rate for this update; return it."""
        self._enter_stage()
        begin, end = self.config.stage_span(self.global_step)
        self._stage_progress = (self.global_step - begin) / (end - begin)
        lr = learning_rate(self.active.ppo, self._stage_progress)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def _learn(self, batch: RolloutBatch) -> dict[str, float]:
        """One PPO update on ``batch``; then the magnet and the opponent pool catch up when due."""
        ppo_cfg = self.active.ppo
        if ppo_cfg.ent_coef_end is not None:
            ppo_cfg = ppo_cfg.model_copy(update={"ent_coef": entropy_coef(ppo_cfg, self._stage_progress)})
        self.model.train()
        with self.stopwatch("update"):
            stats = ppo_update(self.model, self.optimizer, batch, ppo_cfg, self.update_gen, magnet=self.magnet)
        stats["ent_coef"] = ppo_cfg.ent_coef
        self.update += 1
        # Whether or not the magnet pulls now: a later stage that turns it on finds it no
        # older than magnet_every updates, not the weights the run started from.
        if self.update % ppo_cfg.magnet_every == 0:
            self.magnet.load_state_dict(self.model.state_dict())
        self._take_into_average()
        if self.grow_pool and self.update % self.active.opponents.snapshot_every == 0:
            self.pool.add(self.model, label=self.update)
        return stats

    @torch.no_grad()
    def _take_into_average(self) -> None:
        """Add the weights of this update to the running mean, once ``model.average_from`` of
        the run has been played (the first such update starts the mean afresh)."""
        start = self.config.model.average_from
        if start is None or self.global_step < start * self.config.total_steps:
            return
        self.averaged_updates += 1
        weight = 1.0 / self.averaged_updates
        for mean, now in zip(self.average.state_dict().values(), self.model.state_dict().values()):
            if mean.is_floating_point():
                mean.add_(now - mean, alpha=weight)
            else:
                mean.copy_(now)

    def final_network(self) -> ActorCritic:
        """The run's final network: the mean of the averaged updates' weights when
        ``model.average_from`` has begun, else the training weights."""
        return self.average if self.averaged_updates else self.model

    def final_payload(self) -> dict[str, Any]:
        """The checkpoint of :meth:`final_network`; a mean also records how many updates'
        weights it averages (``averaged_updates``), which later windows of the mean need."""
        payload = self.checkpoint_payload(with_training_state=False, model=self.final_network())
        if self.averaged_updates:
            payload["averaged_updates"] = self.averaged_updates
        return payload

    def _metrics_row(self, began: _Start, lr: float, decisions: int, stats: dict[str, Any]) -> dict[str, Any]:
        """The update's row of ``metrics.csv`` (evaluation columns are added when one ran)."""
        return {
            "update": self.update,
            "global_step": self.global_step,
            "elapsed_s": round(began.elapsed_before + time.perf_counter() - began.wall, 2),
            "cpu_s": round(began.cpu_before + time.process_time() - began.cpu, 2),
            "turns_per_s": round((self.global_step - began.step) / (time.perf_counter() - began.wall), 1),
            "learning_rate": lr,
            "stage": self.stage,
            "learner_decisions": decisions,
            **stats,
            **self._time_split(),
        }

    def _time_split(self) -> dict[str, float]:
        """The update's seconds per part (``env_s``, ``forward_s``, ``bots_s``, ``update_s``),
        and ``bookkeeping_s``: the rest of the rollout (the buffer, advantages, seating)."""
        parts = self.stopwatch.take()
        rollout = parts.pop("rollout_s", 0.0)
        played = sum(parts.get(f"{p}_s", 0.0) for p in ("forward", "env", "bots"))
        return {**parts, "bookkeeping_s": round(max(0.0, rollout - played), 4)}

    def _evaluate_and_keep_best(self, bar: tqdm) -> dict[str, float]:
        """Evaluate, report it, write ``best.pt`` on a new best score; return the metrics columns."""
        cfg = self.config
        self.last_eval = self.evaluate()
        columns = {}
        for name, res in self.last_eval.items():
            columns[f"eval_win_rate_{name}"] = res.win_rate[0]
            columns[f"eval_ci95_low_{name}"], columns[f"eval_ci95_high_{name}"] = res.ci95[0]
        bar.set_postfix({f"vs {k}": f"{v.win_rate[0]:.0%}" for k, v in self.last_eval.items()})
        if not self.progress:
            print(evaluation_line(self.update, self.global_step, self.last_eval), flush=True)
        score = self.last_eval[cfg.eval.best_by].win_rate[0]
        if score > self.best_score:
            self.best_score = score
            save_checkpoint(self.run_dir / "best.pt", self.checkpoint_payload(with_training_state=False))
        return columns

    def _save_if_due(self, now: bool) -> None:
        """Save every ``save_every`` updates, or ``now`` (the run's end, or a stop requested)."""
        cfg = self.config
        if self.update % cfg.save_every == 0 or now:
            self.save()
            if not self.progress and not cfg.eval.every:  # no evaluation lines: say something
                print(f"update {self.update} ({self.global_step:,} turns): saved", flush=True)

    def _summary(self, log: MetricsLog, began: _Start) -> dict[str, Any]:
        """Plot the learning curve, pick the result (unless interrupted) and sum the run up."""
        plot = plot_learning_curve(log.path, self.run_dir / "learning_curve.png")
        elapsed = time.perf_counter() - began.wall
        result = None if self.interrupted else self.pick_result()
        return {
            "run_dir": str(self.run_dir),
            "update": self.update,
            "global_step": self.global_step,
            "turns_per_s": (self.global_step - began.step) / elapsed if elapsed > 0 else float("nan"),
            "evaluation": {k: v.slot_figures(0) for k, v in self.last_eval.items()},
            "plot": str(plot) if plot else None,
            "interrupted": self.interrupted,
            "result": result,
        }
