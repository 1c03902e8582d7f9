"""Rule presets: the few points where the source rule texts disagree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rules:
    """The rule variant a game is played with.

    Attributes:
        name: preset name, for display.
        tokens_to_win: tokens a player needs to win the game, indexed by ``num_players - 2``.
        discard_sum_tiebreak: at a showdown tie, the highest sum of discards wins
            (``classic``); when False, all tied players share the round (``pegasus``).
        king_ignores_handmaid: the King may choose a player protected by a Handmaid.
    """

    name: str = "classic"
    tokens_to_win: tuple[int, int, int] = (7, 5, 4)
    discard_sum_tiebreak: bool = True
    king_ignores_handmaid: bool = False

    def tokens_needed(self, num_players: int) -> int:
        """Tokens a player needs to win a game of ``num_players``."""
        return self.tokens_to_win[num_players - 2]


CLASSIC = Rules()
PEGASUS = Rules(name="pegasus", tokens_to_win=(5, 4, 3), discard_sum_tiebreak=False)
KING_IGNORES_HANDMAID = Rules(name="king_ignores_handmaid", king_ignores_handmaid=True)

PRESETS: dict[str, Rules] = {r.name: r for r in (CLASSIC, PEGASUS, KING_IGNORES_HANDMAID)}


def resolve_rules(rules: str | Rules) -> Rules:
    """Turn a preset name or a :class:`Rules` object into a :class:`Rules` object."""
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, str):
        try:
            return PRESETS[rules]
        except KeyError:
            raise ValueError(
                f"unknown rules preset {rules!r}; choose one of {sorted(PRESETS)} or pass a Rules object"
            ) from None
    raise ValueError(f"rules must be a preset name or a Rules object, got {type(rules).__name__}")
