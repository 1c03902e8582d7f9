"""The bot kernels of :mod:`loveletter_env.agents.cuda_bots` against the CPU bots of
:mod:`loveletter_env.agents.batched_bots` (used by tests/agents/test_cuda_bots.py).

Runs in numba's CUDA simulator when the environment sets ``NUMBA_ENABLE_CUDASIM=1``
before numba is imported (``python tests/agents/cuda_bots_differential.py`` in a
subprocess: the simulator runs every thread as Python, so it decides for few rows).

The batched env (on the CPU) plays games of 2, 3 and 4 players; at every step the bot in
each game's current seat decides on the CPU and in the kernel from the same observation,
mask and state. The actions, and every slot's generator state and kept-card memory
afterwards, must agree; the games go on with the CPU's actions.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch


def play(kind: str, games: int, steps: int, seed: int) -> int:
    """``steps`` turns of ``games`` games decided by the ``kind`` bots on both sides;
    returns the number of decisions that were not forced."""
    from numba import cuda

    from loveletter_env.agents.batched_bots import BATCHED_BOTS
    from loveletter_env.agents.cuda_bots import build_kernels
    from loveletter_env.batched import BatchedLoveLetter
    from loveletter_env.core.gpu import launch_threads as launch
    from loveletter_env.validation import MAX_PLAYERS

    kernel = getattr(build_kernels(), kind)
    cpu = BATCHED_BOTS[kind]([seed * 10_000 + i for i in range(games * MAX_PLAYERS)])
    mt_states = cuda.to_device(cpu.mt_states.copy())
    memories = cuda.to_device(cpu.memories.copy()) if kind == "rule" else None
    env = BatchedLoveLetter(games, [2, 3, 4] * (games // 3) + [2] * (games % 3), episode="game", seed=seed)
    obs, mask = env.reset()
    chosen = 0
    for step in range(steps):
        observations, masks = obs.numpy(), mask.numpy()
        slots = np.arange(games) * MAX_PLAYERS + env.current_player.numpy()
        expected = cpu.act(slots, observations, masks)
        actions = cuda.to_device(np.full(games, -2, np.int64))
        rows = (cuda.to_device(masks.view(np.uint8)), cuda.to_device(slots), mt_states)
        if kind == "rule":
            launch(kernel, games, 0, cuda.to_device(observations), *rows, memories, actions)
        else:
            launch(kernel, games, 0, *rows, actions)
        where = f"{kind} bots, step {step}"
        np.testing.assert_array_equal(actions.copy_to_host(), expected, err_msg=f"actions of the {where}")
        np.testing.assert_array_equal(mt_states.copy_to_host(), cpu.mt_states, err_msg=f"generators of the {where}")
        if memories is not None:
            np.testing.assert_array_equal(memories.copy_to_host(), cpu.memories, err_msg=f"memories of the {where}")
        chosen += int((masks.sum(1) > 1).sum())
        obs, mask, *_ = env.step(torch.from_numpy(expected))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for kind in ("rule", "random"):
        chosen = play(kind, args.games, args.steps, args.seed)
        print(f"{kind}: {chosen} decisions agree")
    print("all bots agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
