"""training.play: parsing moves, and whole rounds driven through stdin in a subprocess."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from conftest import ROOT

from loveletter_env.actions import encode_action
from loveletter_env.cards import GUARD, HANDMAID, PRIEST, PRINCE
from loveletter_env.replay import load_replay
from training.apps.terminal import QuitGame, parse_move, play

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


class _FirstLegal(io.StringIO):
    """Standard input that answers every prompt with the first legal move listed."""

    def __init__(self, out: io.StringIO):
        super().__init__()
        self.out = out

    def readline(self, *args) -> str:
        return self.out.getvalue().rsplit("Legal moves:", 1)[1].split("\n")[1].split(":")[0].strip() + "\n"


def test_the_terminal_and_the_web_app_play_the_same_game_from_a_seed(tmp_path):
    """Both drive one GameSession: the same seed, opponents and moves give the same deals,
    the same agents' moves and the same log."""
    from training.apps.web.games import HumanGame, OpponentCatalog

    out = io.StringIO()
    play(["rule", "belief"], num_players=3, seed=8, stdin=_FirstLegal(out), out=out, replay_path=tmp_path / "t.json")
    catalog = OpponentCatalog({}, lambda path, seed: None)
    saved = []
    opponents = [catalog.choose("rule", 3), catalog.choose("belief", 3)]
    web = HumanGame(opponents, 3, 0, "classic", "game", 8, lambda game, replay: saved.append(replay))
    while not web.finished:
        if web.state.round_over:
            web.next_round()
        else:
            web.move(web.view()["legal"][0]["action"])
    terminal = load_replay(tmp_path / "t.json")
    assert [r.to_dict() for r in saved[0].rounds] == [r.to_dict() for r in terminal.rounds]
    assert all(line in out.getvalue() for line in web.log if not line.startswith("Round") or "won by" in line)


class _Cheat:
    def act(self, observation) -> int:
        return encode_action(HANDMAID)  # whether or not it holds one


def test_an_agent_that_plays_an_illegal_move_is_named_on_the_web_as_in_the_terminal():
    """The web app played an agent's answer unchecked: the engine's refusal did not say who."""
    from loveletter_env.agents.base import AgentError
    from training.apps.web.games import HumanGame, OpponentChoice

    cheat = OpponentChoice("cheat", "cheat", {}, lambda seed: _Cheat())
    with pytest.raises(AgentError, match=r"agent cheat at player_1 returned action 30, which is not legal here"):
        for seed in range(20):  # until a deal gives the cheat a move without a Handmaid to play
            HumanGame([cheat], 2, 0, "classic", "round", seed, lambda game, replay: None)
