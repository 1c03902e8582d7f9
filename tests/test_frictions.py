"""Small frictions of the command-line tools: narration that says whose card is whose,
the card reference and confirmations of ``training.play``, league tables that tell one
story, progress lines without a progress bar, percentages that add up."""

from __future__ import annotations

import pytest

from loveletter_env.cards import BARON, KING, PRINCESS
from loveletter_env.engine import TurnEvent
from loveletter_env.render import narrate


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
