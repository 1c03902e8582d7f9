"""Every rule of SPEC section 1, each on a scripted deck."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from conftest import (
    ROOT,
    act,
    actions_of,
    deal_deck,
    legal,
    legal_from_mask,
    make_env,
    play,
    play_cards,
    scripted_deck,
    start,
    view,
)

import loveletter_env
from loveletter_env import Rules, decode_observation, engine
from loveletter_env.actions import (
    ACTIONS,
    BARON_NO_TARGET,
    COUNTESS_ACTION,
    GUARD_NO_TARGET,
    HANDMAID_ACTION,
    KING_NO_TARGET,
    PRIEST_NO_TARGET,
    PRINCESS_ACTION,
    encode_action,
)
from loveletter_env.aec import OBSERVATION_HIGH
from loveletter_env.cards import (
    BARON,
    COUNTESS,
    DECK_SIZE,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)
from loveletter_env.core import record_from_state
from loveletter_env.rules import LADDER, MAX_TOKENS_TO_WIN, PRESETS

NO_TARGET_ACTION = {GUARD: GUARD_NO_TARGET, PRIEST: PRIEST_NO_TARGET, BARON: BARON_NO_TARGET, KING: KING_NO_TARGET}


def targeted_actions(card: int, num_players: int) -> list[int]:
    """Every action playing ``card`` on a seat that exists at a table of ``num_players``."""
    offsets = range(0 if card == PRINCE else 1, num_players)
    if card == GUARD:
        return [act(GUARD, t, g) for t in offsets for g in range(PRIEST, PRINCESS + 1)]
    return [act(card, t) for t in offsets]


# Deal -------------------------------------------------------------------------------


@pytest.mark.parametrize("first_player", [0, 1])
def test_two_player_deal_sets_aside_lays_three_face_up_then_deals_from_the_first_player(first_player):
    deck = scripted_deck({0: PRINCESS, 1: KING, 2: COUNTESS, 3: BARON, 4: PRIEST, 5: HANDMAID, 6: PRINCE})
    state = engine.new_game(2, deck, first_player)
    second = 1 - first_player

    assert state.set_aside == PRINCESS
    assert state.face_up == (KING, COUNTESS, BARON)
    assert state.hands[first_player] == PRIEST
    assert state.hands[second] == HANDMAID
    assert state.current == first_player
    assert state.hand_of(first_player) == (PRIEST, PRINCE)  # the first player has drawn
    assert state.hand_of(second) == (HANDMAID,)
    assert state.deck_remaining == DECK_SIZE - 7


@pytest.mark.parametrize("num_players, first_player", [(n, f) for n in (3, 4) for f in range(n)])
def test_three_and_four_player_deal_has_no_face_up_cards(num_players, first_player):
    deck = scripted_deck({0: PRINCESS, 1: KING, 2: COUNTESS, 3: PRINCE, 4: HANDMAID, 5: BARON})
    state = engine.new_game(num_players, deck, first_player)

    assert state.set_aside == PRINCESS
    assert state.face_up == ()
    for i in range(num_players):
        assert state.hands[(first_player + i) % num_players] == deck[1 + i]
    assert state.current == first_player
    assert state.drawn == deck[1 + num_players]
    assert state.deck_remaining == DECK_SIZE - 2 - num_players


def test_env_reset_deals_the_scripted_deck():
    deck = deal_deck(
        2,
        first_player=1,
        set_aside=PRINCESS,
        face_up=(KING, COUNTESS, BARON),
        hands={1: PRIEST, 0: HANDMAID},
        draws=[PRINCE],
    )
    env = make_env(2, deck, first_player=1)

    assert env.agent_selection == "player_1"
    actor, other = view_env(env, "player_1"), view_env(env, "player_0")
    assert actor.hand == (PRIEST, PRINCE)
    assert other.hand == (HANDMAID,)
    assert actor.face_up == other.face_up == (BARON, KING, COUNTESS)
    assert actor.deck_size == DECK_SIZE - 7


# Guard ------------------------------------------------------------------------------


def test_guard_naming_the_right_card_knocks_the_target_out():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])
    event = engine.step(state, act(GUARD, 1, PRIEST))

    assert event.eliminated == (1,)
    assert state.out == [False, True]
    assert state.hands[1] == 0
    assert state.discards == [[GUARD], [PRIEST]]


def test_guard_naming_a_wrong_card_does_nothing():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID, BARON])
    event = engine.step(state, act(GUARD, 1, BARON))

    assert event.eliminated == ()
    assert state.out == [False, False]
    assert state.hands == [HANDMAID, PRIEST]
    assert state.current == 1 and not state.round_over


def test_guard_reaches_any_seat_by_offset():
    state = start(3, hands={0: GUARD, 1: PRIEST, 2: KING}, draws=[HANDMAID])
    engine.step(state, act(GUARD, 2, KING))
    assert state.out == [False, False, True]


def test_guard_can_never_name_guard():
    assert not [a for a in ACTIONS if a.card == GUARD and a.guess == GUARD]
    with pytest.raises(ValueError):
        encode_action(GUARD, 1, GUARD)
    state = start(2, hands={0: GUARD, 1: GUARD}, draws=[HANDMAID])
    assert legal(state) == [act(GUARD, 1, g) for g in range(PRIEST, PRINCESS + 1)] + [HANDMAID_ACTION]


# Priest -----------------------------------------------------------------------------


def test_priest_shows_the_targets_card_to_the_actor_only():
    state = start(3, hands={0: PRIEST, 1: BARON, 2: KING}, draws=[HANDMAID])
    event = engine.step(state, act(PRIEST, 1))

    assert event.target_card == BARON
    assert state.known[0][1] == BARON
    assert state.known[1] == [0, 0, 0] and state.known[2] == [0, 0, 0]
    assert view(state, 0).known_cards[1] == BARON
    assert view(state, 2).known_cards == (0, 0, 0)
    assert view(state, 1).seen_by == (False, False, True)  # the target knows player_0 (offset 2) saw it
    assert view(state, 1).known_cards == (0, 0, 0)  # but learns nothing of player_0's card
    assert state.hands == [HANDMAID, BARON, KING] and state.out == [False] * 3


# Baron ------------------------------------------------------------------------------


def test_baron_knocks_out_the_target_holding_the_lower_card():
    state = start(3, hands={0: BARON, 1: GUARD, 2: PRIEST}, draws=[KING])
    event = engine.step(state, act(BARON, 1))

    assert (event.actor_card, event.target_card, event.eliminated) == (KING, GUARD, (1,))
    assert state.out == [False, True, False]
    assert state.discards[1] == [GUARD]
    assert state.known[1][0] == KING  # the loser saw the winner's card
    assert state.current == 2


def test_baron_knocks_out_the_actor_holding_the_lower_card():
    state = start(3, hands={0: BARON, 1: PRINCE, 2: PRIEST}, draws=[GUARD])
    event = engine.step(state, act(BARON, 1))

    assert event.eliminated == (0,)
    assert state.out == [True, False, False]
    assert state.discards[0] == [BARON, GUARD]
    assert state.known[1][0] == 0  # knowledge of an out player's hand is void
    assert state.current == 1


def test_baron_tie_does_nothing_but_both_learn():
    state = start(3, hands={0: BARON, 1: PRIEST, 2: KING}, draws=[PRIEST])
    event = engine.step(state, act(BARON, 1))

    assert event.eliminated == ()
    assert state.out == [False] * 3
    assert state.known[0][1] == PRIEST and state.known[1][0] == PRIEST
    assert state.known[2] == [0, 0, 0]
    assert view(state, 0).known_cards[1] == PRIEST
    assert view(state, 1).known_cards[2] == PRIEST  # seat 0 is offset 2 from seat 1
    assert view(state, 2).known_cards == (0, 0, 0)


# Handmaid ---------------------------------------------------------------------------


def test_handmaid_protects_until_the_start_of_the_owners_next_turn_two_players():
    state = start(2, hands={0: HANDMAID, 1: PRIEST}, draws=[GUARD, BARON, GUARD])
    engine.step(state, HANDMAID_ACTION)
    assert state.protected == [True, False]
    assert legal(state) == [PRIEST_NO_TARGET, BARON_NO_TARGET]

    engine.step(state, PRIEST_NO_TARGET)
    assert state.current == 0
    assert state.protected == [False, False]
    assert act(GUARD, 1, PRINCESS) in legal(state)


def test_handmaid_protection_lasts_through_every_other_turn_three_players():
    state = start(3, hands={0: HANDMAID, 1: PRIEST, 2: GUARD}, draws=[KING, BARON, GUARD, PRINCE])
    engine.step(state, HANDMAID_ACTION)

    # player_1: player_0 sits at offset 2 and cannot be chosen.
    assert legal(state) == [act(PRIEST, 1), act(BARON, 1)]
    engine.step(state, act(PRIEST, 1))

    # player_2: player_0 sits at offset 1 and cannot be chosen; player_1 at offset 2 can.
    assert state.protected == [True, False, False]
    assert legal(state) == [act(GUARD, 2, g) for g in range(PRIEST, PRINCESS + 1)]
    engine.step(state, act(GUARD, 2, PRINCESS))

    assert state.current == 0 and state.protected == [False, False, False]


# Prince -----------------------------------------------------------------------------


def test_prince_makes_another_player_discard_and_draw():
    state = start(2, hands={0: PRINCE, 1: BARON}, draws=[HANDMAID, COUNTESS, GUARD])
    remaining = state.deck_remaining
    event = engine.step(state, act(PRINCE, 1))

    assert event.target_card == BARON
    assert state.discards == [[PRINCE], [BARON]]
    assert state.hand_of(1) == (COUNTESS, GUARD)  # the replacement, then the turn's draw
    assert state.deck_remaining == remaining - 2
    assert state.out == [False, False]


def test_prince_on_yourself_discards_your_other_card_and_draws():
    state = start(2, hands={0: PRINCE, 1: BARON}, draws=[GUARD, KING])
    engine.step(state, act(PRINCE, 0))

    assert state.discards[0] == [PRINCE, GUARD]
    assert state.hands[0] == KING


def test_prince_on_the_princess_holder_puts_them_out_without_a_draw():
    state = start(2, hands={0: PRINCE, 1: PRINCESS}, draws=[GUARD])
    remaining = state.deck_remaining
    event = engine.step(state, act(PRINCE, 1))

    assert event.eliminated == (1,)
    assert state.out == [False, True]
    assert state.hands[1] == 0
    assert state.discards[1] == [PRINCESS]
    assert state.deck_remaining == remaining
    assert state.round_winners == (0,)


def test_prince_on_yourself_while_holding_the_princess_puts_you_out():
    state = start(2, hands={0: PRINCE, 1: GUARD}, draws=[PRINCESS])
    engine.step(state, act(PRINCE, 0))
    assert state.out == [True, False]
    assert state.round_winners == (1,)


def _prince_on_the_last_turn() -> engine.GameState:
    """A full 2-player round: ten quiet turns, the last of which (player_1, holding two
    Princes) draws the bottom card and makes player_0 discard, with the deck empty."""
    state = start(
        2,
        set_aside=PRINCESS,
        face_up=(KING, COUNTESS, BARON),
        hands={0: BARON, 1: PRINCE},
        draws=[HANDMAID, GUARD, HANDMAID, GUARD, GUARD, GUARD, GUARD, PRIEST, PRIEST, PRINCE],
    )
    play(
        state,
        [
            HANDMAID_ACTION,
            GUARD_NO_TARGET,  # player_0 protected: player_1's Guard has no target
            HANDMAID_ACTION,
            GUARD_NO_TARGET,
            act(GUARD, 1, KING),
            act(GUARD, 1, PRINCESS),  # misses
            act(GUARD, 1, KING),
            act(PRIEST, 1),
            act(PRIEST, 1),
        ],
    )
    assert state.deck_remaining == 0 and state.current == 1 and not state.round_over
    engine.step(state, act(PRINCE, 1))
    return state


def test_prince_on_an_empty_deck_draws_the_set_aside_card():
    state = _prince_on_the_last_turn()
    assert state.set_aside_drawn
    assert state.discards[0][-1] == BARON
    assert state.hands[0] == PRINCESS


def test_prince_must_choose_yourself_when_everyone_else_is_protected():
    state = start(2, hands={0: HANDMAID, 1: PRINCE}, draws=[GUARD, GUARD])
    engine.step(state, HANDMAID_ACTION)
    assert actions_of(state, PRINCE) == [act(PRINCE, 0)]


@pytest.mark.parametrize("discarded", [GUARD, PRIEST, BARON, HANDMAID, PRINCE, KING, COUNTESS])
def test_the_card_a_prince_makes_its_target_discard_has_no_effect(discarded):
    # 3 players: a Handmaid's protection would outlast player_0's turn and show at player_1's.
    deal = dict(hands={0: PRINCE, 1: GUARD, 2: discarded}, draws=[BARON, GUARD, GUARD])
    state = start(3, **deal)
    event = engine.step(state, act(PRINCE, 2))

    assert (event.target_card, event.replacement, event.eliminated) == (discarded, GUARD, ())
    assert state.discards == [[PRINCE], [], [discarded]]
    assert state.hands == [BARON, GUARD, GUARD]  # nobody traded, compared or looked
    assert state.out == [False] * 3 and state.protected == [False] * 3
    assert state.known == [[0] * 3 for _ in range(3)]
    # player_1 may choose player_2 (offset 1) as well as player_0 (offset 2).
    every_guard = [act(GUARD, t, g) for t in (1, 2) for g in range(PRIEST, PRINCESS + 1)]
    assert state.current == 1 and legal(state) == every_guard

    env = make_env(3, deal_deck(3, **deal), episode="round")
    env.step(act(PRINCE, 2))
    game = env.unwrapped.game
    assert game.discards == [[PRINCE], [], [discarded]] and game.hands == [BARON, GUARD, GUARD]
    assert game.out == [False] * 3 and game.protected == [False] * 3
    assert legal_from_mask(env.observe("player_1")["action_mask"]) == every_guard


# King -------------------------------------------------------------------------------


def test_king_trades_hands_and_both_learn_the_card_they_received():
    state = start(2, hands={0: KING, 1: BARON}, draws=[PRIEST, GUARD])
    event = engine.step(state, act(KING, 1))

    assert (event.actor_card, event.target_card) == (PRIEST, BARON)
    assert state.hands == [BARON, PRIEST]
    assert state.known[0][1] == PRIEST and state.known[1][0] == BARON


# Countess ---------------------------------------------------------------------------


@pytest.mark.parametrize("hand, draw", [(COUNTESS, KING), (KING, COUNTESS), (COUNTESS, PRINCE), (PRINCE, COUNTESS)])
def test_countess_must_be_played_beside_a_king_or_a_prince(hand, draw):
    state = start(2, hands={0: hand, 1: GUARD}, draws=[draw])
    assert legal(state) == [COUNTESS_ACTION]

    env = make_env(2, deal_deck(2, hands={0: hand, 1: GUARD}, draws=[draw]))
    assert legal_from_mask(env.observe("player_0")["action_mask"]) == [COUNTESS_ACTION]


@pytest.mark.parametrize("court", [KING, PRINCE])
def test_countess_must_be_played_beside_a_king_or_a_prince_even_with_no_one_to_choose(court):
    # player_0 hides behind a Handmaid: player_1's King would have no target, its Prince only itself.
    deal = dict(hands={0: HANDMAID, 1: COUNTESS}, draws=[PRIEST, court])
    state = start(2, **deal)
    engine.step(state, HANDMAID_ACTION)
    assert state.protected == [True, False] and state.current == 1
    assert legal(state) == [COUNTESS_ACTION]

    env = make_env(2, deal_deck(2, **deal))
    env.step(HANDMAID_ACTION)
    assert legal_from_mask(env.observe("player_1")["action_mask"]) == [COUNTESS_ACTION]


@pytest.mark.parametrize("other", [GUARD, PRIEST, BARON, HANDMAID, PRINCESS])
def test_countess_is_optional_beside_other_cards(other):
    state = start(2, hands={0: COUNTESS, 1: PRIEST}, draws=[other])
    assert COUNTESS_ACTION in legal(state)
    assert actions_of(state, other)


# Princess ---------------------------------------------------------------------------


def test_playing_the_princess_is_legal_and_puts_you_out():
    state = start(2, hands={0: PRINCESS, 1: PRIEST}, draws=[GUARD])
    assert PRINCESS_ACTION in legal(state)
    event = engine.step(state, PRINCESS_ACTION)

    assert event.eliminated == (0,)
    assert state.out == [True, False]
    assert state.discards[0] == [PRINCESS, GUARD]
    assert state.round_winners == (1,)


# Targets ----------------------------------------------------------------------------


def _everyone_else_unavailable_three_players(card: int) -> engine.GameState:
    """player_0 to act holding a Handmaid and ``card``; player_1 is out, player_2 protected."""
    state = start(3, hands={0: HANDMAID, 1: PRIEST, 2: BARON}, draws=[GUARD, HANDMAID, card])
    play(state, [act(GUARD, 1, PRIEST), HANDMAID_ACTION])
    assert state.out == [False, True, False] and state.protected == [False, False, True]
    assert state.current == 0
    return state


def _everyone_else_protected_two_players(card: int) -> engine.GameState:
    """player_1 to act holding a Handmaid and ``card``; player_0 is protected."""
    state = start(2, hands={0: HANDMAID, 1: HANDMAID}, draws=[PRINCESS, card])
    engine.step(state, HANDMAID_ACTION)
    return state


@pytest.mark.parametrize("setup", [_everyone_else_protected_two_players, _everyone_else_unavailable_three_players])
@pytest.mark.parametrize("card", [GUARD, PRIEST, BARON, KING])
def test_cards_with_no_one_to_choose_are_played_with_no_effect(setup, card):
    state = setup(card)
    player = state.current
    assert legal(state) == sorted([HANDMAID_ACTION, NO_TARGET_ACTION[card]])

    hands_before, out_before = state.hands[:], state.out[:]
    event = engine.step(state, NO_TARGET_ACTION[card])
    assert event.target == -1 and event.eliminated == ()
    assert state.discards[player][-1] == card
    assert state.hands == hands_before and state.out == out_before


@pytest.mark.parametrize("setup", [_everyone_else_protected_two_players, _everyone_else_unavailable_three_players])
def test_prince_can_only_choose_yourself_when_no_one_else_is_available(setup):
    state = setup(PRINCE)
    assert legal(state) == [HANDMAID_ACTION, act(PRINCE, 0)]


def test_out_players_cannot_be_chosen_and_are_skipped():
    state = start(3, hands={0: GUARD, 1: PRIEST, 2: BARON}, draws=[KING, GUARD])
    engine.step(state, act(GUARD, 1, PRIEST))
    assert state.current == 2  # player_1 is out: skipped
    # From player_2, player_0 is offset 1 and the out player_1 offset 2.
    assert legal(state) == [act(GUARD, 1, g) for g in range(PRIEST, PRINCESS + 1)] + [act(BARON, 1)]
    engine.step(state, act(BARON, 1))  # player_2 keeps a Guard against player_0's King: out
    assert state.round_winners == (0,)


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("hand, draw", [(GUARD, PRIEST), (BARON, KING), (PRINCE, HANDMAID)])
def test_offsets_past_the_table_are_masked(num_players, hand, draw):
    state = start(num_players, hands={0: hand}, draws=[draw])
    expected = sorted(
        targeted_actions(hand, num_players)
        + ([HANDMAID_ACTION] if draw == HANDMAID else targeted_actions(draw, num_players))
    )
    assert legal(state) == expected


# King vs Handmaid -------------------------------------------------------------------


@pytest.mark.parametrize(
    "other, other_actions",
    [(GUARD, [GUARD_NO_TARGET]), (PRIEST, [PRIEST_NO_TARGET]), (BARON, [BARON_NO_TARGET]), (PRINCE, [act(PRINCE, 0)])],
)
def test_king_ignores_handmaid_lets_only_the_king_choose_a_protected_player(other, other_actions):
    deal = dict(hands={0: HANDMAID, 1: KING}, draws=[PRIEST, other])  # player_0 keeps the Priest
    variant = start(2, rules="king_ignores_handmaid", **deal)
    classic = start(2, rules="classic", **deal)
    for state in (variant, classic):
        engine.step(state, HANDMAID_ACTION)

    assert legal(variant) == sorted(other_actions + [act(KING, 1)])
    assert legal(classic) == sorted(other_actions + [KING_NO_TARGET])

    kept = variant.hands[0]
    engine.step(variant, act(KING, 1))
    assert variant.hands == [other, kept]


@pytest.mark.parametrize("rules", ["classic", "king_ignores_handmaid"])
def test_rules_king_choosable_gives_the_targets_the_engine_lets_the_king_choose(rules):
    """``Rules.king_choosable`` (how the bots list the legal actions of an observation) against
    the engine, at 4 players: player_3 is out, player_1 and player_2 hide behind Handmaids,
    and player_0 holds the King and a Guard."""
    state = start(
        4, rules=rules, hands={0: GUARD, 1: HANDMAID, 2: HANDMAID, 3: PRIEST}, draws=[KING, BARON, COUNTESS, GUARD]
    )
    play(state, [act(GUARD, 3, PRIEST), HANDMAID_ACTION, HANDMAID_ACTION])
    assert state.current == 0 and state.hand_of(0) == (KING, GUARD)
    unprotected, in_round = 0, 1 << 1 | 1 << 2  # bit t: the seat at offset t
    king = state.rules.king_choosable(unprotected, in_round)
    assert legal(state) == list(engine.legal_actions_holding(KING, GUARD, unprotected, king))
    kings = [act(KING, 1), act(KING, 2)] if rules == "king_ignores_handmaid" else [KING_NO_TARGET]
    assert legal(state) == sorted([GUARD_NO_TARGET, *kings])


# End of round -----------------------------------------------------------------------


def test_last_player_standing_wins_the_round():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])
    engine.step(state, act(GUARD, 1, PRIEST))

    assert state.round_over and state.round_winners == (0,)
    assert state.tokens == [1, 0]
    assert legal(state) == []
    with pytest.raises(ValueError, match="round is over"):
        engine.step(state, HANDMAID_ACTION)


def test_showdown_when_the_deck_runs_out_highest_card_wins():
    state = _prince_on_the_last_turn()  # player_0 ends with the Princess, player_1 with a Prince
    assert state.round_over and state.turn == 10
    assert state.round_winners == (0,)
    assert state.tokens == [1, 0]


# Two Barons kept all round; the draws are played as they come (quiet cards only).
# First player discards G G G Priest Handmaid (9), second G G Priest Handmaid Countess (15).
UNEQUAL_SUMS = [GUARD, GUARD, GUARD, GUARD, GUARD, PRIEST, PRIEST, HANDMAID, HANDMAID, COUNTESS]
# First player discards G G G Priest Countess (12), second G G Priest Handmaid Handmaid (12).
EQUAL_SUMS = [GUARD, GUARD, GUARD, GUARD, GUARD, PRIEST, PRIEST, HANDMAID, COUNTESS, HANDMAID]


def _tied_deck(draws: list[int], first_player: int = 0) -> tuple[int, ...]:
    """A 2-player deck where both players keep a Baron and play ``draws`` as they come."""
    return deal_deck(
        2,
        first_player=first_player,
        set_aside=PRINCESS,
        face_up=(PRINCE, PRINCE, KING),
        hands={0: BARON, 1: BARON},
        draws=draws,
    )


def _tied_showdown(draws: list[int], rules: str, first_player: int = 0) -> engine.GameState:
    state = engine.new_game(2, _tied_deck(draws, first_player), first_player, rules)
    play_cards(state, draws)
    assert state.round_over and state.hands == [BARON, BARON]
    return state


def test_classic_showdown_tie_goes_to_the_highest_discard_sum():
    state = _tied_showdown(UNEQUAL_SUMS, "classic")
    assert [sum(d) for d in state.discards] == [9, 15]
    assert state.round_winners == (1,)
    assert state.tokens == [0, 1]


def test_classic_showdown_tie_on_discard_sum_too_is_shared():
    state = _tied_showdown(EQUAL_SUMS, "classic")
    assert [sum(d) for d in state.discards] == [12, 12]
    assert state.round_winners == (0, 1)
    assert state.tokens == [1, 1]


def test_pegasus_showdown_tie_is_shared_without_discard_sum():
    state = _tied_showdown(UNEQUAL_SUMS, "pegasus")
    assert state.round_winners == (0, 1)
    assert state.tokens == [1, 1]


def test_discard_sum_counts_only_this_rounds_discards():
    # Round 1: player_1 wins the tie 15 to 9. Round 2 (player_1 first): 12 each, shared;
    # with round 1's discards counted too, player_1 would win it alone, 27 to 21.
    state = _tied_showdown(UNEQUAL_SUMS, "classic")
    assert state.round_winners == (1,)
    engine.start_round(state, _tied_deck(EQUAL_SUMS, first_player=1))
    assert state.current == 1 and state.discards == [[], []]
    play_cards(state, EQUAL_SUMS)
    assert [sum(d) for d in state.discards] == [12, 12]
    assert state.round_winners == (0, 1) and state.tokens == [1, 2]


def test_env_discard_sum_counts_only_this_rounds_discards(monkeypatch):
    env = make_env(2, _tied_deck(UNEQUAL_SUMS), episode="game")
    monkeypatch.setattr(env.unwrapped, "_decks", ScriptedDecks(_tied_deck(EQUAL_SUMS, first_player=1)))
    game = env.unwrapped.game
    play_env_cards(env, UNEQUAL_SUMS)
    assert game.round == 2 and game.tokens == [0, 1] and env.agent_selection == "player_1"
    play_env_cards(env, EQUAL_SUMS)
    assert game.round == 3 and game.tokens == [1, 2]  # round 2 was shared


@pytest.mark.parametrize(
    "draws, rules, winners",
    [(UNEQUAL_SUMS, "classic", (1,)), (EQUAL_SUMS, "classic", (0, 1)), (UNEQUAL_SUMS, "pegasus", (0, 1))],
    ids=["classic: discard sum", "classic: equal sums shared", "pegasus: shared"],
)
def test_env_showdown_tie_follows_the_presets_rule(draws, rules, winners):
    """The showdown ties above, in the env (the compiled core). Random games meet a tie on
    value under ``pegasus`` only now and then: an env that broke it by discard sum passed
    every scripted test, since those played the reference engine only."""
    env = make_env(2, _tied_deck(draws), rules=rules, episode="round")
    play_env_cards(env, draws)
    game = env.unwrapped.game
    assert game.round_over and game.hands == [BARON, BARON]
    assert game.round_winners == winners
    assert env.rewards == {f"player_{p}": (1 if p in winners else -1) for p in (0, 1)}


def test_a_new_round_starts_with_no_one_protected():
    state = _tied_showdown(EQUAL_SUMS, "classic")  # player_1's last play is a Handmaid
    assert state.protected == [False, True] and state.round_winners == (0, 1)
    engine.start_round(state, deal_deck(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID]))
    assert state.current == 0 and state.protected == [False, False]
    assert act(GUARD, 1, PRIEST) in legal(state)


def test_env_a_new_round_starts_with_no_one_protected(monkeypatch):
    env = make_env(2, _tied_deck(EQUAL_SUMS), episode="game")
    monkeypatch.setattr(
        env.unwrapped, "_decks", ScriptedDecks(deal_deck(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID]))
    )
    play_env_cards(env, EQUAL_SUMS)
    game = env.unwrapped.game
    assert game.round == 2 and game.tokens == [1, 1] and env.agent_selection == "player_0"
    assert game.protected == [False, False]
    assert act(GUARD, 1, PRIEST) in legal_from_mask(env.observe("player_0")["action_mask"])


# Tokens and the game ----------------------------------------------------------------


@pytest.mark.parametrize(
    "rules, targets", [("classic", (7, 5, 4)), ("pegasus", (5, 4, 3)), ("king_ignores_handmaid", (7, 5, 4))]
)
def test_token_targets(rules, targets):
    for num_players, target in zip((2, 3, 4), targets, strict=True):
        state = start(num_players, rules=rules)
        assert state.tokens_to_win == target
        assert view(state, 0).tokens_to_win == target


def _quick_win_for_player_0() -> tuple[int, ...]:
    return deal_deck(2, hands={0: GUARD, 1: PRIEST}, draws=[HANDMAID])


@pytest.mark.parametrize("rules, target", [("classic", 7), ("pegasus", 5)])
def test_game_ends_when_a_player_reaches_the_token_target(rules, target):
    state = engine.new_game(2, _quick_win_for_player_0(), 0, rules)
    for round_number in range(1, target + 1):
        assert state.round == round_number and state.current == 0
        engine.step(state, act(GUARD, 1, PRIEST))
        assert state.tokens == [round_number, 0]
        assert state.game_over == (round_number == target)
        if not state.game_over:
            engine.start_round(state, _quick_win_for_player_0())
    assert state.game_winners == (0,)
    with pytest.raises(ValueError, match="game is over"):
        engine.start_round(state, _quick_win_for_player_0())


def test_every_player_holding_the_target_wins_the_game():
    state = start(2, set_aside=PRINCESS, face_up=(PRINCE, PRINCE, KING), hands={0: BARON, 1: BARON}, draws=EQUAL_SUMS)
    state.tokens = [6, 6]
    play_cards(state, EQUAL_SUMS)
    assert state.tokens == [7, 7]
    assert state.game_over and state.game_winners == (0, 1)


def test_next_round_starts_with_the_previous_winner():
    state = engine.new_game(2, deal_deck(2, first_player=1, hands={1: GUARD, 0: PRIEST}, draws=[HANDMAID]), 1)
    engine.step(state, act(GUARD, 1, PRIEST))
    assert state.round_winners == (1,)

    engine.start_round(state, scripted_deck({4: KING, 5: COUNTESS, 6: PRINCESS}))
    assert state.round == 2 and state.current == 1
    assert state.hand_of(1) == (KING, PRINCESS) and state.hands[0] == COUNTESS
    assert state.tokens == [0, 1]


def test_next_round_after_a_shared_win_starts_with_the_lowest_winning_seat():
    state = _tied_showdown(EQUAL_SUMS, "classic", first_player=1)
    assert state.round_winners == (0, 1)
    engine.start_round(state, deal_deck(2))
    assert state.current == 0


# Rule options -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, message",
    [
        # Each of these once played: a byte of the compiled record wrapped (300 -> 44, 256 -> 0,
        # -1 -> 255), a float was truncated, a string compared as its number, and 17..255 put
        # observation entries above the space's bound of 16.
        ({"tokens_to_win": (300, 5, 4)}, r"tokens_to_win\[0\] \(2 players\) must be an integer in 1\.\.16, got 300"),
        ({"tokens_to_win": (7, 256, 4)}, r"tokens_to_win\[1\] \(3 players\) must be an integer in 1\.\.16, got 256"),
        ({"tokens_to_win": (7, 5, -1)}, r"tokens_to_win\[2\] \(4 players\) must be an integer in 1\.\.16, got -1"),
        ({"tokens_to_win": (1.5, 5, 4)}, r"tokens_to_win\[0\] .* in 1\.\.16, got 1\.5"),
        ({"tokens_to_win": (7.0, 5, 4)}, r"tokens_to_win\[0\] .* in 1\.\.16, got 7\.0"),
        ({"tokens_to_win": ("7", 5, 4)}, r"tokens_to_win\[0\] .* in 1\.\.16, got '7'"),
        ({"tokens_to_win": (True, 5, 4)}, r"tokens_to_win\[0\] .* in 1\.\.16, got True"),
        ({"tokens_to_win": (20, 20, 20)}, r"tokens_to_win\[0\] .* in 1\.\.16, got 20"),
        ({"tokens_to_win": (17, 5, 4)}, r"tokens_to_win\[0\] .* in 1\.\.16, got 17"),
        ({"tokens_to_win": (0, 5, 4)}, r"tokens_to_win\[0\] .* in 1\.\.16, got 0"),
        ({"tokens_to_win": (7, 5)}, r"tokens_to_win must be 3 integers in 1\.\.16 .*, got 2 entries"),
        ({"tokens_to_win": 7}, r"tokens_to_win must be 3 integers in 1\.\.16 .*, got 7"),
        ({"tokens_to_win": "754"}, r"tokens_to_win must be 3 integers in 1\.\.16 .*, got '754'"),
        ({"discard_sum_tiebreak": 1}, r"discard_sum_tiebreak must be True or False, got 1"),
        ({"discard_sum_tiebreak": "no"}, r"discard_sum_tiebreak must be True or False, got 'no'"),
        ({"king_ignores_handmaid": None}, r"king_ignores_handmaid must be True or False, got None"),
        ({"name": 3}, r"name must be a string, got 3"),
        ({"in_play": (GUARD, GUARD, PRIEST, 9)}, r"in_play must hold card values 1\.\.8"),
        ({"in_play": (GUARD, GUARD, PRIEST, BARON), "rung_players": 3.0}, r"rung_players must be 2, 3 or 4 .*got 3\.0"),
        (
            {"in_play": (GUARD, GUARD, PRIEST, BARON), "rung_players": True},
            r"rung_players must be 2, 3 or 4 .*got True",
        ),
        ({"in_play": (GUARD, GUARD, PRIEST, BARON), "rung_players": "2"}, r"rung_players must be 2, 3 or 4 .*got '2'"),
        ({"in_play": (GUARD, GUARD, PRIEST, BARON), "rung_players": 5}, r"rung_players must be 2, 3 or 4 .*got 5"),
        ({"rung_players": 3}, r"rung_players=3 needs in_play"),
        ({"in_play": (GUARD, GUARD, PRIEST, BARON), "rung_players": 3}, r"5 to 16 cards in play at 3 players"),
    ],
)
def test_a_bad_rule_option_is_refused_naming_the_field_and_its_range(fields, message):
    with pytest.raises(ValueError, match=message):
        Rules(**fields)


def test_token_targets_are_stored_as_a_tuple_of_ints():
    rules = Rules(tokens_to_win=[np.int64(MAX_TOKENS_TO_WIN), 1, np.uint8(3)])
    assert rules.tokens_to_win == (MAX_TOKENS_TO_WIN, 1, 3)
    assert all(type(t) is int for t in rules.tokens_to_win)


def test_a_rungs_table_size_is_stored_as_an_int():
    rules = Rules(in_play=(GUARD, GUARD, PRIEST, BARON, PRINCE), rung_players=np.int64(3))
    assert rules.rung_players == 3 and type(rules.rung_players) is int


@pytest.mark.parametrize("preset", [*PRESETS.values(), *LADDER], ids=lambda r: r.name)
def test_every_preset_and_rung_passes_the_checks(preset):
    assert Rules(**{f.name: getattr(preset, f.name) for f in dataclasses.fields(Rules)}) == preset


def test_the_largest_token_target_is_the_observation_spaces_bound():
    assert MAX_TOKENS_TO_WIN == OBSERVATION_HIGH


@pytest.mark.parametrize("page", ["docs/rules.md", "docs/environment.md"])
def test_the_pages_on_rule_options_give_the_token_range(page):
    assert f"from 1 to {MAX_TOKENS_TO_WIN}" in (ROOT / page).read_text(encoding="utf-8")


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_compiled_env_and_reference_agree_at_the_largest_token_target(num_players):
    """A whole game to the largest target: the compiled env ends it when the reference does,
    at every seat's true token count, and every seat's observation stays in the space."""
    rules = Rules(name="longest", tokens_to_win=(MAX_TOKENS_TO_WIN,) * 3)
    env = loveletter_env.env(num_players=num_players, rules=rules, episode="game")
    env.reset(seed=num_players)
    space = env.observation_space("player_0")["observation"]
    game = env.unwrapped.game
    mirror = engine.new_game(num_players, game.deck, game.current, rules)
    rng = np.random.default_rng(num_players)
    while not mirror.game_over:
        for agent in env.agents:
            assert space.contains(env.observe(agent)["observation"])
        action = int(rng.choice(engine.legal_actions(mirror)))
        env.step(action)
        engine.step(mirror, action)
        if mirror.round_over and not mirror.game_over:
            engine.start_round(mirror, game.deck)  # the env dealt the next round already
        assert game.tokens == mirror.tokens and game.game_over == mirror.game_over
        np.testing.assert_array_equal(record_from_state(game), record_from_state(mirror))
    assert max(mirror.tokens) == MAX_TOKENS_TO_WIN and mirror.round > MAX_TOKENS_TO_WIN
    winner = f"player_{mirror.game_winners[0]}"
    assert env.terminations[winner] and env.rewards[winner] == 1
    final = env.observe(winner)["observation"]
    assert space.contains(final)
    assert decode_observation(final).tokens[0] == decode_observation(final).tokens_to_win == MAX_TOKENS_TO_WIN


# Episode rewards --------------------------------------------------------------------


def test_round_episode_rewards_winner_plus_one_and_others_minus_one():
    env = make_env(3, deal_deck(3, hands={0: BARON, 1: GUARD, 2: PRIEST}, draws=[KING, GUARD, GUARD]), episode="round")
    env.step(act(BARON, 1))  # player_1 is out
    assert env.rewards == {"player_0": 0, "player_1": 0, "player_2": 0}
    assert not any(env.terminations.values())
    env.step(act(GUARD, 1, PRINCESS))  # player_2 misses player_0 (who holds the King)
    env.step(act(GUARD, 2, PRIEST))  # player_0 hits player_2
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1, "player_1": -1, "player_2": -1}
    assert env.infos["player_0"]["winners"] == ["player_0"]


def test_game_episode_goes_on_after_a_round_with_the_winner_to_act():
    env = make_env(2, _quick_win_for_player_0(), first_player=0, episode="game")
    env.step(act(GUARD, 1, PRIEST))
    game = env.unwrapped.game
    assert game.tokens == [1, 0] and game.round == 2 and not game.round_over
    assert env.agent_selection == "player_0"
    assert env.rewards == {"player_0": 0, "player_1": 0}
    assert not any(env.terminations.values())


@pytest.mark.parametrize("rules", ["classic", "pegasus"])
def test_game_episode_rewards_come_only_at_the_end(rules):
    rng = random.Random(7)
    env = make_env(3, deal_deck(3), episode="game", rules=rules)
    steps = 0
    game = env.unwrapped.game
    while not any(env.terminations.values()):
        assert set(env.rewards.values()) == {0}
        env.step(rng.choice(legal_from_mask(env.observe(env.agent_selection)["action_mask"])))
        steps += 1
        # A round in play always has two players or more: an env that let the last player
        # play on would let them go out too, then loop forever (in compiled code) looking
        # for a next player in the round, a hang rather than a failure.
        assert game.round_over or game.out.count(False) > 1, f"one player left and the round goes on: {game!r}"
    assert game.game_over and steps > 5
    assert max(game.tokens) == game.tokens_to_win
    winners = {f"player_{p}" for p in game.game_winners}
    assert env.rewards == {a: (1 if a in winners else -1) for a in env.possible_agents}
    # The AEC loop hands each agent its final reward once.
    seen = {}
    for agent in env.agent_iter():
        _, reward, terminated, _, _ = env.last()
        assert terminated
        seen[agent] = reward
        env.step(None)
    assert seen == {a: (1 if a in winners else -1) for a in env.possible_agents}


# Helpers ----------------------------------------------------------------------------


def play_env_cards(env, cards: list[int]) -> None:
    """:func:`conftest.play_cards` in the env: each turn, the first legal action playing the given card."""
    for card in cards:
        mask = env.observe(env.agent_selection)["action_mask"]
        choices = [a for a in legal_from_mask(mask) if ACTIONS[a].card == card]
        assert choices, f"{env.agent_selection} cannot play card {card}"
        env.step(choices[0])


def view_env(env, agent: str):
    """What ``agent`` observes in ``env``, decoded."""
    return decode_observation(env.observe(agent))


# 3 and 4 players, several rounds: showdowns, shared wins, token targets, the King's option -----


def agents(n: int) -> list[str]:
    return [f"player_{i}" for i in range(n)]


def play_round(env, actions: list[int]) -> None:
    """Step ``actions`` in order; the episode must not end before the last one."""
    for i, action in enumerate(actions):
        assert not any(env.terminations.values()), f"the episode ended before action {i}"
        assert env.observe(env.agent_selection)["action_mask"][action] == 1, f"action {action} (step {i}) is masked"
        env.step(action)


# Three players all keep a Guard; player_1 plays a Prince on itself (t2), player_0 plays the
# other on player_1 on the last turn (t10), each replacement a Guard, the second the deck's
# last card. Discards: player_0 Pr H H P = 15, player_1 P G K B G = 16 (14 without the two
# Guards the Princes forced out), player_2 Pr B C = 12.
THREE_GUARDS_DRAWS = [PRIEST, PRINCE, GUARD, PRIEST, HANDMAID, KING, BARON, HANDMAID, BARON, COUNTESS, PRINCE, GUARD]
THREE_GUARDS_ACTIONS = [
    act(PRIEST, 1),  # t1 player_0
    act(PRINCE, 0),  # t2 player_1 discards its Guard, draws a Guard
    act(PRIEST, 1),  # t3 player_2
    HANDMAID_ACTION,  # t4 player_0
    act(KING, 1),  # t5 player_1 trades Guard for Guard with player_2
    act(BARON, 2),  # t6 player_2 against player_1: Guard ties Guard
    HANDMAID_ACTION,  # t7 player_0
    act(BARON, 1),  # t8 player_1 against player_2: tie
    COUNTESS_ACTION,  # t9 player_2
]
LAST_PRINCE = act(PRINCE, 1)  # t10 player_0 on player_1: the replacement empties the deck


def three_guards_env():
    deck = deal_deck(3, set_aside=PRINCESS, hands={0: GUARD, 1: GUARD, 2: GUARD}, draws=THREE_GUARDS_DRAWS)
    env = make_env(3, deck, episode="round")
    play_round(env, THREE_GUARDS_ACTIONS)
    return env


def test_showdown_three_way_tie_on_value_goes_to_the_highest_discard_sum():
    env = three_guards_env()
    env.step(LAST_PRINCE)
    game = env.unwrapped.game
    assert game.round_over and game.hands == [GUARD, GUARD, GUARD]
    assert [sum(d) for d in game.discards] == [15, 16, 12]
    assert game.round_winners == (1,) and game.tokens == [0, 1, 0]
    assert env.rewards == {"player_0": -1, "player_1": 1, "player_2": -1}


def test_discard_sum_counts_the_cards_a_prince_made_a_player_discard():
    env = three_guards_env()
    env.step(LAST_PRINCE)
    game = env.unwrapped.game
    # Without the two Guards the Princes forced out, player_1 (14) would lose to player_0 (15).
    assert game.discards[1] == [PRINCE, GUARD, KING, BARON, GUARD]
    assert game.round_winners == (1,)


def test_reference_discard_sum_counts_the_cards_a_prince_made_a_player_discard():
    state = start(3, set_aside=PRINCESS, hands={0: GUARD, 1: GUARD, 2: GUARD}, draws=THREE_GUARDS_DRAWS)
    play(state, [*THREE_GUARDS_ACTIONS, LAST_PRINCE])
    assert state.round_over and state.hands == [GUARD, GUARD, GUARD]
    assert state.discards[1] == [PRINCE, GUARD, KING, BARON, GUARD]
    assert [sum(d) for d in state.discards] == [15, 16, 12]
    assert state.round_winners == (1,)  # 14 without the forced Guards: player_0's 15 would win


def test_round_ends_in_the_turn_a_princes_replacement_takes_the_last_card():
    env = three_guards_env()
    game = env.unwrapped.game
    assert game.deck_remaining == 1 and env.agent_selection == "player_0"
    env.step(LAST_PRINCE)
    assert game.deck_remaining == 0
    assert game.round_over and game.turn == 10  # player_1 takes no turn on an empty deck
    assert not game.set_aside_drawn and game.hands[1] == GUARD  # the deck's last card, not the Princess
    assert all(env.terminations.values()) and game.round_winners == (1,)


def test_showdown_leaves_out_a_player_who_is_out_even_one_who_held_a_higher_card():
    # player_0's first Guard catches player_2's Princess; then player_1 keeps its King and
    # player_0 its Prince through eleven quiet turns, Barons played while the other hides.
    deck = deal_deck(
        3,
        set_aside=PRINCE,
        hands={0: PRINCE, 1: KING, 2: PRINCESS},
        draws=[GUARD, HANDMAID, BARON, HANDMAID, BARON, GUARD, GUARD, PRIEST, PRIEST, GUARD, GUARD, COUNTESS],
    )
    env = make_env(3, deck, episode="round")
    hidden = act(BARON)  # the Baron with no one to choose
    play_round(
        env,
        [act(GUARD, 2, PRINCESS), HANDMAID_ACTION, hidden, HANDMAID_ACTION, hidden, act(GUARD, 2, PRINCESS)]
        + [act(GUARD, 1, PRIEST), act(PRIEST, 2), act(PRIEST, 1), act(GUARD, 2, PRINCESS), act(GUARD, 1, PRIEST)]
        + [COUNTESS_ACTION],
    )
    game = env.unwrapped.game
    assert game.round_over and game.deck_remaining == 0
    assert game.out == [False, False, True] and game.discards[2] == [PRINCESS]
    assert game.round_winners == (1,)
    assert env.rewards == {"player_0": -1, "player_1": 1, "player_2": -1}


# Four players: player_0 and player_2 keep a Prince and end on 8 each (B H G); player_1 keeps
# a Guard and has the highest sum (K C Pr = 15), player_3 a Guard (Pr G = 3). Barons and the
# King meet equal cards; the Guards name the Princess, which nobody holds.
SHARED_4P_DRAWS = [BARON, KING, BARON, PRIEST, HANDMAID, COUNTESS, HANDMAID, GUARD, GUARD, PRIEST, GUARD]
SHARED_4P_ACTIONS = [act(BARON, 2), act(KING, 2), act(BARON, 2), act(PRIEST, 2), HANDMAID_ACTION, COUNTESS_ACTION]
SHARED_4P_ACTIONS += [HANDMAID_ACTION, act(GUARD, 2, PRINCESS), act(GUARD, 1, PRINCESS), act(PRIEST, 2)]
SHARED_4P_ACTIONS += [act(GUARD, 1, PRINCESS)]
SHARED_4P_DECK = deal_deck(
    4, set_aside=PRINCESS, hands={0: PRINCE, 1: GUARD, 2: PRINCE, 3: GUARD}, draws=SHARED_4P_DRAWS
)


def shared_four_player_env():
    env = make_env(4, SHARED_4P_DECK, episode="round")
    play_round(env, SHARED_4P_ACTIONS)
    return env


def test_showdown_tie_on_value_and_discard_sum_is_shared_by_the_tied_players_only():
    game = shared_four_player_env().unwrapped.game
    assert game.round_over and game.hands == [PRINCE, GUARD, PRINCE, GUARD]
    assert [sum(d) for d in game.discards] == [8, 15, 8, 3]
    assert game.round_winners == (0, 2)
    assert game.tokens == [1, 0, 1, 0]


def test_round_episode_gives_plus_one_to_each_of_several_winners():
    env = shared_four_player_env()
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1, "player_1": -1, "player_2": 1, "player_3": -1}
    assert env.infos["player_1"]["winners"] == ["player_0", "player_2"]


# Three players, player_2 first: player_1 and player_2 keep a Prince and end on 9 each
# (B B Pr G and K G G G); player_0 keeps a Guard (C Pr H H = 17).
SHARED_3P_DECK = deal_deck(
    3,
    first_player=2,
    set_aside=PRINCESS,
    hands={0: GUARD, 1: PRINCE, 2: PRINCE},
    draws=[KING, COUNTESS, BARON, GUARD, PRIEST, BARON, GUARD, HANDMAID, PRIEST, GUARD, HANDMAID, GUARD],
)
SHARED_3P_ACTIONS = [act(KING, 2), COUNTESS_ACTION, act(BARON, 1), act(GUARD, 1, PRINCESS), act(PRIEST, 1)]
SHARED_3P_ACTIONS += [act(BARON, 1), act(GUARD, 1, PRINCESS), HANDMAID_ACTION, act(PRIEST, 1)]
SHARED_3P_ACTIONS += [act(GUARD, 2, PRINCESS), HANDMAID_ACTION, act(GUARD, 1, PRINCESS)]


def test_a_whole_game_at_3_players_starts_the_next_round_with_the_lowest_winning_seat():
    # Winners {1, 2} after a round player_2 started: "the seat after the previous first
    # player" would give 0 and "the first winner in turn order" 2.
    env = make_env(3, SHARED_3P_DECK, first_player=2, episode="game")
    play_round(env, SHARED_3P_ACTIONS)
    game = env.unwrapped.game
    assert game.round == 2 and not game.round_over
    assert game.tokens == [0, 1, 1]
    assert game.current == 1 and env.agent_selection == "player_1"
    assert not any(env.terminations.values()) and set(env.rewards.values()) == {0}


def test_game_ends_with_every_player_holding_the_target_winning():
    env = make_env(3, SHARED_3P_DECK, first_player=2, episode="game", rules=Rules(name="one", tokens_to_win=(1, 1, 1)))
    play_round(env, SHARED_3P_ACTIONS)
    assert env.unwrapped.game.game_winners == (1, 2)
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": -1, "player_1": 1, "player_2": 1}


class ScriptedDecks:
    """Stands in for the env's shuffler (``raw_env._decks``, where ``step`` takes each later
    round's deck: ``reset`` scripts only the first round): every later round gets ``deck``."""

    def __init__(self, deck):
        self.deck = np.array(deck, dtype=np.uint8)
        self.dealt = 0

    def next_array(self) -> np.ndarray:
        self.dealt += 1
        return self.deck.copy()


# player_0 starts every round (the previous winner) holding a King: its Guard knocks out
# player_1 (Priest); every later seat holds a Baron, draws a Guard and loses to the King.
QUICK_WIN = {
    3: (
        deal_deck(3, hands={0: KING, 1: PRIEST, 2: BARON}, draws=[GUARD, GUARD]),
        [act(GUARD, 1, PRIEST), act(BARON, 1)],
    ),
    4: (
        deal_deck(4, hands={0: KING, 1: PRIEST, 2: BARON, 3: BARON}, draws=[GUARD, GUARD, GUARD]),
        [act(GUARD, 1, PRIEST), act(BARON, 2), act(BARON, 1)],
    ),
}


def test_game_episode_rewards_the_games_winners_not_every_winner_of_its_last_round(monkeypatch):
    """A target of 2: player_0 wins round 1 alone, then shares round 2 with player_2, who ends
    on 1 token. Only player_0 holds the target, so only player_0 gets +1 (every shared last
    round in the tests above was won by players who all reached the target), and ``info``
    gives the tokens after the last round."""
    first_deck, first_actions = QUICK_WIN[4]
    rules = Rules(name="two", tokens_to_win=(2, 2, 2))
    env = make_env(4, first_deck, episode="game", rules=rules)
    monkeypatch.setattr(env.unwrapped, "_decks", ScriptedDecks(SHARED_4P_DECK))  # player_0 starts: the winner
    play_round(env, first_actions)
    game = env.unwrapped.game
    assert game.round == 2 and game.tokens == [1, 0, 0, 0] and env.agent_selection == "player_0"
    play_round(env, SHARED_4P_ACTIONS)
    assert game.round_winners == (0, 2) and game.game_winners == (0,)
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1, "player_1": -1, "player_2": -1, "player_3": -1}
    assert env.infos["player_2"] == {"winners": ["player_0"], "tokens": [2, 0, 1, 0]}


@pytest.mark.parametrize(
    "rules, num_players, target", [("classic", 3, 5), ("classic", 4, 4), ("pegasus", 3, 4), ("pegasus", 4, 3)]
)
def test_a_game_ends_when_a_player_reaches_the_table_sizes_token_target(monkeypatch, rules, num_players, target):
    deck, actions = QUICK_WIN[num_players]
    env = make_env(num_players, deck, episode="game", rules=rules)
    decks = ScriptedDecks(deck)
    monkeypatch.setattr(env.unwrapped, "_decks", decks)
    game = env.unwrapped.game
    for round_number in range(1, target + 1):
        assert game.round == round_number and env.agent_selection == "player_0"
        assert not any(env.terminations.values()) and set(env.rewards.values()) == {0}
        play_round(env, actions)
        assert game.tokens == [round_number] + [0] * (num_players - 1)
    assert decks.dealt == target - 1
    assert game.game_over and game.game_winners == (0,)
    assert all(env.terminations.values())
    assert env.rewards == {a: (1 if a == "player_0" else -1) for a in agents(num_players)}


@pytest.mark.parametrize("num_players", [3, 4])
@pytest.mark.parametrize("other", [GUARD, PRIEST, BARON, PRINCE])
def test_king_ignores_handmaid_at_3_and_4_players_lets_only_the_king_choose_a_protected_player(num_players, other):
    # player_0 plays a Handmaid; player_1 holds the King and ``other``: player_0 sits at
    # offset n-1 from player_1, every seat between is open.
    deal = dict(hands={0: HANDMAID, 1: KING}, draws=[PRIEST, other])
    open_offsets = range(1, num_players - 1)
    if other == GUARD:
        others = [act(GUARD, t, g) for t in open_offsets for g in range(PRIEST, PRINCESS + 1)]
    else:
        others = [act(other, t) for t in ([0, *open_offsets] if other == PRINCE else open_offsets)]
    for rules, king_offsets in [("classic", open_offsets), ("king_ignores_handmaid", range(1, num_players))]:
        env = make_env(num_players, deal_deck(num_players, **deal), rules=rules, episode="round")
        env.step(HANDMAID_ACTION)
        mask = env.observe("player_1")["action_mask"]
        assert legal_from_mask(mask) == sorted(others + [act(KING, t) for t in king_offsets]), rules
    protected = act(KING, num_players - 1)
    env.step(protected)  # the variant's env: the King trades with the protected player_0
    assert env.unwrapped.game.hands[:2] == [other, PRIEST]


# The rare rules again, in the env (the compiled core), each on a scripted deck ----------


def test_env_prince_on_an_empty_deck_hands_its_target_the_set_aside_card():
    deck = deal_deck(
        2,
        set_aside=PRINCESS,
        face_up=(KING, COUNTESS, BARON),
        hands={0: BARON, 1: PRINCE},
        draws=[HANDMAID, GUARD, HANDMAID, GUARD, GUARD, GUARD, GUARD, PRIEST, PRIEST, PRINCE],
    )
    env = make_env(2, deck, episode="round")
    play_round(
        env,
        [HANDMAID_ACTION, GUARD_NO_TARGET, HANDMAID_ACTION, GUARD_NO_TARGET, act(GUARD, 1, KING)]
        + [act(GUARD, 1, PRINCESS), act(GUARD, 1, KING), act(PRIEST, 1), act(PRIEST, 1)],
    )
    game = env.unwrapped.game
    assert game.deck_remaining == 0 and env.agent_selection == "player_1"
    env.step(act(PRINCE, 1))
    assert game.set_aside_drawn and game.discards[0][-1] == BARON
    assert game.hands == [PRINCESS, PRINCE]  # the set-aside Princess, then the showdown
    assert game.round_winners == (0,) and env.rewards == {"player_0": 1, "player_1": -1}


def test_env_prince_forcing_the_princess_out_at_3_players_draws_nothing_and_skips_her_holder():
    env = make_env(3, deal_deck(3, hands={0: PRINCE, 1: PRINCESS, 2: GUARD}, draws=[BARON, KING]), episode="round")
    game = env.unwrapped.game
    remaining = game.deck_remaining
    env.step(act(PRINCE, 1))
    assert game.out == [False, True, False] and game.hands[1] == 0
    assert game.discards[1] == [PRINCESS] and game.deck_remaining == remaining - 1  # player_2's draw only
    assert env.agent_selection == "player_2" and not any(env.terminations.values())
    view_2 = view_env(env, "player_2")
    assert view_2.out[2] and view_2.hand == (GUARD, KING)  # player_1 sits at offset 2 from player_2
    assert "player_1" in env.agents


@pytest.mark.parametrize("other", [GUARD, PRIEST, BARON, PRINCE])
@pytest.mark.parametrize("rules", ["classic", "king_ignores_handmaid"])
def test_env_masks_when_every_other_player_is_protected_or_out_at_4_players(rules, other):
    """player_0 catches player_3, player_1 and player_2 hide behind Handmaids: player_0's
    King and ``other`` have no one to choose (the King's variant may choose the hidden two)."""
    deck = deal_deck(4, hands={0: GUARD, 1: HANDMAID, 2: HANDMAID, 3: PRIEST}, draws=[KING, BARON, COUNTESS, other])
    env = make_env(4, deck, rules=rules, episode="round")
    play_round(env, [act(GUARD, 3, PRIEST), HANDMAID_ACTION, HANDMAID_ACTION])
    game = env.unwrapped.game
    assert game.out == [False, False, False, True] and game.protected == [False, True, True, False]
    other_actions = [act(PRINCE, 0)] if other == PRINCE else [NO_TARGET_ACTION[other]]
    king_actions = [act(KING, 1), act(KING, 2)] if rules == "king_ignores_handmaid" else [KING_NO_TARGET]
    assert legal_from_mask(env.observe("player_0")["action_mask"]) == sorted(other_actions + king_actions)

    if other != PRINCE:
        hands = game.hands[:]
        env.step(NO_TARGET_ACTION[other])  # played with no effect
        assert game.discards[0][-1] == other and game.hands == [KING] + hands[1:]
        assert game.out == [False, False, False, True] and env.agent_selection == "player_1"
        assert game.protected == [False, False, True, False]  # player_1's turn ended its protection


def test_env_next_round_starts_with_the_single_winner_not_the_seat_after_the_last_first(monkeypatch):
    # player_0 plays the Princess; player_1's Guard misses player_2, whose Baron (keeping a
    # King) then beats player_1's Guard: player_2 wins a round player_0 started.
    deck = deal_deck(3, hands={0: PRINCESS, 1: GUARD, 2: BARON}, draws=[HANDMAID, GUARD, KING])
    env = make_env(3, deck, episode="game")
    monkeypatch.setattr(env.unwrapped, "_decks", ScriptedDecks(deal_deck(3)))
    play_round(env, [PRINCESS_ACTION, act(GUARD, 1, PRINCESS), act(BARON, 2)])
    game = env.unwrapped.game
    assert game.round == 2 and game.tokens == [0, 0, 1]
    assert game.current == 2 and env.agent_selection == "player_2"
