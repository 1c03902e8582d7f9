"""A rule-based player following the advice good Love Letter players give."""

from __future__ import annotations

import random

from ..actions import (
    ACTION_CARD,
    ACTION_GUESS,
    ACTION_OFFSET,
    PRINCE_BASE,
    PRINCESS_ACTION,
    guard_action,
)
from ..cards import BARON, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from ..observation import ObservationView
from .base import check_turn, hand_distribution, other_card, with_move_rulings
from .kept_card import KeptCardAgent

#: Keep these behind a Handmaid rather than risk them (King, Countess, Princess).
SHELTER_FROM = KING
#: Baron on an unknown hand only when winning the comparison is this much likelier than losing it.
BARON_MARGIN = 0.15


def best_guard_action(view: ObservationView, legal: list[int], rng) -> int | None:
    """The legal Guard action most likely to hit, by unseen counts without the values of ``view.ruled_out``.

    Ties are broken by ``rng``. ``None`` when no targeted Guard action is legal.
    """
    best, best_p = [], -1.0
    for a in legal:
        if ACTION_CARD[a] != GUARD or ACTION_GUESS[a] == 0:
            continue
        p = hand_distribution(view, ACTION_OFFSET[a]).get(ACTION_GUESS[a], 0.0)
        if p > best_p + 1e-12:
            best, best_p = [a], p
        elif abs(p - best_p) <= 1e-12:
            best.append(a)
    return rng.choice(best) if best else None


def baron_odds(view: ObservationView, offset: int, kept: int) -> tuple[float, float]:
    """(P(win), P(lose)) of a Baron comparison keeping ``kept`` against seat ``offset``."""
    dist = hand_distribution(view, offset)
    win = sum(p for v, p in dist.items() if v < kept)
    lose = sum(p for v, p in dist.items() if v > kept)
    return win, lose


def _not_behind(win: float, lose: float) -> bool:
    return win >= lose


class RuleAgent(KeptCardAgent):
    """The strategy good players describe, in priority order:

    1. never discard the Princess (the Countess rule is already in the mask);
    2. Guard an opponent whose card is known; Prince a known Princess;
    3. Baron when ahead: against a known lower card, or when counting unseen cards
       makes winning clearly likelier than losing;
    4. Priest before Guard when holding both;
    5. Handmaid to shelter a high card (King, Countess, Princess);
    6. play the card an opponent has seen (they would Guard it);
    7. otherwise the lowest safe card, Guards naming the likeliest unseen value.
    """

    name = "rule"

    def decide(self, view: ObservationView, legal: list[int], old_card: int) -> int:
        # A mask of another position would be played from silently, its rules reading a hand
        # the mask's moves are not for (and the wrong kept card remembered).
        check_turn(view, legal)
        # The kept card matters only when someone has seen it.
        return rule_action(view, legal, self.rng, old_card if any(view.seen_by) else 0)


def rule_action(view: ObservationView, legal: list[int], rng: random.Random, seen_card: int = 0) -> int:
    """The rule-based choice among ``legal`` (see :class:`RuleAgent`).

    ``seen_card`` is the card of ours an opponent knows (0 if none or unknown).
    """
    view = with_move_rulings(view)
    options = [a for a in legal if a != PRINCESS_ACTION] or legal
    cards = set(view.hand)
    legal_set = set(options)

    def kept_after(card: int) -> int:
        return other_card(view.hand, card)

    # 2. Certain hits.
    for k in range(1, view.num_players):
        known = view.known_cards[k]
        if known and known != GUARD and GUARD in cards and guard_action(k, known) in legal_set:
            return guard_action(k, known)
        if known == PRINCESS and PRINCE_BASE + k in legal_set:
            return PRINCE_BASE + k
    # 3. Baron when ahead.
    if BARON in cards:
        kept = kept_after(BARON)
        barons = [a for a in options if ACTION_CARD[a] == BARON and ACTION_OFFSET[a] > 0]
        for a in barons:
            known = view.known_cards[ACTION_OFFSET[a]]
            if known and known < kept:
                return a
        odds = sorted(((*baron_odds(view, ACTION_OFFSET[a], kept), a) for a in barons), reverse=True)
        if odds and odds[0][0] >= odds[0][1] + BARON_MARGIN:
            return odds[0][2]
    # 4. Priest before Guard.
    if PRIEST in cards and GUARD in cards:
        priests = [a for a in options if ACTION_CARD[a] == PRIEST]
        unknown = [a for a in priests if ACTION_OFFSET[a] > 0 and not view.known_cards[ACTION_OFFSET[a]]]
        if unknown or priests:
            return rng.choice(unknown or priests)
    # 5. Shelter a high card.
    if HANDMAID in cards and kept_after(HANDMAID) >= SHELTER_FROM and any(ACTION_CARD[a] == HANDMAID for a in options):
        return next(a for a in options if ACTION_CARD[a] == HANDMAID)
    # 6. Get rid of the card an opponent has seen.
    if seen_card and seen_card != PRINCESS and len(set(view.hand)) == 2:
        choice = _play(view, seen_card, options, rng)
        if choice is not None:
            return choice
    # 7. The lowest safe card.
    for card in sorted(cards):
        choice = _play(view, card, options, rng)
        if choice is not None:
            return choice
    return rng.choice(options)


def _play(view: ObservationView, card: int, options: list[int], rng: random.Random) -> int | None:
    """The best way to play ``card``, or ``None`` when playing it is unsafe."""
    plays = [a for a in options if ACTION_CARD[a] == card]
    if not plays or card == PRINCESS:
        return None
    kept = other_card(view.hand, card)
    if card == GUARD:
        # ``is None``, not ``or``: action 0 (naming the Priest on the next seat) is a Guard action.
        # With ``legal`` lowest first, as the bot has it, the two agree (``plays[0]`` is then 0).
        choice = best_guard_action(view, plays, rng)
        return plays[0] if choice is None else choice
    if card == PRIEST:
        unknown = [a for a in plays if ACTION_OFFSET[a] > 0 and not view.known_cards[ACTION_OFFSET[a]]]
        return rng.choice(unknown or plays)
    if card == BARON:
        targeted = [a for a in plays if ACTION_OFFSET[a] > 0]
        safe = [a for a in targeted if _not_behind(*baron_odds(view, ACTION_OFFSET[a], kept))]
        if targeted and not safe:
            return None
        return rng.choice(safe or plays)
    if card == PRINCE:
        others = [a for a in plays if ACTION_OFFSET[a] > 0]
        if others:
            # Make the likeliest holder of a high card discard it.
            def expected(a: int) -> float:
                return sum(v * p for v, p in hand_distribution(view, ACTION_OFFSET[a]).items())

            top = max(expected(a) for a in others)
            return rng.choice([a for a in others if expected(a) >= top - 1e-9])
        return None if kept == PRINCESS else PRINCE_BASE
    if card == KING:
        # Trading away the Princess hands the opponent the round.
        return None if kept == PRINCESS else rng.choice(plays)
    return rng.choice(plays)
