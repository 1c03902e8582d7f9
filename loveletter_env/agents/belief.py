"""A card-counting player: a probability for every opponent's hand, then the action of
highest immediate expected value.

The belief about a hand comes from every public and private fact in the observation:
unseen counts, the cards this seat knows, and values failed Guards ruled out, as the move
record proves them (:func:`~loveletter_env.agents.base.hand_distribution`,
:func:`~loveletter_env.agents.base.move_rulings`). Each action is scored in units
of "round-win probability" relative to an even share:

* what it does now: the chance a Guard or a Baron eliminates someone (or us), the
  information a Priest buys, the Princess a Prince may hit;
* what the card kept afterwards is worth: its showdown strength (weighted up as the
  deck runs out), what it threatens next turn, and the risk of being eliminated before
  our next turn (Guards that can name it, most of all when an opponent knows it, and
  never by a value the table has ruled out of it;
  Barons; Princes against a Princess), which a Handmaid removes.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from ..actions import ACTION_CARD, ACTION_GUESS, ACTION_OFFSET
from ..cards import (
    BARON,
    CARD_VALUES,
    COUNTESS,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)
from ..knowledge import ruled_out_after_play
from ..observation import ObservationView, decode_observation
from .base import check_turn, hand_distribution, move_rulings, other_card, with_move_rulings
from .kept_card import KeptCardAgent

#: Score of putting yourself out: below anything that leaves a chance.
SURE_LOSS = -1.0
# Weights of the value model, in round-win units (set by hand, checked by evaluation).
GUARD_OPTION = 1.2  # weight of a kept Guard's best guess, cashed next turn
BARON_OPTION = 0.3
PRINCE_OPTION = 0.5
SMALL_OPTION = 0.02  # a kept Priest or Handmaid
SHOWDOWN_HORIZON = 2.0  # the showdown counts 1 / (1 + deck / horizon)
BARON_THREAT = 0.5  # how readily an opponent Barons us
#: A hit next turn is never worth as much as the same hit now.
MAX_OPTION = 0.9
RISK_SCALE = 2.0  # weight of the chance of being put out before our next turn
#: How often a player keeps the higher of two cards (the rule of thumb everyone follows).
KEEP_HIGHER = 0.8


def play_likelihood(played: int, kept: int) -> float:
    """How likely a sensible player holding ``{played, kept}`` plays ``played``.

    Players keep the higher card as a rule, never throw the Princess away, and must
    play the Countess beside a King or a Prince (so playing a King or a Prince proves
    they do not keep the Countess).
    """
    if played == kept:
        return 1.0
    if kept == COUNTESS and played in (KING, PRINCE):
        return 0.0
    if played == COUNTESS:
        return 1.0 if kept in (KING, PRINCE) else 0.3
    if kept == PRINCESS:
        return 1.0
    return KEEP_HIGHER if kept > played else 1.0 - KEEP_HIGHER


def hand_posterior(view: ObservationView, offset: int) -> dict[int, float]:
    """:func:`hand_distribution` sharpened by the opponent's last play: the card they
    kept is weighted by :func:`play_likelihood` of the card they discarded last.

    That discard is read as a play even where it says nothing of the card now held: one a
    Prince forced (their card is then a fresh draw) and, at three or four players, a play
    whose kept card a King trade has since moved to another seat. The bot's published
    figures and its compiled twin were measured with this reading, so it stays."""
    prior = hand_distribution(view, offset)
    discards = view.discards[offset] if offset < view.num_players else ()
    if len(prior) < 2 or not discards:
        return prior
    played = discards[-1]
    weights = {v: p * play_likelihood(played, v) for v, p in prior.items()}
    total = sum(weights.values())
    return {v: w / total for v, w in weights.items() if w} if total else prior


class _Situation:
    """Quantities shared by every action's score at one decision."""

    def __init__(self, view: ObservationView, old_card: int, beliefs: Mapping[int, dict[int, float]] | None = None):
        masks = move_rulings(view)
        view = with_move_rulings(view, masks)
        self.view = view
        # Values failed Guards ruled out of the card we held before drawing.
        self.own_ruled = masks[0]
        self.opponents = [k for k in range(1, view.num_players) if view.in_round(k)]
        alive = len(self.opponents) + 1
        self.share = 1.0 / alive  # an even share of the round
        self.elim_gain = 1.0 / (alive - 1) - self.share
        beliefs = beliefs or {}
        self.beliefs = {k: beliefs.get(k) or hand_posterior(view, k) for k in self.opponents}
        total = sum(view.unseen.values())
        self.unseen = {v: c / total for v, c in view.unseen.items() if c} if total else {}
        # How much the showdown matters now: all of it on the last turn.
        self.showdown_weight = 1.0 / (1.0 + view.deck_size / SHOWDOWN_HORIZON) if SHOWDOWN_HORIZON else 0.0
        self.old_card = old_card

    def beats(self, card: int, k: int) -> float:
        """P(our ``card`` beats seat ``k``'s hand at a showdown), ties counted half."""
        dist = self.beliefs[k]
        return sum(p for v, p in dist.items() if v < card) + 0.5 * dist.get(card, 0.0)

    def showdown(self, card: int) -> float:
        win = 1.0
        for k in self.opponents:
            win *= self.beats(card, k)
        return win

    def holds_chance(self, k: int, card: int) -> float:
        """P(seat ``k`` has ``card`` among its hand and the card it will draw)."""
        return 1.0 - (1.0 - self.beliefs[k].get(card, 0.0)) * (1.0 - self.unseen.get(card, 0.0))

    def guess_chance(self, card: int, ruled: int = 0) -> float:
        """P(an opponent who does not know our card names it with a Guard): they
        count the unseen cards too, and our copy is among theirs, but they never name
        a value the table knows our card lacks (``ruled``, a bit mask)."""
        if card == GUARD:
            return 0.0
        ruled &= ~(1 << card)  # only a sampled deal can rule out the card we hold
        counts = {v: self.view.unseen[v] for v in CARD_VALUES if v != GUARD and not ruled >> v & 1}
        counts[card] += 1
        best = max(counts.values())
        return (
            (1.0 / sum(1 for c in counts.values() if c == best)) if counts[card] == best else 0.1 * counts[card] / best
        )

    def risk(self, card: int, exposed: float, protected: bool, ruled: int = 0) -> float:
        """P(we are eliminated before our next turn) holding ``card`` (``ruled``: the
        values the table knows it is not)."""
        if protected or self.view.deck_size == 0:
            return 0.0
        survive = 1.0
        for k in self.opponents:
            hit = 0.0 if card == GUARD else exposed + (1.0 - exposed) * self.guess_chance(card, ruled)
            threat = self.holds_chance(k, GUARD) * hit
            threat += self.holds_chance(k, BARON) * (1.0 - self.beats(card, k)) * BARON_THREAT
            if card == PRINCESS:
                threat += self.holds_chance(k, PRINCE) * 0.5
            survive *= 1.0 - min(1.0, threat)
        return 1.0 - survive

    def best_guess(self) -> float:
        return max((p for k in self.opponents for v, p in self.beliefs[k].items() if v != GUARD), default=0.0)

    def option_value(self, card: int) -> float:
        """What holding ``card`` threatens at our next turn."""
        if card == GUARD:
            return min(MAX_OPTION, GUARD_OPTION * self.best_guess()) * self.elim_gain
        if card == BARON:
            edge = max((self.beats(BARON, k) for k in self.opponents), default=0.0)
            return BARON_OPTION * self.elim_gain * max(0.0, edge - 0.5)
        if card == PRINCE:
            return (
                PRINCE_OPTION
                * self.elim_gain
                * max((self.beliefs[k].get(PRINCESS, 0.0) for k in self.opponents), default=0)
            )
        if card in (PRIEST, HANDMAID):
            return SMALL_OPTION
        return 0.0

    def after(self, card: int, exposed: float = 0.0, protected: bool = False, ruled: int = 0) -> float:
        """Value of continuing the round holding ``card`` (``ruled``: the values the
        table knows it is not)."""
        if self.view.deck_size == 0:
            return self.showdown(card) - self.share
        value = self.showdown_weight * (self.showdown(card) - self.share) + self.option_value(card)
        return value - RISK_SCALE * self.risk(card, exposed, protected, ruled) * (self.share + value)


class BeliefAgent(KeptCardAgent):
    """Keeps a probability for every opponent's hand and plays the action of highest
    immediate expected value (ties broken by its seeded generator)."""

    name = "belief"

    def decide(self, view: ObservationView, legal: list[int], old_card: int) -> int:
        check_turn(view, legal)  # a mask of another position fails deep in the scoring, or is played from
        return belief_action(view, legal, self.rng, old_card)

    def explain(self, observation: Mapping) -> dict:
        """The bot's probabilities for each opponent's hand (seat offset -> {value: p}),
        as replays show them; it changes nothing."""
        view = with_move_rulings(decode_observation(observation["observation"]))
        return {"hand_beliefs": {k: hand_posterior(view, k) for k in range(1, view.num_players) if view.in_round(k)}}


def belief_action(view: ObservationView, legal: Sequence[int], rng: random.Random, old_card: int = 0) -> int:
    """The legal action of highest expected value (see :class:`BeliefAgent`); ties
    are broken by ``rng``. ``old_card`` is our card the opponents may know (0: unknown)."""
    scores = action_scores(view, legal, old_card)
    top = max(scores.values())
    return rng.choice([a for a, s in scores.items() if s >= top - 1e-9])


def action_scores(
    view: ObservationView,
    legal: Sequence[int],
    old_card: int = 0,
    beliefs: Mapping[int, dict[int, float]] | None = None,
) -> dict[int, float]:
    """The expected value :class:`BeliefAgent` gives each of ``legal``; ``beliefs``
    (seat offset -> card probabilities) replaces the bot's own reading of those seats."""
    situation = _Situation(view, old_card, beliefs)
    return {a: score_action(situation, a) for a in legal}


def score_action(s: _Situation, action: int) -> float:
    """Expected value of ``action`` relative to an even share of the round."""
    view = s.view
    card, offset, guess = ACTION_CARD[action], ACTION_OFFSET[action], ACTION_GUESS[action]
    kept = other_card(view.hand, card)
    # Opponents who saw our old card know ``kept`` if we keep that card.
    if any(view.seen_by):
        exposed = 1.0 if s.old_card == kept else (0.5 if not s.old_card and kept != card else 0.0)
    else:
        exposed = 0.0
    targeted = offset > 0
    # Playing a value ruled out of our old card shows the table we keep that card.
    ruled = ruled_out_after_play(s.own_ruled, card)

    if card == PRINCESS:
        return SURE_LOSS
    if card == GUARD and targeted:
        hit = s.beliefs[offset].get(guess, 0.0)
        return hit * s.elim_gain + (1.0 - hit * (len(s.opponents) == 1)) * s.after(kept, exposed, ruled=ruled)
    if card == BARON and targeted:
        win = sum(p for v, p in s.beliefs[offset].items() if v < kept)
        lose = sum(p for v, p in s.beliefs[offset].items() if v > kept)
        tie = 1.0 - win - lose
        go_on = tie + win * (len(s.opponents) > 1)
        # After a tie the target knows our card.
        return win * s.elim_gain - lose * s.share + go_on * s.after(kept, max(exposed, tie), ruled=ruled)
    if card == PRIEST and targeted:
        dist = s.beliefs[offset]
        uncertainty = 1.0 - max(dist.values(), default=1.0)
        use = 0.8 if kept == GUARD else 0.3 if kept in (BARON, PRINCE) else 0.15
        return use * uncertainty * s.elim_gain + s.after(kept, exposed, ruled=ruled)
    if card == HANDMAID:
        return s.after(kept, exposed, protected=True, ruled=ruled)
    if card == PRINCE:
        if offset == 0:
            if kept == PRINCESS:
                return SURE_LOSS
            return sum(p * s.after(new) for new, p in s.unseen.items())
        dist = s.beliefs[offset]
        hit = dist.get(PRINCESS, 0.0)
        # A high card discarded is a showdown threat gone.
        mean = sum(v * p for v, p in dist.items())
        fresh = sum(v * p for v, p in s.unseen.items())
        disrupt = s.showdown_weight * max(0.0, mean - fresh) / 16.0
        return hit * s.elim_gain + disrupt + (1.0 - hit * (len(s.opponents) == 1)) * s.after(kept, exposed, ruled=ruled)
    if card == KING and targeted:
        # We take their hand and they know what we now hold.
        received = sum(p * s.after(new, exposed=1.0) for new, p in s.beliefs[offset].items())
        return received
    # Countess, or a card played with no one to choose: no effect.
    return s.after(kept, exposed, ruled=ruled)
