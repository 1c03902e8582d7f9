"""training.play: parsing moves, and whole rounds driven through stdin in a subprocess."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, act, start

from loveletter_env import engine
from loveletter_env.actions import PRINCESS_ACTION, encode_action
from loveletter_env.agents.base import AgentError
from loveletter_env.cards import BARON, COUNTESS, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from loveletter_env.render import card_reference
from loveletter_env.replay import load_replay
from training.apps.live_game import SEEN_GUESS_REASON, BotFailed, unseen_guesses
from training.apps.terminal import QuitGame, ask_move, discards_princess, parse_move, play, seat_view

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


def test_a_guess_of_the_prince_is_named_by_words_beside_the_princess():
    """The words "naming prince" begin "naming princess" too: they were refused as matching several
    moves, so that no part of the description but the whole of it chose the Prince."""
    legal = [*GUARDS_ON_1, encode_action(BARON, 1)]
    assert parse_move("naming prince", legal, seat=0, num_players=2) == encode_action(GUARD, 1, PRINCE)
    assert parse_move("Prince", legal, seat=0, num_players=2) == encode_action(GUARD, 1, PRINCE)
    assert parse_move("naming princess", legal, seat=0, num_players=2) == encode_action(GUARD, 1, PRINCESS)
    # Parts that end where a word ends in several moves stay ambiguous.
    with pytest.raises(ValueError, match="several moves"):
        parse_move("guard on player_1", legal, seat=0, num_players=2)
    with pytest.raises(ValueError, match="several moves"):
        parse_move("prince on", [encode_action(PRINCE, 0), encode_action(PRINCE, 1)], seat=0, num_players=2)


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
    # Leaving is the person's choice, not a failure.
    run = _run(["rule", "--seed", "1"], "quit\n")
    assert run.returncode == 0 and "Game stopped: you left the game" in run.stdout, run.stdout + run.stderr
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
    """Both drive one LiveGame: the same seed, opponents and moves give the same deals,
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
        elif web.agents_to_move:  # the web app lets each bot move once per request
            web.play_on()
        else:
            web.move(next(m["action"] for m in web.view()["legal"] if m["possible"]))  # the first the terminal lists
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


# The card reference, confirmations and refusals -------------------------------------


def princess_and_prince_state():
    """Seat 0 to act, holding the Princess and a Prince."""
    return start(2, hands={0: PRINCESS, 1: GUARD}, draws=[PRINCE])


def test_play_help_shows_the_card_reference():
    out = io.StringIO()
    with pytest.raises(QuitGame):
        play(["rule"], seed=0, stdin=io.StringIO("help\nquit\n"), out=out)
    assert card_reference() in out.getvalue()


def test_discarding_the_princess_needs_a_yes_at_a_terminal():
    state = princess_and_prince_state()
    assert discards_princess(state, 0, PRINCESS_ACTION) and discards_princess(state, 0, act(PRINCE, 0))
    assert not discards_princess(state, 0, act(PRINCE, 1))
    out = io.StringIO()
    answers = io.StringIO("princess\nn\n31\n\nprincess\ny\n")
    assert ask_move(state, 0, answers, out, confirm_princess=True) == PRINCESS_ACTION
    assert out.getvalue().count("This discards your Princess") == 3
    assert out.getvalue().count("Not played") == 2
    # Declining leaves every other move open.
    assert ask_move(state, 0, io.StringIO("40\nno\n32\n"), io.StringIO(), confirm_princess=True) == act(PRINCE, 1)


def test_scripted_moves_discard_the_princess_without_a_question():
    state = princess_and_prince_state()
    out = io.StringIO()
    assert ask_move(state, 0, io.StringIO("40\n"), out) == PRINCESS_ACTION  # a StringIO is no terminal
    assert "Sure?" not in out.getvalue()


class _Broken:
    name = "broken"

    def act(self, observation):
        raise RuntimeError("lost its way")


def test_play_stops_the_game_when_an_opponent_fails():
    """An agent that raised ended the terminal game with a traceback."""
    with pytest.raises(BotFailed, match=r"^agent broken at player_1 failed: RuntimeError: lost its way; the game"):
        play([_Broken()], seed=0, stdin=io.StringIO("0\n" * 200), out=io.StringIO(), seat=0)


class _FailsAtItsSecondMove:
    """Plays its first legal move, then raises."""

    def __init__(self) -> None:
        self.moves = 0

    def act(self, observation):
        self.moves += 1
        if self.moves == 2:
            raise RuntimeError("lost its way")
        return int(np.flatnonzero(observation["action_mask"])[0])


def test_a_game_stopped_by_an_agent_tells_the_moves_played_before_it():
    """The person's last move and the line saying why the game stopped were in the game's log,
    never printed: the terminal ended on the prompt the move answered."""
    out = io.StringIO()
    with pytest.raises(BotFailed):
        play(["rule", _FailsAtItsSecondMove()], num_players=3, seed=1, stdin=io.StringIO(_every_index(20)), out=out)
    told = out.getvalue().rstrip("\n").splitlines()
    assert told[-1] == "  Game stopped: agent _FailsAtItsSecondMove at player_2 failed: RuntimeError: lost its way."
    assert told[-2].endswith("You played Countess."), told[-2]


class _FailsAtOnce:
    """Plays its first legal move ``moves`` times, then raises ``error``."""

    def __init__(self, error: BaseException, moves: int = 0) -> None:
        self.error = error
        self.moves = moves

    def act(self, observation):
        if self.moves == 0:
            raise self.error
        self.moves -= 1
        return int(np.flatnonzero(observation["action_mask"])[0])


@pytest.mark.parametrize("error", [RuntimeError("lost its way"), KeyboardInterrupt()])
def test_a_game_stopped_before_the_persons_first_move_tells_what_was_played(tmp_path, error):
    """The agents play as soon as the round is dealt, inside LiveGame's constructor: one that failed
    there (or a Ctrl-C while it thought) left play() with nothing printed, not the seats, not the
    moves played before it, not why the game stopped, and no word of the replay."""
    path = tmp_path / "game.json"
    out = io.StringIO()
    # Seed 0 at 3 players: player_1 starts, plays, then player_2 fails before the person's turn.
    with pytest.raises(KeyboardInterrupt if isinstance(error, KeyboardInterrupt) else BotFailed):
        play(["rule", _FailsAtOnce(error)], num_players=3, seed=0, stdin=io.StringIO(), out=out, replay_path=path)
    told = out.getvalue().rstrip("\n").splitlines()
    assert told[:3] == ["player_1: rule", "player_2: _FailsAtOnce", "You are player_0."], told
    assert "=== Round 1: player_1 starts ===" in told
    assert any(line.startswith("  player_1 played") for line in told), told
    assert "Your move>" not in out.getvalue()
    if isinstance(error, KeyboardInterrupt):
        assert told[-1] == "No round was finished, so no replay was saved."
    else:
        assert told[-2:] == [
            "  Game stopped: agent _FailsAtOnce at player_2 failed: RuntimeError: lost its way.",
            "No round was finished, so no replay was saved.",
        ]
    assert not path.exists()


# Guard guesses ----------------------------------------------------------------------------


def seen_cards_state():
    """Seat 0 to play a Guard while holding the Princess; the King, a Priest and a Baron lie face
    up, and player_1 has played the other Priest."""
    state = start(
        2, first_player=1, hands={0: PRINCESS, 1: PRIEST}, face_up=[KING, PRIEST, BARON], draws=[BARON, GUARD]
    )
    engine.step(state, act(PRIEST, 1))
    return state


def test_the_guard_guesses_left_are_the_cards_the_player_cannot_see():
    """The terminal listed names whose every copy the player could see: in its hand, face up, discarded."""
    state = seen_cards_state()
    assert unseen_guesses(state, 0) == [BARON, HANDMAID, PRINCE, COUNTESS]
    view = seat_view(state, 0)
    listed = [line for line in view.splitlines() if "naming" in line]
    assert [line.split("naming ")[1] for line in listed] == ["Baron", "Handmaid", "Prince", "Countess"]
    assert view.endswith(f"Guard guesses not listed ({SEEN_GUESS_REASON}): Priest, King, Princess")
    # The web app offers the same names.
    from training.apps.web.views import legal_moves

    assert [m["guess"] for m in legal_moves(state) if m["possible"] and m["guess"]] == unseen_guesses(state, 0)
    # Still legal: typed, a sure miss is played.
    sure_miss = act(GUARD, 1, PRINCESS)
    assert ask_move(state, 0, io.StringIO(f"{sure_miss}\n"), io.StringIO()) == sure_miss


def test_play_names_an_opponent_whose_act_returns_none():
    with pytest.raises(AgentError, match=r"at player_1 returned None \(NoneType\) from act\(\)"):
        play([NoneAgent()], seed=0, stdin=io.StringIO("0\n" * 200), out=io.StringIO(), seat=0)


class NoneAgent:
    """An opponent whose act forgets to return."""

    name = "forgetful"

    def act(self, observation):
        return None


AGENT_MODULE = """
class NoneAgent:
    name = "forgetful"

    def act(self, observation):
        return None


def make(seed=None):
    return NoneAgent()
"""


@pytest.mark.parametrize("tool", ["play", "evaluate"])
def test_cli_names_an_agent_whose_act_returns_none(tmp_path, tool):
    (tmp_path / "forgetful_agent.py").write_text(AGENT_MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    args = ["forgetful_agent:make", "--seed", "0", "--rounds", "3"]
    if tool == "evaluate":
        args = ["rule", *args, "--no-progress"]
    run = subprocess.run(
        [sys.executable, "-m", f"training.{tool}", *args],
        cwd=ROOT,
        input="0\n" * 300,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "forgetful" in run.stderr and "returned None (NoneType) from act()" in run.stderr


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_play_checks_the_replay_path_before_the_game(tmp_path, where):
    if where == "under a file":
        (tmp_path / "notes").write_text("x")
        path = tmp_path / "notes" / "game.json"
    else:
        if not sys.platform.startswith("linux"):
            pytest.skip("/proc is Linux's")
        path = Path("/proc/x.json")
    out = io.StringIO()
    with pytest.raises(ValueError, match=rf"^replay file '{re.escape(str(path))}' cannot be written"):
        play(["rule"], seed=3, stdin=io.StringIO("0\n" * 200), out=out, replay_path=path)
    assert out.getvalue() == ""  # refused before the first deal: no game was played and lost


def test_play_keeps_an_existing_replay_file_unless_told_to_replace_it(tmp_path):
    path = tmp_path / "game.json"
    path.write_text("an earlier game")
    out = io.StringIO()
    with pytest.raises(ValueError, match=r"already exists: pass --force to replace it$"):
        play(["rule"], seed=3, rounds=1, stdin=io.StringIO("0\n" * 200), out=out, replay_path=path)
    assert out.getvalue() == "" and path.read_text() == "an earlier game"  # refused before the first deal
    play(["rule"], seed=3, rounds=1, stdin=_FirstLegal(out), out=out, replay_path=path, replace_replay=True)
    assert path.read_text().startswith("{")


def test_play_refuses_a_seed_that_is_not_an_integer():
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got 1.5$"):
        play(["rule"], seed=1.5, stdin=io.StringIO(""), out=io.StringIO())


class _FirstLegalThenQuit(_FirstLegal):
    """Answers with the first legal move while fewer than ``rounds`` rounds are won, then quits."""

    def __init__(self, out: io.StringIO, rounds: int):
        super().__init__(out)
        self.rounds = rounds

    def readline(self, *args) -> str:
        if len(re.findall(r"Round \d+ won by", self.out.getvalue())) >= self.rounds:
            return "quit\n"
        return super().readline()


def test_a_game_left_early_saves_the_rounds_it_finished(tmp_path):
    path = tmp_path / "game.json"
    out = io.StringIO()
    with pytest.raises(QuitGame, match="left"):
        play(["rule"], seed=11, stdin=_FirstLegalThenQuit(out, rounds=2), out=out, replay_path=path)
    replay = load_replay(path)  # checked move by move on the engine as it loads
    assert replay.episode == "rounds" and len(replay.rounds) == 2
    assert len(replay.result["round_winners"]) == 2 and replay.result["winners"] == []
    assert "Replay of the 2 finished rounds saved" in out.getvalue()


def test_a_game_left_before_a_round_ends_says_no_replay_was_saved(tmp_path):
    path = tmp_path / "game.json"
    out = io.StringIO()
    with pytest.raises(QuitGame, match="no more input"):
        play(["rule"], seed=11, stdin=io.StringIO(""), out=out, replay_path=path)
    assert "No round was finished, so no replay was saved." in out.getvalue() and not path.exists()


def test_a_game_without_a_seed_shows_and_records_the_one_it_drew(tmp_path):
    out = io.StringIO()
    play(["rule"], rounds=1, stdin=_FirstLegal(out), out=out, replay_path=tmp_path / "game.json")
    seed = int(re.search(r"Seed (\d+) \(--seed \1 deals these cards again\)", out.getvalue())[1])
    replay = load_replay(tmp_path / "game.json")
    assert replay.metadata["seed"] == seed
    again = io.StringIO()
    play(["rule"], seed=seed, rounds=1, stdin=_FirstLegal(again), out=again, replay_path=tmp_path / "again.json")
    assert load_replay(tmp_path / "again.json").rounds == replay.rounds  # the same deals and moves


def test_a_solved_policy_of_another_rung_is_refused_before_the_first_move(tmp_path):
    from training.exploitability.solver import solve

    policy = solve("mini6", iterations=2).save_policy(tmp_path / "policy.npz")
    out = io.StringIO()
    with pytest.raises(ValueError, match=r"plays only rules 'mini6', the rung it was solved for; .* got 'classic'"):
        play([f"solved:path={policy}"], seed=1, stdin=io.StringIO("0\n"), out=out)
    assert "Your move>" not in out.getvalue()


def test_play_ends_quietly_when_its_reader_leaves():
    """``python -m training.play ... | head -1``: status 1 and no error, as every command."""
    command = subprocess.Popen(
        [sys.executable, "-m", "training.play", "rule", "--seed", "3"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert command.stdout is not None and command.stdin is not None
    command.stdout.readline()
    command.stdout.close()  # as head does once it has its line
    _, err = command.communicate(("0\n" * 41 * 200).encode(), timeout=120)
    assert command.returncode == 1, err.decode()
    assert b"Broken pipe" not in err and b"Traceback" not in err


@pytest.mark.parametrize("answer", ["²", "--1", "3²"])
def test_a_number_that_is_no_move_index_is_named_in_the_players_words(answer):
    """``str.isdigit`` is true for superscripts, which ``int`` cannot read: the player was
    told ``invalid literal for int() with base 10``."""
    legal = [encode_action(PRINCE, 0), encode_action(PRINCE, 1), PRINCESS_ACTION]
    with pytest.raises(ValueError, match=f"no legal move matches '{answer}'"):
        parse_move(answer, legal, seat=0, num_players=2)


@pytest.mark.parametrize("rounds", [0, -2, "2", 1.5, True])
def test_play_refuses_a_rounds_count_that_is_not_a_positive_integer(rounds):
    """``rounds=0`` played a round, ``"2"`` failed with a TypeError once the first round ended."""
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        play(["rule"], seed=1, rounds=rounds, stdin=io.StringIO(_every_index(40)), out=io.StringIO())


def test_the_scripted_game_of_the_modules_docstring_plays_its_round():
    """The docstring's ``printf ... | python -m training.play ...`` answered moves that were not
    legal in that deal, so the example ended with "no more input" and exit status 1; and its
    ``\\n`` were read as line breaks, splitting the command over three lines in ``help()``."""
    import shlex

    import training.apps.terminal as terminal

    example = next(line.strip() for line in terminal.__doc__.splitlines() if line.strip().startswith("printf "))
    assert " | python -m training.play " in example, f"the example is not one command line: {example!r}"
    answers, command = example.split(" | ")
    script = shlex.split(answers)[1].encode().decode("unicode_escape")
    arguments = shlex.split(command)[3:]  # after `python -m training.play`
    run = _run(arguments, script)
    assert run.returncode == 0, run.stdout[-300:] + run.stderr
    assert "Round 1 won by" in run.stdout and "Try again" not in run.stdout
