"""Self-play REINFORCE on the Love Letter AEC env through TorchRL's ``PettingZooWrapper``.

    pip install -e ".[torchrl]"
    python examples/torchrl_reinforce.py --iterations 50

One masked policy plays every seat. TorchRL steps an AEC env with all its agents in one
group: ``("players", "mask")`` marks the seat to act, and ``("players", "action_mask")``
holds the legal actions (all ones for seats not to act), which feeds a
``MaskedCategorical``. Rewards arrive only when an episode ends, so the return of a
decision is the acting seat's final reward; decisions whose episode did not finish
inside the batch are left out.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence

import torch
from tqdm import tqdm

import loveletter_env
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE
from loveletter_env.validation import check_seed
from loveletter_env.wrappers._extras import require

require("torchrl", "torchrl")
from tensordict import TensorDictBase  # noqa: E402
from tensordict.nn import TensorDictModule  # noqa: E402
from torchrl.envs import PettingZooWrapper  # noqa: E402
from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor  # noqa: E402

try:
    from torchrl.collectors import Collector
except ImportError:  # TorchRL before 0.14 called its single-process collector SyncDataCollector
    from torchrl.collectors import SyncDataCollector as Collector

GROUP = "players"


def make_env(num_players: int = 2, episode: str = "round", seed: int = 0) -> PettingZooWrapper:
    """The AEC env wrapped for TorchRL, all seats in the group ``"players"``."""
    aec = loveletter_env.env(num_players=num_players, episode=episode)
    with warnings.catch_warnings():
        # TorchRL warns that it was tested with an older PettingZoo; the AEC API it uses is unchanged.
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        return PettingZooWrapper(env=aec, use_mask=True, group_map={GROUP: aec.possible_agents}, seed=seed)


def make_policy(hidden: int = 128) -> ProbabilisticActor:
    """A masked categorical policy over the 41 actions, shared by every seat."""
    net = TensorDictModule(
        MLP(in_features=OBSERVATION_SIZE, out_features=NUM_ACTIONS, num_cells=[hidden, hidden]),
        in_keys=[(GROUP, "observation", "observation")],
        out_keys=[(GROUP, "logits")],
    )
    return ProbabilisticActor(
        net,
        in_keys={"logits": (GROUP, "logits"), "mask": (GROUP, "action_mask")},
        out_keys=[(GROUP, "action")],
        distribution_class=MaskedCategorical,
    )


def returns_to_episode_end(batch: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
    """Per step and seat: the seat's reward at the end of the episode, and whether that
    end lies inside the batch (``[T, num_players]`` each)."""
    rewards = batch["next", GROUP, "reward"].squeeze(-1)
    done = batch["next", "done"].reshape(-1)
    returns = torch.zeros_like(rewards)
    finished = torch.zeros_like(rewards, dtype=torch.bool)
    running = torch.zeros_like(rewards[0])
    seen_end = torch.zeros_like(rewards[0], dtype=torch.bool)
    for t in reversed(range(rewards.shape[0])):
        if done[t]:
            running, seen_end = rewards[t], torch.ones_like(seen_end)
        returns[t], finished[t] = running, seen_end
    return returns, finished


def train(
    iterations: int = 20,
    frames_per_batch: int = 256,
    num_players: int = 2,
    episode: str = "round",
    learning_rate: float = 1e-3,
    seed: int = 0,
    policy: ProbabilisticActor | None = None,
) -> list[dict[str, float]]:
    """Run REINFORCE for ``iterations`` batches on ``policy`` (default: a fresh
    :func:`make_policy`); returns one dict of statistics per batch."""
    history: list[dict[str, float]] = []
    # The collector samples with torch's global generator: seed a private copy of it.
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        env = make_env(num_players, episode, seed)
        policy = make_policy() if policy is None else policy
        optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
        collector = Collector(
            env, policy, frames_per_batch=frames_per_batch, total_frames=iterations * frames_per_batch
        )
        for batch in tqdm(collector, total=iterations, desc="TorchRL REINFORCE", unit="batch"):
            acting = batch[GROUP, "mask"]
            chosen = batch[GROUP, "action"]
            legal = batch[GROUP, "action_mask"].gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
            returns, finished = returns_to_episode_end(batch)
            used = acting & finished
            log_prob = policy.get_dist(batch).log_prob(chosen)
            loss = -(log_prob * returns)[used].sum() / used.sum().clamp(min=1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(
                {
                    "loss": loss.item(),
                    "decisions": int(acting.sum()),
                    "illegal_actions": int((acting & ~legal).sum()),
                    "episodes": int(batch["next", "done"].sum()),
                }
            )
        collector.shutdown()
        env.close()
    return history


def main(argv: Sequence[str] | None = None) -> list[dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=50, help="batches to collect and learn from")
    parser.add_argument("--frames-per-batch", type=int, default=512)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--episode", default="round", choices=("round", "game"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.iterations <= 0 or args.frames_per_batch <= 0:
        parser.error("--iterations and --frames-per-batch must be positive")
    try:  # named here, not as a traceback from inside the env
        check_seed(args.seed, "--seed")
    except ValueError as err:
        parser.error(str(err))
    history = train(args.iterations, args.frames_per_batch, args.players, args.episode, seed=args.seed)
    episodes = sum(h["episodes"] for h in history)
    print(
        f"trained on {sum(h['decisions'] for h in history)} decisions over {episodes} episodes; "
        f"last loss {history[-1]['loss']:.4f}"
    )
    return history


if __name__ == "__main__":
    main()
