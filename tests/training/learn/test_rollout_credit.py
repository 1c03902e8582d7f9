"""The trainer's rollouts on a scripted two-seat env, checked against links and rewards worked out by hand.

Game 0's rounds last 3 turns (seat 0, seat 1, seat 0) and seat 1 wins: seat 0's own move ends
them. Game 1's last 2 turns (seat 0, seat 1) and seat 0 wins: the opponent's move ends them,
and the reward must still reach seat 0's decision. Each observation writes its game, round,
turn and seat into its first bytes, so every buffer row says where it came from.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import OBSERVATION_SIZE
from training.learn.config import load_config
from training.learn.ppo import RolloutBatch
from training.learn.trainer import SelfPlayTrainer

LENGTHS, WINNERS = (3, 2), (1, 0)


class ScriptedEnv:
    """Two games of two seats; seat 0 starts every round; actions 0-2 are legal."""

    def __init__(self, num_games: int, **_: object):
        assert num_games == 2
        self.turn = torch.zeros(2, dtype=torch.long)
        self.round = torch.zeros(2, dtype=torch.long)
        self.current_player = torch.zeros(2, dtype=torch.long)

    def _write(self, out: torch.Tensor | None, mask_out: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        obs = torch.zeros(2, OBSERVATION_SIZE, dtype=torch.uint8) if out is None else out.zero_()
        for column, field in enumerate((torch.arange(2), self.round, self.turn, self.current_player)):
            obs[:, column] = field.to(torch.uint8) + 1
        mask = torch.zeros(2, NUM_ACTIONS, dtype=torch.bool) if mask_out is None else mask_out.zero_()
        mask[:, :3] = True
        return obs, mask

    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._write(None, None)

    def step(self, actions, out=None, *, mask_out=None, info=True):
        assert (actions < 3).all()
        rewards, dones = torch.zeros(2, 4), torch.zeros(2, dtype=torch.bool)
        self.turn += 1
        for g in range(2):
            if self.turn[g] == LENGTHS[g]:
                dones[g] = True
                rewards[g, :2] = -1.0
                rewards[g, WINNERS[g]] = 1.0
                self.turn[g], self.current_player[g] = 0, 0
                self.round[g] += 1
            else:
                self.current_player[g] = 1 - self.current_player[g]
        obs, mask = self._write(out, mask_out)
        return obs, mask, rewards, dones, None


def rollout(
    tmp_path: Path, opponents: list[str], learner_seat: int = 0
) -> tuple[list[tuple], RolloutBatch, torch.Tensor]:
    """One 5-turn rollout: each row as (game, round, turn, seat, successor row, terminal, reward),
    the batch (gamma 1, lambda 0.5) and every row's value estimate (float64)."""
    config = load_config(
        None,
        [
            "env.num_games=2",
            "env.rollout_steps=5",
            "model.hidden_sizes=[8]",
            "model.average_from=null",
            "env.rules=[classic]",
            "torch_threads=1",
            "eval.every=0",
            *opponents,
        ],
    )
    trainer = SelfPlayTrainer(config, tmp_path, env_factory=ScriptedEnv, progress=False)
    try:
        draw = trainer.seating.draw

        def draw_fixed_seat(games: np.ndarray, rng: np.random.Generator, pool_size: int) -> None:
            draw(games, rng, pool_size)
            trainer.seating.learner_seat[games] = learner_seat

        trainer.seating.draw = draw_fixed_seat
        trainer.seating.learner_seat[:] = learner_seat
        buffer, _ = trainer.collect_rollout()
        n = buffer.size
        rows = [
            (*(int(x) - 1 for x in buffer.obs[i, :4]), int(buffer.next_index[i]), bool(buffer.terminal[i]))
            + (float(buffer.rewards[i]),)
            for i in range(n)
        ]
        return rows, buffer.batch(1.0, 0.5), buffer.values[:n].double()
    finally:
        trainer.release()


def test_pure_self_play_links_each_seat_of_each_game_and_credits_the_round_end(tmp_path):
    rows, batch, v = rollout(tmp_path, ["opponents.current=1", "opponents.past=0", "opponents.bots=0"])
    # (game, round, turn, seat, successor, terminal, reward), in the order the turns were played.
    assert rows == [
        (0, 0, 0, 0, 4, False, 0.0),  # seat 0's next decision is turn 2, four rows on
        (1, 0, 0, 0, -1, True, 1.0),  # ended by the opponent's move: seat 0 still gets its +1
        (0, 0, 1, 1, -1, True, 1.0),
        (1, 0, 1, 1, -1, True, -1.0),
        (0, 0, 2, 0, -1, True, -1.0),
        (1, 1, 0, 0, -1, True, 1.0),
        (0, 1, 0, 0, -1, False, 0.0),  # open when the rollout stopped: left out
        (1, 1, 1, 1, -1, True, -1.0),
        (0, 1, 1, 1, -1, False, 0.0),
        (1, 2, 0, 0, -1, False, 0.0),
    ]
    kept = [0, 1, 2, 3, 4, 5, 7]
    first = 0.0 + v[4] - v[0] + 0.5 * (-1.0 - v[4])  # bootstraps from the same seat's next value
    expected = [first, *(r - v[i] for i, r in zip(kept[1:], (1.0, 1.0, -1.0, -1.0, 1.0, -1.0)))]
    assert batch.advantages.double().tolist() == pytest.approx([float(x) for x in expected], abs=1e-6)


@pytest.mark.parametrize("seat", [0, 1])
def test_against_a_past_network_only_the_learner_seat_is_recorded_and_credited(tmp_path, seat):
    rows, _, _ = rollout(tmp_path, ["opponents.current=0", "opponents.past=1", "opponents.bots=0"], learner_seat=seat)
    if seat == 0:
        assert rows == [
            (0, 0, 0, 0, 2, False, 0.0),
            (1, 0, 0, 0, -1, True, 1.0),  # the snapshot's move ended the round, seat 0 won
            (0, 0, 2, 0, -1, True, -1.0),
            (1, 1, 0, 0, -1, True, 1.0),
            (0, 1, 0, 0, -1, False, 0.0),
            (1, 2, 0, 0, -1, False, 0.0),
        ]
    else:
        assert rows == [
            (0, 0, 1, 1, -1, True, 1.0),  # the snapshot's move ended the round, seat 1 won
            (1, 0, 1, 1, -1, True, -1.0),
            (1, 1, 1, 1, -1, True, -1.0),
            (0, 1, 1, 1, -1, False, 0.0),
        ]
