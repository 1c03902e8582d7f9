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
import hashlib
import itertools
import json
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loveletter_env.agents.solved import file_sha256
from loveletter_env.agents.specs import AgentSpec, agent_label, spec_files
from loveletter_env.atomic_files import replacing, replacing_together
from loveletter_env.validation import MAX_SEED, check_seed
from training.measure.matches import MatchSetup, check_play, play_matches
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
#: What a group's results depend on besides its agents: a groups file's header keeps them, and
#: a league resumes only from groups played with the same.
LEAGUE_SETTINGS = ("players", "rounds", "episode", "rules", "seed", "duplicate")


def league_settings(
    num_players: int, rounds: int, episode: str, rules: str, seed: int, duplicate: bool
) -> dict[str, object]:
    """A league's :data:`LEAGUE_SETTINGS`, by name, as its groups file's header keeps them."""
    return dict(zip(LEAGUE_SETTINGS, (num_players, rounds, episode, rules, seed, duplicate), strict=True))


def group_seed(seed: int, names: Sequence[str]) -> int:
    """The seed of the group of agents ``names`` (in their seats' order) in a league seeded
    ``seed``: a function of the two alone, so a group plays the same episodes whatever other
    agents the league holds, and a league can take in a new agent without changing the groups
    it has played."""
    digest = hashlib.sha256("\n".join([str(seed), *names]).encode()).digest()
    return int.from_bytes(digest[:8], "big") % (MAX_SEED + 1)


def agent_files(agent: AgentSpec) -> dict[str, str]:
    """The SHA-256 of every file ``agent`` plays from (:func:`spec_files`), by path: a checkpoint
    trained again under the same path is another agent. Empty for an agent object."""
    if not isinstance(agent, (str, os.PathLike)):
        return {}
    return {os.fspath(f): file_sha256(f) for f in spec_files(agent)}


class GroupsFile:
    """The groups a league has played, kept as each one ends: one JSON line each (the group's
    agents in their seats' order, the digest of every file they play from, and each episode's
    winning seats), after a header line with the league's settings (:data:`LEAGUE_SETTINGS`).
    Workers, Ray and progress bars are not part of it: they do not change a group's results.

    Each group's line is appended and flushed to disk when the group ends, so a league stopped
    by Ctrl-C or a crash keeps every group it finished; a line cut short by the stop is dropped
    when the file is read. Since a group's seed depends on its agents alone
    (:func:`group_seed`), a league that resumes with more agents takes every group it kept and
    plays only the new agents' groups. An agent given as an object, not a spec, is known by its
    label only.
    """

    def __init__(self, path: Path, settings: dict[str, object], agents: Sequence[str], groups: int):
        self.path = Path(path)
        self.header = {**GROUPS_FORMAT, **settings, "agents": list(agents), "groups": groups}

    @staticmethod
    def read_lines(path: Path) -> list[dict[str, Any]]:
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
        # Checked here, for every reader: a hand-edited file otherwise ended in a TypeError.
        if not isinstance(records[0].get("agents"), list) or type(records[0].get("groups")) is not int:
            raise ValueError(f"{path}: its first line lacks the league's agents or its count of groups")
        for number, record in enumerate(records[1:], 2):
            if not isinstance(record.get("agents"), list):
                raise ValueError(f"{path}: line {number} lacks its group's agents")
        return records

    @staticmethod
    def other_settings(header: dict[str, Any], settings: dict[str, object]) -> list[str]:
        """The names of the ``settings`` (:func:`league_settings`) a groups file's ``header`` keeps
        other values of: a league goes on only from groups played with the same."""
        return [k for k in LEAGUE_SETTINGS if header.get(k) != settings.get(k)]

    @classmethod
    def progress_of(cls, path: Path, settings: dict[str, object] | None = None) -> tuple[int, int]:
        """``(groups kept, groups in the league)`` of the league whose groups file is at ``path``.
        With ``settings`` (:func:`league_settings`), a file of a league played with other settings
        keeps none: a league with these could not go on from its groups."""
        return cls.progress(cls.read_lines(path), settings)

    @classmethod
    def progress(cls, records: list[dict[str, Any]], settings: dict[str, object] | None = None) -> tuple[int, int]:
        """:meth:`progress_of` a groups file's lines already read (:meth:`read_lines`)."""
        if settings is not None and cls.other_settings(records[0], settings):
            return 0, int(records[0].get("groups", 0))
        agents = set(records[0].get("agents") or ())
        kept = {tuple(r.get("agents") or ()) for r in records[1:]}
        return sum(1 for names in kept if set(names) <= agents), int(records[0].get("groups", 0))

    def kept(self) -> dict[tuple[str, ...], tuple[dict[str, dict[str, str]], list[list[int]]]]:
        """The groups kept in the file, by their agents: the digests of the files those agents
        played from, and each episode's winning seats. The file is rewritten with this league's
        header and without a line a stop cut short; groups of agents no longer in the league stay.

        Raises:
            ValueError: the file's groups were played with other settings (naming them) or it is damaged.
        """
        records = self.read_lines(self.path)
        differ = self.other_settings(records[0], self.header)
        if differ:
            raise ValueError(
                f"{self.path} keeps the groups of a league with another {', '.join(differ)}: run the league with "
                "the same options, or start it again without --resume"
            )
        groups: dict[tuple[str, ...], tuple[dict[str, dict[str, str]], list[list[int]]]] = {}
        for record in records[1:]:
            names, files, winners = record.get("agents"), record.get("files"), record.get("winners")
            if not isinstance(names, list) or not isinstance(files, dict) or not isinstance(winners, list):
                raise ValueError(f"{self.path}: a group's line lacks its agents, files or winners")
            groups[tuple(names)] = (files, winners)
        self._write([self.header, *records[1:]])
        return groups

    def start(self) -> None:
        """Begin the file afresh: the header, and no group (its folder made now, once the league's
        arguments are checked, so that a league refused leaves no empty folder)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write([self.header])

    def add(self, names: Sequence[str], files: dict[str, dict[str, str]], winners: list[list[int]]) -> None:
        """Keep a group's results: appended, flushed and synced before the next group."""
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"agents": list(names), "files": files, "winners": winners}) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _write(self, records: list[dict[str, Any]]) -> None:
        with replacing(self.path) as aside:
            aside.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


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

    Each group seats its agents in the order of their labels and has its own seed, a function
    of ``seed`` and its agents (:func:`group_seed`): the table does not depend on the order the
    agents are given in, and a group plays the same episodes in any league that holds it.

    With ``groups_file``, every group's results are kept there as the group ends
    (:class:`GroupsFile`). With ``resume`` too, every group that file keeps for agents of this
    league, played with the same settings and from the same files, is taken from it instead
    of played again: a stopped league goes on where it stopped, and one given more agents
    plays only their groups. Either way the table is the one a league played at once gives.

    Raises:
        ValueError: bad arguments, or (``resume``) a groups file of other settings.
        FileNotFoundError: ``resume`` without a groups file to go on from.
    """
    seed = check_seed(seed)  # named now, not by numpy when the first group is seeded
    if len(agents) < num_players:
        raise ValueError(f"a {num_players}-player league needs at least {num_players} agents, got {len(agents)}")
    labels = [agent_label(a) for a in agents]
    if len(set(labels)) != len(labels):
        raise ValueError(f"league agents must be distinct, got {labels}")
    # The table, rules, episodes and counts are named now, before the groups file starts (refused at
    # the first group, they left a file that the command then took for an unfinished league's); so is
    # every agent's bad spec or solved policy of other rules, not when the first of its groups comes up.
    check_play(
        MatchSetup.of(agents[:num_players], num_players, episode, rules, seed, duplicate), rounds, workers, agents
    )
    # Every group seats its agents in the order of their labels, so a league's table does not
    # depend on the order the agents are given in, and a group is known by its agents alone.
    by_label = sorted(range(len(agents)), key=lambda i: labels[i])
    groups = list(itertools.combinations(by_label, num_players))
    # Only a league that keeps its groups needs to know its agents' files (a hash of each).
    files = {labels[i]: agent_files(agents[i]) if groups_file is not None else {} for i in range(len(agents))}
    kept: dict[tuple[str, ...], tuple[dict[str, dict[str, str]], list[list[int]]]] = {}
    store = None
    if groups_file is not None:
        settings = league_settings(num_players, rounds, episode, rules, seed, duplicate)
        store = GroupsFile(Path(groups_file), settings, labels, len(groups))
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
        for group in groups:
            names = [labels[i] for i in group]
            group_files = {name: files[name] for name in names}
            if tuple(names) in kept and kept[tuple(names)][0] == group_files:
                group_winners = _checked_winners(kept[tuple(names)][1], rounds, num_players, names, groups_file)
            else:
                setup = MatchSetup.of(
                    [agents[i] for i in group], num_players, episode, rules, group_seed(seed, names), duplicate
                )
                _, records = play_matches(setup, rounds, workers, progress, ray)
                group_winners = [list(record.winners) for record in records]
                if store is not None:
                    store.add(names, group_files, group_winners)
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
    in_order = sorted(labels)  # the fit and the ties alike whatever order the agents came in
    ratings = fit_ratings(in_order, episodes)
    table = [
        LeagueEntry(
            name,
            ratings[name],
            won[name] / played[name],
            won[name],
            played[name],
            {other: pair_won[name, other] / rounds for other in in_order if (name, other) in pair_won},
        )
        for name in in_order
    ]
    return sorted(table, key=lambda e: (-e.win_rate, -e.rating, e.agent))


def _checked_winners(
    winners: list[list[int]], rounds: int, num_players: int, names: Sequence[str], path: object
) -> list[list[int]]:
    """A kept group's episodes, each a list of winning seats, checked before they count."""
    if len(winners) != rounds or not all(
        isinstance(w, list) and w and all(type(s) is int and 0 <= s < num_players for s in w) for w in winners
    ):
        raise ValueError(f"{path}: the results kept for {', '.join(names)} are damaged")
    return winners


def describe_settings(settings: dict[str, object]) -> str:
    """A league's :func:`league_settings` in words, e.g. ``"2 players, rules mini6, 200 rounds
    a group, seed 0, duplicate deals"``: a rung's table must not read as a full game's."""
    count, episode = settings["rounds"], settings["episode"]
    words = [
        f"{settings['players']} players",
        f"rules {settings['rules']}",
        f"{count} {episode}{'s' * (count != 1)} a group",
        f"seed {settings['seed']}",
    ]
    if settings["duplicate"]:
        words.append("duplicate deals")
    return ", ".join(words)


def league_markdown(table: Sequence[LeagueEntry], settings: dict[str, object] | None = None) -> str:
    """The league table in Markdown (and, for 2-player leagues, the head-to-head win rates),
    after a line naming how it was played when ``settings`` (:func:`league_settings`) are given."""
    rows = [f"Played with {describe_settings(settings)}.", ""] if settings is not None else []
    rows += [
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


def write_league(table: Sequence[LeagueEntry], out_dir: Path, settings: dict[str, object] | None = None) -> list[Path]:
    """Write ``league.md``, ``league.csv`` and ``league.png`` (a bar chart) into ``out_dir``; the
    table and the chart name how the league was played when ``settings`` (:func:`league_settings`)
    are given."""
    plt = load_plotting()

    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path, png = (out_dir / name for name in LEAGUE_FILES)
    with replacing_together([md, csv_path, png]) as (md_aside, csv_aside, png_aside):
        md_aside.write_text(league_markdown(table, settings) + "\n")
        with csv_aside.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["rank", "agent", "rating", "win_rate", "episodes"])
            for rank, e in enumerate(table, 1):
                writer.writerow([rank, e.agent, f"{e.rating:.1f}", f"{e.win_rate:.4f}", e.episodes])
        fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(table)), 3.5))
        ax.bar([e.agent for e in table], [e.rating for e in table], color="tab:blue")
        ax.axhline(BASE_RATING, color="grey", linewidth=0.8)
        ax.set_ylabel("rating (1500: the average agent)")
        played = "" if settings is None else f" ({settings['rules']}, {settings['players']} players)"
        ax.set_title(f"Love Letter league{played}")
        fig.tight_layout()
        fig.savefig(png_aside, dpi=100, format="png")
        plt.close(fig)
    return [md, csv_path, png]
