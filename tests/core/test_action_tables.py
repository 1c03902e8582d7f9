"""The core's action tables against the engine's legality rule.

The kernels compute a legal mask as ``HAND_ACTION_BITS[hand] & TARGET_ACTION_BITS[code]``:
the Countess rule and the choice of targets split into what the cards held allow and what
the other players' states allow. The tables are read off the engine; these tests check that
the split recombines to the engine's answer exactly, for every hand and every situation of
the other players, so that a rule the split cannot express fails here rather than in play.
"""

from __future__ import annotations

import numpy as np
import pytest

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.core import layout
from loveletter_env.engine import legal_actions_holding

CARDS = range(1, 9)
ACTION_BITS = np.uint64(1) << np.arange(NUM_ACTIONS, dtype=np.uint64)


def _actions(bits: np.uint64) -> tuple[int, ...]:
    return tuple(int(a) for a in np.flatnonzero(bits & ACTION_BITS))


@pytest.mark.parametrize("a", CARDS)
def test_the_tables_recombine_to_the_engines_legal_actions_for_every_hand_and_target_situation(a):
    for b in CARDS:
        hand = layout.HAND_ACTION_BITS[9 * a + b]
        for code in range(layout.TARGET_CODES):
            others, king = (code & 7) << 1, (code >> 3) << 1  # the engine keeps offset t at bit t
            expected = legal_actions_holding(a, b, others, king)
            assert _actions(hand & layout.TARGET_ACTION_BITS[code]) == expected, (a, b, code)


def test_a_lone_card_allows_its_own_actions_and_no_card_allows_nothing():
    for card in CARDS:
        own = layout.HAND_ACTIONS[9 * card + card]
        assert (layout.HAND_ACTIONS[card] == own).all() and (layout.HAND_ACTIONS[9 * card] == own).all()
    assert not layout.HAND_ACTIONS[0].any()
