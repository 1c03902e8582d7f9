"""Game states and replays as the JSON the browser pages draw.

Everything here reads the engine's state and the render module's narration; nothing
decides a rule. A view is always *for a viewer*: a seat (only what that seat has seen)
or ``None`` (every card open, for replays).
"""

from __future__ import annotations

from typing import Any

from loveletter_env.actions import ACTION_CARD, ACTION_GUESS, ACTION_OFFSET, NO_TARGET, describe_action
from loveletter_env.cards import CARD_VALUES, card_name
from loveletter_env.engine import GameState, legal_actions
from loveletter_env.render import card_rows, narrate, round_summary
from loveletter_env.replay import Frame, Replay, replay_frames
from loveletter_env.rules import CLASSIC, Rules
from training.apps.live_game import unseen_guesses


def card_reference(rules: Rules = CLASSIC) -> list[dict[str, Any]]:
    """Every card under ``rules`` (:func:`loveletter_env.render.card_rows`): value, name,
    copies a round deals into play, copies always face up (a ladder rung's cards out of
    play), effect."""
    return [
        {
            "value": v,
            "name": name,
            "copies": copies,
            "face_up": face_up,
            "effect": effect[:1].upper() + effect[1:] + ".",
        }
        for v, name, copies, face_up, effect in card_rows(rules)
    ]


def seat_name(seat: int, agent: str) -> str:
    """How the pages name a seat: as the turn log does (``player_1``), with who sits there."""
    return f"player_{seat} ({agent})"


def legal_moves(state: GameState) -> list[dict[str, Any]]:
    """The legal actions of the player to act, decoded for the page (card, target seat, guess,
    words, and whether the player could still find the card a Guard names in another hand:
    ``possible``, :func:`~training.apps.live_game.unseen_guesses`)."""
    seat, n = state.current, state.num_players
    unseen = unseen_guesses(state, seat)
    moves = []
    for action in legal_actions(state):
        offset = ACTION_OFFSET[action]
        guess = ACTION_GUESS[action]
        moves.append(
            {
                "action": action,
                "card": ACTION_CARD[action],
                "target": -1 if offset == NO_TARGET else (seat + offset) % n,
                "guess": guess,
                "text": describe_action(action, seat, n),
                # Legal, but a sure miss when the player can see every copy of the named card.
                "possible": not guess or guess in unseen,
            }
        )
    return moves


def _bits(mask: int) -> list[int]:
    return [v for v in CARD_VALUES if mask >> v & 1]


def state_view(state: GameState, viewer: int | None, names: list[str], reveal: bool = False) -> dict[str, Any]:
    """The table as ``viewer`` sees it (``None``: every card open).

    ``reveal`` (the round is over) also shows the hands of the players still in when there
    was a showdown: more than one player left. A round won by the last player in shows no
    hand (the rules reveal none then, and the narration's round summary names none).
    """
    n = state.num_players
    showdown = reveal and sum(not out for out in state.out) > 1
    players = []
    for p in range(n):
        own = p == viewer
        hand = list(state.hand_of(p)) if (own or viewer is None or (showdown and not state.out[p])) else None
        players.append(
            {
                "seat": p,
                "name": names[p],
                "you": own,
                "tokens": state.tokens[p],
                "out": state.out[p],
                "protected": state.protected[p],
                "to_act": p == state.current and not state.round_over,
                "discards": list(state.discards[p]),
                "hand": hand,
                "hand_size": len(state.hand_of(p)),
                "known": state.known[viewer][p] if viewer is not None and not own else 0,
                "ruled_out": _bits(state.ruled_out[p]),
                # Whether this player has seen the viewer's card (a Priest, a Baron), as the
                # viewer's observation says: the person sees what an agent in the seat would.
                "knows_your_card": viewer is not None and not own and bool(state.seen[p][viewer]),
            }
        )
    view: dict[str, Any] = {
        "num_players": n,
        "rules": state.rules.name,
        "round": state.round,
        "turn": state.turn,
        "deck_remaining": state.deck_remaining,
        "face_up": list(state.face_up),
        "set_aside": state.set_aside if viewer is None else None,
        "tokens_to_win": state.tokens_to_win,
        "viewer": viewer,
        "players": players,
        "round_over": state.round_over,
        "round_winners": list(state.round_winners) if state.round_over else [],
        "game_over": state.game_over,
        "game_winners": list(state.game_winners),
    }
    return view


def _frame_view(replay: Replay, frame: Frame, viewer: int | None, names: list[str]) -> dict[str, Any]:
    state, step = frame.state, frame.step
    n = replay.num_players
    if frame.event is None:
        lines = [f"Round {state.round}: player_{state.current} starts."]
    else:
        lines = [narrate(frame.event, -1 if viewer is None else viewer)]
        if state.round_over:
            lines += round_summary(state, viewer).splitlines()
    details = None
    if step is not None and step.details and (viewer is None or step.player == viewer):
        details = {
            "player": step.player,
            "probabilities": [
                {"action": int(a), "text": describe_action(int(a), step.player, n), "p": p}
                for a, p in sorted(step.details.get("probabilities", {}).items(), key=lambda kv: -kv[1])
            ],
            "value": step.details.get("value"),
            "hand_beliefs": [
                {"seat": int(s), "cards": [{"card": v, "name": card_name(v), "p": p} for v, p in zip(CARD_VALUES, d)]}
                for s, d in step.details.get("hand_beliefs", {}).items()
            ],
        }
    return {
        "round_index": frame.round_index,
        "step_index": frame.step_index,
        "move": None if step is None else {"player": step.player, "text": describe_action(step.action, step.player, n)},
        "log": lines,
        "details": details,
        "view": state_view(state, viewer, names, reveal=state.round_over),
    }


def replay_view(replay: Replay, viewer: int | None) -> dict[str, Any]:
    """Every frame of ``replay`` (each round's deal, then the table after every move) as ``viewer`` saw it."""
    names = [seat_name(p, a.name) for p, a in enumerate(replay.agents)]
    return {
        "num_players": replay.num_players,
        "rules": replay.rules.name,
        "episode": replay.episode,
        "agents": [a.to_dict() for a in replay.agents],
        "result": replay.result,
        "metadata": replay.metadata,
        "viewer": viewer,
        "frames": [_frame_view(replay, f, viewer, names) for f in replay_frames(replay, check_result=False)],
    }
