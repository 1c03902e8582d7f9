"""The compiled ``rule`` and ``random`` bots as CUDA kernels (:mod:`loveletter_env.agents.cuda_bots`).

- They decide as the CPU bots do, and leave every slot's generator and kept-card memory as
  the CPU bots do: in numba's CUDA simulator (a subprocess running
  tests/agents/cuda_bots_differential.py), and on a real GPU where there is one, through
  ``act_on_device`` and the trainer's ``Seating.bot_actions``.
- They compile to PTX for sm_80 and sm_90 (no GPU needed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import kernels_as_ptx, numba_cuda, subprocess_env

from loveletter_env.agents.batched_bots import BATCHED_BOTS, BatchedRandomBots, BatchedRuleBots
from loveletter_env.observation import OBSERVATION_SIZE

DIFFERENTIAL = Path(__file__).resolve().parent / "cuda_bots_differential.py"


def test_bots_match_the_cpu_in_the_simulator():
    """64 games of 2 to 4 players, 6 turns, each bot kind: actions and state after each turn."""
    numba_cuda()
    env = subprocess_env(NUMBA_ENABLE_CUDASIM="1")
    command = [sys.executable, str(DIFFERENTIAL), "--games", "64", "--steps", "6"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all bots agree" in result.stdout


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)], ids=["sm_80", "sm_90"])
def test_bot_kernels_compile_to_ptx(cc, monkeypatch):
    """Each bot kernel, with the argument types ``act_on_device`` launches it with."""
    numba_cuda()
    from loveletter_env.agents.cuda_bots import KERNEL_SIGNATURES, build_kernels

    assert set(kernels_as_ptx(build_kernels(), KERNEL_SIGNATURES, cc, monkeypatch)) == {"rule", "random"}


def test_act_on_device_refuses_tensors_on_the_cpu():
    bots = BatchedRuleBots([1, 2])
    obs = torch.zeros(2, OBSERVATION_SIZE, dtype=torch.uint8)
    mask = torch.ones(2, 41, dtype=torch.bool)
    before = bots.mt_states.copy()
    with pytest.raises(ValueError, match="CUDA tensors: use act"):
        bots.act_on_device(np.array([0, 1]), obs, mask)
    assert np.array_equal(bots.mt_states, before)


def _cuda_device() -> torch.device:
    cuda = numba_cuda()
    if not (torch.cuda.is_available() and cuda.is_available()):
        pytest.skip("needs a CUDA device")
    return torch.device("cuda")


@pytest.mark.parametrize("kind", ("rule", "random"))
def test_bots_match_the_cpu_on_the_gpu(kind):
    """The batched env on the GPU, the bot of each game's current seat deciding on the
    device and, from copies of the same observations and state, on the CPU: every move,
    then the state brought back to the host, agree; the CPU bots go on from there."""
    from loveletter_env.batched import BatchedLoveLetter

    device = _cuda_device()
    games, seeds = 512, list(range(512 * 4))
    on_gpu, on_cpu = BATCHED_BOTS[kind](seeds), BATCHED_BOTS[kind](seeds)
    env = BatchedLoveLetter(games, [2, 3, 4, 2] * (games // 4), episode="game", seed=5, device=device)
    obs, mask = env.reset()
    for step in range(40):
        slots = torch.arange(games, device=device) * 4 + env.current_player
        moves = on_gpu.act_on_device(slots, obs, mask)
        assert moves.device == obs.device and moves.dtype == torch.int64
        expected = on_cpu.act(slots.cpu().numpy(), obs.cpu().numpy(), mask.cpu().numpy())
        assert moves.cpu().tolist() == expected.tolist(), f"step {step}"
        obs, mask, _, dones, _ = env.step(moves)
        done = dones.nonzero().flatten().cpu().numpy()
        for bots in (on_gpu, on_cpu):
            bots.reset(np.concatenate([done * 4 + seat for seat in range(4)]))
    on_gpu.to_host()
    for name in on_cpu.STATE:
        assert np.array_equal(getattr(on_gpu, name), getattr(on_cpu, name)), name
    # Back on the CPU, the same bots go on deciding as the CPU copies.
    cpu_obs, cpu_mask = obs.cpu().numpy(), mask.cpu().numpy()
    slots = np.arange(games) * 4 + env.current_player.cpu().numpy()
    assert on_gpu.act(slots, cpu_obs, cpu_mask).tolist() == on_cpu.act(slots, cpu_obs, cpu_mask).tolist()


def test_seating_keeps_compiled_bots_on_the_gpu():
    """``Seating.bot_actions`` on CUDA observations: the moves of the CPU path, on the device."""
    from loveletter_env.batched import BatchedLoveLetter
    from training.learn.config import OpponentConfig
    from training.learn.seating import Seating

    device = _cuda_device()
    games = 256
    config = OpponentConfig(current=0.0, past=0.0, bots=1.0, bot_names=["rule", "random"])
    sizes = np.array([2, 3, 4, 4] * (games // 4))
    seatings = [Seating(config, sizes, run_seed=7) for _ in range(2)]
    for seating in seatings:
        seating.draw(np.arange(games), np.random.default_rng(0), pool_size=0)
    env = BatchedLoveLetter(games, sizes.tolist(), episode="game", seed=2, device=device)
    obs, mask = env.reset()
    for step in range(20):
        seat = env.current_player.cpu().numpy()
        rows = np.flatnonzero(seat != seatings[0].learner_seat)
        moves = seatings[0].bot_actions(rows, seat, obs[rows], mask[rows])
        assert moves.is_cuda
        expected = seatings[1].bot_actions(rows, seat, obs[rows].cpu(), mask[rows].cpu())
        assert moves.cpu().tolist() == expected.tolist(), f"step {step}"
        actions = torch.multinomial(mask.float(), 1, generator=torch.Generator(device).manual_seed(step)).squeeze(1)
        actions[torch.from_numpy(rows).to(device)] = moves
        obs, mask, *_ = env.step(actions)


def test_act_on_device_checks_its_input():
    device = _cuda_device()
    bots = BatchedRandomBots([1, 2, 3])
    obs = torch.zeros(2, OBSERVATION_SIZE, dtype=torch.uint8, device=device)
    mask = torch.ones(2, 41, dtype=torch.bool, device=device)
    with pytest.raises(ValueError, match="slots must be a 1-D array"):
        bots.act_on_device(np.array([0, 3]), obs, mask)
    with pytest.raises(ValueError, match="expected bool masks"):
        bots.act_on_device(np.array([0, 1]), obs, mask.to(torch.uint8))
    with pytest.raises(ValueError, match="expected uint8 observations"):
        bots.act_on_device(np.array([0, 1]), obs.float(), mask)
    # Unchecked on the device, without a synchronisation: -1 for a slot out of range or no legal move.
    mask[1] = False
    moves = bots.act_on_device(torch.tensor([0, 1], device=device), obs, mask)
    assert moves.tolist()[1] == -1
    assert bots.act_on_device(torch.tensor([7, 0], device=device), obs, mask).tolist()[0] == -1
