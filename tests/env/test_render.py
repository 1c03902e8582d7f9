"""Text for people (``loveletter_env.render``): narration that says whose card is whose, the
card reference, and a seat's view that shows exactly what its observation holds."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import act, start

import loveletter_env
from loveletter_env import engine
from loveletter_env.cards import (
    BARON,
    CARD_COUNTS,
    CARD_VALUES,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
    card_name,
)
from loveletter_env.engine import TurnEvent
from loveletter_env.observation import decode_observation
from loveletter_env.render import CARD_EFFECTS, card_reference, card_rows, narrate, render_seat_view, round_summary
from loveletter_env.rules import LADDER, PRESETS


@pytest.mark.parametrize(
    "viewer, expected",
    [
        (0, "You played Baron on player_1: your King against player_1's Princess. You are out."),
        (1, "player_0 played Baron on you: your Princess against player_0's King. player_0 is out."),
        (2, "player_0 played Baron on player_1. player_0 is out."),
    ],
    ids=["actor", "target", "onlooker"],
)
def test_baron_narration_says_whose_card_is_whose(viewer, expected):
    event = TurnEvent(round=1, player=0, card=BARON, target=1, actor_card=KING, target_card=PRINCESS, eliminated=(0,))
    assert narrate(event, viewer) == expected


@pytest.mark.parametrize("num_players", [3, 4])
def test_whoever_goes_out_is_told_discarding_their_card_to_every_seat(num_players):
    """A Baron's loser and a Princess's player discard face up: every seat reads the card,
    once (the two who compared a Baron read it in the comparison)."""
    hands = {0: BARON, 1: KING, 2: GUARD} | ({3: HANDMAID} if num_players == 4 else {})
    state = start(num_players, hands=hands, draws=[PRIEST, PRINCESS, GUARD, GUARD])
    baron = engine.step(state, act(BARON, 2))  # player_0 keeps a Priest; player_2's Guard loses
    princess = engine.step(state, act(PRINCESS))  # player_1 discards her and their King
    assert baron.eliminated == (2,) and princess.eliminated == (1,)
    for viewer in range(num_players):
        baron_text = narrate(baron, viewer)
        assert baron_text.count("Guard") == 1, baron_text
        if viewer not in (0, 2):
            assert baron_text == "player_0 played Baron on player_2. player_2 is out, discarding Guard."
        princess_text = narrate(princess, viewer)
        you = viewer == 1
        expected = f"{'You' if you else 'player_1'} played Princess. {'You are' if you else 'player_1 is'} out"
        assert princess_text == expected + ", discarding King."


def test_a_princes_target_alone_is_told_the_card_it_drew():
    state = start(3, hands={0: PRINCE, 1: BARON, 2: GUARD}, draws=[HANDMAID, PRIEST])
    event = engine.step(state, act(PRINCE, 1))
    assert event.replacement == PRIEST
    assert narrate(event, 1) == "player_0 played Prince on you, who discarded Baron and drew Priest."
    assert narrate(event, 0) == "You played Prince on player_1, who discarded Baron."
    assert narrate(event, 2) == "player_0 played Prince on player_1, who discarded Baron."
    own = start(2, hands={0: PRINCE, 1: GUARD}, draws=[KING, PRIEST])
    assert (
        narrate(engine.step(own, act(PRINCE, 0)), 0)
        == "You played Prince on yourself, who discarded King and drew Priest."
    )


def test_card_reference_lists_every_card_with_value_copies_and_effect():
    text = card_reference()
    for value in CARD_VALUES:
        line = next(line for line in text.splitlines()[1:] if line.split()[1] == card_name(value))
        assert line.split()[0] == str(value) and line.split()[2] == str(CARD_COUNTS[value])
        assert CARD_EFFECTS[value] in line
    assert "Handmaid does not protect from the King" in card_reference(PRESETS["king_ignores_handmaid"])
    assert "Handmaid does not protect" not in text


# What a seat sees ------------------------------------------------------------------------


def _player_lines(text: str, num_players: int) -> list[str]:
    """The table's lines, by seat."""
    lines = text.splitlines()
    return [next(line for line in lines if line.strip().startswith(f"player_{p} ")) for p in range(num_players)]


@pytest.mark.parametrize(
    "num_players, rules",
    [(2, "classic"), (3, "classic"), (4, "classic"), *[(r.rung_players, r.name) for r in LADDER]],
)
def test_the_render_shows_exactly_what_the_seat_observes(num_players: int, rules: str):
    """Own hand, known cards, Guard rulings, who saw our card, discards, flags and legal moves,
    read off the seat's own observation at every turn of random games."""
    shown = {"ruled out": 0, "seen": 0}
    for seed in range(4):
        env = loveletter_env.env(num_players=num_players, rules=rules, episode="game", render_mode="ansi")
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(120):
            if not env.agents:
                break
            obs, _, terminated, truncated, _ = env.last()
            seat = env.unwrapped.agent_name_mapping[env.agent_selection]
            view = decode_observation(obs["observation"])
            text = env.render()
            hand = next(line for line in text.splitlines() if line.startswith("Your hand: "))
            assert hand == f"Your hand: {', '.join(map(card_name, view.hand)) or '-'}" or sorted(
                hand.removeprefix("Your hand: ").split(", ")
            ) == sorted(map(card_name, view.hand))
            for k in range(num_players):
                line = _player_lines(text, num_players)[(seat + k) % num_players]
                assert f"discards: {', '.join(map(card_name, view.discards[k])) or '-'}" in line
                assert ("[out" in line or " out" in line.split("discards:")[0]) == view.out[k]
                assert ("protected" in line) == view.protected[k]
                known = view.known_cards[k]
                assert ("you know they hold" in line) == bool(known)
                assert not known or f"you know they hold {card_name(known)}" in line
                ruled_out = ", ".join(card_name(v) for v in sorted(view.ruled_out[k]))
                assert ("a Guard ruled out" in line) == bool(k and ruled_out), line
                assert not (k and ruled_out) or f"a Guard ruled out: {ruled_out}" in line
                assert ("they know your card" in line) == bool(k and view.seen_by[k]), line
                shown["ruled out"] += bool(k and ruled_out)
                shown["seen"] += bool(k and view.seen_by[k])
            legal = [] if terminated or truncated else [int(a) for a in np.flatnonzero(obs["action_mask"])]
            moves = text.split("Legal moves:\n")[1].splitlines() if "Legal moves:" in text else []
            assert [int(line.split(":")[0]) for line in moves] == legal
            env.step(None if terminated or truncated else int(rng.choice(legal)))
    # At 2 players a ruling is rarely seen: the ruled-out player draws at once, which voids it.
    assert shown["seen"] > 0 and (shown["ruled out"] > 0 or num_players == 2)


def test_the_render_shows_a_guards_ruling_and_who_saw_your_card():
    # player_0 names a Baron at player_2's Priest (a miss, which everyone sees); player_1 then looks
    # at player_0's Handmaid with a Priest.
    state = start(3, hands={0: GUARD, 1: PRIEST, 2: PRIEST}, draws=[HANDMAID, GUARD])
    engine.step(state, act(GUARD, 2, BARON))
    for seat in (0, 1):
        assert _player_lines(render_seat_view(state, seat), 3)[2].endswith("discards: - - a Guard ruled out: Baron")
    assert "ruled out" not in render_seat_view(state, 2)
    engine.step(state, act(PRIEST, 2))  # player_1 looks at player_0's Handmaid
    assert _player_lines(render_seat_view(state, 0), 3)[1].endswith("discards: Priest - they know your card")
    assert "know your card" not in render_seat_view(state, 2)
    assert _player_lines(render_seat_view(state, 1), 3)[0].endswith("you know they hold Handmaid")


@pytest.mark.parametrize("seat", [-1, 2, True, "0", 1.0, None])
def test_a_seat_outside_the_table_is_refused(seat):
    # -1 used to render the last seat's hand as "Your hand".
    state = start(2, hands={0: GUARD, 1: PRINCESS}, draws=[HANDMAID])
    with pytest.raises(ValueError, match=r"seat must be a seat in 0\.\.1"):
        render_seat_view(state, seat)


def test_listed_moves_must_be_legal_moves_of_the_seat_to_act():
    state = start(2, hands={0: GUARD, 1: PRINCESS}, draws=[HANDMAID])
    listed = render_seat_view(state, 0, [act(HANDMAID)])
    assert listed.endswith(f"Legal moves:\n  {act(HANDMAID):>2}: Handmaid")
    with pytest.raises(ValueError, match=r"moves \[40\] are not legal for seat 0"):
        render_seat_view(state, 0, [act(PRINCESS)])  # player_0 does not hold the Princess
    with pytest.raises(ValueError, match="moves were given for seat 1, which is not to act"):
        render_seat_view(state, 1, [act(HANDMAID)])
    with pytest.raises(ValueError, match="moves must be a sequence of legal actions"):
        render_seat_view(state, 0, act(HANDMAID))


def test_a_halted_table_shows_no_seat_to_act_and_no_moves():
    state = start(2, hands={0: GUARD, 1: PRINCESS}, draws=[HANDMAID])
    live, halted = render_seat_view(state, 0), render_seat_view(state, 0, halted=True)
    assert "[to act]" in live and "Legal moves:" in live
    assert "to act" not in halted and "Legal moves" not in halted
    assert halted == live.split("\nLegal moves:")[0].replace(" [to act]", "")  # the rest as it was
    with pytest.raises(ValueError, match="moves were given for seat 0, which is not to act"):
        render_seat_view(state, 0, [act(HANDMAID)], halted=True)


def test_the_card_reference_takes_a_preset_name_and_refuses_anything_else():
    assert card_reference("king_ignores_handmaid") == card_reference(PRESETS["king_ignores_handmaid"])
    assert card_rows("mini6") == card_rows(PRESETS["mini6"])
    for bad in (None, 3):
        with pytest.raises(ValueError, match="rules must be a preset name or a Rules object"):
            card_reference(bad)
    with pytest.raises(ValueError, match="unknown rules preset"):
        card_rows("clasic")


# The end of a round ------------------------------------------------------------------------


def test_round_summary_tells_the_showdown_the_winners_and_the_tokens():
    # mini6 (set-aside Princess; hands Guard and Priest; draws Baron, Prince, Guard): the second
    # turn's Prince draws the last card, so the round ends at a showdown.
    rules = PRESETS["mini6"]
    state = engine.new_game(2, rules.deck_from_in_play([PRINCESS, GUARD, PRIEST, BARON, PRINCE, GUARD]), 0, rules)
    engine.step(state, act(GUARD, 1, KING))
    engine.step(state, act(PRINCE, 0))  # player_1 discards its Priest and draws the last Guard
    assert state.round_over and state.round_winners == (0,)
    assert round_summary(state, 1) == (
        "Showdown - player_0: Baron, you: Guard\nRound 1 won by player_0. Tokens: player_0 1, you 0 (target 7)"
    )
    assert round_summary(state).startswith("Showdown - player_0: Baron, player_1: Guard\n")


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_round_summary_refuses_a_round_in_progress(num_players):
    """A round still being played has no showdown: summing it up would show every hidden hand."""
    state = start(num_players, hands={0: GUARD, 1: PRINCESS}, draws=[HANDMAID])
    with pytest.raises(ValueError, match="round 1 is still being played"):
        round_summary(state, 0)
