"""The command line of ``python -m training.evaluate``: its options, their checks, and the
evaluations and leagues it runs.

It plays a lineup (:func:`training.measure.evaluation.evaluate`, which says how seats, seeds
and duplicate deals work) or a league (``--league a b c``: every group plays and the agents are
rated on all the episodes at once, written as a Markdown table, a CSV file and a PNG bar
chart; :mod:`training.measure.league`). ``--exact``, agents' scores on a ladder rung worked
out rather than played, is :mod:`training.exploitability.exact_command`'s, as it needs the
wing above this one; :mod:`training.evaluate` picks which runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from loveletter_env.agents import AGENT_NAMES
from loveletter_env.agents.specs import CHECKPOINT_SUFFIXES
from loveletter_env.validation import MAX_SEED, check_writable
from training.measure.evaluation import evaluate
from training.measure.league import (
    GROUPS_FILE,
    LEAGUE_FILES,
    GroupsFile,
    league,
    league_markdown,
    league_settings,
    write_league,
)
from training.measure.matches import (
    MAX_EPISODES,
    PlayInterrupted,
    check_duplicate_rounds,
)
from training.measure.ray_cluster import DEFAULT_CONNECT_TIMEOUT, RayCluster
from training.measure.stats import complete_deals, summarize

#: Where league tables go by default: under runs/, which git ignores, rather than the working folder itself.
DEFAULT_LEAGUE_DIR = Path("runs") / "league"
#: The replay files ``--save-replays DIR`` writes into DIR (``episode_<index>.json``).
REPLAY_FILES = "episode_*.json"
#: The file ``--exact --out DIR`` writes its result to, in DIR.
EXACT_RESULT = "exact.json"

__all__ = ["DEFAULT_LEAGUE_DIR", "EXACT_RESULT", "build_parser", "check_arguments", "run_evaluation"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description="Play Love Letter agents against each other and report win rates with 95% confidence "
        "intervals (Wilson, or over per-deal scores with --duplicate), or rate a league of agents.",
        epilog="Agents: " + ", ".join(AGENT_NAMES) + " (options as ismcts:iterations=100), a checkpoint path "
        "or run folder, or package.module:factory. Examples:\n"
        "  python -m training.evaluate belief rule --rounds 2000\n"
        "  python -m training.evaluate ismcts random --players 4 --games 50 --workers 2\n"
        "  python -m training.evaluate checkpoints/shipped/ppo_2p.pt ismcts --rounds 400 --ray\n"
        "  python -m training.evaluate checkpoints/shipped/ppo_2p.pt ismcts --rounds 4000 --ray HEAD:6379\n"
        "  python -m training.evaluate checkpoints/shipped/ppo_2p.pt ismcts --rounds 4000 --duplicate\n"
        "  python -m training.evaluate --league random rule belief --out runs/league-3bots\n"
        "  python -m training.evaluate --league random rule belief --out runs/league-3bots --resume\n"
        "  python -m training.evaluate checkpoints/shipped/ppo_2p.pt rule --exact --rules mini8\n"
        "  python -m training.evaluate rule belief random --exact --rules mini6_3p",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("agents", nargs="*", help="one agent per lineup slot (the last fills the remaining seats)")
    parser.add_argument(
        "--league", nargs="+", metavar="AGENT", help="round robin between these agents, rated on all its episodes"
    )
    parser.add_argument(
        "--players", type=int, choices=(2, 3, 4), help="table size (default 2; with --exact, the rung's)"
    )
    length = parser.add_mutually_exclusive_group()
    length.add_argument(
        "--rounds", type=int, help="play this many single rounds (default 1000; per group in a league: 200)"
    )
    length.add_argument("--games", type=int, help="play this many whole games instead of rounds")
    parser.add_argument("--rules", default="classic", help="rule preset (default classic)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    parser.add_argument(
        "--duplicate",
        action="store_true",
        help="duplicate deals: play every deal once in each seat rotation, so the luck of the deal weighs on "
        "every agent alike, and take the intervals over per-deal scores (narrower for the same rounds); "
        "--rounds/--games must be a multiple of --players (the default 1000 is rounded up to one)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="processes to play in (default 1); with --ray, Ray workers (default: one per CPU of the cluster); "
        "results do not depend on it (for agents of your own: if their reset takes seed=)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="play on a Ray cluster: a new local one without ADDRESS (or the one RAY_ADDRESS names), else 'auto' "
        "(the one started on this machine), HOST:PORT of a head node or ray://HOST:10001; put it after the agents "
        "(needs the ray extra)",
    )
    parser.add_argument(
        "--ray-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"with --ray: how long to wait for the cluster to answer (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="on a ladder rung (--rules mini6 .. mini9, mini6_3p .. mini8_3p, mini7_4p, mini8_4p), one agent per "
        "seat of the rung's table: no play, each agent's exact expected score over every deal and every branch of "
        "every agent's policy, averaged over the rotations of the lineup round the table (slot i in seat "
        "(i + r) %% n in rotation r, as a played evaluation seats them), so each agent plays each seat once",
    )
    parser.add_argument(
        "--samples",
        type=int,
        metavar="N",
        help="with --exact: searches per decision where a search agent's probabilities are estimated",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--out",
        type=_folder,
        metavar="DIR",
        help=f"league output folder (default {DEFAULT_LEAGUE_DIR}); with --exact, where to write {EXACT_RESULT}",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--save-replays",
        type=_folder,
        metavar="DIR",
        help="save the episodes as replay files in DIR (one holding none)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help=f"with --league: take the groups a stopped league kept in --out ({GROUPS_FILE}) instead of playing "
        "them again, and play the rest (the same agents and options; the table is an unbroken run's)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --save-replays: replace the replays DIR holds (they are removed before play); with --league: "
        "start again, over the groups an unfinished league kept in --out",
    )
    parser.add_argument(
        "--save-replays-every", type=int, metavar="K", help="with --save-replays: every K-th episode only (default 1)"
    )
    return parser


def _folder(text: str) -> Path:
    """A folder option's value; an empty one is refused (``Path("")`` is the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a folder, got ''")
    return Path(text)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, through ``parser.error``, the combinations no run of the command accepts, and
    give a league its default folder (``args.out``), so that every later step reads one value."""
    if bool(args.agents) == bool(args.league):
        which = "not both" if args.agents else "none were given"
        parser.error(f"give the agents to evaluate, or --league AGENT AGENT ... ({which})")
    if not 0 <= args.seed <= MAX_SEED:
        parser.error(f"--seed must be in 0..2**63 - 1, got {args.seed}")
    if args.league and args.save_replays:
        parser.error("--save-replays works with a plain evaluation, not with --league")
    if args.force and args.save_replays is None and not args.league:
        parser.error("--force goes with --save-replays DIR (or --league): it lets the run replace what DIR holds")
    if args.resume and not args.league:
        parser.error("--resume goes with --league: it goes on from the groups a stopped league kept")
    if args.resume and args.force:
        parser.error("--resume goes on from the groups kept, --force starts again: give one of them")
    if args.save_replays_every is not None and args.save_replays is None:
        parser.error("--save-replays-every goes with --save-replays DIR: without it no replay is saved")
    if args.out is not None and not (args.league or args.exact):
        parser.error("--out goes with --league or --exact: a plain evaluation prints its result (use --json)")
    if args.ray_timeout is not None and args.ray is None:
        parser.error("--ray-timeout goes with --ray: without it no cluster is asked for")
    if args.ray and _names_an_agent(args.ray):
        parser.error(f"--ray took the agent {args.ray!r} for a cluster address: put --ray after the agents")
    for name in ("rounds", "games", "workers", "save_replays_every"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {value}")
    for name in ("rounds", "games"):
        value = getattr(args, name)
        if value is not None and value > MAX_EPISODES:
            parser.error(f"--{name} must be at most {MAX_EPISODES:,} (one run's episodes), got {value}")
    # Where the results go is checked before the play, not after it.
    try:
        if args.league:
            out = args.out = args.out or DEFAULT_LEAGUE_DIR
            check_writable("--out", out, folder=True)
            for name in (*LEAGUE_FILES, GROUPS_FILE):  # a folder in a file's place would fail only once played
                check_writable("--out", out / name)
            _check_kept_groups(parser, args, out / GROUPS_FILE)
        if args.save_replays is not None:
            check_writable("--save-replays", args.save_replays, folder=True)
            if any(args.save_replays.glob(REPLAY_FILES)) and not args.force:
                parser.error(
                    f"--save-replays {str(args.save_replays)!r} already holds replays, which this run's would "
                    "replace or mix with: give a new folder, or pass --force"
                )
    except ValueError as err:
        parser.error(str(err))


def _check_kept_groups(parser: argparse.ArgumentParser, args: argparse.Namespace, path: Path) -> None:
    """A league neither loses the groups a stopped run kept nor resumes from nothing, nor from
    groups played with other settings (refused by the league only once its agents are loaded)."""
    if args.resume and not path.is_file():
        parser.error(f"--resume: nothing to go on from, {str(path)!r} does not exist")
    if args.force or not path.is_file():
        return
    episode, count = _episodes(args, args.players or 2)
    settings = league_settings(args.players or 2, count, episode, args.rules, args.seed, args.duplicate)
    try:
        records = GroupsFile.read_lines(path)
    except (ValueError, OSError) as err:
        if args.resume:  # the league names the damage
            return
        parser.error(f"--out holds a groups file that cannot be read ({err}): --force starts the league again")
    kept, total = GroupsFile.progress(records)
    differ = ", ".join(GroupsFile.other_settings(records[0], settings))
    if args.resume:
        if differ:
            parser.error(
                f"--resume: {str(path)!r} keeps the groups of a league with another {differ}: give the options it "
                "was played with, or --force to start this one over them"
            )
        return
    if len(records) > 1 and kept < total:  # a league stopped before its first group ended kept nothing to lose
        played = f" with another {differ}" if differ else ""
        go_on = "" if differ else "--resume plays the rest, "
        parser.error(
            f"--out {str(path.parent)!r} holds {kept} of {total} groups of an unfinished league{played} "
            f"({GROUPS_FILE}): {go_on}--force starts again"
        )


def _episodes(args: argparse.Namespace, players: int) -> tuple[str, int]:
    """What the run plays (a league: each group): ``("round" or "game", how many)``, the default
    count rounded up to whole deals with ``--duplicate``."""
    episode = "game" if args.games else "round"
    count = args.games or args.rounds or (200 if args.league else 1000)
    if args.duplicate and not (args.games or args.rounds):
        count = -(-count // players) * players
    return episode, count


def _remove_earlier_replays(folder: Path) -> None:
    """``--force``: the replays an earlier run left in ``folder`` go, so that it holds this run's
    alone (a shorter run would otherwise leave the earlier run's later episodes beside its own)."""
    earlier = sorted(folder.glob(REPLAY_FILES))
    for path in earlier:
        path.unlink()
    if earlier:
        print(f"--force: removed {len(earlier)} replays of an earlier run from {folder}", file=sys.stderr)


def _report_league_interruption(args: argparse.Namespace, settings: dict[str, object]) -> None:
    """Ctrl-C in a league: what it kept, and how to go on. Stopped before it started its groups
    file, the file in ``--out`` may be an earlier league's: its groups count only if this
    league's ``settings`` are theirs, as ``--resume`` takes them only then."""
    path = args.out / GROUPS_FILE
    try:
        kept, total = GroupsFile.progress_of(path, settings)
    except (ValueError, OSError):
        kept, total = 0, 0
    if kept:
        print(
            f"\ninterrupted: the league was not finished and its table was not written; {kept} of {total} groups are "
            f"kept in {path}: the same command with --resume goes on from them",
            file=sys.stderr,
        )
    else:
        print(
            "\ninterrupted: the league was not finished before its first group ended; no group was kept",
            file=sys.stderr,
        )


def run_evaluation(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """A plain evaluation or a league, from checked arguments; prints the result, writes a
    league's files, and returns the exit status. A Ctrl-C is reported (what was played, the
    figures of the finished episodes) and raised again, for the command to end with.
    """
    if args.samples is not None:
        parser.error("--samples goes with --exact")
    if args.players is None:  # --exact takes the rung's table size instead
        args.players = 2
    episode, count = _episodes(args, args.players)
    if args.duplicate:
        try:
            check_duplicate_rounds(count, args.players, "--duplicate", "--games" if args.games else "--rounds")
        except ValueError as err:
            parser.error(str(err))
    progress = not args.no_progress
    workers = args.workers or 1
    try:
        timeout = DEFAULT_CONNECT_TIMEOUT if args.ray_timeout is None else args.ray_timeout
        cluster = None if args.ray is None else RayCluster(args.ray or None, args.workers, timeout)
    except ValueError as err:  # only the timeout can fail here (--workers was checked above)
        parser.error(f"--ray-{err}")
    # What a league and a plain evaluation share; the league passes it to every group.
    common: dict[str, Any] = dict(
        num_players=args.players,
        rounds=count,
        episode=episode,
        seed=args.seed,
        workers=workers,
        progress=progress,
        rules=args.rules,
        ray=cluster,
        duplicate=args.duplicate,
    )
    settings = league_settings(args.players, count, episode, args.rules, args.seed, args.duplicate)
    try:
        if args.league:
            out = args.out  # made by the league once its arguments are checked
            table = league(args.league, **common, groups_file=out / GROUPS_FILE, resume=args.resume)
            paths = write_league(table, out, settings)
            if args.json:
                print(json.dumps([asdict(e) for e in table], indent=2))
            else:
                print(league_markdown(table, settings))
                print("written: " + ", ".join(str(p) for p in paths))
            return 0
        replays = args.save_replays
        # --force removes the earlier replays only once the run is checked and its agents loaded:
        # a typo in an agent must not cost them.
        force = args.force and replays is not None and any(replays.glob(REPLAY_FILES))
        result = evaluate(
            args.agents,
            save_replays=replays,
            save_replays_every=args.save_replays_every or 1,
            before_play=functools.partial(_remove_earlier_replays, replays) if force else None,
            **common,
        )
    except (ValueError, OSError, RuntimeError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    except PlayInterrupted as stop:
        _report_interruption(args, stop, episode, settings)
        raise
    except KeyboardInterrupt:  # outside a group's play: a league may have played groups by then
        if args.league:
            _report_league_interruption(args, settings)
        else:
            print("\ninterrupted before any episode was played; nothing was written", file=sys.stderr)
        raise
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.summary())
    return 0


def _names_an_agent(value: str) -> bool:
    """Whether a value given to ``--ray`` is an agent (``--ray`` before the agents swallows the first one)."""
    return value.partition(":")[0] in AGENT_NAMES or value.endswith(CHECKPOINT_SUFFIXES) or Path(value).exists()


def _report_interruption(
    args: argparse.Namespace, stop: PlayInterrupted, episode: str, settings: dict[str, object]
) -> None:
    """Ctrl-C: say what was played; a plain evaluation shows the figures of the episodes
    it finished (the first ones of the same seeded run; with duplicate deals, those of the
    deals played in every seat rotation); a league says which groups it kept."""
    unit = "rounds" if episode == "round" else "games"
    counted = complete_deals(stop.records, args.players) if args.duplicate else stop.records
    if args.league:
        _report_league_interruption(args, settings)
    elif not stop.records:
        print(f"\ninterrupted before the first {unit[:-1]} ended; no figures", file=sys.stderr)
    elif not counted:
        print(
            f"\ninterrupted after {len(stop.records)} of {stop.total} {unit}, before the first deal was played "
            f"in every seat rotation; no figures",
            file=sys.stderr,
        )
    else:
        deals = f", {len(counted) // args.players} whole deals" if args.duplicate else ""
        print(
            f"\ninterrupted after {len(stop.records)} of {stop.total} {unit}; the figures cover the first "
            f"{len(counted)} {unit} of the same run{deals} (rerun for the full count)",
            file=sys.stderr,
        )
        result = summarize(counted, stop.labels, args.players, episode, args.seed, args.duplicate, args.rules)
        print(json.dumps(result.to_dict(), indent=2) if args.json else result.summary())
    if args.save_replays:
        print(f"replays of the finished {unit} are in {args.save_replays}", file=sys.stderr)
