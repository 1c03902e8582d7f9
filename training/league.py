"""Leagues: every group of agents plays, openskill rates them, and the table is written out.

- :func:`league`: the round robin and its ratings (a :class:`LeagueEntry` per agent, best first);
- :func:`league_markdown` / :func:`write_league`: the table as Markdown, CSV and a PNG bar chart.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loveletter_env.agents.specs import AgentSpec, agent_label

from .matches import play_matches


@dataclass
class LeagueEntry:
    """One agent's line in the league table."""

    agent: str
    mu: float
    sigma: float
    ordinal: float  # mu - 3 sigma: the conservative rating the table is sorted by
    episodes: int
    win_rate: float


def league(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    rounds: int = 200,
    episode: str = "round",
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    rules: str = "classic",
) -> list[LeagueEntry]:
    """Round robin: every group of ``num_players`` distinct agents plays ``rounds``
    episodes; openskill (Plackett-Luce) rates every episode in order. Returns the
    table, best first."""
    from openskill.models import PlackettLuce

    if len(agents) < num_players:
        raise ValueError(f"a {num_players}-player league needs at least {num_players} agents, got {len(agents)}")
    labels = [agent_label(a) for a in agents]
    if len(set(labels)) != len(labels):
        raise ValueError(f"league agents must be distinct, got {labels}")
    model = PlackettLuce()
    ratings = {name: model.rating(name=name) for name in labels}
    played = dict.fromkeys(labels, 0)
    won = dict.fromkeys(labels, 0)
    for group_index, group in enumerate(itertools.combinations(range(len(agents)), num_players)):
        names = [labels[i] for i in group]
        _, records = play_matches(
            [agents[i] for i in group], num_players, rounds, episode, seed + group_index, workers, progress, rules
        )
        for record in records:
            teams = [[ratings[name]] for name in names]
            ranks: list[float] = [1 if slot in record.winners else 2 for slot in range(num_players)]
            for name, [rating] in zip(names, model.rate(teams, ranks=ranks)):
                ratings[name] = rating
            for slot, name in enumerate(names):
                played[name] += 1
                won[name] += slot in record.winners
    table = [
        LeagueEntry(name, r.mu, r.sigma, r.ordinal(), played[name], won[name] / played[name])
        for name, r in ratings.items()
    ]
    return sorted(table, key=lambda e: e.ordinal, reverse=True)


def league_markdown(table: Sequence[LeagueEntry]) -> str:
    """The league table in Markdown."""
    rows = [
        "| rank | agent | rating (mu - 3 sigma) | mu | sigma | episodes | win rate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rank, e in enumerate(table, 1):
        rows.append(
            f"| {rank} | {e.agent} | {e.ordinal:.2f} | {e.mu:.2f} | {e.sigma:.2f} | {e.episodes} | {e.win_rate:.1%} |"
        )
    return "\n".join(rows)


def write_league(table: Sequence[LeagueEntry], out_dir: Path) -> list[Path]:
    """Write ``league.md``, ``league.csv`` and ``league.png`` (a bar chart) into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path, png = out_dir / "league.md", out_dir / "league.csv", out_dir / "league.png"
    md.write_text(league_markdown(table) + "\n")
    with csv_path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["rank", "agent", "ordinal", "mu", "sigma", "episodes", "win_rate"])
        for rank, e in enumerate(table, 1):
            writer.writerow(
                [rank, e.agent, f"{e.ordinal:.4f}", f"{e.mu:.4f}", f"{e.sigma:.4f}", e.episodes, f"{e.win_rate:.4f}"]
            )
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(table)), 3.5))
    ax.bar(
        [e.agent for e in table], [e.mu for e in table], yerr=[3 * e.sigma for e in table], capsize=4, color="tab:blue"
    )
    ax.set_ylabel("openskill mu (error bar: 3 sigma)")
    ax.set_title("Love Letter league")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return [md, csv_path, png]
