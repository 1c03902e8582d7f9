"""training.play: parsing moves, and whole rounds driven through stdin in a subprocess."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from loveletter_env.actions import encode_action
from loveletter_env.cards import GUARD, HANDMAID, PRIEST, PRINCE
from training.play import QuitGame, parse_move, play

ROOT = Path(__file__).resolve().parents[1]
GUARDS_ON_1 = [encode_action(GUARD, 1, g) for g in range(2, 9)]


def test_parse_move_by_index_and_by_words():
    legal = [*GUARDS_ON_1, encode_action(HANDMAID)]
    assert parse_move("30", legal, seat=0, num_players=2) == encode_action(HANDMAID)
    assert parse_move("  HANDmaid ", legal, seat=0, num_players=2) == encode_action(HANDMAID)
    assert parse_move("naming priest", legal, seat=0, num_players=2) == encode_action(GUARD, 1, PRIEST)
    with pytest.raises(ValueError, match="several moves"):
        parse_move("guard", legal, seat=0, num_players=2)
    with pytest.raises(ValueError, match="not one of your legal moves"):
        parse_move("31", legal, seat=0, num_players=2)
    with pytest.raises(ValueError, match="no legal move matches"):
        parse_move("prince on", legal, seat=0, num_players=2)
    with pytest.raises(ValueError, match="type a move"):
        parse_move("   ", legal, seat=0, num_players=2)


def test_prince_on_yourself_is_named_by_words():
    legal = [encode_action(PRINCE, 0), encode_action(PRINCE, 1)]
    assert parse_move("prince on player_0", legal, seat=0, num_players=2) == encode_action(PRINCE, 0)
    assert parse_move("yourself", legal, seat=0, num_players=2) == encode_action(PRINCE, 0)


def _every_index(times: int) -> str:
    """Answers that cycle through every action index: each prompt meets a legal one
    within 41 lines, after rejections."""
    return "".join(f"{i}\n" for _ in range(times) for i in range(41))


def test_play_function_with_scripted_input():
    out = io.StringIO()
    state = play(
        ["rule"], num_players=3, seat=1, seed=4, rounds=2, stdin=io.StringIO("nonsense\n" + _every_index(40)), out=out
    )
    text = out.getvalue()
    assert state.round == 2 and state.round_over
    assert "You are player_1." in text and "Legal moves:" in text
    assert "no legal move matches 'nonsense'. Try again." in text
    assert "Round 1 won by" in text and "Round 2 won by" in text


def test_quit_and_end_of_input():
    with pytest.raises(QuitGame, match="left"):
        play(["random"], seed=0, stdin=io.StringIO("quit\n"), out=io.StringIO())
    with pytest.raises(QuitGame, match="no more input"):
        play(["random"], seed=0, stdin=io.StringIO(""), out=io.StringIO())


def test_bad_setup_is_named():
    with pytest.raises(ValueError, match="seat"):
        play(["rule"], num_players=2, seat=2, stdin=io.StringIO(), out=io.StringIO())
    with pytest.raises(ValueError, match="unknown agent"):
        play(["grandmaster"], stdin=io.StringIO(), out=io.StringIO())


def _run(args: list[str], stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.play", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_plays_a_round_from_stdin():
    run = _run(["belief", "--seed", "3", "--rounds", "1"], "help\n99\n" + _every_index(30))
    assert run.returncode == 0, run.stderr
    assert "Your hand:" in run.stdout and "Legal moves:" in run.stdout
    assert "Round 1 won by" in run.stdout
    assert "played" in run.stdout  # narration


def test_cli_stops_cleanly_when_input_ends_and_names_bad_options():
    run = _run(["rule", "--seed", "1"], "")
    assert run.returncode == 1 and "Game stopped: no more input" in run.stdout
    bad = _run(["rule", "--players", "2", "--seat", "5"], "")
    assert bad.returncode == 2 and "seat must be in 0..1" in bad.stderr


def test_help_names_every_kind_of_opponent(capsys):
    from loveletter_env.agents import AGENT_NAMES
    from training.play import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert exit_info.value.code == 0
    for kind in (*AGENT_NAMES, "solved:path=FILE", "guided:policy=", "package.module:factory"):
        assert kind in text, f"--help does not mention {kind!r}"
