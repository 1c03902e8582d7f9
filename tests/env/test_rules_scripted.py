"""SPEC rules for 3 and 4 players and multi-round games, each driven through the env on a
scripted deck: showdowns with out players and ties, Prince discards in the discard sum, the
round ending on a Prince's last draw, who starts after a shared round, the token targets,
shared rewards and ``king_ignores_handmaid``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import act, deal_deck, legal_from_mask, make_env

from loveletter_env import Rules
from loveletter_env.actions import COUNTESS_ACTION, HANDMAID_ACTION
from loveletter_env.cards import BARON, COUNTESS, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS


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


def shared_four_player_env():
    deck = deal_deck(4, set_aside=PRINCESS, hands={0: PRINCE, 1: GUARD, 2: PRINCE, 3: GUARD}, draws=SHARED_4P_DRAWS)
    env = make_env(4, deck, episode="round")
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


def test_next_round_after_a_shared_win_starts_with_the_lowest_winning_seat():
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


@pytest.mark.parametrize("num_players, target", [(3, 5), (4, 4)])
def test_classic_game_ends_when_a_player_reaches_the_table_sizes_token_target(monkeypatch, num_players, target):
    deck, actions = QUICK_WIN[num_players]
    env = make_env(num_players, deck, episode="game")
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
def test_king_ignores_handmaid_lets_only_the_king_choose_a_protected_player(num_players, other):
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
