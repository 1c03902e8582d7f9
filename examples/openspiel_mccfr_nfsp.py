"""OpenSpiel's external-sampling MCCFR and NFSP on one round of Love Letter.

    pip install -e ".[openspiel]"
    python examples/openspiel_mccfr_nfsp.py --seconds 60
    python examples/openspiel_mccfr_nfsp.py --rules mini6 --algorithm mccfr --seconds 20

``import loveletter_env.openspiel`` registers the game ``love_letter`` with pyspiel; from
there on OpenSpiel's algorithms run on it as on any of its own games. Each algorithm
trains for ``--seconds`` of wall time, printing its progress, and its average policy then
plays ``--eval-rounds`` rounds against uniform random play, half of them from each seat.
On a ladder rung (``--rules mini6`` ...) the game is small enough for OpenSpiel's exact
best response, so the example also prints the policy's exploitability, in the project's
score units (a win 1, a shared win 1/2, a loss 0: OpenSpiel's own ``exploitability`` of
this game is twice that, see docs/openspiel.md). A player's information state is the env's
observation, which hears every announced move with perfect recall: NFSP's network reads it.

The full 2-player game has about 2e13 information sets: a minute of tabular MCCFR visits
a tiny fraction of them (unseen ones play uniformly), and NFSP needs hours to learn much.
The point is the plumbing: every OpenSpiel algorithm now runs on Love Letter.

OpenSpiel's MCCFR and NFSP draw their random numbers from numpy's global generator and
NFSP's networks from torch's, so ``--seed`` seeds both before training. NFSP's progress
line shows ``-`` for an agent's average-policy loss until its reservoir holds the 1,000
transitions of its first update (a minute or so on the full game).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

import numpy as np
import torch

from loveletter_env.rules import PRESETS
from loveletter_env.validation import check_int
from loveletter_env.wrappers._extras import require

require("pyspiel", "openspiel")
import pyspiel  # noqa: E402
from open_spiel.python import policy as policy_lib  # noqa: E402
from open_spiel.python import rl_environment  # noqa: E402
from open_spiel.python.algorithms import exploitability, external_sampling_mccfr  # noqa: E402
from open_spiel.python.pytorch import nfsp  # noqa: E402

import loveletter_env.openspiel  # noqa: E402, F401  (importing it registers "love_letter")

#: Largest ``--seed``: numpy's global seed must be below 2**32, and NFSP seeds numpy with the
#: seed plus the seat plus 2, so half that range leaves room for every offset.
MAX_SEED = 2**31 - 1
#: Transitions an NFSP agent's reservoir holds before its first average-policy update.
NFSP_MIN_TO_LEARN = 1000


class NFSPAveragePolicy(policy_lib.Policy):
    """The NFSP agents' average-policy networks as one OpenSpiel policy (one agent per seat)."""

    def __init__(self, game: pyspiel.Game, agents: Sequence[nfsp.NFSP]):
        super().__init__(game, list(range(game.num_players())))
        self.agents = agents

    def action_probabilities(self, state: pyspiel.State, player_id: int | None = None) -> dict[int, float]:
        player = state.current_player()
        legal = state.legal_actions(player)
        features = state.information_state_tensor(player)
        observations = {
            "info_state": [features] * self.game.num_players(),
            "legal_actions": [legal] * self.game.num_players(),
            "current_player": player,
        }
        step = rl_environment.TimeStep(observations=observations, rewards=None, discounts=None, step_type=None)
        with self.agents[player].temp_mode_as(nfsp.MODE.AVERAGE_POLICY):
            probs = self.agents[player].step(step, is_evaluation=True).probs
        return {a: float(probs[a]) for a in legal}


def score_against_random(game: pyspiel.Game, policy: policy_lib.Policy, rounds: int, seed: int) -> float:
    """The policy's mean score (1 a win, 1/k shared by k winners, 0 a loss) against uniform random
    play, the policy taking each seat in turn."""
    rng = random.Random(seed)
    total = 0.0
    for i in range(rounds):
        seat = i % game.num_players()
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(rng.choices(outcomes, probs)[0])
            elif state.current_player() == seat:
                actions, probs = zip(*policy.action_probabilities(state).items())
                state.apply_action(rng.choices(actions, probs)[0])
            else:
                state.apply_action(rng.choice(state.legal_actions()))
        winners = state.engine.round_winners
        total += 1 / len(winners) if seat in winners else 0.0
    return total / rounds


def report(name: str, game: pyspiel.Game, policy: policy_lib.Policy, args: argparse.Namespace) -> None:
    score = score_against_random(game, policy, args.eval_rounds, args.seed)
    print(f"{name}: mean score {score:.3f} against uniform random play over {args.eval_rounds} rounds")
    if game.rules.is_rung:  # a ladder rung: exact best responses are cheap
        # A round returns n * score - 1 to each of n seats, so OpenSpiel's NashConv is n times
        # the score units' one; the exploitability is the NashConv over n.
        n = game.num_players()
        conv = exploitability.nash_conv(game, policy)
        ours = conv / n / n
        print(f"{name}: exploitability {ours:.4f} (score units: NashConv / {n}; OpenSpiel's nash_conv is {conv:.4f})")


def run_mccfr(game: pyspiel.Game, args: argparse.Namespace) -> policy_lib.Policy:
    """External-sampling MCCFR for ``args.seconds``; its average policy."""
    solver = external_sampling_mccfr.ExternalSamplingSolver(game)
    start = last_print = time.perf_counter()
    iterations = 0
    while time.perf_counter() - start < args.seconds:
        solver.iteration()
        iterations += 1
        if time.perf_counter() - last_print >= args.print_every:
            last_print = time.perf_counter()
            print(
                f"mccfr: {iterations:,} iterations, {len(solver._infostates):,} information sets "
                f"in {last_print - start:.0f} s",
                flush=True,
            )
    print(f"mccfr: done, {iterations:,} iterations, {len(solver._infostates):,} information sets")
    return solver.average_policy()


def run_nfsp(game: pyspiel.Game, args: argparse.Namespace) -> policy_lib.Policy:
    """NFSP (OpenSpiel's PyTorch agents, one per seat) for ``args.seconds``; the average policy."""
    env = rl_environment.Environment(game)
    size = env.observation_spec()["info_state"][0]
    agents = [
        nfsp.NFSP(
            player,
            size,
            env.action_spec()["num_actions"],
            hidden_layers_sizes=[args.hidden] * 2,
            reservoir_buffer_capacity=args.reservoir,
            anticipatory_param=0.1,
            replay_buffer_capacity=args.reservoir // 2,
            min_buffer_size_to_learn=NFSP_MIN_TO_LEARN,
            epsilon_start=0.06,
            epsilon_end=0.001,
            seed=args.seed + player,
        )
        for player in range(game.num_players())
    ]
    start = last_print = time.perf_counter()
    episodes = 0
    while time.perf_counter() - start < args.seconds:
        step = env.reset()
        while not step.last():
            player = step.observations["current_player"]
            step = env.step([agents[player].step(step).action])
        for agent in agents:  # every agent sees the end of the round
            agent.step(step)
        episodes += 1
        if time.perf_counter() - last_print >= args.print_every:
            last_print = time.perf_counter()
            print(f"nfsp: {episodes:,} rounds in {last_print - start:.0f} s, {nfsp_losses(agents)}", flush=True)
    print(f"nfsp: done, {episodes:,} rounds")
    return NFSPAveragePolicy(game, agents)


def nfsp_losses(agents: Sequence[nfsp.NFSP]) -> str:
    """The agents' last average-policy losses, and why an agent with none has none yet."""
    losses = [agent.loss[0] for agent in agents]
    words = ", ".join("-" if loss is None else f"{loss:.3f}" for loss in losses)
    if all(loss is not None for loss in losses):
        return f"average-policy losses {words}"
    # Only the rounds an agent plays its best response (anticipatory_param of them) fill its
    # reservoir, so on the full game the first update can take a minute.
    # NFSP makes an agent's reservoir at its first transition: until then it is None.
    filled = ", ".join(f"{len(agent._reservoir_buffer or ()):,}" for agent in agents)
    return (
        f"average-policy losses {words} (-: no update yet; an agent's first waits for "
        f"{NFSP_MIN_TO_LEARN:,} transitions in its reservoir, now {filled})"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="OpenSpiel's external-sampling MCCFR and NFSP on one round of Love Letter.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--algorithm", choices=["mccfr", "nfsp", "both"], default="both")
    parser.add_argument(
        "--players", type=int, choices=[2, 3, 4], help="table size (default 2; a ladder rung's own: mini6_3p is 3)"
    )
    parser.add_argument(
        "--rules", choices=sorted(PRESETS), default="classic", help="a preset; mini6..mini9 are solvable"
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="training time of each algorithm")
    parser.add_argument("--eval-rounds", type=int, default=400, help="rounds against uniform random play")
    parser.add_argument("--print-every", type=float, default=5.0, help="seconds between progress lines")
    parser.add_argument("--hidden", type=int, default=128, help="units in each of NFSP's two hidden layers")
    parser.add_argument("--reservoir", type=int, default=20_000, help="NFSP's reservoir buffer capacity")
    parser.add_argument("--seed", type=int, default=0, help=f"seeds numpy and torch, 0..{MAX_SEED}")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.eval_rounds <= 0 or args.reservoir < 2000:
        parser.error("--seconds and --eval-rounds must be positive and --reservoir at least 2000")
    try:
        check_int("--seed", args.seed, 0, MAX_SEED)
    except ValueError as error:
        parser.error(str(error))
    rules = PRESETS[args.rules]
    if args.players is None:
        args.players = rules.rung_players if rules.is_rung else 2
    if rules.is_rung and args.players != rules.rung_players:
        parser.error(f"--rules {args.rules} is a ladder rung played by {rules.rung_players} players only")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, policy_lib.Policy]:
    args = parse_args(argv)
    game = pyspiel.load_game("love_letter", {"players": args.players, "rules": args.rules})
    print(f"game: {game}")
    policies = {}
    for name, run in (("mccfr", run_mccfr), ("nfsp", run_nfsp)):
        if args.algorithm in (name, "both"):
            # OpenSpiel's MCCFR and NFSP draw from these global generators (the project's own
            # code never does): seeding them is the only way to make the example repeat.
            np.random.seed(args.seed)
            torch.manual_seed(args.seed)
            policies[name] = run(game, args)
            report(name, game, policies[name], args)
    return policies


if __name__ == "__main__":
    main()
