"""The ladder: rungs with a fixed set of cards in play, the rest dealt face up, each played
at one table size (2, 3 or 4 players).

Rule tests on scripted decks (the face-up deal, what each seat observes), the refusals
(other table sizes, decks that do not lay the face-up cards), the seeded deal (only the
cards in play move, uniformly), and the tree counter against a plain reference walk
of the reference engine. The differential tests of the compiled core and the batched
env play the rungs too (tests/core/test_core.py, tests/batched/test_batched.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import permutations

import numpy as np
import pytest
import torch
from conftest import ROOT

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import ACTIONS
from loveletter_env.aec import DeckShuffler
from loveletter_env.batched import BatchedLoveLetter
from loveletter_env.cards import (
    BARON,
    CARD_NAMES,
    COUNTESS,
    FULL_DECK,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)
from loveletter_env.core import kernels, new_records
from loveletter_env.core.decks import deck_tables
from loveletter_env.core.layout import CURRENT, FACE_UP, FACE_UP_FIXED, ROUND_OVER
from loveletter_env.observation import MAX_MOVES, OBSERVATION_SIZE, SLICES, decode_observation, encode_observation
from loveletter_env.replay import ReplayError, rules_from_dict, rules_to_dict
from loveletter_env.rules import (
    CLASSIC,
    LADDER,
    LADDER_2P,
    LADDER_3P,
    LADDER_4P,
    MAX_TURNS,
    MINI6,
    MINI7,
    MINI8,
    MINI9,
    PRESETS,
    Rules,
    resolve_rules,
)
from loveletter_env.tree import (
    build_tree,
    count_tree,
    deals,
    expected_score,
    key_to_observation,
    num_deals,
    record_of,
    root_records,
    round_score,
)
from loveletter_env.wrappers import LoveLetterGymEnv

RUNGS = tuple(r.name for r in LADDER)
TWO_PLAYERS_ONLY = "ladder rung, played by 2 players only"
#: Every rung with each table size it refuses.
WRONG_TABLES = [(r.name, n) for r in LADDER for n in (2, 3, 4) if n != r.rung_players]


# Presets ------------------------------------------------------------------------------


def test_rungs_keep_the_cards_the_ladder_names_in_play():
    assert MINI6.in_play == (GUARD, GUARD, PRIEST, BARON, PRINCE, PRINCESS)
    assert Counter(MINI7.in_play) - Counter(MINI6.in_play) == Counter([KING])
    assert Counter(MINI8.in_play) - Counter(MINI7.in_play) == Counter([HANDMAID])
    assert Counter(MINI9.in_play) - Counter(MINI8.in_play) == Counter([GUARD])
    for k, rung in zip((6, 7, 8, 9), LADDER_2P):
        assert PRESETS[f"mini{k}"] is rung and resolve_rules(f"mini{k}") is rung
        assert rung.rung_players == 2
        assert len(rung.in_play) == k and rung.face_up_count(2) == 16 - k
        assert sorted(rung.in_play + rung.face_up_cards) == sorted(FULL_DECK)
        # Classic otherwise: same tokens, tie-break and King rule.
        assert (rung.tokens_to_win, rung.discard_sum_tiebreak, rung.king_ignores_handmaid) == (
            CLASSIC.tokens_to_win,
            CLASSIC.discard_sum_tiebreak,
            CLASSIC.king_ignores_handmaid,
        )
    assert MINI6.face_up_cards == (GUARD,) * 3 + (PRIEST, BARON, HANDMAID, HANDMAID, PRINCE, KING, COUNTESS)
    # The 3- and 4-player rungs keep the cards of the 2-player rung of the same size: miniK_Np.
    assert [r.name for r in LADDER_3P] == ["mini6_3p", "mini7_3p", "mini8_3p"]
    assert [r.name for r in LADDER_4P] == ["mini7_4p", "mini8_4p"]
    for players, rungs in ((3, LADDER_3P), (4, LADDER_4P)):
        for rung in rungs:
            two = resolve_rules(rung.name.removesuffix(f"_{players}p"))
            assert PRESETS[rung.name] is rung and rung.rung_players == players
            assert (rung.in_play, rung.face_up_cards, rung.tokens_to_win) == (
                two.in_play,
                two.face_up_cards,
                two.tokens_to_win,
            )
            assert rung.face_up_count(players) == 16 - len(rung.in_play)
    # The printed rules are unchanged: 3 face-up cards at 2 players, none at 3 or 4.
    assert [CLASSIC.face_up_count(n) for n in (2, 3, 4)] == [3, 0, 0] and CLASSIC.face_up_cards is None


@pytest.mark.parametrize(
    "in_play, message",
    [
        ((PRINCESS, PRINCESS, GUARD, GUARD), "more copies than the deck: Princess x2"),
        ((GUARD, GUARD, PRIEST), "4 to 15 cards in play"),
        ((GUARD, GUARD, PRIEST, 9), "card values 1..8"),
        ((True, GUARD, PRIEST, BARON), "card values 1..8"),
        ("abc", "card values 1..8"),
    ],
)
def test_a_bad_set_of_cards_in_play_is_named(in_play, message):
    with pytest.raises(ValueError, match=message):
        Rules(name="bad", in_play=in_play)


def test_a_rung_for_more_players_needs_a_card_more_per_hand():
    assert Rules(name="five", in_play=(GUARD, GUARD, PRIEST, BARON, PRINCE), rung_players=3).rung_players == 3
    with pytest.raises(ValueError, match="6 to 16 cards in play at 4 players"):
        Rules(name="bad", in_play=(GUARD, GUARD, PRIEST, BARON, PRINCE), rung_players=4)
    for players in (1, 5, True, "3"):
        with pytest.raises(ValueError, match="rung_players must be 2, 3 or 4"):
            Rules(name="bad", in_play=MINI6.in_play, rung_players=players)
    with pytest.raises(ValueError, match="rung_players=3 needs in_play"):
        Rules(name="bad", rung_players=3)


@pytest.mark.parametrize("players, most", [(2, 15), (3, 16), (4, 16)])
def test_a_rung_leaves_no_more_cards_to_draw_than_a_round_has_move_slots(players, most):
    """Every turn begins with a draw, and records and observations keep 12 move slots
    (``MAX_MOVES``): the whole deck in play at 2 players left 13 to draw, and its 13th turn
    wrote past the move log, over the record's face-up count (the next round dealt a card
    face up that the rules do not) and past the record's end."""
    assert MAX_TURNS == MAX_MOVES
    deck = list(FULL_DECK)
    assert len(Rules(name="most", in_play=deck[: most - 1] + [PRINCESS], rung_players=players).in_play) == most
    if most < len(deck):
        with pytest.raises(ValueError, match=rf"{players + 2} to {most} cards in play at {players} players .*got 16"):
            Rules(name="whole deck", in_play=deck, rung_players=players)


def test_the_longest_2_player_rung_round_fills_the_move_log_and_no_more():
    """15 cards in play at 2 players: one face up, 12 to draw, 12 quiet turns (each player
    keeps a Prince and plays every card it draws), the record's game fields untouched."""
    rules = Rules(name="fifteen", in_play=_without(FULL_DECK, PRIEST))
    draws = [GUARD, BARON, HANDMAID, GUARD, KING, GUARD, COUNTESS, GUARD, BARON, HANDMAID, GUARD, PRIEST]
    deck = [PRINCESS, PRIEST, PRINCE, PRINCE, *draws]
    env = loveletter_env.env(num_players=2, rules=rules, episode="game")
    env.reset(seed=0, options={"deck": deck, "first_player": 1})
    raw = env.unwrapped
    fixed = raw._record[FACE_UP : FACE_UP_FIXED + 1].copy()
    for card in draws:
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(next(int(a) for a in np.flatnonzero(mask) if ACTIONS[a].card == card and ACTIONS[a].guess != PRINCE))
    game = raw.game
    # The Princes tie; player_1's discards (G H K C B G = 22) beat player_0's (B G G G H P = 12).
    assert game.round == 2 and game.tokens == [0, 1]
    np.testing.assert_array_equal(raw._record[FACE_UP : FACE_UP_FIXED + 1], fixed)
    assert game.face_up == (PRIEST,)


def _without(cards, card):
    rest = list(cards)
    rest.remove(card)
    return rest


def test_rules_objects_and_replays_keep_the_cards_in_play():
    custom = Rules(name="custom", in_play=(PRINCESS, GUARD, KING, GUARD, PRIEST))
    assert custom.in_play == (GUARD, GUARD, PRIEST, KING, PRINCESS)  # stored sorted
    for rules in (*LADDER, custom, CLASSIC):
        assert rules_from_dict(rules_to_dict(rules)) == rules
    # A replay written before rungs had a table size holds a 2-player rung.
    old = {k: v for k, v in rules_to_dict(MINI6).items() if k != "rung_players"}
    assert rules_from_dict(old) == MINI6
    bad = {**rules_to_dict(MINI6), "in_play": [8, 8, 1, 1]}
    with pytest.raises(ReplayError, match="Princess x2"):
        rules_from_dict(bad)


# Refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize("rules, num_players", WRONG_TABLES)
def test_a_rung_refuses_every_other_table_size_everywhere(rules, num_players):
    rung = resolve_rules(rules)
    deck = list(rung.deck_from_in_play(rung.in_play))
    own = rung.rung_players
    refusal = f"ladder rung, played by {own} players only; got num_players={num_players}"
    attempts = [
        lambda: engine.GameState(num_players, rules),
        lambda: engine.new_game(num_players, deck, 0, rules),
        lambda: loveletter_env.env(num_players=num_players, rules=rules),
        lambda: loveletter_env.raw_env(num_players=num_players, rules=rules),
        lambda: LoveLetterGymEnv(num_players=num_players, rules=rules),
        lambda: BatchedLoveLetter(4, num_players, rules=rules),
        lambda: BatchedLoveLetter(3, [own, num_players, own], rules=rules),
        lambda: new_records([own, num_players], rung),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError, match=refusal):
            attempt()


def test_the_web_app_refuses_a_rung_at_3_players():
    pytest.importorskip("starlette", reason="the web extra is not installed")
    from training.apps.web.games import OpponentCatalog, RequestError, check_new_game

    catalog = OpponentCatalog({}, lambda path, seed: None)
    body = {"players": 3, "opponents": ["random"], "rules": "mini7"}
    with pytest.raises(RequestError, match=TWO_PLAYERS_ONLY):
        check_new_game(body, catalog)
    assert check_new_game({**body, "players": 2}, catalog)["rules"] == "mini7"


def test_a_training_config_refuses_a_rung_at_3_players():
    from training.learn.config import ConfigError, load_config

    assert load_config(None, ["env.rules=mini8"]).env.rules == ["mini8"]
    with pytest.raises(ConfigError, match=r"env.num_players must be \[2\] on the ladder rung 'mini8'"):
        load_config(None, ["env.rules=mini8", "env.num_players=[2,3]"])
    with pytest.raises(ConfigError, match=r"env.num_players must be \[3\] on the ladder rung 'mini7_3p'"):
        load_config(None, ["env.rules=mini7_3p", "env.num_players=[2]"])


def test_a_deck_that_does_not_lay_the_face_up_cards_is_refused_naming_them():
    deck = list(MINI6.deck_from_in_play(MINI6.in_play))
    deck[1:11] = deck[10:0:-1]  # the face-up cards in another order: accepted
    assert MINI6.check_deck(deck) == tuple(deck)
    bad = list(MINI6.deck_from_in_play(MINI6.in_play))
    bad[15], bad[10] = bad[10], bad[15]  # the Princess face up, the Countess in play
    message = r"positions 1 to 10 must hold the face-up cards .* lack Countess and hold Princess instead"
    with pytest.raises(ValueError, match=message):
        MINI6.check_deck(bad)
    env = loveletter_env.env(rules="mini6", episode="round")
    env.reset(seed=1)
    before = env.unwrapped.game.clone()
    with pytest.raises(ValueError, match=message):
        env.reset(options={"deck": bad})
    assert env.unwrapped.game.deck == before.deck  # nothing changed
    with pytest.raises(ValueError, match="permutation of the 16 cards"):
        env.reset(options={"deck": [1] * 16})  # not even a deck: the usual message
    with pytest.raises(ValueError, match=message):
        engine.new_game(2, bad, 0, "mini6")
    with pytest.raises(ValueError, match=message):
        LoveLetterGymEnv(rules="mini6").reset(options={"deck": bad})
    batched = BatchedLoveLetter(2, 2, rules="mini6")
    with pytest.raises(ValueError, match="game 1: on rules 'mini6', deck positions 1 to 10"):
        batched.reset(decks=torch.tensor([deck, bad]))
    # The classic rules take any permutation, the rung's deck included.
    assert CLASSIC.check_deck(bad) == tuple(bad)


# The deal and what each seat sees ------------------------------------------------------


def test_a_scripted_rung_deck_deals_face_up_cards_then_hands():
    face_up = [KING, GUARD, COUNTESS, HANDMAID, GUARD, PRINCE, PRIEST, BARON, HANDMAID, GUARD]  # any order
    in_play = [PRINCESS, GUARD, BARON, PRIEST, GUARD, PRINCE]  # set aside, p1's card, p0's, then the pile
    deck = [in_play[0], *face_up, *in_play[1:]]
    env = loveletter_env.env(rules="mini6", episode="round")
    env.reset(options={"deck": deck, "first_player": 1})
    game = env.unwrapped.game
    assert game.face_up == tuple(face_up) and game.set_aside == PRINCESS
    assert game.hands == [BARON, GUARD] and game.current == 1 and game.drawn == PRIEST
    assert game.deck_remaining == 2
    for seat in (0, 1):
        view = decode_observation(env.observe(f"player_{seat}")["observation"])
        assert view.face_up == tuple(sorted(face_up))
        assert view.deck_size == 2
        hand = Counter(view.hand)
        # Unseen: the cards in play less the seat's own hand.
        expected = Counter(in_play) - hand
        assert {v: n for v, n in view.unseen.items() if n} == dict(expected)
    # The first player plays the Priest on player_0: the round goes on from the pile.
    env.step(engine.PRIEST_BASE + 1)
    assert decode_observation(env.observe("player_1")["observation"]).known_cards[1] == BARON
    assert env.unwrapped.game.drawn == GUARD and env.unwrapped.game.deck_remaining == 1


def test_a_scripted_3_player_rung_deck_deals_face_up_cards_then_three_hands():
    in_play = [PRINCESS, KING, GUARD, BARON, PRIEST, GUARD, PRINCE]  # set aside, hands of 2, 0, 1, the pile
    deck = MINI7.deck_from_in_play(in_play)
    env = loveletter_env.env(num_players=3, rules="mini7_3p", episode="round")
    env.reset(options={"deck": list(deck), "first_player": 2})
    game = env.unwrapped.game
    assert game.face_up == MINI7.face_up_cards and game.set_aside == PRINCESS
    assert game.hands == [GUARD, BARON, KING] and game.current == 2 and game.drawn == PRIEST
    assert game.deck_remaining == 2
    for seat in (0, 1, 2):
        view = decode_observation(env.observe(f"player_{seat}")["observation"])
        assert view.face_up == MINI7.face_up_cards and view.deck_size == 2
        expected = Counter(in_play) - Counter(view.hand)
        assert {v: n for v, n in view.unseen.items() if n} == dict(expected)
    # The first player plays the Priest on the next seat (player_0, who holds a Guard).
    env.step(engine.PRIEST_BASE + 1)
    assert decode_observation(env.observe("player_2")["observation"]).known_cards[1] == GUARD
    assert env.unwrapped.game.current == 0 and env.unwrapped.game.deck_remaining == 1


@pytest.mark.parametrize("rules", ("mini6", "mini7", "mini6_3p", "mini7_4p"))
def test_a_seat_observes_nothing_of_the_cards_in_play_but_its_own(rules):
    """The observation layout is unchanged and keeps its promise on a rung: at the deal,
    each seat's observation depends only on its own cards (the one dealt, then the one
    drawn), over every deal of the rung."""
    by_hand: dict[tuple, set] = defaultdict(set)
    players = resolve_rules(rules).rung_players
    for deck in deals(rules):
        for first in range(players):
            game = engine.new_game(players, deck.tolist(), first, rules)
            for seat in range(players):
                obs = encode_observation(game, seat)
                assert obs.shape == (OBSERVATION_SIZE,)
                by_hand[(first, seat, game.hand_of(seat))].add(obs.tobytes())
    assert all(len(seen) == 1 for seen in by_hand.values())


def test_seeded_deals_shuffle_only_the_cards_in_play_and_repeat_with_the_seed():
    for rung in LADDER:
        env = loveletter_env.env(num_players=rung.rung_players, rules=rung.name, episode="round")
        decks = []
        for episode in range(30):
            env.reset(seed=5 if episode == 0 else None)
            game = env.unwrapped.game
            assert game.face_up == rung.face_up_cards  # sorted, the same every deal
            assert sorted(game.deck[i] for i in rung.in_play_positions(rung.rung_players)) == list(rung.in_play)
            decks.append(game.deck)
        again = loveletter_env.env(num_players=rung.rung_players, rules=rung.name, episode="round")
        again.reset(seed=5)
        assert again.unwrapped.game.deck == decks[0]
        assert len(set(decks)) > 20
    # Whole games: every round is dealt from the rung.
    env = loveletter_env.env(rules="mini7", episode="game")
    env.reset(seed=2)
    rounds = 0
    for _agent in env.agent_iter():
        observation, _, done, truncated, _ = env.last()
        if done or truncated:
            env.step(None)
            continue
        game = env.unwrapped.game
        assert game.face_up == MINI7.face_up_cards
        rounds = max(rounds, game.round)
        env.step(int(np.flatnonzero(observation["action_mask"])[0]))
    assert rounds >= 7


def _chi_square(counts: Counter, cells: int, total: int) -> float:
    expected = total / cells
    return sum((counts.get(c, 0) - expected) ** 2 / expected for c in range(cells))


def _assert_uniform_over_arrangements(in_play_orders: list[tuple[int, ...]], rung: Rules) -> None:
    arrangements = sorted(set(permutations(rung.in_play)))
    index = {a: i for i, a in enumerate(arrangements)}
    counts = Counter(index[order] for order in in_play_orders)
    assert len(counts) == len(arrangements)
    # 360 cells, 100 expected each: the statistic has mean 359 and sd 27; 520 is 6 sd out.
    assert _chi_square(counts, len(arrangements), len(in_play_orders)) < 520


def test_seeded_rung_deals_are_uniform_over_the_orders_of_the_cards_in_play():
    positions = MINI6.in_play_positions(2)
    shuffler = DeckShuffler(np.random.default_rng(4), rules=MINI6)
    orders = [tuple(shuffler.next_array()[list(positions)].tolist()) for _ in range(36_000)]
    _assert_uniform_over_arrangements(orders, MINI6)
    # The compiled deal of the batched env, from the same three draws as a full shuffle,
    # starting from decks whose cards in play are in one fixed, unsorted order.
    table_orders, placements = deck_tables()
    rng = np.random.default_rng(8)
    n = 36_000
    draws = np.stack([rng.integers(len(table_orders), size=n), rng.integers(len(table_orders), size=n)])
    draws = np.concatenate([draws, rng.integers(len(placements), size=(1, n))])
    start = MINI6.deck_from_in_play((PRINCE, GUARD, PRINCESS, GUARD, BARON, PRIEST))
    decks = np.tile(np.array(start, np.uint8), (n, 1))
    kernels.shuffle_in_play_batch(decks, 10, table_orders.astype(np.uint8), placements.astype(np.uint8), draws)
    assert (decks[:, 1:11] == np.array(MINI6.face_up_cards)).all()
    _assert_uniform_over_arrangements([tuple(d[list(positions)].tolist()) for d in decks], MINI6)


def test_batched_env_deals_rungs_from_its_seed():
    first, second = (BatchedLoveLetter(64, 2, rules="mini8", seed=3) for _ in range(2))
    decks = []
    for env in (first, second):
        env.reset()
        generator = torch.Generator().manual_seed(0)
        dealt = [env.state.deck.clone()]
        for _ in range(20):
            env.step(torch.multinomial(env.action_mask.float(), 1, generator=generator).squeeze(1))
            dealt.append(env.state.deck.clone())
        decks.append(torch.stack(dealt))
    assert torch.equal(decks[0], decks[1])
    assert (decks[0][:, :, 1:9] == torch.tensor(MINI8.face_up_cards, dtype=torch.int8)).all()
    assert len({tuple(d.tolist()) for d in decks[0].reshape(-1, 16)}) > 200


# Environments and bots play the rungs ----------------------------------------------------


@pytest.mark.parametrize("rules", ("mini7", "mini8_3p", "mini8_4p"))
def test_pettingzoo_api_test_passes_on_a_rung(rules):
    from pettingzoo.test import api_test

    api_test(loveletter_env.env(num_players=resolve_rules(rules).rung_players, rules=rules), num_cycles=200)


@pytest.mark.parametrize("rules", ("mini8", "mini8_3p", "mini8_4p"))
@pytest.mark.parametrize("opponent", ("random", "rule", "belief", "ismcts:iterations=20"))
def test_gymnasium_env_and_bots_play_a_rung(opponent, rules):
    players = resolve_rules(rules).rung_players
    env = LoveLetterGymEnv(num_players=players, rules=rules, opponents=opponent, episode="round")
    rng = np.random.default_rng(0)
    for episode in range(6):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            legal = np.flatnonzero(info["action_mask"])
            obs, reward, done, _, info = env.step(int(rng.choice(legal)))
        assert reward in (-1.0, 1.0)


# The tree ------------------------------------------------------------------------------


def _reference_tree(rules: str) -> tuple[int, int, tuple[int, ...]]:
    """The tree counted on the reference engine with exact keys: (decisions, terminals,
    information sets per seat), as :func:`count_tree` defines them: each seat recalls its
    observations and its own actions."""
    players = resolve_rules(rules).rung_players
    infosets: list[set] = [set() for _ in range(players)]
    decisions = terminals = 0
    for deck in deals(rules):
        stack = [(engine.new_game(players, deck.tolist(), 0, rules), ((),) * players)]
        while stack:
            game, recall = stack.pop()
            if game.round_over:
                terminals += 1
                continue
            decisions += 1
            seat = game.current
            key = (recall[seat], encode_observation(game, seat).tobytes())
            infosets[seat].add(key)
            for action in engine.legal_actions(game):
                child = game.clone()
                engine.step(child, action)
                after = list(recall)
                after[seat] = (key, action)
                stack.append((child, tuple(after)))
    return decisions, terminals, tuple(len(seen) for seen in infosets)


def test_the_compiled_tree_count_matches_a_reference_walk():
    size = count_tree("mini6")
    assert (size.decision_nodes, size.terminal_nodes, size.infosets_by_seat) == _reference_tree("mini6")
    assert size.infosets_by_seat == (1608, 192)
    size = count_tree("mini6_3p")
    assert (size.decision_nodes, size.terminal_nodes, size.infosets_by_seat) == _reference_tree("mini6_3p")
    assert size.infosets_by_seat == (21, 449, 75) and size.histories == 37282
    assert size.deals == num_deals("mini6") == 360
    assert size.histories == size.decision_nodes + size.terminal_nodes


def test_the_tree_counter_refuses_the_retired_observations_only_flag(capsys):
    from loveletter_env.tree import main

    with pytest.raises(SystemExit) as stop:
        main(["mini6", "--observations-only"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "error: --observations-only is retired: the observation is the player's information state" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nosuch"], "unknown rules preset 'nosuch'"),
        (
            ["--first-player", "2", "mini6_3p", "mini6"],
            "--first-player 2 is not a seat of mini6, played by 2 players (0..1)",
        ),
    ],
)
def test_the_tree_counter_refuses_a_bad_rung_or_seat_before_counting_anything(argv, message, capsys, monkeypatch):
    from loveletter_env import tree

    walked: list[object] = []
    monkeypatch.setattr(tree, "count_tree", lambda *args, **kwargs: walked.append(args))
    with pytest.raises(SystemExit) as stop:
        tree.main(argv)
    assert stop.value.code == 2
    assert f"error: {message}" in capsys.readouterr().err
    assert not walked, "a rung was walked before the command line was refused"


def test_the_tree_counter_ends_a_ctrl_c_with_a_sentence_and_status_130(capsys, monkeypatch):
    from loveletter_env import tree

    counted = tree.count_tree

    def count_until_mini7(rules, *args, **kwargs):
        if rules == "mini7":
            raise KeyboardInterrupt
        return counted(rules, *args, **kwargs)

    monkeypatch.setattr(tree, "count_tree", count_until_mini7)
    with pytest.raises(SystemExit) as stop:
        tree.main(["mini6", "mini7"])
    assert stop.value.code == 130
    out, err = capsys.readouterr()
    assert "| mini6 | 360 |" in out and "| mini7 |" not in out
    assert "interrupted while counting mini7; the rows above are complete" in err


def test_the_tree_counter_says_when_a_tree_does_not_fit_in_memory(capsys, monkeypatch):
    from loveletter_env import tree

    def no_room(rules, *args, **kwargs):
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(tree, "count_tree", no_room)
    with pytest.raises(SystemExit) as stop:
        tree.main(["mini9"])
    assert stop.value.code == 1
    assert "error: out of memory for the tree of mini6" in capsys.readouterr().err  # the compiling walk


def test_tree_functions_refuse_seats_and_nodes_that_are_not_integers():
    with pytest.raises(ValueError, match=r"first_player must be a seat of 'mini6' \(0..1\), got 1.0"):
        root_records("mini6", first_player=1.0)
    assert build_tree("mini6", first_player=np.int64(1)).first_player == 1
    tree = build_tree("mini6")
    with pytest.raises(ValueError, match=r"seat must be a seat of 'mini6' \(0..1\), got 1.0"):
        expected_score(tree, tree.uniform_strategy(), 1.0)
    with pytest.raises(ValueError, match=r"node must be an integer in 0..27373, got 1.5"):
        record_of(tree, 1.5)


def test_expected_score_refuses_what_is_not_a_strategy():
    tree = build_tree("mini6")
    for bad in (np.full(tree.actions.shape[0], 5.0), np.full(tree.actions.shape[0], np.nan), -tree.uniform_strategy()):
        with pytest.raises(ValueError, match="strategy must give each information set probabilities"):
            expected_score(tree, bad)


def test_a_key_of_bytes_that_are_not_whole_entries_is_refused():
    with pytest.raises(ValueError, match="not an observation key: 1 byte"):
        key_to_observation(b"\x01")


def test_tree_count_reports_progress_up_to_every_deal():
    seen: list[tuple[int, int]] = []
    whole = count_tree("mini7", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (whole.deals, whole.deals)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert whole.infosets < whole.decision_nodes < whole.histories


@pytest.mark.parametrize("rules", ("mini6", "mini6_3p"))
def test_tree_pieces_walk_a_rung_and_score_every_round_zero_sum(rules):
    roots, probability = root_records(rules)
    players = resolve_rules(rules).rung_players
    assert len(roots) == 360 and probability == pytest.approx(1 / 360)
    stack = [r for r in roots]
    terminals = 0
    while stack:
        r = stack.pop()
        if r[ROUND_OVER]:
            terminals += 1
            assert sum(round_score(r, seat) for seat in range(players)) == pytest.approx(1.0, abs=1e-15)
            continue
        bits = int(kernels.legal_bits(r))
        for action in (a for a in range(41) if bits >> a & 1):
            child = r.copy()
            kernels.play(child, action)
            stack.append(child)
    assert terminals == count_tree(rules).terminal_nodes


def test_tree_count_refuses_the_full_game():
    with pytest.raises(ValueError, match="not a ladder rung"):
        count_tree("classic")
    with pytest.raises(ValueError, match="first_player"):
        root_records("mini6", first_player=2)
    with pytest.raises(ValueError, match=r"first_player must be a seat of 'mini6_3p' \(0..2\)"):
        root_records("mini6_3p", first_player=3)
    assert root_records("mini6_3p", first_player=2)[0][0, CURRENT] == 2


def _markdown_table(text: str, header: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])
    return rows


def test_the_ladder_page_gives_the_cards_and_the_counts_the_code_gives():

    page = (ROOT / "docs" / "ladder.md").read_text(encoding="utf-8")

    def cards(words: str) -> list[int]:
        if words.startswith("mini") and " + " not in words:  # "`mini7`": that rung's cards
            return sorted(resolve_rules(words.strip("`")).in_play)
        if words.startswith("mini"):  # "`mini6` + King": the rung below plus a card
            below, added = words.split(" + ")
            return sorted([*resolve_rules(below.strip("`")).in_play, *cards(added)])
        names = {name: value for value, name in CARD_NAMES.items()}
        out = []
        for item in words.split(", "):
            name, _, copies = item.partition(" ×")
            out += [names[name]] * int(copies or 1)
        return sorted(out)

    rows = _markdown_table(page, "| rung | players | cards in play |")
    assert [row[0] for row in rows] == list(RUNGS)
    for name, players, in_play, face_up, pile in rows:
        rung = resolve_rules(name)
        assert int(players) == rung.rung_players
        assert cards(in_play) == list(rung.in_play)
        assert cards(face_up) == list(rung.face_up_cards)
        assert int(pile) == len(rung.in_play) - rung.rung_players - 1
    sizes = {row[0]: row[1:] for row in _markdown_table(page, "| rung | deals |")}
    assert list(sizes) == list(RUNGS)
    for name in ("mini6", "mini7", "mini6_3p", "mini7_3p", "mini7_4p"):
        size = count_tree(name)
        by_seat = " / ".join(f"{n:,}" for n in size.infosets_by_seat)
        counted = [size.deals, size.decision_nodes, size.terminal_nodes, size.histories, size.infosets]
        assert [int(cell.replace(",", "")) for cell in sizes[name][:5]] == counted
        assert sizes[name][5] == by_seat


def test_the_flat_tree_holds_the_walked_tree():
    tree = build_tree("mini6")
    size = count_tree("mini6")
    assert tree.num_nodes == size.histories and tree.num_deals == size.deals
    assert tree.num_infosets == size.infosets
    decisions = np.flatnonzero(tree.node_info >= 0)
    assert len(decisions) == size.decision_nodes
    assert np.bincount(tree.infoset_player, minlength=2).tolist() == list(size.infosets_by_seat)
    # Children: a block after their parent, one per legal action in action order, and
    # each child's history is its parent's with that action played.
    parents = tree.parents()
    assert (parents[: tree.num_deals] == -1).all() and (parents[tree.num_deals :] >= 0).all()
    assert (tree.node_child[decisions] > decisions).all()
    obs, shown = np.zeros(OBSERVATION_SIZE, np.float32), np.zeros(OBSERVATION_SIZE, np.float32)
    for node in decisions[::7]:
        record = record_of(tree, int(node), parents)
        infoset = int(tree.node_info[node])
        seat = int(tree.infoset_player[infoset])
        assert record[CURRENT] == seat
        assert [a for a in range(41) if int(kernels.legal_bits(record)) >> a & 1] == tree.infoset_actions(infoset)
        # The per-action layout names this set, and its seat, at each of its actions.
        span = slice(tree.action_offsets[infoset], tree.action_offsets[infoset + 1])
        assert (tree.action_infoset[span] == infoset).all() and (tree.action_player[span] == seat).all()
        # Every node of an information set shows its seat the observation of the set's key.
        kernels.observe_into(record, seat, obs)
        shown[:] = key_to_observation(tree.key(infoset))
        obs[SLICES["tokens"]] = 0
        assert np.array_equal(obs, shown)
    terminal = np.flatnonzero(tree.node_info < 0)
    leaf = int(terminal[-1])
    winners = -1 - int(tree.node_info[leaf])  # the winners' seats as bits
    record = record_of(tree, leaf, parents)
    assert [round_score(record, s) for s in (0, 1)] == [(winners >> s & 1) / bin(winners).count("1") for s in (0, 1)]
    # The same value as a plain recursive walk of the records (docs/ladder.md).
    assert expected_score(tree, tree.uniform_strategy()) == pytest.approx(0.4810254652594063, abs=1e-12)
    # A strategy that always plays the first legal action, scored on the records directly.
    first = np.zeros(tree.actions.shape[0])
    first[tree.action_offsets[:-1]] = 1.0
    roots, probability = root_records("mini6")
    total = 0.0
    for r in roots:
        r = r.copy()
        while not r[ROUND_OVER]:
            bits = int(kernels.legal_bits(r))
            kernels.play(r, (bits & -bits).bit_length() - 1)  # the lowest legal action
        total += round_score(r, 0) * probability
    assert expected_score(tree, first) == pytest.approx(total, abs=1e-12)
    with pytest.raises(ValueError, match="is one probability per action"):
        expected_score(tree, first[:2])


@pytest.mark.parametrize("rules", RUNGS)
def test_search_determinises_a_rung_with_its_face_up_cards(rules):
    """The search's sampled states lay the rung's face-up cards, so the seat to act sees in
    them what it saw in the real game (the same face-up and unseen counts)."""
    import random

    from loveletter_env.agents.ismcts import determinize, seat_view

    rng = np.random.default_rng(1)
    players = resolve_rules(rules).rung_players
    for _ in range(20):
        game = engine.new_game(
            players, list(resolve_rules(rules).shuffled_deck(rng)), int(rng.integers(players)), rules
        )
        for _ in range(int(rng.integers(0, 3))):
            if not game.round_over:
                legal = engine.legal_actions(game)
                engine.step(game, legal[int(rng.integers(len(legal)))])
        if game.round_over:
            continue
        view = seat_view(game, game.current)
        sampled = determinize(view, random.Random(3))
        assert sampled.face_up == game.face_up
        again = seat_view(sampled, 0)
        assert (again.face_up, again.unseen, again.hand) == (view.face_up, view.unseen, view.hand)
