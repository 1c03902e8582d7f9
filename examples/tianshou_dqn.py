"""Train a Tianshou DQN seat against a random seat on the Love Letter AEC env.

    pip install -e ".[tianshou]"
    python examples/tianshou_dqn.py --epochs 5

Tianshou's ``PettingZooEnv`` turns the AEC env into one stream of transitions, each
tagged with the acting ``agent_id`` and carrying the legal-action ``mask`` (Tianshou's
DQN never picks a masked action). ``MultiAgentOffPolicyAlgorithm`` sends each seat's
transitions to that seat's algorithm: here a DQN for ``player_0`` and Tianshou's masked
random player for the others.

Tianshou draws exploration noise from NumPy's global generator, so runs are repeatable
only if the caller seeds it; this script does not touch global random state.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from loveletter_env.validation import MAX_SEED, check_int
from loveletter_env.wrappers._extras import require
from loveletter_env.wrappers.tianshou import tianshou_env

require("tianshou", "tianshou")
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm  # noqa: E402
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.data import Collector, CollectStats, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv  # noqa: E402
from tianshou.env.pettingzoo_env import PettingZooEnv  # noqa: E402
from tianshou.trainer import OffPolicyTrainerParams  # noqa: E402
from tianshou.utils.net.common import Net  # noqa: E402

LEARNER = "player_0"


def make_env(num_players: int = 2, episode: str = "round") -> PettingZooEnv:
    """The AEC env as Tianshou sees it (Tianshou's ``PettingZooEnv``, numeric infos)."""
    return tianshou_env(num_players=num_players, episode=episode)


def make_algorithm(env: PettingZooEnv, hidden: int = 128, learning_rate: float = 1e-3) -> MultiAgentOffPolicyAlgorithm:
    """A DQN for :data:`LEARNER`; every other seat plays uniformly among legal actions."""
    observation_space = env.observation_space["observation"]
    net = Net(state_shape=observation_space.shape, action_shape=env.action_space.n, hidden_sizes=[hidden, hidden])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0)
    learner = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=learning_rate),
        gamma=1.0,  # the only reward is the episode's result
        n_step_return_horizon=1,
        target_update_freq=100,
    )
    algorithms = [
        learner if agent == LEARNER else MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
        for agent in env.agents
    ]
    return MultiAgentOffPolicyAlgorithm(algorithms=algorithms, env=env)


def train(
    epochs: int = 2,
    steps_per_epoch: int = 500,
    num_envs: int = 4,
    num_players: int = 2,
    episode: str = "round",
    seed: int = 0,
    eval_episodes: int = 200,
) -> dict[str, Any]:
    """Train for ``epochs`` x ``steps_per_epoch`` env steps. Returns the trained
    ``algorithm``, Tianshou's ``result`` statistics, and the learner's mean reward over
    ``eval_episodes`` greedy test episodes (+1 win, -1 loss) after training."""
    train_envs = DummyVectorEnv([lambda: make_env(num_players, episode) for _ in range(num_envs)])
    test_envs = DummyVectorEnv([lambda: make_env(num_players, episode) for _ in range(num_envs)])
    train_envs.seed(seed)
    test_envs.seed(seed + 10_000)
    reference_env = make_env(num_players, episode)
    learner_index = reference_env.agent_idx[LEARNER]
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        algorithm = make_algorithm(reference_env)
    train_collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(20_000, num_envs), exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=False)
    train_collector.reset()
    train_collector.collect(n_step=64 * num_envs)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=epochs,
            epoch_num_steps=steps_per_epoch,
            collection_step_num_env_steps=32,
            update_step_num_gradient_steps_per_sample=0.25,
            test_step_num_episodes=2 * num_envs,
            batch_size=64,
            # Score a run by the learner's own result, not the sum over seats (always 0 here).
            multi_agent_return_reduction=lambda returns: returns[:, learner_index],
            test_in_training=False,
            show_progress=True,
            verbose=False,
        )
    )
    evaluation = test_collector.collect(n_episode=eval_episodes, reset_before_collect=True)
    train_envs.close()
    test_envs.close()
    learner_returns = np.asarray(evaluation.returns)[:, learner_index]
    return {
        "algorithm": algorithm,
        "result": result,
        "learner_mean_reward": float(learner_returns.mean()),
        "test_episodes": len(learner_returns),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--steps-per-epoch", type=int, default=2000, help="env steps (all seats) per epoch")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--episode", default="round", choices=("round", "game"))
    parser.add_argument("--eval-episodes", type=int, default=200, help="greedy test episodes after training")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if min(args.epochs, args.steps_per_epoch, args.num_envs, args.eval_episodes) <= 0:
        parser.error("--epochs, --steps-per-epoch, --num-envs and --eval-episodes must be positive")
    try:  # the test envs are seeded from seed + 10,000, env k of each with its seed + k
        check_int("--seed", args.seed, 0, MAX_SEED - 10_000 - args.num_envs)
    except ValueError as err:
        parser.error(str(err))
    out = train(
        args.epochs, args.steps_per_epoch, args.num_envs, args.players, args.episode, args.seed, args.eval_episodes
    )
    print(
        f"DQN ({LEARNER}) vs random: mean reward {out['learner_mean_reward']:+.3f} over "
        f"{out['test_episodes']} test episodes (+1 win, -1 loss)"
    )
    return out


if __name__ == "__main__":
    main()
