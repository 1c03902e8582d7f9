"""loveletter_env.agents.opponent_model: an opponent's last play read through the card-counting model."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from conftest import act, start

from loveletter_env import engine
from loveletter_env.actions import ACTION_CARD
from loveletter_env.agents import make_agent
from loveletter_env.agents.base import hand_distribution
from loveletter_env.agents.belief import hand_posterior
from loveletter_env.agents.ismcts import seat_view
from loveletter_env.agents.opponent_model import (
    decision_view,
    play_likelihoods,
    posterior,
)
from loveletter_env.cards import (
    BARON,
    COUNTESS,
    FULL_DECK,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)


def test_decision_view_rebuilds_what_the_opponent_saw():
    """Between two of our turns the opponent drew and played once: taking their play
    back into their hand gives the view they decided from, in 2-player games whose
    plays leave our hand and theirs alone: its summary, that is; their move record and the
    cards they were dealt and drew are theirs alone, and the rebuilt view leaves them empty."""
    rng = random.Random(5)
    checked = 0
    for game in range(250):
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        state = engine.new_game(2, deck, 0)
        bots = [make_agent("belief", seed=game + s) for s in range(2)]
        before = None  # (opponent's view at their decision, what they kept, what we held)
        while not state.round_over:
            seat = state.current
            if seat == 0 and before is not None:
                then, kept, ours = before
                rebuilt = decision_view(seat_view(state, 0), 1, kept, ours)
                assert rebuilt == dataclasses.replace(then, dealt=0, drawn=0, moves=())
                checked += 1
            view = seat_view(state, seat)
            action = bots[seat].choose(view, list(engine.legal_actions(state)))
            card = ACTION_CARD[action]
            nobody_knows = not any(any(row) for row in state.seen)
            simple = card in (GUARD, PRIEST, HANDMAID, COUNTESS) and nobody_knows
            if seat == 1 and simple and not state.protected[0] and not state.ruled_out[0]:
                kept = state.drawn if state.hands[1] == card else state.hands[1]
                before = (view, kept, state.hands[0])
            else:
                before = None
            engine.step(state, action)
            if state.out[0] or state.out[1] or (card == GUARD and state.ruled_out[0]):
                before = None  # their play changed what they know of us: not a simple case
    assert checked > 100


def test_the_countess_rule_is_read_exactly():
    # They played a King: with noise 0 they cannot have kept the Countess (which must
    # have been played instead); with noise it keeps the floor.
    state = start(2, hands={0: GUARD, 1: KING}, draws=[PRIEST, PRINCESS, BARON])
    engine.step(state, act(PRIEST, 1))  # we see the King ...
    engine.step(state, act(KING, 1))  # ... they trade it away: we now hold it, they our Guard
    view = seat_view(state, 0)
    assert view.known_cards[1] == GUARD
    assert play_likelihoods(view, 1) == {}  # a known hand needs no reading

    state = start(2, hands={0: HANDMAID, 1: KING}, draws=[PRIEST, BARON, GUARD])
    engine.step(state, act(HANDMAID))
    engine.step(state, act(KING))  # no one to choose: they played the King anyway
    view = seat_view(state, 0)
    exact = play_likelihoods(view, 1, noise=0.0)
    assert exact[COUNTESS] == 0.0
    assert play_likelihoods(view, 1, noise=0.1)[COUNTESS] == 0.1
    assert set(play_likelihoods(view, 1, noise=1.0).values()) == {1.0}
    dist = posterior(view, 1, exact)
    assert COUNTESS not in dist and abs(sum(dist.values()) - 1.0) < 1e-9


def test_likelihood_is_the_models_choice():
    """Worked by hand, not by asking the model's own functions. We hold a Priest and play a
    Handmaid; they hold a Guard, draw a Baron and play the Baron with no one to choose (we
    are sheltered); we draw the other Priest. Both Priests are ours, so they kept one of
    Guard, Baron, Handmaid, Prince, King, Countess, Princess. For each, with noise 0, the
    likelihood is 1 when the card-counting bot holding {Baron, kept}, with us sheltered,
    plays the Baron, else 0. Sheltered, a Guard, Baron or King has no one to choose and does
    nothing, and a Prince must choose its own player, so the choice is which card to keep:

    * Baron: both copies are the same play, 1.
    * Princess: discarding it loses the round, so the Baron, 1.
    * Countess, King: neither play does anything; the bot keeps the higher card (7 or 6
      against 3 at the showdown), so the Baron, 1.
    * Prince: the Prince on themselves trades the Baron for a random card; the Baron keeps a
      known 5, which the bot prefers, 1.
    * Guard: neither play does anything; a kept Guard cannot be named by our Guard and
      threatens a guess next turn, which the bot values over a Baron, 1.
    * Handmaid: the Handmaid shelters them for our turn at no cost, the Baron does nothing,
      so the Handmaid, 0.

    A model that forgot our shelter would see Guard, Baron, Prince and King plays on us:
    there the bot holding a Guard or a Prince plays it on us rather than the Baron, so those
    two readings go to 0."""
    state = start(2, hands={0: PRIEST, 1: GUARD}, draws=[HANDMAID, BARON, PRIEST])
    engine.step(state, act(HANDMAID))
    engine.step(state, act(BARON))  # no one to choose: the Baron does nothing
    view = seat_view(state, 0)
    assert view.hand == (PRIEST, PRIEST) and view.discards[1] == (BARON,) and state.hands[1] == GUARD
    assert play_likelihoods(view, 1, noise=0.0) == {
        GUARD: 1.0,
        BARON: 1.0,
        HANDMAID: 0.0,
        PRINCE: 1.0,
        KING: 1.0,
        COUNTESS: 1.0,
        PRINCESS: 1.0,
    }


def test_model_reading_names_a_belief_players_card_better_than_counting():
    """Against the card-counting bot, the model reading puts more probability on the
    card actually held than plain counting and the bot's own rule of thumb do."""
    rng = random.Random(8)
    log_score = {"counting": 0.0, "rule of thumb": 0.0, "model": 0.0}
    samples = 0
    for game in range(120):
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        state = engine.new_game(2, deck, game % 2)
        bots = [make_agent("belief", seed=game + s) for s in range(2)]
        while not state.round_over:
            seat = state.current
            view = seat_view(state, seat)
            if view.in_round(1) and not view.known_cards[1] and view.discards[1]:
                truth = state.hands[1 - seat]
                held = bots[seat].memory.last_kept(view)
                readings = {
                    "counting": hand_distribution(view, 1),
                    "rule of thumb": hand_posterior(view, 1),
                    "model": posterior(view, 1, play_likelihoods(view, 1, held)),
                }
                for name, dist in readings.items():
                    log_score[name] += math.log(max(dist.get(truth, 0.0), 1e-6))
                samples += 1
            engine.step(state, bots[seat].choose(view, list(engine.legal_actions(state))))
    assert samples > 200
    assert log_score["model"] > log_score["counting"] + 0.1 * samples
    assert log_score["model"] > log_score["rule of thumb"] + 0.1 * samples


def test_a_seat_that_has_not_played_has_nothing_to_read():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[BARON])
    view = seat_view(state, 0)
    assert play_likelihoods(view, 1) == {}
    with pytest.raises(ValueError, match="has not played yet"):
        decision_view(view, 1, KING)


@pytest.mark.parametrize("offset", [0, 2, -1, True])
def test_a_seat_offset_that_is_no_opponent_s_is_refused_by_name(offset):
    """Offsets 1..n-1 are the opponents. Were taken: offset 0 (our own play) failed with a bare
    ``IndexError`` in the rebuilt view, and an offset past the table read as "nothing to read"."""
    state = start(2, hands={0: PRIEST, 1: BARON}, draws=[HANDMAID, GUARD, KING])
    engine.step(state, act(HANDMAID))
    engine.step(state, act(GUARD))  # both seats have played: each has a discard to read
    view = seat_view(state, 0)
    message = r"^an opponent's seat offset must be an integer in 1\.\.1, got"
    with pytest.raises(ValueError, match=message):
        play_likelihoods(view, offset)
    with pytest.raises(ValueError, match=message):
        decision_view(view, offset, KING)
