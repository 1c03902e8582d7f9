"""Figures of an evaluation: episode records, win rates and their confidence intervals.

- :func:`wilson_interval`: the 95% interval of a win rate;
- :class:`EpisodeRecord`: one episode's outcome by lineup slot (what playing produces);
- :class:`EvaluationResult`: the one result type of every evaluation (the ``evaluate``
  tool, the trainer's periodic evaluations, the exploitability tool), made by
  :func:`summarize` from the records.

With duplicate deals (every deal played once in each seat rotation, see
:func:`training.measure.matches.duplicate_deal_seed`) the episodes are not independent:
:func:`deal_groups` cuts the records into deals, and the intervals come from the per-deal
mean scores (:func:`per_deal_interval`) rather than from single episodes.
"""

from __future__ import annotations

import functools
import math
import numbers
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

Z_95 = 1.959963984540054


def wilson_interval(successes: float, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (``(0, 1)`` with no trials).

    ``successes`` may be fractional (a shared win counting ½).

    Raises:
        ValueError: ``trials`` is no whole number ``>= 0``, or ``successes`` is not in ``[0, trials]``
            (outside it the formula takes the root of a negative number, or spans a rate no count gives).
    """
    if isinstance(trials, bool) or not isinstance(trials, numbers.Integral) or trials < 0:
        raise ValueError(f"wilson_interval: trials must be a whole number >= 0, got {trials!r}")
    if isinstance(successes, bool) or not isinstance(successes, numbers.Real) or not 0 <= successes <= trials:
        raise ValueError(f"wilson_interval: successes must be a number in [0, trials={trials}], got {successes!r}")
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # The interval holds the observed rate; rounding alone can leave it out at 0 or at every win
    # (2000 wins of 2000 had an upper bound of 0.9999999999999998), so the bounds are kept to it.
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


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
    # Equal remainders go to the larger share, never to the first listed: a pair of shares
    # rounded in either order then shows the same two figures, which add up.
    by_remainder = sorted(range(len(exact)), key=lambda i: (round(exact[i] - shown[i], 9), exact[i]), reverse=True)
    for i in by_remainder[: max(0, missing)]:
        shown[i] += 1
    return [f"{units / 10**decimals:.{decimals}f}%" for units in shown]


class EpisodeRecord(NamedTuple):
    """One episode's outcome, by lineup slot."""

    winners: tuple[int, ...]  # slots that won (several after a shared showdown)
    first_slot: int  # slot of the player who moved first (round 1 for whole games)
    turns: int
    rounds: int


def deal_groups(records: Sequence[EpisodeRecord], num_players: int) -> list[Sequence[EpisodeRecord]]:
    """The records of a duplicate-deal run cut into its deals: ``num_players`` consecutive
    episodes each, the ``j``-th of a deal with slot ``i`` at seat ``(i + j) % num_players``.

    Raises:
        ValueError: the records do not make whole deals (see :func:`complete_deals`).
    """
    if len(records) % num_players:
        raise ValueError(f"{len(records)} episodes do not make whole deals of {num_players} seat rotations")
    return [records[start : start + num_players] for start in range(0, len(records), num_players)]


def complete_deals(records: Sequence[EpisodeRecord], num_players: int) -> Sequence[EpisodeRecord]:
    """The records of the deals played in every seat rotation: an interrupted run may stop mid-deal,
    and a deal seen from some seats only would count its luck unevenly."""
    return records[: len(records) - len(records) % num_players]


def per_deal_interval(
    deals: Sequence[Sequence[EpisodeRecord]], won: Callable[[EpisodeRecord], float], z: float = Z_95
) -> tuple[float, float]:
    """The 95% interval of a win rate over duplicate deals.

    Each deal scores the share of its rotations that ``won`` (for instance "slot 0 is among the
    winners"; ``won`` may also give a round's score in [0, 1], a shared win counting ½); the
    interval is the mean score ± ``z`` standard errors (sample standard deviation over the
    deals), clipped to ``[0, 1]``. The deal's luck weighs on every rotation alike, so
    the deals, not the episodes, are the independent draws. With fewer than 2 deals there is no
    spread to measure, and the Wilson interval over the episodes stands in.

    Where every deal scored alike, the sample shows no spread, which is no evidence that there
    is none (a few deals that the seats decided score ½ each): the Wilson interval over the
    deals, each a trial scored in ``[0, 1]``, stands in, never an interval of zero width.

    Raises:
        ValueError: ``won`` gave a score outside ``[0, 1]`` (NaN included): clipped, it would
            narrow the interval out of sight.
    """
    episode_scores = [[float(won(r)) for r in deal] for deal in deals]
    for deal_scores in episode_scores:
        for score in deal_scores:
            if not 0.0 <= score <= 1.0:
                raise ValueError(f"per_deal_interval: a score must be in [0, 1], got {score!r}")
    if len(deals) < 2:
        return wilson_interval(sum(map(sum, episode_scores)), sum(map(len, episode_scores)), z)
    scores = [sum(deal_scores) / len(deal_scores) for deal_scores in episode_scores]
    spread = statistics.stdev(scores)
    if spread == 0:
        return wilson_interval(sum(scores), len(scores), z)
    mean = statistics.fmean(scores)
    half = z * spread / math.sqrt(len(scores))
    return (max(0.0, mean - half), min(1.0, mean + half))


def decided_by_seat(deals: Sequence[Sequence[EpisodeRecord]], num_players: int) -> float | None:
    """The share of duplicate deals that the same seat won in every rotation, whoever sat there
    (a shared win in any rotation leaves the deal undecided); ``None`` without deals."""
    if not deals:
        return None

    def winning_seat(record: EpisodeRecord, rotation: int) -> int | None:
        return (record.winners[0] + rotation) % num_players if len(record.winners) == 1 else None

    decided = 0
    for deal in deals:
        seats = {winning_seat(record, rotation) for rotation, record in enumerate(deal)}
        decided += len(seats) == 1 and None not in seats
    return decided / len(deals)


@dataclass
class EvaluationResult:
    """Outcome of an evaluation (:func:`training.measure.evaluation.evaluate`). Lists are indexed by lineup slot.

    ``win_rate[i]`` counts every episode slot ``i`` won, shared wins included, so the
    rates may add up to a little more than 1; ``shared_rate`` is the share of episodes
    with several winners.

    ``rules`` is the rule preset the episodes were played under.

    ``duplicate`` says whether every deal was played once in each seat rotation; the intervals
    are then those of :func:`per_deal_interval`, and ``decided_by_seat`` is the share of deals
    the same seat won in every rotation (:func:`decided_by_seat`; ``None`` otherwise).
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
    duplicate: bool = False
    decided_by_seat: float | None = None
    rules: str = "classic"

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
        # The preset is named unless classic: figures of a ladder rung are no full-game figures.
        rules = "" if self.rules == "classic" else f", rules {self.rules}"
        lines = [f"{self.episodes} {unit}, {self.num_players} players{rules}, seed {self.seed}"]
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
        if self.duplicate:
            deals = self.episodes // self.num_players
            decided = ""
            if self.decided_by_seat is not None:
                decided = f"; {self.decided_by_seat:.1%} won by the same seat whoever sat there"
            lines.append(
                f"  duplicate deals: {deals} deals, each played {self.num_players} times with seats rotated{decided}"
            )
        return "\n".join(lines)


def _slot_won(slot: int, record: EpisodeRecord) -> bool:
    return slot in record.winners


def summarize(
    records: Sequence[EpisodeRecord],
    labels: list[str],
    num_players: int,
    episode: str,
    seed: int,
    duplicate: bool = False,
    rules: str = "classic",
) -> EvaluationResult:
    """Aggregate episode records into an :class:`EvaluationResult`.

    Args:
        records: every episode's record, in episode order.
        labels: the lineup slots' names.
        num_players: the table size.
        episode: ``"round"`` or ``"game"``.
        seed: the run's seed (reported as is).
        duplicate: the records come in deals of ``num_players`` seat rotations (see
            :func:`deal_groups`); the intervals are then taken over per-deal scores, the first
            player's included, as every rotation of a deal starts from the same seat.
        rules: the rule preset the episodes were played under (reported as is).

    Raises:
        ValueError: one label per player is not given; a record whose winners are no distinct slots of
            the lineup (a slot out of it would drop its wins unseen) or whose ``first_slot`` is none;
            with ``duplicate``, records that do not make whole deals.
    """
    if len(labels) != num_players:
        raise ValueError(f"summarize: {num_players} players but {len(labels)} labels {labels!r}")
    slots = f"0..{num_players - 1}"
    for index, record in enumerate(records):
        winners = record.winners
        if not winners or len(set(winners)) != len(winners) or not all(0 <= w < num_players for w in winners):
            raise ValueError(f"summarize: episode {index} has winners {winners!r}, not distinct slots in {slots}")
        if not 0 <= record.first_slot < num_players:
            raise ValueError(f"summarize: episode {index} has first_slot {record.first_slot!r}, not a slot in {slots}")
    n_ep = len(records)
    wins = [sum(1 for r in records if slot in r.winners) for slot in range(len(labels))]
    first_wins = sum(1 for r in records if r.first_slot in r.winners)
    rounds = sum(r.rounds for r in records)
    if duplicate:
        deals = deal_groups(records, num_players)
        ci95 = [per_deal_interval(deals, functools.partial(_slot_won, slot)) for slot in range(len(labels))]
        first_seat_ci95 = per_deal_interval(deals, lambda r: r.first_slot in r.winners)
        seat_decided = decided_by_seat(deals, num_players)
    else:
        ci95 = [wilson_interval(w, n_ep) for w in wins]
        first_seat_ci95 = wilson_interval(first_wins, n_ep)
        seat_decided = None
    return EvaluationResult(
        agents=labels,
        num_players=num_players,
        episode=episode,
        episodes=n_ep,
        seed=seed,
        wins=wins,
        win_rate=[w / n_ep if n_ep else 0.0 for w in wins],
        ci95=ci95,
        shared_rate=sum(1 for r in records if len(r.winners) > 1) / n_ep if n_ep else 0.0,
        mean_round_length=sum(r.turns for r in records) / rounds if rounds else 0.0,
        mean_rounds_per_episode=rounds / n_ep if n_ep else 0.0,
        first_seat_win_rate=first_wins / n_ep if n_ep else 0.0,
        first_seat_ci95=first_seat_ci95,
        duplicate=duplicate,
        decided_by_seat=seat_decided,
        rules=rules,
    )
