"""Leagues (``training.measure.league``): ranking, rating and win rate tell one story, and the
output goes to an ignored folder."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from training.measure.evaluate_command import build_parser as build_evaluate_parser
from training.measure.league import league, write_league


def test_league_ranking_rating_and_win_rate_tell_one_story(tmp_path):
    # With these rounds an online rating (openskill, in order of play) put belief above a
    # rule bot that had the higher win rate.
    table = league(["random", "rule", "belief"], rounds=60, seed=0)
    assert [e.win_rate for e in table] == sorted((e.win_rate for e in table), reverse=True)
    assert [e.rating for e in table] == sorted((e.rating for e in table), reverse=True)
    for entry in table:
        assert entry.win_rate == pytest.approx(entry.wins / entry.episodes)
        for other, rate in entry.head_to_head.items():
            mirror = next(e for e in table if e.agent == other).head_to_head[entry.agent]
            assert rate + mirror == pytest.approx(1.0)  # shared wins split, so every pair adds up
    paths = write_league(table, tmp_path)
    rows = list(csv.DictReader(paths[1].open()))
    assert [row["agent"] for row in rows] == [e.agent for e in table]
    assert [int(row["rank"]) for row in rows] == [1, 2, 3]
    assert "Head to head" in paths[0].read_text()


def test_the_league_table_names_how_it_was_played(tmp_path, capsys):
    # A rung's league read like a full game's: nothing in league.md or the output named the rules.
    from training.evaluate import main

    out = tmp_path / "league"
    argv = ["--league", "random", "rule", "--rounds", "4", "--rules", "mini6", "--seed", "7", "--duplicate"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    played = "Played with 2 players, rules mini6, 4 rounds a group, seed 7, duplicate deals."
    assert (out / "league.md").read_text().splitlines()[0] == played
    assert capsys.readouterr().out.splitlines()[0] == played
    rows = list(csv.DictReader((out / "league.csv").open()))  # the CSV keeps the columns readers parse
    assert list(rows[0]) == ["rank", "agent", "rating", "win_rate", "episodes"]


def test_league_output_goes_to_an_ignored_folder_by_default():
    from training.measure.evaluate_command import DEFAULT_LEAGUE_DIR

    # Not given, --out stays None (a plain evaluation refuses it), and a league writes to the default.
    assert build_evaluate_parser().parse_args(["--league", "random", "rule"]).out is None
    out = DEFAULT_LEAGUE_DIR
    assert out == Path("runs") / "league" and out.parts[0] != "."
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", str(out / "league.md")], cwd=ROOT)
    assert ignored.returncode == 0, f"{out} is not ignored by git"


def test_a_seed_at_the_top_of_the_range_seeds_every_group():
    from loveletter_env.validation import MAX_SEED

    # Every group's seed stays inside the seed range, whatever the league's seed (one past the
    # top had stopped a league at its second group).
    table = league(["random", "rule", "belief"], rounds=2, seed=MAX_SEED)
    assert sum(e.episodes for e in table) == 3 * 2 * 2
    with pytest.raises(ValueError, match="seed must be a non-negative integer below 2"):
        league(["random", "rule"], rounds=2, seed=-1)


def test_ctrl_c_after_groups_were_played_does_not_say_nothing_was_played(tmp_path, monkeypatch, capsys):
    from training.evaluate import main
    from training.learn.interrupt import EXIT_INTERRUPTED
    from training.measure import evaluate_command

    def interrupted_while_writing(table, out_dir, settings):  # matplotlib's import alone takes a second or more
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate_command, "write_league", interrupted_while_writing)
    argv = ["--league", "random", "rule", "--rounds", "4", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(argv) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "the league was not finished and its table was not written; 1 of 1 groups are kept" in err
    assert "before any episode was played" not in err
    assert not (tmp_path / "out" / "league.md").exists()


def _stopping_at_group(monkeypatch, stop_at: int) -> list[tuple[str, ...]]:
    """Make the league's ``stop_at``-th group (0-based) stop as Ctrl-C stops it; returns the
    list the played groups' agents go into."""
    from training.measure import league as league_module
    from training.measure.matches import play_matches as real

    played: list[tuple[str, ...]] = []

    def play(setup, *args, **kwargs):
        if len(played) == stop_at:
            raise KeyboardInterrupt
        played.append(tuple(setup.labels))
        return real(setup, *args, **kwargs)

    monkeypatch.setattr(league_module, "play_matches", play)
    return played


def test_a_stopped_league_goes_on_from_the_groups_it_kept(tmp_path, monkeypatch, capsys):
    from training.evaluate import main
    from training.learn.interrupt import EXIT_INTERRUPTED
    from training.measure.league import GROUPS_FILE

    common = ["--rounds", "6", "--seed", "5", "--no-progress"]
    assert main(["--league", "random", "rule", "belief", *common, "--out", str(tmp_path / "whole")]) == 0
    whole = (tmp_path / "whole" / "league.md").read_text()

    out = tmp_path / "stopped"
    played = _stopping_at_group(monkeypatch, 2)
    # Another order of the same agents: the same groups, seats and seeds.
    league = ["--league", "rule", "random", "belief", *common, "--out", str(out)]
    assert main(league) == EXIT_INTERRUPTED
    assert played == [("belief", "random"), ("belief", "rule")]
    assert "2 of 3 groups are kept in" in capsys.readouterr().err
    with (out / GROUPS_FILE).open("a") as f:
        f.write('{"agents": ["random", "rule"], "winn')  # the append a kill cut short: that group plays again

    # The same command again would replace the groups kept: it is refused.
    with pytest.raises(SystemExit):
        main(league)
    assert "holds 2 of 3 groups of an unfinished league" in capsys.readouterr().err

    played = _stopping_at_group(monkeypatch, 99)
    assert main([*league, "--resume"]) == 0
    assert played == [("random", "rule")]  # only the group not kept
    assert (out / "league.md").read_text() == whole


def test_a_league_resumed_with_a_new_agent_plays_only_its_groups(tmp_path, monkeypatch):
    from training.measure.league import GROUPS_FILE, league

    groups = tmp_path / GROUPS_FILE
    league(["random", "rule"], rounds=6, seed=3, groups_file=groups)
    played = _stopping_at_group(monkeypatch, 99)
    bigger = league(["random", "rule", "belief"], rounds=6, seed=3, groups_file=groups, resume=True)
    assert played == [("belief", "random"), ("belief", "rule")]
    monkeypatch.undo()
    assert bigger == league(["belief", "rule", "random"], rounds=6, seed=3)  # as if played at once


def test_resume_refuses_the_groups_of_other_settings(tmp_path, monkeypatch):
    from training.measure.league import GROUPS_FILE, GroupsFile, agent_files, league

    groups = tmp_path / GROUPS_FILE
    league(["random", "rule"], rounds=4, seed=0, groups_file=groups)
    with pytest.raises(ValueError, match="a league with another rounds"):
        league(["random", "rule"], rounds=6, seed=0, groups_file=groups, resume=True)
    with pytest.raises(ValueError, match="a league with another rules, seed"):
        league(["random", "rule"], rounds=4, seed=1, rules="mini6", groups_file=groups, resume=True)
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        league(["random", "rule"], rounds=4, groups_file=tmp_path / "none.jsonl", resume=True)

    # A checkpoint whose bytes changed is another agent, whatever its path: its groups play again.
    network = tmp_path / "net.pt"
    network.write_bytes((ROOT / "checkpoints" / "v1" / "ppo_2p.pt").read_bytes())
    before = agent_files(str(network))
    assert list(before) == [str(network)] and len(before[str(network)]) == 64
    league([str(network), "rule"], rounds=2, seed=0, groups_file=groups)
    played = _stopping_at_group(monkeypatch, 99)
    league([str(network), "rule"], rounds=2, seed=0, groups_file=groups, resume=True)
    assert played == []
    network.write_bytes((ROOT / "checkpoints" / "shipped" / "ppo_2p.pt").read_bytes())
    league([str(network), "rule"], rounds=2, seed=0, groups_file=groups, resume=True)
    assert played == [(str(network), "rule")]

    # A damaged line before the last is named, not skipped.
    groups.write_text(groups.read_text() + "{oops\n" + '{"agents": [], "files": {}, "winners": []}\n')
    with pytest.raises(ValueError, match="line 4 is damaged"):
        GroupsFile.read_lines(groups)


def test_league_resume_and_force_are_checked_before_any_play(tmp_path, capsys):
    from training.evaluate import main

    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as exit_info:
            main(list(argv))
        assert exit_info.value.code == 2
        return capsys.readouterr().err

    out = str(tmp_path / "out")
    assert "--resume goes with --league" in refused("random", "rule", "--resume")
    assert "nothing to go on from" in refused("--league", "random", "rule", "--out", out, "--resume")
    assert "give one of them" in refused("--league", "random", "rule", "--out", out, "--resume", "--force")
    assert "--force goes with --save-replays DIR (or --league)" in refused("random", "rule", "--force")


@pytest.mark.parametrize(
    "settings, match",
    [
        (dict(rounds=5, duplicate=True), "rounds must be a multiple of 2"),
        (dict(rounds=0), "rounds"),
        (dict(rounds=4, workers=0), "workers"),
        (dict(rounds=4, episode="set"), "episode"),
    ],
)
def test_a_league_refuses_bad_play_settings_before_it_starts_its_groups_file(tmp_path, settings, match):
    # Refused only when its first group came to play, a league had already begun its groups file,
    # and the command then took the folder for an unfinished league's ("holds 0 of 3 groups").
    groups = tmp_path / "league_groups.jsonl"
    with pytest.raises(ValueError, match=match):
        league(["random", "rule", "belief"], groups_file=groups, **settings)
    assert not groups.exists()


def test_a_league_stopped_before_its_first_group_ended_can_be_run_again(tmp_path, monkeypatch, capsys):
    from training.evaluate import main
    from training.learn.interrupt import EXIT_INTERRUPTED
    from training.measure.league import GROUPS_FILE

    out = tmp_path / "out"
    argv = ["--league", "random", "rule", "belief", "--rounds", "4", "--rules", "mini6", "--out", str(out)]
    _stopping_at_group(monkeypatch, 0)
    assert main([*argv, "--no-progress"]) == EXIT_INTERRUPTED
    assert "no group was kept" in capsys.readouterr().err
    assert (out / GROUPS_FILE).is_file()  # its header alone
    monkeypatch.undo()
    # Nothing kept, nothing to lose: the same command plays the league (it was refused, "holds 0 of 3 groups").
    assert main([*argv, "--no-progress"]) == 0
    assert (out / "league.md").is_file()


def test_ctrl_c_before_a_league_starts_does_not_offer_an_earlier_leagues_groups(tmp_path, monkeypatch, capsys):
    from training.evaluate import main
    from training.learn.interrupt import EXIT_INTERRUPTED
    from training.measure import league as league_module

    out = str(tmp_path / "out")
    assert main(["--league", "random", "rule", "--rounds", "4", "--rules", "mini6", "--out", out, "--no-progress"]) == 0
    capsys.readouterr()

    def stopped_while_loading(*args):  # a checkpoint's load takes seconds: Ctrl-C may come then
        raise KeyboardInterrupt

    monkeypatch.setattr(league_module, "check_play", stopped_while_loading)
    argv = ["--league", "random", "rule", "--rounds", "6", "--rules", "mini6", "--out", out, "--no-progress"]
    assert main(argv) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    # The groups in --out are the earlier league's, of 4 rounds: --resume could not take them.
    assert "--resume goes on from them" not in err
    assert "no group was kept" in err


def test_a_league_refused_before_it_starts_leaves_no_folder(tmp_path, capsys):
    from training.evaluate import main

    for agents in (["rule", "rule"], ["rule"], ["random", "rule", "belief", "--players", "3"]):
        out = tmp_path / "out"
        with pytest.raises(SystemExit) as stop:
            main(["--league", *agents, "--rounds", "4", "--rules", "mini6", "--out", str(out), "--no-progress"])
        assert stop.value.code == 2 and "error:" in capsys.readouterr().err
        assert not out.exists(), agents


def test_groups_kept_with_other_settings_are_not_offered_to_resume(tmp_path, monkeypatch, capsys):
    from training.evaluate import main
    from training.learn.interrupt import EXIT_INTERRUPTED
    from training.measure.league import GROUPS_FILE

    out = tmp_path / "out"
    league = ["--league", "random", "rule", "belief", "--rules", "mini6", "--out", str(out), "--no-progress"]
    _stopping_at_group(monkeypatch, 1)
    assert main([*league, "--rounds", "4"]) == EXIT_INTERRUPTED
    monkeypatch.undo()
    kept = (out / GROUPS_FILE).read_text()
    capsys.readouterr()

    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as stop:
            main([*league, *argv])
        assert stop.value.code == 2
        return capsys.readouterr().err

    # It said "--resume plays the rest", and --resume then said "start it again without --resume".
    err = refused("--rounds", "6")
    assert "holds 1 of 3 groups of an unfinished league with another rounds" in err
    assert "--resume plays the rest" not in err and "--force starts again" in err
    err = refused("--rounds", "6", "--resume")
    assert "with another rounds" in err and "--force" in err and "without --resume" not in err
    assert (out / GROUPS_FILE).read_text() == kept
    # With the options it was played with, the league is offered --resume.
    assert "--resume plays the rest" in refused("--rounds", "4")


@pytest.mark.parametrize(
    "lines",
    [
        ['{"format": "loveletter league groups", "version": 1, "agents": 5, "groups": 1}'],
        ['{"format": "loveletter league groups", "version": 1, "agents": ["random", "rule"], "groups": [1]}'],
        [
            '{"format": "loveletter league groups", "version": 1, "agents": ["random", "rule"], "groups": 1}',
            '{"agents": 7, "files": {}, "winners": []}',
        ],
    ],
)
def test_a_damaged_groups_file_is_named_not_a_traceback(tmp_path, lines, capsys):
    from training.evaluate import main
    from training.measure.league import GROUPS_FILE

    out = tmp_path / "out"
    out.mkdir()
    (out / GROUPS_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as stop:  # a TypeError's traceback before
        main(["--league", "random", "rule", "--rounds", "4", "--rules", "mini6", "--out", str(out), "--no-progress"])
    assert stop.value.code == 2
    assert "--out holds a groups file that cannot be read" in capsys.readouterr().err
