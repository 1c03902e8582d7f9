"""Rule presets: the few points where the source rule texts disagree, and the ladder.

The ladder's rungs are research presets for one table size each: a fixed set of cards
stays in play (the set-aside card, every hand and the draw pile) and every other card is
dealt face up before play, so the game tree is small enough to solve exactly. ``mini6`` ..
``mini9`` are played by 2 players, ``mini6_3p`` .. ``mini8_3p`` by 3, ``mini7_4p`` and
``mini8_4p`` by 4.
"""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .cards import (
    BARON,
    CARD_COUNTS,
    CARD_NAMES,
    CARD_VALUES,
    DECK_SIZE,
    FULL_DECK,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
    validate_deck,
)
from .validation import PLAYER_COUNTS, check_int, is_int, shown

#: 2-player rounds of the printed rules lay this many cards face up after the set-aside card.
FACE_UP_CARDS_2P = 3
#: The table sizes a rung may be played at.
RUNG_PLAYERS = (2, 3, 4)


def min_in_play(num_players: int) -> int:
    """The fewest cards a rung of ``num_players`` may keep in play: the set-aside card, a
    hand per player and one to draw."""
    return num_players + 2


#: The fewest cards a 2-player rung may keep in play.
MIN_IN_PLAY = min_in_play(2)
#: The most turns a round holds: every turn begins with a draw, and the printed rules leave
#: the most cards to draw at 3 players (16 less the set-aside card and 3 hands: 12). Records
#: and observations keep one move slot per turn (``observation.MAX_MOVES`` is this bound).
MAX_TURNS = DECK_SIZE - 1 - 3


def max_in_play(num_players: int) -> int:
    """The most cards a rung of ``num_players`` may keep in play: the set-aside card, a hand
    per player and at most :data:`MAX_TURNS` to draw (15 at 2 players: the whole deck would
    leave 13 turns, one more than a round's move slots), and never more than the deck."""
    return min(DECK_SIZE, 1 + num_players + MAX_TURNS)


#: The largest token target. The target and every seat's tokens (never more than the target)
#: are observation entries, and the observation space bounds every entry by 16
#: (``loveletter_env.aec.OBSERVATION_HIGH``) whatever the rules. The core's byte records
#: would hold up to 255: the space is the tighter limit.
MAX_TOKENS_TO_WIN = 16


def describe_cards(cards: Sequence[int]) -> str:
    """``"Guard x2, Priest, Princess"``: a multiset of card values in words, by value."""
    counts = Counter(cards)
    return (
        ", ".join(
            CARD_NAMES[v] + (f" x{counts[v]}" if counts[v] > 1 else "") for v in sorted(counts) if v in CARD_NAMES
        )
        or "no cards"
    )


def _multiset_difference(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """The cards of ``a`` left after removing those of ``b`` (sorted, copies counted)."""
    return sorted((Counter(a) - Counter(b)).elements())


@dataclass(frozen=True)
class Rules:
    """The rule variant a game is played with.

    Every field is checked when the object is made: a bad value raises ``ValueError``
    naming the field and what it may hold.

    Attributes:
        name: preset name, for display (a string).
        tokens_to_win: tokens a player needs to win the game, indexed by ``num_players - 2``:
            three integers in 1..16 (:data:`MAX_TOKENS_TO_WIN`, the observation space's
            bound), stored as a tuple of ``int``.
        discard_sum_tiebreak: at a showdown tie, the highest sum of discards wins
            (``classic``); when False, all tied players share the round (``pegasus``).
            ``True`` or ``False``.
        king_ignores_handmaid: the King may choose a player protected by a Handmaid
            (``True`` or ``False``).
        in_play: a ladder rung: the cards that stay in play, the set-aside card, every
            hand and the draw pile (stored sorted): from :func:`min_in_play` to
            :func:`max_in_play` cards (15 at 2 players, 16 at 3 and 4). Every other card is
            dealt face up before play, the same cards every round. ``None`` (the printed rules): the
            whole deck is shuffled and, at 2 players, 3 cards go face up.
        rung_players: the one table size a rung is played at (an ``int``: 2, 3 or 4); 2 off
            the ladder, where it means nothing (every table size plays).
    """

    name: str = "classic"
    tokens_to_win: tuple[int, int, int] = (7, 5, 4)
    discard_sum_tiebreak: bool = True
    king_ignores_handmaid: bool = False
    in_play: tuple[int, ...] | None = None
    rung_players: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string, got {self.name!r}")
        object.__setattr__(self, "tokens_to_win", _check_tokens_to_win(self.tokens_to_win))
        for flag in ("discard_sum_tiebreak", "king_ignores_handmaid"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        players = self.rung_players
        if not is_int(players) or players not in RUNG_PLAYERS:
            raise ValueError(f"rung_players must be 2, 3 or 4 (an integer), got {shown(players)}")
        object.__setattr__(self, "rung_players", int(players))
        if self.in_play is None:
            if players != 2:
                raise ValueError(
                    f"rung_players={players} needs in_play: only a ladder rung is played at one table size"
                )
            return
        object.__setattr__(self, "in_play", _check_in_play(self.in_play, int(players)))

    def king_choosable(self, unprotected: int, in_round: int) -> int:
        """The seats the King may choose, as a bit mask: ``in_round`` (every other seat still
        in the round) where a Handmaid does not protect from him, else ``unprotected``."""
        return in_round if self.king_ignores_handmaid else unprotected

    def tokens_needed(self, num_players: int) -> int:
        """Tokens a player needs to win a game of ``num_players``."""
        return self.tokens_to_win[num_players - 2]

    @property
    def is_rung(self) -> bool:
        """Whether these rules are a ladder rung (a fixed set of cards in play, one table size)."""
        return self.in_play is not None

    @functools.cached_property  # read at every deal of a rung (frozen fields: computed once)
    def face_up_cards(self) -> tuple[int, ...] | None:
        """A rung's face-up cards (every card not in play, sorted); ``None`` off the ladder,
        where the face-up cards are whatever the shuffle lays there."""
        return None if self.in_play is None else tuple(_multiset_difference(FULL_DECK, self.in_play))

    def face_up_count(self, num_players: int) -> int:
        """How many cards a round lays face up after the set-aside card."""
        if self.in_play is not None:
            return DECK_SIZE - len(self.in_play)
        return FACE_UP_CARDS_2P if num_players == 2 else 0

    def in_play_positions(self, num_players: int) -> tuple[int, ...]:
        """Deck positions (0 = top) of the cards a round keeps in play: the set-aside card,
        then everything after the face-up cards."""
        return (0, *range(1 + self.face_up_count(num_players), DECK_SIZE))

    def check_num_players(self, num_players: int, name: str = "num_players") -> int:
        """``num_players`` if these rules can be played at that table (a rung only at its
        own, :attr:`rung_players`); else a ``ValueError`` saying why, naming the table size
        as its caller's argument ``name`` does."""
        if self.in_play is not None and num_players != self.rung_players:
            raise ValueError(
                f"rules {self.name!r} are a ladder rung, played by {self.rung_players} players only; "
                f"got {name}={num_players!r}"
            )
        return num_players

    def check_deck(self, deck: Sequence[int]) -> tuple[int, ...]:
        """``deck`` as a tuple if it can deal a round under these rules: a permutation of the
        16 cards (:func:`~loveletter_env.cards.validate_deck`) and, on a rung, positions 1 to
        16 - k holding exactly the face-up cards, in any order. Else a ``ValueError`` naming
        the problem."""
        cards = validate_deck(deck)
        face_up = self.face_up_cards
        if face_up is None:
            return cards
        held = cards[1 : 1 + len(face_up)]
        if sorted(held) != list(face_up):
            missing = _multiset_difference(face_up, held)
            extra = _multiset_difference(held, face_up)
            raise ValueError(
                f"on rules {self.name!r}, deck positions 1 to {len(face_up)} must hold the face-up cards "
                f"({describe_cards(face_up)}) in any order; they lack {describe_cards(missing)} "
                f"and hold {describe_cards(extra)} instead"
            )
        return cards

    def shuffled_deck(self, rng: Any) -> tuple[int, ...]:
        """A deck these rules can deal, shuffled by ``rng`` (a numpy ``Generator``): the whole
        deck off the ladder; on a rung only the cards in play, the face-up cards sorted."""
        if self.in_play is None:
            return tuple(int(c) for c in rng.permutation(FULL_DECK))
        return self.deck_from_in_play([int(c) for c in rng.permutation(self.in_play)])

    def deck_from_in_play(self, order: Sequence[int]) -> tuple[int, ...]:
        """A rung's deck dealing the cards in play in ``order`` (top first: the set-aside
        card, then the hands and the draw pile), the face-up cards sorted between."""
        face_up = self.face_up_cards
        if face_up is None:
            raise ValueError(f"rules {self.name!r} are not a ladder rung: every card is shuffled")
        if sorted(order) != list(self.in_play or ()):
            raise ValueError(
                f"order must be a permutation of the cards in play on rules {self.name!r} "
                f"({describe_cards(self.in_play or ())}), got {list(order)!r}"
            )
        return (order[0], *face_up, *order[1:])


def _check_tokens_to_win(value: Any) -> tuple[int, int, int]:
    """``value`` as a tuple of 3 ``int`` targets (for 2, 3 and 4 players), each in
    1..:data:`MAX_TOKENS_TO_WIN`; else a ``ValueError`` naming the entry and the range."""
    rule = f"3 integers in 1..{MAX_TOKENS_TO_WIN} (the targets for 2, 3 and 4 players)"
    if isinstance(value, (str, bytes)):
        raise ValueError(f"tokens_to_win must be {rule}, got {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"tokens_to_win must be {rule}, got {value!r}") from None
    if len(items) != len(PLAYER_COUNTS):
        raise ValueError(f"tokens_to_win must be {rule}, got {len(items)} entries: {value!r}")
    a, b, c = (
        check_int(f"tokens_to_win[{i}] ({n} players)", t, 1, MAX_TOKENS_TO_WIN)
        for i, (n, t) in enumerate(zip(PLAYER_COUNTS, items))
    )
    return a, b, c


def _check_in_play(value: Any, players: int) -> tuple[int, ...]:
    """A rung's cards in play, sorted, if the deck holds them and they can deal a round to
    ``players``; else a ``ValueError`` naming the problem."""
    try:
        items = list(value)
        cards = sorted(map(operator.index, items))
    except TypeError:
        raise ValueError(f"in_play must be a sequence of card values 1..8, got {value!r}") from None
    if any(isinstance(c, bool) for c in items) or any(c not in CARD_NAMES for c in cards):
        raise ValueError(f"in_play must hold card values 1..8, got {value!r}")
    too_many = [v for v in CARD_VALUES if cards.count(v) > CARD_COUNTS[v]]
    if too_many:
        words = ", ".join(f"{CARD_NAMES[v]} x{cards.count(v)} (the deck has {CARD_COUNTS[v]})" for v in too_many)
        raise ValueError(f"in_play holds more copies than the deck: {words}")
    fewest, most = min_in_play(players), max_in_play(players)
    if not fewest <= len(cards) <= most:
        raise ValueError(
            f"in_play must keep {fewest} to {most} cards in play at {players} players (the set-aside "
            f"card, {players} hands and 1 to {most - 1 - players} to draw: a round holds "
            f"at most {MAX_TURNS} turns), got {len(cards)}"
        )
    return tuple(cards)


CLASSIC = Rules()
PEGASUS = Rules(name="pegasus", tokens_to_win=(5, 4, 3), discard_sum_tiebreak=False)
KING_IGNORES_HANDMAID = Rules(name="king_ignores_handmaid", king_ignores_handmaid=True)

#: The ladder: classic rules with fewer cards in play, each rung one card more than the last.
#: ``miniK`` keeps K cards in play at 2 players; ``miniK_3p`` and ``miniK_4p`` keep the same
#: K cards at 3 and 4 players (the largest sets whose tree a 2-core machine solves exactly).
MINI6 = Rules(name="mini6", in_play=(GUARD, GUARD, PRIEST, BARON, PRINCE, PRINCESS))
MINI7 = Rules(name="mini7", in_play=(*(MINI6.in_play or ()), KING))
MINI8 = Rules(name="mini8", in_play=(*(MINI7.in_play or ()), HANDMAID))
MINI9 = Rules(name="mini9", in_play=(*(MINI8.in_play or ()), GUARD))
LADDER_2P: tuple[Rules, ...] = (MINI6, MINI7, MINI8, MINI9)


def _at_table(rung: Rules, num_players: int) -> Rules:
    """The rung with ``rung``'s cards in play, played by ``num_players``, named ``miniK_Np``."""
    return Rules(name=f"{rung.name}_{num_players}p", in_play=rung.in_play, rung_players=num_players)


MINI6_3P, MINI7_3P, MINI8_3P = (_at_table(r, 3) for r in (MINI6, MINI7, MINI8))
LADDER_3P: tuple[Rules, ...] = (MINI6_3P, MINI7_3P, MINI8_3P)
MINI7_4P, MINI8_4P = (_at_table(r, 4) for r in (MINI7, MINI8))
LADDER_4P: tuple[Rules, ...] = (MINI7_4P, MINI8_4P)
#: Every rung, by table size then cards in play.
LADDER: tuple[Rules, ...] = (*LADDER_2P, *LADDER_3P, *LADDER_4P)

PRESETS: dict[str, Rules] = {r.name: r for r in (CLASSIC, PEGASUS, KING_IGNORES_HANDMAID, *LADDER)}


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


def check_rules_for_table(rules: str | Rules, num_players: int) -> Rules:
    """The :class:`Rules` for ``rules`` if they can be played by ``num_players`` (2..4,
    already checked); a ``ValueError`` naming the problem otherwise. Every entry point that
    takes both a rule preset and a table size checks them here."""
    resolved = resolve_rules(rules)
    resolved.check_num_players(num_players)
    return resolved
