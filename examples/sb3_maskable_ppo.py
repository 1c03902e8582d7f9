"""Train sb3-contrib's MaskablePPO on one Love Letter seat, then report its win rate.

    pip install -e .   # Stable-Baselines3 and sb3-contrib come with the project
    python examples/sb3_maskable_ppo.py --timesteps 200000 --opponents rule

The env is the registered single-agent ``"loveletter/LoveLetter-v0"``: the learner's seat
is drawn at every reset and every other seat is played by ``--opponents``. MaskablePPO
finds the legal-action mask through the env's ``action_masks()`` method, so the policy
never samples an illegal action.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import gymnasium
import numpy as np
import torch
from tqdm import tqdm

import loveletter_env  # noqa: F401  (registers "loveletter/LoveLetter-v0")
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.validation import check_int, check_writable
from loveletter_env.wrappers import GYM_ENV_ID
from loveletter_env.wrappers._extras import require

sb3_contrib = require("sb3_contrib", "sb3")
from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402


class TqdmCallback(BaseCallback):
    """A tqdm bar over environment steps (SB3's own bar needs the extra ``rich`` package)."""

    def __init__(self, total: int):
        super().__init__()
        self.total = total
        self.bar: tqdm | None = None

    def _on_training_start(self) -> None:
        self.bar = tqdm(total=self.total, desc="MaskablePPO", unit="step")

    def _on_step(self) -> bool:
        # SB3 finishes its last rollout past ``total``: the bar stops at 100%.
        self.bar.update(min(self.training_env.num_envs, self.total - self.bar.n))
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


def train(
    timesteps: int,
    opponents: str = "rule",
    num_players: int = 2,
    episode: str = "game",
    num_envs: int = 4,
    seed: int = 0,
    n_steps: int = 256,
) -> MaskablePPO:
    """MaskablePPO trained for ``timesteps`` learner decisions against ``opponents``."""
    # render_mode=None: make_vec_env would otherwise ask for "rgb_array", which a card game lacks.
    env_kwargs = {"num_players": num_players, "opponents": opponents, "episode": episode, "render_mode": None}
    vec_env = make_vec_env(GYM_ENV_ID, n_envs=num_envs, seed=seed, env_kwargs=env_kwargs)
    model = MaskablePPO(
        "MlpPolicy",
        vec_env,
        n_steps=n_steps,
        batch_size=min(256, n_steps * num_envs),
        learning_rate=3e-4,
        gamma=1.0,  # rewards only arrive at the end of an episode
        ent_coef=0.01,
        seed=seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=timesteps, callback=TqdmCallback(timesteps))
    return model


def evaluate(
    model: MaskablePPO | None,
    episodes: int,
    opponents: str = "rule",
    num_players: int = 2,
    episode: str = "game",
    seed: int = 10_000,
) -> float:
    """Fraction of ``episodes`` the model wins, playing greedily with the action mask
    (``model=None``: uniformly random legal actions, the baseline).

    Episodes that ``reset`` replayed because they ended before the learner acted (only
    possible with ``episode="round"``) are counted too.
    """
    env = gymnasium.make(GYM_ENV_ID, num_players=num_players, opponents=opponents, episode=episode)
    rng = np.random.default_rng(seed)
    wins = played = 0
    for i in tqdm(range(episodes), desc="evaluate", unit="episode"):
        obs, info = env.reset(seed=seed + i)
        for reward in info.get("unplayed_rewards", []):
            wins, played = wins + (reward > 0), played + 1
        done = False
        while not done:
            mask = env.unwrapped.action_masks()
            if model is None:
                action = rng.choice(np.flatnonzero(mask))
            else:
                action, _ = model.predict(obs, action_masks=mask, deterministic=True)
            obs, reward, terminated, truncated, info = env.step(int(action))
            if info.get("illegal_action"):
                raise RuntimeError(f"the masked policy chose an illegal action {int(action)}")
            done = terminated or truncated
        wins, played = wins + (reward > 0), played + 1
    env.close()
    return wins / played


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Name a bad argument before training (``parser.error``, exit status 2), not as a
    traceback from inside SB3 or after the minutes of training it would lose."""
    for name in ("timesteps", "eval_episodes", "torch_threads", "num_envs", "n_steps"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.n_steps * args.num_envs < 2:
        # A rollout of one step normalises its one advantage by a spread of 0: NaN weights.
        parser.error("--n-steps times --num-envs must be at least 2 (a PPO batch of one step has no advantage spread)")
    try:
        # SB3 seeds numpy's global generator (below 2**32) with the seed, and env k with seed + k.
        check_int("--seed", args.seed, 0, 2**32 - args.num_envs)
        resolve_agent(args.opponents, seed=0, role="opponent")  # as the env will, before training
        if args.save:
            # SB3 adds .zip to a name without it: check the file it will write.
            check_writable("--save", args.save if str(args.save).endswith(".zip") else f"{args.save}.zip")
    except (ValueError, FileNotFoundError) as err:  # AgentSpecError among them; a checkpoint that is not there
        parser.error(f"--opponents: {err}" if isinstance(err, FileNotFoundError) else str(err))


def main(argv: Sequence[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000, help="learner decisions to train on")
    parser.add_argument("--opponents", default="rule", help="bot name or checkpoint path for the other seats")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--episode", default="game", choices=("game", "round"))
    parser.add_argument("--num-envs", type=int, default=4, help="environments stepped in parallel")
    parser.add_argument("--n-steps", type=int, default=256, help="steps per environment per PPO update")
    parser.add_argument("--eval-episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch's CPU threads (default 1: this small network runs several times faster on one thread "
        "than split over all cores, where each tiny matrix product pays for waking the threads)",
    )
    parser.add_argument("--save", default=None, help="where to save the trained model (.zip)")
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    torch.set_num_threads(args.torch_threads)

    model = train(args.timesteps, args.opponents, args.players, args.episode, args.num_envs, args.seed, args.n_steps)
    if args.save:
        model.save(args.save)
    win_rate = evaluate(model, args.eval_episodes, args.opponents, args.players, args.episode)
    random_rate = evaluate(None, args.eval_episodes, args.opponents, args.players, args.episode)
    print(
        f"evaluation win rate vs {args.opponents} ({args.players} players, {args.episode}s): "
        f"{win_rate:.3f} over {args.eval_episodes} episodes (random legal actions: {random_rate:.3f}, "
        f"an equal opponent: {1 / args.players:.3f})"
    )
    return win_rate


if __name__ == "__main__":
    main()
