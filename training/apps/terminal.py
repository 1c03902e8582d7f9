"""Play Love Letter against bots or trained agents in the terminal: ``python -m training.play``.

You see what your seat sees (``render_seat_view``), every turn is narrated as you
experienced it (``narrate``: a Priest's look only if it was yours), and you answer with
an action index or any unique part of a move's description (``guard on player_1,
naming priest``, ``handmaid``, ``31``). Moves are read from standard input, so a script
can play too::

    printf 'prince on player_1\\n' | python -m training.play rule --seed 3 --rounds 1

Commands at the prompt: ``help`` shows your view, your moves and what every card does;
``quit`` leaves (exit status 0; input that runs out mid-game exits with 1). At a terminal,
a move that would discard your Princess (and so put you out) asks for a ``y`` first; moves
read from a pipe or a file are played as given. A Guard's guesses list only the cards you
could still find in another hand (:func:`seat_view`).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from collections.abc import Sequence
from functools import partial
from typing import TextIO

from loveletter_env import engine
from loveletter_env.actions import ACTION_GUESS, PRINCE_BASE, PRINCESS_ACTION, describe_action
from loveletter_env.agents import AGENT_NAMES
from loveletter_env.agents.specs import AgentSpec, agent_label, resolve_agent
from loveletter_env.cards import PRINCE, PRINCESS, card_name
from loveletter_env.engine import GameState
from loveletter_env.render import card_reference, render_seat_view
from loveletter_env.replay import save_replay
from loveletter_env.rules import PRESETS, check_rules_for_table
from loveletter_env.validation import check_int, check_new_file, check_num_players, check_seed, is_int
from training.apps.live_game import SEEN_GUESS_REASON, BotFailed, LiveGame, Opponent, unseen_guesses
from training.learn.compile_notice import announce_kernel_compilation


class QuitGame(Exception):
    """The player asked to leave (``chosen``), or the input ran out."""

    def __init__(self, message: str, chosen: bool = False):
        super().__init__(message)
        self.chosen = chosen


def _seed(text: str) -> int:
    """argparse type: a seed (:func:`~loveletter_env.validation.check_seed`)."""
    # argparse shows the text of an ArgumentTypeError only.
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    try:
        return check_seed(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse_move(text: str, legal: Sequence[int], seat: int, num_players: int) -> int:
    """Turn the player's answer into a legal action index.

    Accepts an action index or a case-insensitive part of a legal move's description
    that matches exactly one move. Raises ``ValueError`` with a message for the player.
    """
    answer = " ".join(text.strip().lower().split())
    if not answer:
        raise ValueError("type a move number or part of its description")
    # ASCII digits only: str.isdigit is true for "²", which int() cannot read.
    if re.fullmatch(r"-?[0-9]+", answer):
        index = int(answer)
        if index in legal:
            return index
        raise ValueError(f"{index} is not one of your legal moves ({', '.join(map(str, legal))})")
    words = {a: describe_action(a, seat, num_players).lower() for a in legal}
    exact = [a for a, w in words.items() if w == answer]
    matches = (
        exact or [a for a, w in words.items() if w.startswith(answer)] or [a for a, w in words.items() if answer in w]
    )
    if len(matches) > 1:
        # "naming prince" is a part of "naming princess" too: without this, no part of its
        # description but the whole of it named the Prince. A part that ends where a word of
        # one move ends, and only mid-word in the others, names that move.
        whole_words = re.compile(re.escape(answer) + r"(?!\w)")
        ending_a_word = [a for a in matches if whole_words.search(words[a])]
        if ending_a_word:
            matches = ending_a_word
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ValueError(f"no legal move matches {text.strip()!r}")
    listed = "; ".join(f"{a}: {describe_action(a, seat, num_players)}" for a in matches)
    raise ValueError(f"{text.strip()!r} matches several moves ({listed}); be more precise")


def discards_princess(state: GameState, seat: int, action: int) -> bool:
    """Whether ``action`` makes ``seat`` discard the Princess: playing her, or a Prince
    on yourself while she is your other card."""
    if action == PRINCESS_ACTION:
        return True
    if action == PRINCE_BASE:  # the Prince on offset 0: yourself
        hand = list(state.hand_of(seat))
        hand.remove(PRINCE)
        return hand == [PRINCESS]
    return False


def _read_line(stdin: TextIO, out: TextIO, prompt: str) -> str:
    print(prompt, end="", file=out, flush=True)
    line = stdin.readline()
    if not line:
        raise QuitGame("no more input")
    return line


def seat_view(state: GameState, seat: int) -> str:
    """:func:`~loveletter_env.render.render_seat_view` listing only the Guard guesses that
    ``seat`` could still find in another hand (:func:`~training.apps.live_game.unseen_guesses`,
    as the web app offers them), with a line naming the cards left out and why. The others
    stay legal: typed as a number or in words, they are played."""
    if state.round_over or state.current != seat:
        return render_seat_view(state, seat)
    unseen = unseen_guesses(state, seat)
    legal = engine.legal_actions(state)
    listed = [a for a in legal if not ACTION_GUESS[a] or ACTION_GUESS[a] in unseen]
    view = render_seat_view(state, seat, listed)
    left_out = sorted({ACTION_GUESS[a] for a in legal if a not in listed})
    if left_out:
        view += f"\n  Guard guesses not listed ({SEEN_GUESS_REASON}): {', '.join(map(card_name, left_out))}"
    return view


def ask_move(state: GameState, seat: int, stdin: TextIO, out: TextIO, confirm_princess: bool | None = None) -> int:
    """Show the seat's view and read moves until a legal one arrives.

    With ``confirm_princess`` (default: when ``stdin`` is a terminal) a move that
    discards the Princess is played only after a ``y``.
    """
    if confirm_princess is None:
        confirm_princess = stdin.isatty()
    legal = engine.legal_actions(state)
    print(seat_view(state, seat), file=out)
    while True:
        line = _read_line(stdin, out, "Your move> ")
        command = line.strip().lower()
        if command in ("quit", "exit", "q"):
            raise QuitGame("you left the game", chosen=True)
        if command in ("help", "?", "h"):
            print(seat_view(state, seat), file=out)
            print("\nCards:\n" + card_reference(state.rules), file=out)
            print("Answer with a move number or a unique part of its description; 'quit' leaves.", file=out)
            continue
        try:
            action = parse_move(line, legal, seat, state.num_players)
        except ValueError as exc:
            print(f"  {exc}. Try again.", file=out)
            continue
        if confirm_princess and discards_princess(state, seat, action):
            answer = _read_line(stdin, out, "  This discards your Princess: you will be out of the round. Sure? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("  Not played. Choose another move.", file=out)
                continue
        return action


def play(
    opponents: Sequence[AgentSpec],
    num_players: int = 2,
    seat: int = 0,
    seed: int | None = None,
    rules: str = "classic",
    rounds: int | None = None,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
    replay_path: str | os.PathLike | None = None,
    replace_replay: bool = False,
) -> GameState:
    """Play one game (or ``rounds`` rounds) with a person at ``seat``.

    Args:
        opponents: agent specs for the other seats in seat order after the person's;
            the last is repeated to fill the table.
        num_players: 2, 3 or 4.
        seat: the person's seat.
        seed: seed of the deals and of the agents.
        rules: the rule preset.
        rounds: stop after this many rounds (default: play the whole game).
        replay_path: save the game there as a replay (:mod:`loveletter_env.replay`) once it ends;
            a file already there is refused before the game, unless ``replace_replay``. A game
            that stops early (``quit``, the input runs out, Ctrl-C, an agent fails) saves the
            rounds it finished, as a ``"rounds"`` replay.

    Returns the final game state. Raises :class:`QuitGame` when the person leaves, and
    ``ValueError`` for bad arguments, a ``replay_path`` that cannot be written among them
    (checked before the game, which would otherwise be lost at its end).
    """
    num_players = check_num_players(num_players)
    check_rules_for_table(rules, num_players)
    seed = check_seed(seed, allow_none=True)
    if rounds is not None:  # 0 would still play a round; "2" would fail once the first round ends
        rounds = check_int("rounds", rounds, low=1)
    drawn_seed = seed is None
    if drawn_seed:  # drawn here, so that it can be shown and recorded: the same deals can be played again
        seed = secrets.randbelow(2**31)
    if replay_path is not None:
        check_new_file("replay file", replay_path, replace=replace_replay)
    if not is_int(seat) or not 0 <= seat < num_players:
        raise ValueError(f"seat must be in 0..{num_players - 1}, got {seat!r}")
    if not opponents:
        raise ValueError("name at least one opponent agent")
    if len(opponents) > num_players - 1:
        raise ValueError(f"{len(opponents)} opponents given for {num_players - 1} other seats")
    specs = list(opponents) + [opponents[-1]] * (num_players - 1 - len(opponents))
    # Each agent is built with the seed the game draws for its seat, as the web app's are.
    seated = [Opponent(agent_label(spec), agent_label(spec), {}, partial(resolve_agent, spec)) for spec in specs]
    metadata = {"source": "training.play", "seed": seed}
    # Dealt inside the try: the agents play as soon as the round is dealt, and one that fails there
    # (or a Ctrl-C while they think) leaves the moves played and why the game stopped in the log,
    # to be told as a failure later in the game is.
    game = LiveGame(seated, num_players, seat, rules, seed, max_rounds=rounds, metadata=metadata, start=False)
    for p, opponent in zip((p for p in range(num_players) if p != seat), seated):
        print(f"player_{p}: {opponent.name}", file=out)
    print(f"You are player_{seat}.", file=out)
    if drawn_seed:
        print(f"Seed {seed} (--seed {seed} deals these cards again).", file=out)
    told = 0

    def tell() -> None:
        """Print the lines of the log not printed yet."""
        nonlocal told
        for i in range(told, len(game.log)):
            line = game.log[i]
            print(f"\n=== {line.rstrip('.')} ===" if i in game.round_starts else "  " + line, file=out)
        told = len(game.log)

    try:
        game.start()
        while True:
            tell()
            if game.finished:
                break
            if game.state.round_over:
                game.next_round()
            else:
                game.move(ask_move(game.state, seat, stdin, out))
    except (QuitGame, BotFailed, KeyboardInterrupt):
        # An agent that fails leaves the moves played before it (the person's among them) and
        # the line saying why the game stopped in the log, untold.
        tell()
        if replay_path is not None:
            _save_rounds_played(game, replay_path, out)
        raise
    if replay_path is not None:
        assert game.replay is not None  # a finished game has one
        print(f"Replay saved: {save_replay(game.replay, replay_path)}", file=out)
    return game.state


def _save_rounds_played(game: LiveGame, path: str | os.PathLike, out: TextIO) -> None:
    """Save the rounds a game that stops early has finished, or say that there are none."""
    replay = game.replay_so_far()
    if replay is None:
        print("No round was finished, so no replay was saved.", file=out)
        return
    count = len(replay.rounds)
    print(f"Replay of the {count} finished round{'s' * (count != 1)} saved: {save_replay(replay, path)}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.play",
        description="Play Love Letter in the terminal against bots or trained agents. Answer with a move "
        "number or a unique part of its description; 'help' repeats your view, 'quit' leaves.",
        epilog=f"Opponents: {', '.join(AGENT_NAMES)} (options as ismcts:iterations=400; "
        "guided:policy=CHECKPOINT searches with a trained network), solved:path=FILE (an equilibrium from "
        "python -m training.solve, played on its rung: --rules mini6 ...), a checkpoint path, or "
        "package.module:factory. Example: python -m training.play belief --players 3 --seed 7",
    )
    parser.add_argument("opponents", nargs="*", default=["belief"], help="agents for the other seats (default: belief)")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4), help="table size (default 2)")
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--seed", type=_seed, default=None, help="seed of the deals and the agents (default: random)")
    parser.add_argument("--rules", default="classic", choices=sorted(PRESETS), help="rule preset (default classic)")
    parser.add_argument("--rounds", type=int, default=None, help="stop after this many rounds (default: a whole game)")
    parser.add_argument(
        "--save-replay",
        metavar="FILE",
        help="save the game as a replay file (JSON) when it ends (a new file); a game that stops early "
        "saves the rounds it finished",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --save-replay file")
    args = parser.parse_args(argv)
    announce_kernel_compilation()
    if args.rounds is not None and args.rounds < 1:
        parser.error(f"--rounds must be a positive integer, got {args.rounds}")
    try:
        play(
            args.opponents,
            args.players,
            args.seat,
            args.seed,
            args.rules,
            args.rounds,
            replay_path=args.save_replay,
            replace_replay=args.force,
        )
    except BrokenPipeError:
        raise  # the reader of the output left (| head): run_command ends quietly
    except (ValueError, OSError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    except QuitGame as exc:
        print(f"\nGame stopped: {exc}.")
        # Leaving is the person's choice; input that runs out mid-game (a script too short) is not.
        return 0 if exc.chosen else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
