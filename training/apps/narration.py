"""Narrate a saved replay in the terminal: ``python -m training.replay FILE [--seat K | --open]``.

``--seat K`` tells the game as player K saw it (their own hand, their Priest looks,
their Baron and King exchanges; the showdown hands at the end of each round), with the
agent's own reasoning at K's decisions when the replay recorded it. ``--open`` (the
default) shows every hand after every move and every agent's reasoning.

The file is re-simulated on the engine before anything is printed: a tampered file is
refused with the first step that does not replay.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from loveletter_env.actions import describe_action
from loveletter_env.cards import CARD_VALUES, card_name
from loveletter_env.engine import GameState
from loveletter_env.render import narrate, round_summary
from loveletter_env.replay import Replay, ReplayError, Step, load_replay, replay_frames
from loveletter_env.validation import check_seat


def _hands(state: GameState) -> str:
    return ", ".join(
        f"player_{p}: {'/'.join(card_name(c) for c in state.hand_of(p)) or 'out'}" for p in range(state.num_players)
    )


def describe_details(step: Step, num_players: int, top: int = 3) -> list[str]:
    """The recorded reasoning of a step in words: the likeliest moves, the value
    estimate, the likeliest cards in each opponent's hand."""
    details = step.details or {}
    lines = []
    probs = details.get("probabilities")
    if probs:
        best = sorted(probs.items(), key=lambda kv: -kv[1])[:top]
        moves = "; ".join(f"{describe_action(int(a), step.player, num_players)} {p:.0%}" for a, p in best)
        lines.append(f"policy: {moves}")
    if details.get("value") is not None:
        lines.append(f"value estimate: {details['value']:+.2f}")
    for seat, dist in (details.get("hand_beliefs") or {}).items():
        likely = sorted(zip(CARD_VALUES, dist, strict=True), key=lambda vp: -vp[1])[:top]
        cards = ", ".join(f"{card_name(v)} {p:.0%}" for v, p in likely if p > 0)
        lines.append(f"thinks player_{seat} holds: {cards}")
    return lines


def _printable(text: str) -> str:
    """``text``, quoted with its escapes where it holds a line break or a control character:
    a replay file's names are anyone's text, and must not print lines of a game that never
    happened or move the terminal's cursor."""
    return text if text.isprintable() else repr(text)


def narrate_replay(replay: Replay, seat: int | None = None, out: TextIO | None = None) -> None:
    """Print ``replay`` to ``out`` (default: standard output) as ``seat`` saw it (``None``: every card open).

    Raises ``ValueError`` for a ``seat`` that is not a seat of the replay's table, before anything is printed.
    """
    out = out if out is not None else sys.stdout
    n = replay.num_players
    if seat is not None:
        # -1 would read the last seat's hand as "your hand" (hands[-1]); past the table, an IndexError mid-game.
        seat = check_seat("seat", seat, n)
    print(f"{n} players, rules {_printable(replay.rules.name)}, {replay.episode} replay", file=out)
    for p, agent in enumerate(replay.agents):
        you = " (you)" if p == seat else ""
        print(
            f"  player_{p}{you}: {_printable(agent.name)}"
            + (f" [{_printable(agent.spec)}]" if agent.spec and agent.spec != agent.name else ""),
            file=out,
        )
    for frame in replay_frames(replay):
        state = frame.state
        if frame.event is None:
            print(f"\n=== Round {state.round}: player_{state.current} starts ===", file=out)
            if seat is None:
                print(f"  set aside: {card_name(state.set_aside)}; hands: {_hands(state)}", file=out)
            else:
                print(f"  your hand: {', '.join(card_name(c) for c in state.hand_of(seat))}", file=out)
            if state.face_up:  # the 2-player game's, and the 3- and 4-player rungs' too
                print(f"  face up: {', '.join(card_name(c) for c in state.face_up)}", file=out)
            continue
        step = frame.step
        assert step is not None
        if seat is None or step.player == seat:
            for line in describe_details(step, n):
                print(f"    ({line})", file=out)
        print("  " + narrate(frame.event, -1 if seat is None else seat), file=out)
        if seat is None and not state.round_over:
            print(f"    hands: {_hands(state)}", file=out)
        elif seat is not None and state.current == seat and not state.round_over:
            print(f"    your hand: {', '.join(card_name(c) for c in state.hand_of(seat))}", file=out)
        if state.round_over:
            print(round_summary(state, seat), file=out)
    winners = replay.result.get("winners") or []
    if replay.episode != "round" and winners:
        print(f"Game over: {', '.join('you' if p == seat else f'player_{p}' for p in winners)} won the game.", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.replay",
        description="Narrate a saved Love Letter replay, as one seat saw it or with every card open. "
        "The file is checked move by move on the engine first.",
        epilog="Example: python -m training.replay replays/episode_00000.json --seat 0",
    )
    parser.add_argument("file", help="a replay file (.json)")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--seat", type=int, metavar="K", help="tell the game as player K saw it")
    view.add_argument("--open", action="store_true", help="show every hand after every move (the default)")
    args = parser.parse_args(argv)
    try:
        replay = load_replay(args.file)
    except ReplayError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if args.seat is not None and not 0 <= args.seat < replay.num_players:
        parser.error(
            f"--seat must be a seat in 0..{replay.num_players - 1} for this {replay.num_players}-player replay"
        )
    narrate_replay(replay, args.seat)  # a reader that leaves (| head) ends in run_command, as every command's
    return 0


if __name__ == "__main__":
    sys.exit(main())
