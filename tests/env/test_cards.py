"""Cards and decks (``loveletter_env.cards``): what counts as a deck."""

from __future__ import annotations

import numpy as np
import pytest

from loveletter_env import env as make_env
from loveletter_env.cards import FULL_DECK, validate_deck


@pytest.mark.parametrize("flag", [True, np.True_], ids=["bool", "numpy bool"])
def test_a_boolean_is_not_a_guard(flag):
    deck = list(FULL_DECK)
    deck[0] = flag  # FULL_DECK starts with a Guard: True == 1 would pass for it
    with pytest.raises(ValueError, match="integer card values"):
        validate_deck(deck)
    aec = make_env(num_players=2)
    with pytest.raises(ValueError, match="integer card values"):
        aec.reset(options={"deck": deck})


def test_a_huge_bad_deck_is_not_echoed_whole():
    with pytest.raises(ValueError, match=r"^deck must be a sequence of 16 integer card values") as err:
        validate_deck([0.5] * 100_000)
    assert len(str(err.value)) < 500
