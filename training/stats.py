"""Figures of an evaluation: episode records, win rates and their confidence intervals.

- :func:`wilson_interval`: the 95% interval of a win rate;
- :class:`EpisodeRecord`: one episode's outcome by lineup slot (what playing produces);
- :class:`EvaluationResult`: the one result type of every evaluation (the ``evaluate``
  tool, the trainer's periodic evaluations, the exploitability tool), made by
  :func:`summarize` from the records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

Z_95 = 1.959963984540054


def wilson_interval(successes: float, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (``(0, 1)`` with no trials)."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentages(shares: Sequence[float], decimals: int = 1) -> list[str]:
    """``shares`` (fractions) as percentages that add up as the shares do.

    Rounding each share on its own can show 0.4% and 99.7% for 0.35% and 99.65%: 100.1%
    in all. Here every share is rounded down to the last digit shown, and the digits
    missing from the rounded total go to the shares that lost the most (the largest
    remainders), so each figure is within one last digit of its share.
    """
    scale = 100 * 10**decimals
    exact = [share * scale for share in shares]
    shown = [math.floor(x) for x in exact]
    missing = round(sum(exact)) - sum(shown)
    for i in sorted(range(len(exact)), key=lambda i: exact[i] - shown[i], reverse=True)[: max(0, missing)]:
        shown[i] += 1
    return [f"{units / 10**decimals:.{decimals}f}%" for units in shown]


class EpisodeRecord(NamedTuple):
    """One episode's outcome, by lineup slot."""

    winners: tuple[int, ...]  # slots that won (several after a shared showdown)
    first_slot: int  # slot of the player who moved first (round 1 for whole games)
    turns: int
    rounds: int


@dataclass
class EvaluationResult:
    """Outcome of an evaluation (:func:`training.evaluate.evaluate`). Lists are indexed by lineup slot.

    ``win_rate[i]`` counts every episode slot ``i`` won, shared wins included, so the
    rates may add up to a little more than 1; ``shared_rate`` is the share of episodes
    with several winners.
    """

    agents: list[str]
    num_players: int
    episode: str
    episodes: int
    seed: int
    wins: list[int]
    win_rate: list[float]
    ci95: list[tuple[float, float]]
    shared_rate: float
    mean_round_length: float
    mean_rounds_per_episode: float
    first_seat_win_rate: float
    first_seat_ci95: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every figure."""
        d = asdict(self)
        d["ci95"] = [list(c) for c in self.ci95]
        d["first_seat_ci95"] = list(self.first_seat_ci95)
        return d

    def slot_figures(self, slot: int = 0, ci_as_list: bool = False) -> dict[str, Any]:
        """Slot ``slot``'s ``win_rate``, ``ci95`` and the number of ``rounds`` (episodes) played: what the
        trainer logs and stores in checkpoints for the learner (slot 0)."""
        low, high = self.ci95[slot]
        return {
            "win_rate": self.win_rate[slot],
            "ci95": [low, high] if ci_as_list else (low, high),
            "rounds": self.episodes,
        }

    def summary(self) -> str:
        """A human-readable table of the figures."""
        unit = "rounds" if self.episode == "round" else "games"
        lines = [f"{self.episodes} {unit}, {self.num_players} players, seed {self.seed}"]
        width = max(len(a) for a in self.agents)
        rates = percentages(self.win_rate)  # the slots' figures add up to 100% (more with shared wins)
        for i, name in enumerate(self.agents):
            lo, hi = self.ci95[i]
            lines.append(f"  slot {i}  {name:<{width}}  win rate {rates[i]:>6}  (95% CI {lo:.1%} - {hi:.1%})")
        lo, hi = self.first_seat_ci95
        lines.append(f"  first player wins {self.first_seat_win_rate:.1%} (95% CI {lo:.1%} - {hi:.1%})")
        lines.append(f"  mean round length {self.mean_round_length:.2f} turns; shared wins {self.shared_rate:.1%}")
        if self.episode == "game":
            lines.append(f"  mean rounds per game {self.mean_rounds_per_episode:.2f}")
        return "\n".join(lines)


def summarize(
    records: Sequence[EpisodeRecord], labels: list[str], num_players: int, episode: str, seed: int
) -> EvaluationResult:
    """Aggregate episode records into an :class:`EvaluationResult`."""
    n_ep = len(records)
    wins = [sum(1 for r in records if slot in r.winners) for slot in range(len(labels))]
    first_wins = sum(1 for r in records if r.first_slot in r.winners)
    rounds = sum(r.rounds for r in records)
    return EvaluationResult(
        agents=labels,
        num_players=num_players,
        episode=episode,
        episodes=n_ep,
        seed=seed,
        wins=wins,
        win_rate=[w / n_ep if n_ep else 0.0 for w in wins],
        ci95=[wilson_interval(w, n_ep) for w in wins],
        shared_rate=sum(1 for r in records if len(r.winners) > 1) / n_ep if n_ep else 0.0,
        mean_round_length=sum(r.turns for r in records) / rounds if rounds else 0.0,
        mean_rounds_per_episode=rounds / n_ep if n_ep else 0.0,
        first_seat_win_rate=first_wins / n_ep if n_ep else 0.0,
        first_seat_ci95=wilson_interval(first_wins, n_ep),
    )
