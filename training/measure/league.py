"""Leagues: every group of agents plays, the agents are rated, and the table is written out.

- :func:`league`: the round robin and its ratings (a :class:`LeagueEntry` per agent, best first);
- :func:`league_markdown` / :func:`write_league`: the table as Markdown, CSV and a PNG bar chart;
- :class:`GroupsFile`: the groups a league has played, kept as each one ends, so a stopped
  league goes on from them (``resume``) instead of playing them again.

Ratings come from :func:`training.measure.ratings.fit_ratings`, fitted on every episode at once:
in a round robin they rise with the win rate, so the ranking, the rating column and the
win-rate column agree (an online rating such as openskill depends on the order the groups
were played in, and could rank an agent above one with a higher win rate). A shared win
counts as an equal part of one win for each winner, in the rating and in the win rate
alike. In a 2-player league, ``league.md`` also gives every pair's head-to-head record.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from loveletter_env.agents.solved import file_sha256
from loveletter_env.agents.specs import AgentSpec, agent_label, resolve_agent, spec_files
from loveletter_env.atomic_files import replacing, replacing_together
from loveletter_env.validation import MAX_SEED, check_seed
from training.measure.matches import MatchSetup, play_matches
from training.measure.plotting import load_plotting
from training.measure.ratings import BASE_RATING, fit_ratings
from training.measure.ray_cluster import RayCluster, ray_connection
from training.measure.stats import percentages

#: The files :func:`write_league` writes into its folder: the table, the CSV and the chart.
LEAGUE_FILES = ("league.md", "league.csv", "league.png")
#: The file in the league's folder that keeps every group's results as the group ends.
GROUPS_FILE = "league_groups.jsonl"
#: The first line of a groups file: what it is, in what layout.
GROUPS_FORMAT = {"format": "loveletter league groups", "version": 1}


class GroupsFile:
    """The groups of one league played so far, one JSON line each after a header line that
    says which league they belong to: its agents (with the digest of every file an agent reads
    its play from), table size, episodes, rules, seed and deals. Workers, Ray and progress bars
    are not part of it: they do not change a group's results.

    Each group's line is appended and flushed to disk when the group ends, so a league stopped
    by Ctrl-C or a crash keeps every group it finished; a line cut short by the stop is dropped
    when the file is read. An agent given as an object, not a spec, is known by its label only.
    """

    def __init__(self, path: Path, league_key: dict[str, object]):
        self.path = Path(path)
        self.header = {**GROUPS_FORMAT, **league_key}

    @staticmethod
    def read_lines(path: Path) -> list[dict[str, object]]:
        """The file's records, header first; a last line cut short is left out.

        Raises:
            ValueError: naming the file, when it is no groups file or a line before the last is damaged.
        """
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        records = []
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):  # the append a stop cut short: that group plays again
                    break
                damaged = f"{path}: line {number} is damaged; remove the file to play the league again"
                raise ValueError(damaged) from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}: line {number} is not a JSON object")
            records.append(record)
        if not records or any(records[0].get(k) != v for k, v in GROUPS_FORMAT.items()):
            raise ValueError(f"{path} is not a league's groups file ({GROUPS_FILE})")
        return records

    @classmethod
    def progress_of(cls, path: Path) -> tuple[int, int]:
        """``(groups kept, groups in the league)`` of the groups file at ``path``."""
        records = cls.read_lines(path)
        return len(records) - 1, int(records[0].get("groups", 0))  # type: ignore[call-overload]

    def kept(self) -> dict[int, list[list[int]]]:
        """The groups kept by a stopped run of this same league, by index: each its episodes'
        winning slots. The file is rewritten without a line a stop cut short.

        Raises:
            ValueError: the file belongs to another league (naming what differs) or is damaged.
        """
        records = self.read_lines(self.path)
        differ = sorted(k for k in set(self.header) | set(records[0]) if self.header.get(k) != records[0].get(k))
        if differ:
            raise ValueError(
                f"{self.path} keeps the groups of another league (it differs in {', '.join(differ)}): "
                "run the league with the same agents and options, or start it again without --resume"
            )
        groups: dict[int, list[list[int]]] = {}
        for record in records[1:]:
            index, winners = record.get("group"), record.get("winners")
            if not isinstance(index, int) or not isinstance(winners, list):
                raise ValueError(f"{self.path}: a group's line lacks its index or winners")
            groups[index] = winners
        self._write(records)
        return groups

    def start(self) -> None:
        """Begin the file afresh: the header, and no group."""
        self._write([self.header])

    def add(self, index: int, winners: list[list[int]]) -> None:
        """Keep group ``index``'s results: appended, flushed and synced before the next group."""
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"group": index, "winners": winners}) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _write(self, records: list[dict[str, object]]) -> None:
        with replacing(self.path) as aside:
            aside.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def league_key(
    agents: Sequence[AgentSpec], num_players: int, rounds: int, episode: str, rules: str, seed: int, duplicate: bool
) -> dict[str, object]:
    """What makes a league's results what they are (a :class:`GroupsFile`'s header)."""
    files = {
        agent_label(a): {os.fspath(f): file_sha256(f) for f in spec_files(a)}
        for a in agents
        if isinstance(a, (str, os.PathLike))
    }
    return {
        "agents": [agent_label(a) for a in agents],
        "agent_files": files,
        "players": num_players,
        "rounds": rounds,
        "episode": episode,
        "rules": rules,
        "seed": seed,
        "duplicate": duplicate,
        "groups": len(list(itertools.combinations(range(len(agents)), num_players))),
    }


@dataclass
class LeagueEntry:
    """One agent's line in the league table.

    Attributes:
        agent: the agent's label.
        rating: Elo-scale rating (1500: the agents' average; 400 points: 10-to-1 odds head to head).
        win_rate: share of its episodes won, a shared win counting as a part of one.
        wins: episodes won, shared wins counting as a part of one.
        episodes: episodes played.
        head_to_head: for each opponent (2-player leagues only), this agent's win rate against it.
    """

    agent: str
    rating: float
    win_rate: float
    wins: float
    episodes: int
    head_to_head: dict[str, float] = field(default_factory=dict)


def league(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    rounds: int = 200,
    episode: str = "round",
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    rules: str = "classic",
    ray: RayCluster | None = None,
    duplicate: bool = False,
    groups_file: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> list[LeagueEntry]:
    """Round robin: every group of ``num_players`` distinct agents plays ``rounds``
    episodes; the ratings are fitted on all of them at once. Returns the table, best
    first (by win rate, which orders the ratings alike). With ``ray``, every group plays on
    that Ray cluster, connected once for the whole league; with ``duplicate``, each group
    plays every deal once in each seat rotation (``rounds`` a multiple of ``num_players``).

    With ``groups_file``, every group's results are kept there as the group ends
    (:class:`GroupsFile`); with ``resume`` too, the groups that file already keeps for this
    same league are taken from it instead of played again. Each group has its own seed, so
    the table is the same as an unbroken run's.

    Raises:
        ValueError: bad arguments, or (``resume``) a groups file of another league.
        FileNotFoundError: ``resume`` without a groups file to go on from.
    """
    seed = check_seed(seed)  # named now, not by numpy when the first group is seeded
    if len(agents) < num_players:
        raise ValueError(f"a {num_players}-player league needs at least {num_players} agents, got {len(agents)}")
    labels = [agent_label(a) for a in agents]
    if len(set(labels)) != len(labels):
        raise ValueError(f"league agents must be distinct, got {labels}")
    for agent in agents:  # a bad spec is named now, not when the first of its groups comes up
        resolve_agent(agent)
    kept: dict[int, list[list[int]]] = {}
    store = None
    if groups_file is not None:
        store = GroupsFile(Path(groups_file), league_key(agents, num_players, rounds, episode, rules, seed, duplicate))
        if resume:
            if not store.path.is_file():
                raise FileNotFoundError(f"nothing to resume: {store.path} does not exist")
            kept = store.kept()
        else:
            store.start()
    elif resume:
        raise ValueError("resume needs the groups_file to go on from")
    episodes: list[tuple[list[str], list[str]]] = []
    played = dict.fromkeys(labels, 0)
    won = dict.fromkeys(labels, 0.0)
    pair_won: dict[tuple[str, str], float] = {}
    # One connection for every group (play_matches uses it rather than connecting again).
    with ray_connection(ray) if ray is not None else nullcontext():
        for group_index, group in enumerate(itertools.combinations(range(len(agents)), num_players)):
            names = [labels[i] for i in group]
            # Each group its own seed; near the top of the range they wrap round rather than
            # step past it, which would stop the league at its second group.
            group_seed = (seed + group_index) % (MAX_SEED + 1)
            if group_index in kept:
                group_winners = kept[group_index]
                if len(group_winners) != rounds or not all(
                    isinstance(w, list) and w and all(type(s) is int and 0 <= s < num_players for s in w)
                    for w in group_winners
                ):
                    raise ValueError(f"{groups_file}: group {group_index}'s results are damaged")
            else:
                setup = MatchSetup.of([agents[i] for i in group], num_players, episode, rules, group_seed, duplicate)
                _, records = play_matches(setup, rounds, workers, progress, ray)
                group_winners = [list(record.winners) for record in records]
                if store is not None:
                    store.add(group_index, group_winners)
            for slots in group_winners:
                winners = [names[slot] for slot in slots]
                episodes.append((names, winners))
                for name in names:
                    played[name] += 1
                    share = 1.0 / len(winners) if name in winners else 0.0
                    won[name] += share
                    if num_players == 2:
                        other = names[1] if name == names[0] else names[0]
                        pair_won[name, other] = pair_won.get((name, other), 0.0) + share
    ratings = fit_ratings(labels, episodes)
    table = [
        LeagueEntry(
            name,
            ratings[name],
            won[name] / played[name],
            won[name],
            played[name],
            {other: pair_won[name, other] / rounds for other in labels if (name, other) in pair_won},
        )
        for name in labels
    ]
    return sorted(table, key=lambda e: (e.win_rate, e.rating), reverse=True)


def league_markdown(table: Sequence[LeagueEntry]) -> str:
    """The league table in Markdown (and, for 2-player leagues, the head-to-head win rates)."""
    rows = [
        "| rank | agent | rating | win rate | episodes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rank, e in enumerate(table, 1):
        rows.append(f"| {rank} | {e.agent} | {e.rating:.0f} | {e.win_rate:.1%} | {e.episodes} |")
    if any(e.head_to_head for e in table):
        names = [e.agent for e in table]
        rows += ["", "Head to head (the row's win rate against the column):", ""]
        rows.append("| | " + " | ".join(names) + " |")
        rows.append("| --- " * (len(names) + 1) + "|")
        by_name = {e.agent: e for e in table}
        for e in table:
            # Each pair's two figures are rounded together, so they add up to 100.0%.
            cells = [
                percentages([e.head_to_head[n], by_name[n].head_to_head[e.agent]])[0] if n in e.head_to_head else "-"
                for n in names
            ]
            rows.append(f"| {e.agent} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def write_league(table: Sequence[LeagueEntry], out_dir: Path) -> list[Path]:
    """Write ``league.md``, ``league.csv`` and ``league.png`` (a bar chart) into ``out_dir``."""
    plt = load_plotting()

    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path, png = (out_dir / name for name in LEAGUE_FILES)
    with replacing_together([md, csv_path, png]) as (md_aside, csv_aside, png_aside):
        md_aside.write_text(league_markdown(table) + "\n")
        with csv_aside.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["rank", "agent", "rating", "win_rate", "episodes"])
            for rank, e in enumerate(table, 1):
                writer.writerow([rank, e.agent, f"{e.rating:.1f}", f"{e.win_rate:.4f}", e.episodes])
        fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(table)), 3.5))
        ax.bar([e.agent for e in table], [e.rating for e in table], color="tab:blue")
        ax.axhline(BASE_RATING, color="grey", linewidth=0.8)
        ax.set_ylabel("rating (1500: the average agent)")
        ax.set_title("Love Letter league")
        fig.tight_layout()
        fig.savefig(png_aside, dpi=100, format="png")
        plt.close(fig)
    return [md, csv_path, png]
