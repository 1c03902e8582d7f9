"""What an opponent's last play says about the card they kept, read through a model of
how they play.

The card-counting bot reads a play with a rule of thumb (players keep the higher card,
:func:`~loveletter_env.agents.belief.play_likelihood`). Measured against real play that
rule is poor: against ``belief`` opponents its posterior names the held card less often
than plain card counting does. The search bot can afford a better reading. For every
card ``v`` the opponent might have kept, it rebuilds the opponent's view at the moment of
that play, holding the played card and ``v``, and asks the card-counting bot what it
would have played there. The answer, mixed with some ``noise`` for players who do not
play like the model, is the likelihood of ``v``:

    P(they played p | they kept v) = noise + (1 - noise) * P(model plays p | {p, v})

The rebuilt view is an approximation from the current one. It takes the opponent's last
discard back into their hand, does not count the draws made since, and takes what they
know of us from ``seen_by``. It ignores anything else that happened after their play,
which at three or four players includes the other opponents' plays. It reads their last
discard as their play even where it is not one or says nothing of the card now held: a
discard a Prince forced (their card is then a fresh draw), or, at three or four players, a
play whose kept card a King trade has since moved to another seat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from ..actions import ACTION_CARD
from ..cards import CARD_COUNTS, CARD_VALUES, HANDMAID, PRIEST
from ..observation import ObservationView
from ..validation import check_int
from .base import hand_distribution, view_legal_actions
from .belief import action_scores


def _check_opponent(view: ObservationView, offset: int) -> None:
    """Refuse a seat offset that is no opponent's (``1..num_players - 1``): offset 0 is our own
    play, which the rebuilt view cannot hold, and one past the table has nothing to read."""
    check_int("an opponent's seat offset", offset, 1, view.num_players - 1)


def decision_view(view: ObservationView, offset: int, kept: int, our_card: int = 0) -> ObservationView | None:
    """Seat ``offset``'s view when they made their last play, had they kept ``kept``
    (approximate; see the module docstring). ``our_card`` is the card we held then
    (0 if unknown), which they know when ``seen_by[offset]`` says so.

    Returns ``None`` when no consistent view exists (``kept`` cannot be in their hand);
    raises ``ValueError`` when that seat has not played yet, or is no opponent's.
    """
    _check_opponent(view, offset)
    if not view.discards[offset]:
        raise ValueError(f"seat offset {offset} has not played yet: there is no play to read")
    n = view.num_players
    order = [(offset + j) % n for j in range(n)]  # their offset j is our offset order[j]
    played = view.discards[offset][-1]
    hand = tuple(sorted((played, kept)))
    discards = [view.discards[o] for o in order]
    discards[0] = discards[0][:-1]
    us = n - offset
    known = [0] * n
    # A Priest they just played on us taught them our card only after the play.
    if view.seen_by[offset] and played != PRIEST and our_card:
        known[us] = our_card
    protected = [view.protected[o] for o in order]
    protected[0] = False  # their own Handmaid, if any, came with this play
    # Our last discard being a Handmaid means we were sheltered during their turn.
    protected[us] = bool(view.discards[0]) and view.discards[0][-1] == HANDMAID
    unseen = dict(CARD_COUNTS)
    for card in (*hand, *view.face_up, *(c for pile in discards for c in pile), *(c for c in known if c)):
        unseen[card] -= 1
    if min(unseen.values()) < 0:
        return None
    # Everyone after them who is still in drew a card since, us included.
    draws_since = 1 + sum(1 for o in range(offset + 1, n) if view.in_round(o))
    # The rule fields carry over from ``view``; the move record and the cards the player was
    # dealt and drew are its own, which nobody else saw, so the rebuilt view has the summary only.
    return dataclasses.replace(
        view,
        num_players=n,
        hand=hand,
        discards=tuple(discards),
        face_up=view.face_up,
        known_cards=tuple(known),
        ruled_out=tuple(view.ruled_out[o] for o in order),
        seen_by=(False,) * n,
        out=tuple(view.out[o] for o in order),
        protected=tuple(protected),
        tokens=tuple(view.tokens[o] for o in order),
        to_act=0,
        deck_size=view.deck_size + draws_since,
        tokens_to_win=view.tokens_to_win,
        unseen=unseen,
        dealt=0,
        drawn=0,
        moves=(),
    )


def model_play_probability(view: ObservationView, card: int) -> float:
    """P(the card-counting bot, holding ``view.hand``, plays ``card``): its best-scored
    actions share the probability, as its tie-break does."""
    legal = view_legal_actions(view)
    if len(legal) == 1:
        return float(ACTION_CARD[legal[0]] == card)
    scores = action_scores(view, list(legal))
    top = max(scores.values())
    best = [a for a in legal if scores[a] >= top - 1e-9]
    return sum(ACTION_CARD[a] == card for a in best) / len(best)


#: A model of play, asked once per reading: ``model(views, card)`` gives, for each view, the
#: probability that its player plays ``card``. One call takes every view, so that a network
#: reads them in one batched pass.
PlayModel = Callable[[Sequence[ObservationView], int], Sequence[float]]


def one_view_at_a_time(play_probability: Callable[[ObservationView, int], float]) -> PlayModel:
    """A :data:`PlayModel` from ``play_probability(view, card)``, which reads one view."""

    def model(views: Sequence[ObservationView], card: int) -> list[float]:
        return [play_probability(view, card) for view in views]

    return model


#: The card-counting bot as a :data:`PlayModel`: the default reading.
model_play_probabilities: PlayModel = one_view_at_a_time(model_play_probability)


def play_likelihoods(
    view: ObservationView,
    offset: int,
    our_card: int = 0,
    noise: float = 0.1,
    play_model: PlayModel = model_play_probabilities,
) -> dict[int, float]:
    """For each value seat ``offset`` may hold, P(their last play | they kept it), with
    ``noise`` the floor for players who stray from the model (1.0 reads nothing).
    ``play_model`` is the model (a :data:`PlayModel`, asked once with every rebuilt view): by
    default the card-counting bot; the network-guided search passes its network's policy.

    Empty when there is nothing to read (no play yet, or the hand is known). Raises
    ``ValueError`` for a seat offset that is no opponent's (``1..num_players - 1``).
    """
    _check_opponent(view, offset)
    if not view.in_round(offset) or view.known_cards[offset] or not view.discards[offset]:
        return {}
    played = view.discards[offset][-1]
    chances: dict[int, float] = {}
    rebuilt: dict[int, ObservationView] = {}  # kept card -> the view they played from, holding it
    for kept in CARD_VALUES:
        if not view.unseen[kept] or kept in view.ruled_out[offset]:
            continue
        if kept == played:
            chances[kept] = 1.0  # either copy played is the same play
            continue
        then = decision_view(view, offset, kept, our_card)
        chances[kept] = 0.0
        if then is not None:
            rebuilt[kept] = then
    if rebuilt:
        chances.update(zip(rebuilt, play_model(list(rebuilt.values()), played)))
    return {kept: noise + (1.0 - noise) * float(chance) for kept, chance in chances.items()}


def posterior(view: ObservationView, offset: int, likelihoods: Mapping[int, float]) -> dict[int, float]:
    """Card counting (:func:`~loveletter_env.agents.base.hand_distribution`) weighted by
    ``likelihoods``; the plain count where the likelihoods leave nothing."""
    prior = hand_distribution(view, offset)
    if not likelihoods:
        return prior
    weights = {v: p * likelihoods.get(v, 0.0) for v, p in prior.items()}
    total = sum(weights.values())
    return {v: w / total for v, w in weights.items() if w} if total else prior
