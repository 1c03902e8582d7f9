"""Observation vectors: fixed shape, no hidden information, and a faithful decoder."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections.abc import Mapping

import numpy as np
import pytest
from conftest import act, deal_deck, legal, make_env, offset_of, play, random_playout, start, view
from hypothesis import given, settings
from hypothesis import strategies as st

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import GUARD_NO_TARGET, HANDMAID_ACTION, PRINCESS_ACTION
from loveletter_env.cards import (
    BARON,
    CARD_COUNTS,
    CARD_VALUES,
    COUNTESS,
    DECK_SIZE,
    FULL_DECK,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)
from loveletter_env.engine import GameState
from loveletter_env.observation import (
    OBSERVATION_SIZE,
    V1_OBSERVATION_SIZE,
    MoveView,
    decode_observation,
    encode_observation,
    layout_size,
    layout_table,
    observation_for_layout,
)

PROPERTY_SETTINGS = settings(max_examples=40, deadline=None)


# Shape ------------------------------------------------------------------------------


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_observation_has_one_fixed_shape_for_every_table_size(num_players):
    env = loveletter_env.env(num_players=num_players)
    env.reset(seed=3)
    for agent in env.agents:
        space = env.observation_space(agent)
        assert space["observation"].shape == (OBSERVATION_SIZE,)
        assert space["action_mask"].shape == (loveletter_env.NUM_ACTIONS,)
        obs = env.observe(agent)
        assert obs["observation"].dtype == np.float32 and obs["observation"].shape == (OBSERVATION_SIZE,)
        assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].shape == (41,)
        assert space.contains(obs)
        assert decode_observation(obs).num_players == num_players


def test_only_the_player_to_act_sees_two_cards_and_a_mask():
    env = make_env(3, deal_deck(3, first_player=1, hands={0: PRIEST, 1: BARON, 2: KING}, draws=[HANDMAID]),
                   first_player=1)
    views = {a: decode_observation(env.observe(a)) for a in env.agents}
    assert views["player_1"].hand == (BARON, HANDMAID) and views["player_1"].my_turn
    assert views["player_0"].hand == (PRIEST,) and views["player_0"].to_act == 1
    assert views["player_2"].hand == (KING,) and views["player_2"].to_act == 2
    assert env.observe("player_0")["action_mask"].sum() == 0
    assert env.observe("player_1")["action_mask"].sum() > 0


# Hidden information -----------------------------------------------------------------


def swapped(deck: tuple[int, ...], i: int, j: int) -> tuple[int, ...]:
    cards = list(deck)
    cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


def assert_same_views(a: GameState, b: GameState, observers) -> None:
    for seat in observers:
        np.testing.assert_array_equal(encode_observation(a, seat), encode_observation(b, seat),
                                      err_msg=f"player_{seat} can tell the two decks apart")


def test_set_aside_card_never_shows_in_any_observation():
    deck = deal_deck(2, set_aside=PRINCESS, face_up=(KING, COUNTESS, BARON), hands={0: BARON, 1: PRINCE},
                     draws=[HANDMAID, GUARD, HANDMAID, GUARD, GUARD, GUARD, GUARD, PRIEST, PRIEST, PRINCE])
    other = swapped(deck, 0, DECK_SIZE - 1)  # the set-aside Princess swaps with the bottom Prince
    a, b = engine.new_game(2, deck, 0), engine.new_game(2, other, 0)
    actions = [HANDMAID_ACTION, GUARD_NO_TARGET, HANDMAID_ACTION, GUARD_NO_TARGET,
               act(GUARD, 1, KING), act(GUARD, 1, PRINCESS), act(GUARD, 1, KING), act(PRIEST, 1), act(PRIEST, 1)]
    assert_same_views(a, b, (0, 1))
    for action in actions:
        play(a, [action])
        play(b, [action])
        if a.deck_remaining == 0:
            break  # the bottom card is now in a hand
        assert_same_views(a, b, (0, 1))
    assert a.deck_remaining == 0 and a.current == 1
    assert a.hand_of(1) != b.hand_of(1)  # the decks did differ, for whoever drew the bottom card


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_another_players_hidden_card_never_shows_in_the_observers_observation(num_players):
    """player_1 holds a Priest in one game and a Baron in the other (swapped with a card
    deep in the deck); player_0 never learns which, so it must see the same vectors."""
    others = {seat: GUARD for seat in range(2, num_players)}
    # Seats 2 and 3 draw a Prince each, choose themselves, and draw a replacement (King, Countess).
    replays = [PRINCE, KING, PRINCE, COUNTESS][: 2 * (num_players - 2)]
    deal = dict(hands={0: HANDMAID, 1: PRIEST, **others}, draws=[GUARD, HANDMAID, *replays])
    deck = deal_deck(num_players, **deal)
    bottom = DECK_SIZE - 1
    deck = swapped(deck, bottom, deck.index(BARON))  # a Baron at the bottom
    other = swapped(deck, deck.index(PRIEST), bottom)  # player_1 holds the Baron instead
    a, b = engine.new_game(num_players, deck, 0), engine.new_game(num_players, other, 0)
    assert a.hands[1] == PRIEST and b.hands[1] == BARON

    actions = [act(GUARD, 1, PRINCESS), HANDMAID_ACTION]  # a wrong guess; player_1 hides behind a Handmaid
    actions += [act(PRINCE, 0)] * (num_players - 2)  # the others discard their Guards and draw
    for action in actions:
        play(a, [action])
        play(b, [action])
        assert_same_views(a, b, [0])
    assert not np.array_equal(encode_observation(a, 1), encode_observation(b, 1))
    assert (view(a, 1).dealt, view(b, 1).dealt) == (PRIEST, BARON)  # player_1 knows what it was dealt


def _first_hidden_position(num_players: int) -> int:
    """Deck index of the first card nobody holds after the deal and the first draw."""
    return 1 + (engine.FACE_UP_CARDS_2P if num_players == 2 else 0) + num_players + 1


@PROPERTY_SETTINGS
@given(
    num_players=st.sampled_from([2, 3, 4]),
    deck=st.permutations(FULL_DECK),
    first_player=st.integers(0, 3),
    positions=st.data(),
    rng=st.randoms(use_true_random=False),
)
def test_observations_do_not_depend_on_unseen_deck_order(num_players, deck, first_player, positions, rng):
    first_player %= num_players
    hidden = range(_first_hidden_position(num_players), DECK_SIZE)
    i = positions.draw(st.sampled_from([0, *hidden]), label="i")
    j = positions.draw(st.sampled_from([p for p in hidden if p != i]), label="j")
    a = engine.new_game(num_players, tuple(deck), first_player)
    b = engine.new_game(num_players, swapped(tuple(deck), i, j), first_player)
    first_drawn = min(p for p in (i, j) if p)

    while not a.round_over and a.next_card <= first_drawn:
        assert_same_views(a, b, range(num_players))
        assert legal(a) == legal(b)
        action = rng.choice(legal(a))
        engine.step(a, action)
        engine.step(b, action)


@PROPERTY_SETTINGS
@given(
    num_players=st.sampled_from([2, 3, 4]),
    deck=st.permutations(FULL_DECK),
    first_player=st.integers(0, 3),
    picks=st.data(),
    rng=st.randoms(use_true_random=False),
)
def test_observations_do_not_depend_on_other_players_hidden_cards(num_players, deck, first_player, picks, rng):
    """Swap one player's dealt card with a card deep in the deck. Until that player acts
    or is chosen by a card, nobody else can tell the two games apart."""
    first_player %= num_players
    holder = picks.draw(st.sampled_from([p for p in range(num_players) if p != first_player]), label="holder")
    dealt_at = 1 + (engine.FACE_UP_CARDS_2P if num_players == 2 else 0) + (holder - first_player) % num_players
    deep = picks.draw(st.integers(_first_hidden_position(num_players), DECK_SIZE - 1), label="deep")
    a = engine.new_game(num_players, tuple(deck), first_player)
    b = engine.new_game(num_players, swapped(tuple(deck), dealt_at, deep), first_player)
    observers = [p for p in range(num_players) if p != holder]

    while not a.round_over and a.next_card <= deep:
        assert_same_views(a, b, observers)
        if a.current == holder:
            break
        action = rng.choice(legal(a))
        offset = loveletter_env.decode_action(action).offset
        if offset > 0 and (a.current + offset) % num_players == holder:
            break
        engine.step(a, action)
        engine.step(b, action)


# Decoding ---------------------------------------------------------------------------


def expected_unseen(state: GameState, seat: int) -> dict[int, int]:
    """Copies of each value whose place ``seat`` cannot name, counted from the state."""
    n = state.num_players
    placed = list(state.hand_of(seat)) + list(state.face_up)
    for p in range(n):
        placed += state.discards[p]
        if p != seat and state.known[seat][p]:
            placed.append(state.known[seat][p])
    return {v: CARD_COUNTS[v] - placed.count(v) for v in CARD_VALUES}


def assert_decodes_to_the_state(state: GameState, seat: int) -> None:
    n = state.num_players
    v = decode_observation(encode_observation(state, seat))
    seats = [(seat + k) % n for k in range(n)]

    assert v.num_players == n
    assert v.hand == tuple(sorted(state.hand_of(seat)))
    assert v.discards == tuple(tuple(state.discards[p]) for p in seats)
    assert v.face_up == tuple(sorted(state.face_up))
    assert v.known_cards == (0,) + tuple(state.known[seat][p] for p in seats[1:])
    assert v.ruled_out[1:] == tuple(
        frozenset(c for c in CARD_VALUES if state.ruled_out[p] >> c & 1) for p in seats[1:]
    )
    assert v.seen_by == (False,) + tuple(state.seen[p][seat] for p in seats[1:])
    assert v.out == tuple(state.out[p] for p in seats)
    assert v.protected == tuple(state.protected[p] for p in seats)
    assert v.tokens == tuple(state.tokens[p] for p in seats)
    assert v.to_act == (None if state.round_over else (state.current - seat) % n)
    assert v.deck_size == state.deck_remaining
    assert v.tokens_to_win == state.tokens_to_win
    assert v.discard_sum_tiebreak == state.rules.discard_sum_tiebreak
    assert v.king_ignores_handmaid == state.rules.king_ignores_handmaid
    assert v.unseen == expected_unseen(state, seat)
    assert min(v.unseen.values()) >= 0


@PROPERTY_SETTINGS
@given(
    num_players=st.sampled_from([2, 3, 4]),
    deck=st.permutations(FULL_DECK),
    rules=st.sampled_from(["classic", "pegasus", "king_ignores_handmaid"]),
    rng=st.randoms(use_true_random=False),
)
def test_decode_observation_round_trips_every_fact(num_players, deck, rules, rng):
    state = engine.new_game(num_players, tuple(deck), rng.randrange(num_players), rules)
    state.tokens = [rng.randrange(state.tokens_to_win) for _ in range(num_players)]
    while True:
        for seat in range(num_players):
            assert_decodes_to_the_state(state, seat)
        if state.round_over:
            break
        engine.step(state, rng.choice(legal(state)))


def test_discards_decode_in_the_order_they_were_played():
    state = engine.new_game(2, deal_deck(2, hands={0: PRINCESS, 1: KING}, draws=[HANDMAID, GUARD, PRIEST]), 0)
    play(state, [HANDMAID_ACTION, GUARD_NO_TARGET, act(PRIEST, 1)])
    assert view(state, 0).discards == ((HANDMAID, PRIEST), (GUARD,))
    assert view(state, 1).discards == ((GUARD,), (HANDMAID, PRIEST))
    assert view(state, 0).known_cards == (0, KING)


def test_decode_observation_accepts_the_env_dict_and_the_bare_vector():
    env = loveletter_env.env(num_players=4)
    env.reset(seed=11)
    obs = env.observe(env.agent_selection)
    assert decode_observation(obs) == decode_observation(obs["observation"])
    assert decode_observation(obs).my_turn


def test_random_rounds_always_decode_consistently():
    """A cheap deterministic sweep on top of the hypothesis test: many whole rounds."""
    rng = random.Random(2024)
    for game in range(60):
        n = 2 + game % 3
        state = engine.new_game(n, tuple(rng.sample(FULL_DECK, DECK_SIZE)), rng.randrange(n))
        random_playout(state, rng)
        for seat in range(n):
            assert_decodes_to_the_state(state, seat)


# The move record and the cards received (version 2) ----------------------------------


def test_a_version_1_vector_is_refused_naming_both_layouts():
    with pytest.raises(ValueError) as refused:
        decode_observation(np.zeros(V1_OBSERVATION_SIZE, np.float32))
    assert str(refused.value) == (
        f"expected observation version 2 ({OBSERVATION_SIZE} entries), "
        f"got observation version 1 ({V1_OBSERVATION_SIZE} entries)"
    )


def expected_move(
    state: GameState,
    seat: int,
    actor: int,
    card: int,
    target: int | None = None,
    *,
    guess: int = 0,
    out: tuple[int, ...] = (),
    discarded: int = 0,
    saw: Mapping[int, int] = {},
    drew: Mapping[int, int] = {},
    replacement: Mapping[int, int] = {},
) -> MoveView:
    """One move as ``seat`` should record it: seats are given absolute and turned into offsets;
    ``saw``, ``drew`` and ``replacement`` map the seats that saw a card to the card."""
    return MoveView(
        actor=offset_of(state, seat, actor),
        card=card,
        target=None if target is None else offset_of(state, seat, target),
        guess=guess,
        out=tuple(sorted(offset_of(state, seat, p) for p in out)),
        discarded=discarded,
        saw=saw.get(seat, 0),
        drew=drew.get(seat, 0),
        replacement=replacement.get(seat, 0),
    )


def assert_last_move(state: GameState, actor: int, card: int, target: int | None = None, **fields) -> None:
    """Every seat's record of the last move is ``expected_move``'s, and it is the last slot."""
    for seat in range(state.num_players):
        moves = view(state, seat).moves
        assert len(moves) == len(state.history)
        assert moves[-1] == expected_move(state, seat, actor, card, target, **fields), f"player_{seat}"


@pytest.mark.parametrize(("guess", "hit"), [(PRINCE, False), (BARON, True)], ids=["miss", "hit"])
def test_a_guards_named_card_is_heard_by_all_hit_or_miss(guess, hit):
    state = start(3, hands={0: GUARD, 1: BARON, 2: KING}, draws=[PRIEST])
    play(state, [act(GUARD, 1, guess)])
    assert_last_move(
        state, 0, GUARD, 1, guess=guess, out=(1,) if hit else (), discarded=BARON if hit else 0, drew={0: PRIEST}
    )


def test_a_guard_with_no_one_to_choose_has_no_target_and_no_guess():
    state = start(2, hands={0: HANDMAID, 1: GUARD}, draws=[PRIEST, GUARD])
    play(state, [HANDMAID_ACTION, GUARD_NO_TARGET])
    assert_last_move(state, 1, GUARD, drew={1: GUARD})


def test_what_a_priest_shows_is_recorded_for_its_player_alone():
    state = start(3, hands={0: PRIEST, 1: BARON, 2: KING}, draws=[GUARD])
    play(state, [act(PRIEST, 1)])
    assert_last_move(state, 0, PRIEST, 1, saw={0: BARON}, drew={0: GUARD})


@pytest.mark.parametrize(
    ("kept", "theirs", "loser"),
    [(PRINCE, PRIEST, 1), (PRIEST, PRINCE, 0), (PRIEST, PRIEST, None)],
    ids=["win", "loss", "tie"],
)
def test_a_baron_shows_each_side_the_other_card_and_everyone_the_losers(kept, theirs, loser):
    state = start(3, hands={0: kept, 1: theirs, 2: KING}, draws=[BARON])
    play(state, [act(BARON, 1)])
    lost = {0: kept, 1: theirs}.get(loser, 0)
    assert_last_move(
        state,
        0,
        BARON,
        1,
        out=() if loser is None else (loser,),
        discarded=lost,
        saw={0: theirs, 1: kept},
        drew={0: BARON},
    )


def test_a_princes_discard_is_public_and_the_replacement_private_to_its_target():
    state = start(3, hands={0: PRINCE, 1: BARON, 2: KING}, draws=[GUARD, HANDMAID])
    play(state, [act(PRINCE, 1)])
    assert_last_move(state, 0, PRINCE, 1, discarded=BARON, replacement={1: HANDMAID}, drew={0: GUARD})
    assert HANDMAID in view(state, 1).hand  # the replacement, then player_1's draw
    assert HANDMAID not in view(state, 0).known_cards + view(state, 2).known_cards


def test_a_prince_on_oneself_records_the_replacement_for_oneself():
    state = start(3, hands={0: PRINCE, 1: BARON, 2: KING}, draws=[GUARD, HANDMAID])
    play(state, [act(PRINCE, 0)])
    assert_last_move(state, 0, PRINCE, 0, discarded=GUARD, replacement={0: HANDMAID}, drew={0: GUARD})


def test_a_prince_on_the_princess_puts_its_holder_out_with_no_replacement():
    state = start(3, hands={0: PRINCE, 1: PRINCESS, 2: KING}, draws=[GUARD, HANDMAID])
    play(state, [act(PRINCE, 1)])
    assert_last_move(state, 0, PRINCE, 1, out=(1,), discarded=PRINCESS, drew={0: GUARD})


def test_a_king_shows_both_sides_the_card_received_and_no_one_else():
    state = start(3, hands={0: KING, 1: BARON, 2: PRIEST}, draws=[GUARD])
    play(state, [act(KING, 1)])
    assert_last_move(state, 0, KING, 1, saw={0: BARON, 1: GUARD}, drew={0: GUARD})


def test_the_princess_played_puts_its_player_out_and_shows_the_other_card():
    state = start(3, hands={0: PRINCESS, 1: BARON, 2: KING}, draws=[HANDMAID])
    play(state, [PRINCESS_ACTION])
    assert_last_move(state, 0, PRINCESS, out=(0,), discarded=HANDMAID, drew={0: HANDMAID})


@pytest.mark.parametrize("seed", range(20))
def test_the_cards_received_are_recorded_for_their_receiver_alone(num_players, seed):
    """``dealt``, ``drawn`` and each slot's ``drew`` and ``replacement``: the observer's own
    cards as it received them, and nobody else's, through whole random rounds."""
    rng = np.random.default_rng([num_players, seed])
    state = engine.new_game(num_players, tuple(int(c) for c in rng.permutation(FULL_DECK)), seed % num_players)
    while True:
        for seat in range(num_players):
            v = view(state, seat)
            assert v.dealt == state.dealt[seat]
            assert v.drawn == (state.drawn if seat == state.current and not state.round_over else 0)
            for move, event in zip(v.moves, state.history, strict=True):
                assert move.drew == (event.drawn if event.player == seat else 0)
                assert move.replacement == (event.replacement if event.target == seat else 0)
        if state.round_over:
            break
        legal_now = legal(state)
        engine.step(state, legal_now[int(rng.integers(len(legal_now)))])


# Nothing more: the move record hides what the observer has not seen -----------------------


def assert_views_differ(a: GameState, b: GameState, seat: int) -> None:
    assert not np.array_equal(encode_observation(a, seat), encode_observation(b, seat)), f"player_{seat}"


def test_a_princes_replacement_never_shows_to_the_others():
    deck = deal_deck(3, hands={0: PRINCE, 1: BARON, 2: KING}, draws=[GUARD, HANDMAID, PRIEST, GUARD])
    other = swapped(deck, deck.index(HANDMAID), DECK_SIZE - 1)  # player_1 draws another replacement
    a, b = engine.new_game(3, deck, 0), engine.new_game(3, other, 0)
    # player_1 is made to discard, draws its replacement and a Priest, and looks at player_2.
    for action in [act(PRINCE, 1), act(PRIEST, 1), act(GUARD, 1, PRINCESS)]:
        play(a, [action])
        play(b, [action])
        assert_same_views(a, b, (0, 2))
        assert_views_differ(a, b, 1)
    assert a.hands[1] == HANDMAID != b.hands[1]


@pytest.mark.parametrize("card", [PRIEST, KING], ids=["Priest", "King"])
def test_what_a_priest_or_king_shows_never_reaches_a_third_player(card):
    deck = deal_deck(3, hands={0: card, 1: BARON, 2: PRINCE}, draws=[GUARD])
    other = swapped(deck, deck.index(BARON), DECK_SIZE - 1)  # player_1 holds another card
    a, b = engine.new_game(3, deck, 0), engine.new_game(3, other, 0)
    assert a.hands[1] != b.hands[1]
    play(a, [act(card, 1)])
    play(b, [act(card, 1)])
    assert_same_views(a, b, [2])
    assert_views_differ(a, b, 0)  # the Priest's or King's player was shown the card


def test_a_baron_tie_never_shows_the_tied_cards_to_a_third_player():
    a = start(3, hands={0: PRIEST, 1: PRIEST, 2: KING}, draws=[BARON, GUARD])
    b = start(3, hands={0: PRINCE, 1: PRINCE, 2: KING}, draws=[BARON, GUARD])
    for action in [act(BARON, 1), act(GUARD, 1, PRINCESS)]:
        assert_same_views(a, b, [2])
        play(a, [action])
        play(b, [action])
        assert_same_views(a, b, [2])
        for seat in (0, 1):
            assert_views_differ(a, b, seat)


def test_the_layout_stays_within_its_budget_and_keeps_version_1_as_its_prefix():
    """Version 2 fits 1,536 one-byte entries (a network input and a batched row stay small), and
    version 1's fields keep their places, so a version-1 network reads a prefix."""
    from loveletter_env.observation import LAYOUT, OBSERVATION_VERSION, SLICES, V1_LAYOUT

    assert OBSERVATION_VERSION == 2
    assert OBSERVATION_SIZE <= 1536
    assert LAYOUT[: len(V1_LAYOUT)] == V1_LAYOUT and V1_OBSERVATION_SIZE == 646
    assert SLICES[V1_LAYOUT[-1].name].stop == V1_OBSERVATION_SIZE


@pytest.mark.parametrize("shape", [(OBSERVATION_SIZE - 1,), (OBSERVATION_SIZE + 1,), (2, OBSERVATION_SIZE), ()])
def test_decode_observation_refuses_a_vector_of_the_wrong_shape(shape):
    with pytest.raises(ValueError, match=str(OBSERVATION_SIZE)):
        decode_observation(np.zeros(shape, dtype=np.float32))


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1e7, "10000000.0"), (1e30, "1.0000000150474662e+30"), (2.5, "2.5"), (-5, "-5.0"), (np.nan, "nan")],
)
def test_decode_observation_refuses_an_entry_no_observation_holds(value, shown):
    """A count of 1e7 would decode as a hand of ten million cards, and 1e30 hang: refused, named."""
    vector = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    vector[7] = value
    with pytest.raises(ValueError, match=rf"^entry 7 of the observation is {re.escape(shown)}: every entry is a whole"):
        decode_observation(vector)
    with pytest.raises(ValueError, match="an observation dict holds 'observation'"):
        decode_observation({"obs": np.zeros(OBSERVATION_SIZE)})


def test_decode_observation_refuses_a_bool_vector_that_lost_its_counts():
    """``astype(bool)`` turns a deck of 9 cards into 1: it decoded without a word."""
    env = loveletter_env.env(num_players=3)
    env.reset(seed=1)
    vector = env.observe(env.agent_selection)["observation"]
    assert decode_observation(vector).deck_size > 1
    with pytest.raises(ValueError, match=r"^an observation vector holds numbers \(counts up to 16\), got dtype bool$"):
        decode_observation(vector.astype(bool))


@pytest.mark.parametrize("num_players", [(0, 0, 0), (1, 1, 0), (0, 2, 0)], ids=str)
def test_decode_observation_refuses_a_vector_with_no_table_size(num_players):
    """A blank vector (padding, say) decoded as a 2-player table: argmax of zeros is 0."""
    from loveletter_env.observation import SLICES

    vector = np.zeros(OBSERVATION_SIZE, np.float32)
    vector[SLICES["num_players"]] = num_players
    expected = f"entries 97..99 of the observation (num_players, one-hot 2, 3, 4) are {list(num_players)}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}: every observation has exactly one 1 there$"):
        decode_observation(vector)


def test_decode_observation_refuses_a_move_naming_a_seat_outside_the_table():
    """A bot indexes its seats by a move's actor, target and who went out."""
    from loveletter_env.observation import MOVE_SLICES, SLICES

    env = loveletter_env.env(num_players=2)
    env.reset(seed=0)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    vector = env.observe(env.agent_selection)["observation"].astype(np.float32)
    assert decode_observation(vector).moves  # one move, by a seat of the table
    beyond = vector.copy()
    beyond[SLICES["moves"].start + MOVE_SLICES["out"].start + 3] = 1
    with pytest.raises(ValueError, match="^move 0 of the observation names seat offset 3, at a 2-player table$"):
        decode_observation(beyond)
    no_actor = vector.copy()
    actor = MOVE_SLICES["actor"]
    no_actor[SLICES["moves"].start + actor.start : SLICES["moves"].start + actor.stop] = 0
    with pytest.raises(ValueError, match="^move 0 of the observation names no player who moved"):
        decode_observation(no_actor)


@pytest.mark.parametrize(
    ("seats", "problem"),
    [
        ((3,), "seat offset 3, at a 2-player table"),
        ((2,), "seat offset 2, at a 2-player table"),
        ((0, 1), "seat offsets [0, 1]: at most one player is to act"),  # argmax would read 0
    ],
    ids=str,
)
def test_decode_observation_refuses_a_player_to_act_outside_the_table(seats, problem):
    """A bot compares ``to_act`` with its seats: one beyond the table (or a second 1 that
    argmax would hide) is no observation, refused by name as a move's seats are."""
    from loveletter_env.observation import SLICES

    env = loveletter_env.env(num_players=2)
    env.reset(seed=0)
    vector = env.observe(env.agent_selection)["observation"].astype(np.float32)
    assert decode_observation(vector).to_act == 0
    where = SLICES["to_act"]
    vector[where] = 0
    vector[[where.start + k for k in seats]] = 1
    with pytest.raises(ValueError, match=f"^{re.escape(f'to_act of the observation names {problem}')}$"):
        decode_observation(vector)


@pytest.mark.parametrize("observer", [-1, 2, True, 1.0])
def test_encode_observation_refuses_a_seat_outside_the_table(observer):
    env = loveletter_env.env(num_players=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=rf"^observer must be a seat in 0..1, got {observer!r}$"):
        encode_observation(env.unwrapped.game, observer)


# Layout versions and the layout command --------------------------------------------


@pytest.mark.parametrize("version, size", [(1, V1_OBSERVATION_SIZE), (2, OBSERVATION_SIZE), (np.int64(1), 646)])
def test_a_network_of_each_version_reads_its_prefix(version, size):
    observation = np.arange(OBSERVATION_SIZE, dtype=np.float32)
    assert np.array_equal(observation_for_layout(observation, version), observation[:size])


@pytest.mark.parametrize("version", [True, False, 1.0, 2.0, "1", None, np.float64(2.0), 3, 0])
def test_only_an_integer_names_a_layout_version(version):
    """``True == 1`` and ``1.0 == 1`` in Python: a check by membership alone took them."""
    known = r"; the known versions are the integers \[1, 2\]"
    with pytest.raises(ValueError, match=rf"unknown observation version .*{known}"):
        observation_for_layout(np.zeros(OBSERVATION_SIZE, np.float32), version)
    with pytest.raises(ValueError, match="unknown observation version"):
        layout_size(version)


@pytest.mark.parametrize("observation", [np.float32(3.0), np.zeros((), np.float32)], ids=["scalar", "0-d array"])
def test_a_single_number_is_refused_as_no_observation(observation):
    """A 0-d array has no last axis to hold an observation: reading ``shape[-1]`` raised a bare
    ``IndexError: tuple index out of range`` instead of saying what was wrong."""
    expected = "expected observation version 2 (1382 entries) on the last axis, got shape ()"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        observation_for_layout(observation, 1)


@pytest.mark.parametrize("shape", [(), (OBSERVATION_SIZE - 1,), (2, 2, OBSERVATION_SIZE), (3, 646)], ids=str)
def test_checking_values_refuses_what_is_no_vector_or_batch_of_observations(shape):
    """``check_observation_values`` reads one vector or a batch of them: a 0-d array raised
    ``IndexError``, and a short vector was blamed on its (missing) table size, ``[]``."""
    from loveletter_env.observation import check_observation_values

    expected = f"expected one observation ({OBSERVATION_SIZE},) or a batch (B, {OBSERVATION_SIZE}), got shape {shape}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        check_observation_values(np.zeros(shape, np.float32))


def test_a_views_rules_take_the_cards_in_play_as_any_sequence():
    """``Rules`` takes ``in_play`` as any sequence; the view's cached ``rules`` raised
    ``TypeError: unhashable type: 'list'`` for a list or an array of the same cards."""
    from loveletter_env.rules import MINI6

    view = decode_observation(encode_observation(start(2), 0))
    cards = MINI6.in_play
    assert view.rules("rung", list(cards)) == view.rules("rung", cards) == view.rules("rung", np.array(cards))
    assert view.rules("rung", list(cards)).in_play == cards


def test_a_huge_version_is_not_echoed_whole():
    for version in ("7" * 5_000_000, 10**5000, [2] * 1_000_000):
        with pytest.raises(ValueError) as refused:
            layout_size(version)
        assert len(str(refused.value)) < 200


def test_the_layout_command_prints_the_tables_without_a_warning():
    result = subprocess.run(
        [sys.executable, "-W", "error", "-m", "loveletter_env.observation"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == layout_table() + "\n"


def test_the_layout_command_explains_itself_and_refuses_arguments(capsys):
    """``--help`` says what the command prints instead of printing it, and an argument it does
    not take is refused by name: both used to print the tables as if nothing had been asked."""
    from loveletter_env.observation.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m loveletter_env.observation") and "| field |" not in out
    for argv, refused in ((["--version2"], "--version2"), (["extra"], "extra")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        out, err = capsys.readouterr()
        assert f"error: unrecognized arguments: {refused}" in err and out == ""


def test_the_layout_command_ends_quietly_when_its_reader_leaves():
    """``python -m loveletter_env.observation | head -1``: the reader closes the pipe before
    the tables are written; the command ends with status 1 and no traceback."""
    import os

    read, write = os.pipe()
    os.close(read)  # a reader that has already left
    try:
        result = subprocess.run(
            [sys.executable, "-m", "loveletter_env.observation"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")


def test_every_constant_of_the_layout_is_bound_once():
    """A reader finds what ``LAYOUT`` (or any constant of the module) holds where it is
    defined: no name of the module is bound a second time further down."""
    import ast

    import loveletter_env.observation as observation

    with open(observation.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    bound = [
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    ]
    assert len(bound) == len(set(bound)), sorted({name for name in bound if bound.count(name) > 1})
