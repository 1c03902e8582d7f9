"""Self-play PPO on RLlib: one shared masked policy for every seat, sampled by several env runners.

    pip install -e ".[rllib]"   # in an environment of its own: ray pins gymnasium 1.2.2
    python examples/rllib_selfplay.py   # 20 iterations of 4,000 turns, 2 env runners: a few minutes
    python examples/rllib_selfplay.py --address auto --env-runners 32   # on a running Ray cluster

Every seat of :func:`loveletter_env.wrappers.rllib_multi_agent_env` (RLlib's ``PettingZooEnv``
over the AEC env) maps to one RLlib module, ``ActionMaskingTorchRLModule``, which adds
``log(action_mask)`` to the logits, so no seat ever samples an illegal action. The env
runners are Ray actors (processes): the same code samples on a laptop or on a cluster.

The network is built in the shape of the project's own :class:`~training.learn.ppo.ActorCritic`
(a shared ReLU trunk, a policy head and a value head), so the trained weights are exported
as a regular checkpoint (``--out``/``policy.pt``): an agent spec for ``training.evaluate``,
``training.play`` or ``training.export``, which plays without ray. The export is checked
against RLlib's own module on real observations, then evaluated against ``random`` and
``rule`` with :func:`training.measure.evaluation.evaluate`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from loveletter_env.validation import check_int
from loveletter_env.wrappers import rllib_multi_agent_env
from loveletter_env.wrappers._extras import MissingExtraError, require
from training.learn.checkpoint import model_payload, save_checkpoint
from training.learn.ppo import ActorCritic, masked_logits
from training.learn.runtime import RunFolderError, claim_run_folder
from training.measure.evaluation import evaluate
from training.measure.ray_cluster import RayCluster, RayConnectionError, ray_connection

#: The one RLlib module every seat maps to.
MODULE_ID = "shared"
ENV_NAME = "loveletter_selfplay"
EVAL_OPPONENTS = ("random", "rule")
#: RLlib's names of the module's layers -> ActorCritic's (same shapes: see module_spec).
LAYER_NAMES = {"encoder.encoder.net.mlp.": "trunk.", "pi.net.mlp.0.": "policy_head.", "vf.net.mlp.0.": "value_head."}


@dataclass
class TrainingFigures:
    """What a training run did: its budget and throughput."""

    iterations: int
    env_runners: int
    env_steps: int
    seconds: float
    #: CPU time of the learner (this process) and of every env runner: on a shared machine,
    #: env steps per CPU second say more than per wall-clock second.
    cpu_seconds: float

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps / self.seconds if self.seconds > 0 else 0.0

    @property
    def env_steps_per_cpu_s(self) -> float:
        return self.env_steps / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Self-play PPO on RLlib (one shared masked policy, several env runners), "
        "exported as a checkpoint and evaluated against random and rule.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--iterations", type=int, default=20, help="RLlib training iterations")
    parser.add_argument("--env-runners", type=int, default=2, help="sampling processes (Ray actors)")
    parser.add_argument(
        "--envs-per-runner", type=int, default=32, help="envs each runner steps together (one batched forward pass)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=4000, help="env steps (turns) sampled per iteration, over all runners"
    )
    parser.add_argument("--num-players", type=int, default=2, choices=(2, 3, 4), help="seats at the table")
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=[256, 256], help="trunk layer widths")
    parser.add_argument("--seed", type=int, default=0, help="seeds RLlib and the evaluation")
    parser.add_argument(
        "--out", type=Path, default=Path("runs/rllib_selfplay"), help="folder for policy.pt and results.json"
    )
    parser.add_argument("--eval-rounds", type=int, default=1000, help="rounds against each of random and rule")
    parser.add_argument(
        "--address", default=None, help="a running Ray cluster to join (e.g. auto); default: start a local one"
    )
    parser.add_argument("--learner-threads", type=int, default=1, help="torch threads of the learner (this process)")
    return parser


def _check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for name in ("iterations", "env_runners", "envs_per_runner", "batch_size", "eval_rounds", "learner_threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if any(h < 1 for h in args.hidden_sizes):
        parser.error(f"--hidden-sizes must be positive, got {args.hidden_sizes}")
    if args.batch_size < args.env_runners:
        parser.error(f"--batch-size ({args.batch_size}) must be at least --env-runners ({args.env_runners})")
    try:  # RLlib seeds numpy's global generator (below 2**32) with it, plus the runner's index
        check_int("--seed", args.seed, 0, 2**32 - 1 - args.env_runners)
    except ValueError as err:
        parser.error(str(err))


def env_config(num_players: int) -> dict[str, Any]:
    """The AEC env's keyword arguments: single rounds, as ``python -m training.selfplay`` trains on."""
    return {"num_players": num_players, "episode": "round"}


def module_spec(hidden_sizes: Sequence[int], env: Any = None) -> Any:
    """RLlib's masked PPO module in :class:`ActorCritic`'s shape; with ``env``, its spaces too (to build it here)."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    # One trunk for policy and value with ReLU, and heads without hidden layers: ActorCritic's shape.
    model_config = DefaultModelConfig(
        fcnet_hiddens=list(hidden_sizes), fcnet_activation="relu", vf_share_layers=True, head_fcnet_hiddens=[]
    )
    spaces = {}
    if env is not None:
        agent = env.possible_agents[0]
        spaces = {"observation_space": env.observation_space[agent], "action_space": env.action_space[agent]}
    return RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config=model_config, **spaces)


def build_config(args: argparse.Namespace) -> Any:
    """The PPO config: every ``player_i`` mapped to one masked module shaped like :class:`ActorCritic`."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    minibatch = max(1, args.batch_size // 8)
    return (
        PPOConfig()
        # RLlib's env check steps random actions without the mask, which the AEC env refuses.
        .environment(ENV_NAME, env_config=env_config(args.num_players), disable_env_checking=True)
        .multi_agent(policies={MODULE_ID}, policy_mapping_fn=lambda agent_id, episode, **kwargs: MODULE_ID)
        .env_runners(
            num_env_runners=args.env_runners,
            num_envs_per_env_runner=args.envs_per_runner,
            num_cpus_per_env_runner=1,
            # RLlib numpy-izes every finished episode of a sample call again at each step: with
            # rounds of ~10 turns that grows with the square of the batch and halves the rate.
            episodes_to_numpy=False,
        )
        .training(
            train_batch_size_per_learner=args.batch_size,
            minibatch_size=minibatch,
            num_epochs=4,
            lr=3e-4,
            gamma=1.0,  # the reward comes at the end of the round
            lambda_=0.95,
            clip_param=0.2,
            entropy_coeff=0.01,
            vf_loss_coeff=0.5,
            grad_clip=0.5,
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={MODULE_ID: module_spec(args.hidden_sizes)}))
        .debugging(seed=args.seed)
    )


def cpu_seconds(algo: Any) -> float:
    """CPU time used so far by this process (the learner) and by every remote env runner."""
    runners = algo.env_runner_group.foreach_env_runner(lambda runner: time.process_time(), local_env_runner=False)
    return time.process_time() + sum(runners)


def train(algo: Any, iterations: int, env_runners: int) -> TrainingFigures:
    """Run ``iterations`` of ``algo.train()`` under a progress bar; the env steps and time they took."""
    env_steps = 0
    start, start_cpu = time.perf_counter(), cpu_seconds(algo)
    with tqdm(total=iterations, desc="RLlib PPO", unit="iter") as bar:
        for _ in range(iterations):
            result = algo.train()
            env_steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            rate = env_steps / (time.perf_counter() - start)
            bar.set_postfix_str(f"{env_steps:,} env steps, {rate:,.0f}/s")
            bar.update()
    seconds = time.perf_counter() - start
    return TrainingFigures(iterations, env_runners, env_steps, seconds, cpu_seconds(algo) - start_cpu)


def to_actor_critic(state: Mapping[str, Any], hidden_sizes: Sequence[int]) -> ActorCritic:
    """The RLlib module's weights (its ``state_dict``, tensors or arrays) in an :class:`ActorCritic`."""
    weights = {}
    for name, value in state.items():
        prefix = next((p for p in LAYER_NAMES if name.startswith(p)), None)
        if prefix is not None:
            weights[LAYER_NAMES[prefix] + name[len(prefix) :]] = torch.as_tensor(np.asarray(value))
    model = ActorCritic(hidden_sizes=hidden_sizes)
    model.load_state_dict(weights)  # strict: a layer RLlib named otherwise is an error, not a silent gap
    return model.eval()


def sample_observations(num_players: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` observations and masks of the seats to act, from rounds of uniformly random legal play."""
    import loveletter_env

    rng = np.random.default_rng(seed)
    env = loveletter_env.env(**env_config(num_players))
    observations: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    episode = 0
    while len(observations) < count:
        env.reset(seed=seed + episode)
        episode += 1
        while env.agents and len(observations) < count:
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            observations.append(observation["observation"])
            masks.append(observation["action_mask"])
            env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    return np.stack(observations).astype(np.float32), np.stack(masks).astype(bool)


@torch.no_grad()
def check_export(rllib_module: Any, model: ActorCritic, num_players: int, seed: int, count: int = 512) -> float:
    """The largest gap between RLlib's masked logits and the exported network's on ``count`` observations.

    Raises ``RuntimeError`` if the two ever pick a different greedy action.
    """
    observations, masks = sample_observations(num_players, count, seed)
    obs = torch.from_numpy(observations)
    legal = torch.from_numpy(masks)
    batch = {"obs": {"observations": obs, "action_mask": legal.float()}}
    rllib_logits = rllib_module.forward_inference(batch)["action_dist_inputs"]
    logits, _ = model(obs)
    ours = masked_logits(logits, legal)
    if not torch.equal(rllib_logits.argmax(-1), ours.argmax(-1)):
        raise RuntimeError("the exported network picks other actions than the RLlib module: export is wrong")
    return float((rllib_logits - logits)[legal].abs().max())


def export(algo: Any, args: argparse.Namespace, path: Path) -> tuple[Path, float]:
    """Write the learner's module as a project checkpoint at ``path``; also the export's largest logit gap."""
    state = algo.learner_group.get_weights(module_ids=[MODULE_ID])[MODULE_ID]
    model = to_actor_critic(state, args.hidden_sizes)
    rllib_module = module_spec(args.hidden_sizes, rllib_multi_agent_env(env_config(args.num_players))).build()
    rllib_module.set_state(state)
    gap = check_export(rllib_module, model, args.num_players, args.seed)
    payload = {"model": model_payload(model), "source": {"library": "ray.rllib", "args": _jsonable(vars(args))}}
    return save_checkpoint(path, payload), gap


def _jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: str(value) if isinstance(value, Path) else value for key, value in values.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    try:
        require("ray.rllib", "rllib")
    except MissingExtraError as err:
        print(f"error: {err} (in an environment of its own: see docs/libraries.md)", file=sys.stderr)
        return 2
    # The folder is held, as every run folder is, before any training: two runs with one
    # --out would otherwise overwrite each other's policy.pt.
    try:
        lock = claim_run_folder(args.out)
    except RunFolderError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with lock:
        if (args.out / "policy.pt").exists():
            print(
                f"error: {str(args.out)!r} already holds a policy.pt, which this run would overwrite: "
                "pick another --out",
                file=sys.stderr,
            )
            return 2
        return _train_and_measure(args)


def _train_and_measure(args: argparse.Namespace) -> int:
    from ray.tune.registry import register_env

    torch.set_num_threads(args.learner_threads)
    # Without --address: a local cluster of its own (or RAY_ADDRESS's), even where another Ray
    # instance runs on this machine. Each env runner asks for one CPU: as many as there are
    # runners, so that none waits for a core.
    local_cpus = None if args.address else max(os.cpu_count() or 1, args.env_runners)
    try:
        with ray_connection(RayCluster(address=args.address, workers=local_cpus)):
            register_env(ENV_NAME, rllib_multi_agent_env)
            algo = build_config(args).build_algo()
            try:
                figures = train(algo, args.iterations, args.env_runners)
                policy, gap = export(algo, args, args.out / "policy.pt")
            finally:
                algo.stop()
    except RayConnectionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"trained {figures.iterations} iterations: {figures.env_steps:,} env steps in {figures.seconds:.1f} s "
        f"({figures.env_steps_per_s:,.0f} env steps/s) with {figures.env_runners} env runners; "
        f"{figures.cpu_seconds:.1f} CPU s ({figures.env_steps_per_cpu_s:,.0f} env steps per CPU s)"
    )
    print(f"wrote {policy} (largest logit gap to the RLlib module: {gap:.2e})")
    win_rates = {}
    for opponent in EVAL_OPPONENTS:
        result = evaluate(
            [str(policy), opponent], num_players=args.num_players, rounds=args.eval_rounds, seed=args.seed
        )
        low, high = result.ci95[0]
        win_rates[opponent] = result.slot_figures(0, ci_as_list=True)
        print(
            f"win rate vs {opponent} ({args.num_players} players, {result.episodes} rounds, seed {args.seed}): "
            f"{result.win_rate[0]:.1%} (95% CI {low:.1%}-{high:.1%})"
        )
    speed = {"env_steps_per_s": figures.env_steps_per_s, "env_steps_per_cpu_s": figures.env_steps_per_cpu_s}
    results = {"training": {**asdict(figures), **speed}, "evaluation": win_rates}
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
