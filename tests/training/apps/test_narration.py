"""Replay narration (``training.apps.narration``): who is told what, from a seat or with every card open."""

from __future__ import annotations

import io

import pytest
from conftest import act, start

from loveletter_env import engine
from loveletter_env.cards import BARON, COUNTESS, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from loveletter_env.replay import Replay, ReplayRecorder
from training.apps.narration import narrate_replay


def _recorded_round(num_players: int, actions: list[int], **deal) -> Replay:
    """A one-round replay of ``actions`` on the round :func:`conftest.start` deals."""
    state = start(num_players, **deal)
    recorder = ReplayRecorder(num_players, "classic", "round")
    recorder.start_round(state)
    for action in actions:
        recorder.record(state, action)
        engine.step(state, action)
    while not state.round_over:  # the rest of the round, any way: the tests read the scripted moves
        action = engine.legal_actions(state)[0]
        recorder.record(state, action)
        engine.step(state, action)
    return recorder.finish(state)


def _narration(replay: Replay, seat: int | None) -> str:
    out = io.StringIO()
    narrate_replay(replay, seat, out)
    return out.getvalue()


@pytest.mark.parametrize("seat", [-1, 3, 1.0, True])
def test_a_seat_outside_the_table_is_refused_by_name(seat):
    # -1 narrated player_2's hand as "your hand" (hands[-1]) while marking no seat "(you)";
    # 3 crashed with a bare IndexError after part of the game was printed.
    replay = _recorded_round(
        3, [act(BARON, 1), act(PRINCESS)], hands={0: KING, 1: PRIEST, 2: GUARD}, draws=[BARON, PRINCESS]
    )
    out = io.StringIO()
    with pytest.raises(ValueError, match=r"seat must be a seat in 0\.\.2"):
        narrate_replay(replay, seat, out)
    assert out.getvalue() == ""  # refused before a line is printed


def _line(text: str, start: str) -> str:
    """The first narrated line of ``text`` that starts with ``start``."""
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(start))


@pytest.mark.parametrize("num_players", [3, 4])
def test_a_seat_reads_the_cards_of_a_priest_baron_or_king_only_when_it_took_part(num_players):
    # player_0 looks at player_1's King with a Priest (keeping a Handmaid); player_1 trades its Guard
    # for player_2's Countess; player_2 Barons player_0 with that Guard and is out. At 4 players,
    # player_3 took part in none of it.
    hands = {0: PRIEST, 1: KING, 2: COUNTESS} | ({3: PRINCE} if num_players == 4 else {})
    moves = [act(PRIEST, 1), act(KING, 1), act(BARON, num_players - 2)]
    replay = _recorded_round(num_players, moves, hands=hands, draws=[HANDMAID, GUARD, BARON])
    told = {seat: _narration(replay, seat) for seat in range(num_players)}
    bystander = num_players - 1 if num_players == 4 else None
    assert _line(told[0], "You played Priest") == "You played Priest on player_1 and saw King."
    assert _line(told[1], "player_0 played Priest") == "player_0 played Priest on you."
    assert _line(told[1], "You played King") == "You played King on player_2: you gave Guard and received Countess."
    assert (
        _line(told[2], "player_1 played King") == "player_1 played King on you: you gave Countess and received Guard."
    )
    assert _line(told[2], "You played Baron") == (
        "You played Baron on player_0: your Guard against player_0's Handmaid. You are out."
    )
    assert _line(told[0], "player_2 played Baron") == (
        "player_2 played Baron on you: your Handmaid against player_2's Guard. player_2 is out."
    )
    for seat, text in told.items():
        if seat != 0:
            assert _line(text, "player_0 played Priest").endswith(("player_1.", "you."))
        if seat not in (1, 2):
            assert _line(text, "player_1 played King") == "player_1 played King on player_2."
    if bystander is not None:
        baron = _line(told[bystander], "player_2 played Baron")
        # The winner's Handmaid stays hidden (the loser's Guard is public: it went face up).
        assert baron.startswith("player_2 played Baron on player_0") and "player_2 is out" in baron
        assert "Handmaid" not in baron
