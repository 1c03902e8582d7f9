"""Action numbers (loveletter_env.actions): encoding and decoding, and the refusal of what is no action."""

from __future__ import annotations

import pytest

from loveletter_env.actions import decode_action, encode_action
from loveletter_env.cards import GUARD, PRIEST


@pytest.mark.parametrize("bad", [41, -1, 100, "3", None], ids=repr)
def test_decode_action_refuses_non_actions(bad):
    with pytest.raises(ValueError, match="action"):
        decode_action(bad)


def test_encode_action_refuses_plays_that_have_no_action():
    with pytest.raises(ValueError, match="Guard"):
        encode_action(GUARD, 1, GUARD)
    with pytest.raises(ValueError, match="Priest"):
        encode_action(PRIEST, 0)
