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

    # Group seeds wrap round past the top of the range (the second group used to get 2**63).
    table = league(["random", "rule", "belief"], rounds=2, seed=MAX_SEED)
    assert sum(e.episodes for e in table) == 3 * 2 * 2
    with pytest.raises(ValueError, match="seed must be a non-negative integer below 2"):
        league(["random", "rule"], rounds=2, seed=-1)


def test_ctrl_c_after_groups_were_played_does_not_say_nothing_was_played(tmp_path, monkeypatch, capsys):
    from training.evaluate import main
    from training.learn.interrupt import EXIT_INTERRUPTED
    from training.measure import evaluate_command

    def interrupted_while_writing(table, out_dir):  # matplotlib's import alone takes a second or more
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate_command, "write_league", interrupted_while_writing)
    argv = ["--league", "random", "rule", "--rounds", "4", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(argv) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "the league was not finished, nothing was written to" in err
    assert "before any episode was played" not in err
