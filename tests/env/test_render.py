"""Text for people (``loveletter_env.render``): narration that says whose card is whose, and
the card reference."""

from __future__ import annotations

import pytest

from loveletter_env.cards import BARON, CARD_COUNTS, CARD_VALUES, KING, PRINCESS, card_name
from loveletter_env.engine import TurnEvent
from loveletter_env.render import CARD_EFFECTS, card_reference, narrate
from loveletter_env.rules import PRESETS


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


def test_card_reference_lists_every_card_with_value_copies_and_effect():
    text = card_reference()
    for value in CARD_VALUES:
        line = next(line for line in text.splitlines()[1:] if line.split()[1] == card_name(value))
        assert line.split()[0] == str(value) and line.split()[2] == str(CARD_COUNTS[value])
        assert CARD_EFFECTS[value] in line
    assert "Handmaid does not protect from the King" in card_reference(PRESETS["king_ignores_handmaid"])
    assert "Handmaid does not protect" not in text
