"""The OpenSpiel game: registration, parameters, the deal, returns, information states,
observations against the env, OpenSpiel's own checks, and the solver cross-check."""

from __future__ import annotations

import importlib.util
import random
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import ROOT, import_openspiel

pyspiel = import_openspiel()

from conftest import deal_deck  # noqa: E402
from open_spiel.python import policy as policy_lib  # noqa: E402
from open_spiel.python.algorithms import cfr, expected_game_score, exploitability  # noqa: E402

import loveletter_env  # noqa: E402
from loveletter_env.cards import BARON, FULL_DECK, GUARD, KING, PRIEST, PRINCE  # noqa: E402
from loveletter_env.observation import SLICES, encode_observation  # noqa: E402
from loveletter_env.openspiel import GAME_NAME, LoveLetterState, round_returns  # noqa: E402
from loveletter_env.rules import PRESETS  # noqa: E402

RUNGS = tuple(name for name, rules in PRESETS.items() if rules.is_rung)
FULL_PRESETS = tuple(name for name in PRESETS if name not in RUNGS)
#: Every table size and preset the game accepts: the full presets at 2-4 players, the rungs at 2.
TABLES = [(n, name) for name in FULL_PRESETS for n in (2, 3, 4)] + [
    (PRESETS[name].rung_players, name) for name in RUNGS
]


def load(players: int = 2, rules: str = "classic") -> pyspiel.Game:
    return pyspiel.load_game(GAME_NAME, {"players": players, "rules": rules})


def random_deck(rules: str, rng: random.Random) -> tuple[int, ...]:
    """A shuffled deck that ``rules`` can deal (on a rung, only the cards in play are shuffled)."""
    preset = PRESETS[rules]
    if preset.is_rung:
        order = list(preset.in_play)
        rng.shuffle(order)
        return preset.deck_from_in_play(order)
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    return tuple(deck)


def dealt(game: pyspiel.Game, deck) -> LoveLetterState:
    """The game's state once chance has dealt ``deck`` (top first)."""
    state = game.new_initial_state()
    for position in game.plan.chance_positions:
        if not state.is_chance_node():
            break
        state.apply_action(deck[position] - 1)
    assert not state.is_chance_node()
    assert state.engine.deck == tuple(deck)
    return state


def play_randomly(state, rng: random.Random) -> list:
    """Play random legal moves (and chance by its probabilities) to the end; every state on the way."""
    seen = [state.clone()]
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(rng.choices(outcomes, probs)[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))
        seen.append(state.clone())
    return seen


# Registration and parameters ----------------------------------------------------------


def test_registered_with_default_parameters():
    assert GAME_NAME in pyspiel.registered_names()
    game = pyspiel.load_game(GAME_NAME)
    assert game.num_players() == 2
    assert game.get_parameters() == {"players": 2, "rules": "classic"}
    kind = game.get_type()
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert game.num_distinct_actions() == loveletter_env.NUM_ACTIONS
    assert game.observation_tensor_size() == loveletter_env.OBSERVATION_SIZE


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_every_table_size_and_preset_loads(players, rules):
    game = pyspiel.load_game(f"{GAME_NAME}(players={players},rules={rules})")
    assert game.num_players() == players
    assert game.rules.name == rules
    assert game.max_utility() == players - 1 and game.min_utility() == -1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"players": 5}, "players must be 2, 3 or 4, got 5"),
        ({"players": 1}, "players must be 2, 3 or 4, got 1"),
        ({"rules": "nope"}, "rules must be one of"),
        ({"rules": ""}, "rules must be one of"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, message):
    with pytest.raises(ValueError, match=message):
        pyspiel.load_game(GAME_NAME, params)


def test_the_retired_information_parameter_is_refused():
    """There is one game, the table's: the information state is the env's observation."""
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'information'"):
        pyspiel.load_game(GAME_NAME, {"information": "full"})
    from loveletter_env.openspiel import LoveLetterGame

    with pytest.raises(ValueError, match="'information' is retired: a player's information state is the env's"):
        LoveLetterGame({"information": "observations"})


def test_unknown_or_mistyped_parameters_are_refused():
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'seats'"):
        pyspiel.load_game(GAME_NAME, {"seats": 3})
    with pytest.raises(pyspiel.SpielError, match="Wrong type for parameter players"):
        pyspiel.load_game(GAME_NAME, {"players": "3"})


@pytest.mark.parametrize("players", [3, 4])
def test_a_rung_at_more_than_two_players_is_refused(players):
    # Named as the game's parameter is, not as the engine's argument (num_players).
    with pytest.raises(ValueError, match=f"2 players only; got players={players}$"):
        load(players, RUNGS[0])
    with pytest.raises(ValueError, match="mini7_3p' are a ladder rung, played by 3 players only"):
        load({3: 4, 4: 2}[players], "mini7_3p")  # a 3-player rung at 4, then at 2


def test_only_single_player_observers_exist():
    game = load()
    with pytest.raises(ValueError, match="private_info=SINGLE_PLAYER"):
        game.make_py_observer(
            pyspiel.IIGObservationType(perfect_recall=False, private_info=pyspiel.PrivateInfoType.ALL_PLAYERS)
        )
    with pytest.raises(ValueError, match="take no parameters"):
        game.make_py_observer(None, {"x": 1})


# OpenSpiel's own test of a game ---------------------------------------------------------


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_random_sim_test(players, rules):
    game = load(players, rules)
    pyspiel.random_sim_test(game, num_sims=10, serialize=True, verbose=False)


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_no_history_is_longer_than_the_game_says(players, rules):
    """max_history_length counts the chance nodes of the deal too (buffers are sized by it)."""
    game, rng = load(players, rules), random.Random(0)
    longest = max(len(play_randomly(game.new_initial_state(), rng)[-1].history()) for _ in range(200))
    assert longest <= game.max_history_length()
    assert game.max_chance_nodes_in_history() == len(game.plan.chance_positions)


# The deal ---------------------------------------------------------------------------


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_chance_deals_each_card_with_its_exact_probability(players, rules):
    game = load(players, rules)
    rng = random.Random(players)
    for _ in range(5):
        state = game.new_initial_state()
        left = Counter(FULL_DECK) - Counter(game.plan.fixed.values())
        deal_probability = 1.0
        while state.is_chance_node():
            outcomes = state.chance_outcomes()
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            total = sum(left.values())
            assert dict(outcomes) == {v - 1: pytest.approx(c / total) for v, c in left.items() if c}
            action, p = rng.choice(outcomes)
            state.apply_action(action)
            deal_probability *= p
            left[action + 1] -= 1
        # Chance stops once only one kind of card is left: those copies take the last places.
        assert len(+left) <= 1
        in_play = Counter(state.engine.deck[p] for p in game.plan.chance_positions)
        orders = np.prod(np.arange(1, sum(in_play.values()) + 1), dtype=float)
        for count in in_play.values():
            orders /= np.prod(np.arange(1, count + 1), dtype=float)
        assert deal_probability == pytest.approx(1.0 / orders)  # every distinct order equally likely


def test_a_rung_fixes_its_face_up_cards():
    for name in RUNGS:
        game = load(PRESETS[name].rung_players, name)
        state = play_randomly(game.new_initial_state(), random.Random(0))[-1]
        assert state.engine.face_up == PRESETS[name].face_up_cards
        assert len(game.plan.chance_positions) == len(PRESETS[name].in_play)


# Bad input: refused in a sentence, the state unchanged ----------------------------------------


def _fingerprint(state):
    """Everything a caller can read of a state, to check that a refused action changed nothing."""
    if state.is_chance_node():
        return state.history(), str(state), state.chance_outcomes()
    players = range(state.num_players())
    return (
        state.history(),
        str(state),
        state.legal_actions(),
        [state.information_state_string(p) for p in players],
        [state.observation_tensor(p) for p in players],
    )


def _mini6_face_up_only_outcome(game) -> int:
    """A card value (as a chance outcome) all of whose copies lie face up on the rung."""
    return next(v - 1 for v, count in game.plan.counts.items() if count == 0)


@pytest.mark.parametrize(
    ("rules", "before", "outcome", "message"),
    [
        ("mini6", [7], 7, r"chance outcome 7 \(deal Princess\) is not legal: no Princess is left to deal"),
        ("mini6", [], "face up", r"is not legal: no \w+ is left to deal"),
        ("classic", [7], 7, r"no Princess is left to deal"),
        ("classic", [], 8, r"chance outcome 8 is not a card"),
        ("classic", [0], 2**40, r"chance outcome 1099511627776 is not a card"),
    ],
)
def test_chance_refuses_an_outcome_it_cannot_deal_and_changes_nothing(rules, before, outcome, message):
    game = load(2, rules)
    state = game.new_initial_state()
    for action in before:
        state.apply_action(action)
    if outcome == "face up":
        outcome = _mini6_face_up_only_outcome(game)
    was = _fingerprint(state)
    with pytest.raises(ValueError, match=message) as refused:
        state.apply_action(outcome)
    named = re.findall(r"(\d+) \(\w+\)", str(refused.value).split("legal outcomes: ")[1])
    assert [int(o) for o in named] == [o for o, _ in state.chance_outcomes()]
    assert _fingerprint(state) == was
    assert all(p > 0 for _, p in state.chance_outcomes())


def test_an_illegal_move_is_refused_naming_the_legal_ones_and_changes_nothing():
    state = dealt(load(2), deal_deck(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD]))
    was = _fingerprint(state)
    illegal = next(a for a in range(loveletter_env.NUM_ACTIONS) if a not in state.legal_actions())
    for action in (illegal, 999):
        with pytest.raises(ValueError, match=f"action {action} .*is not legal for player_0; legal actions: "):
            state.apply_action(action)
        assert _fingerprint(state) == was


def test_a_finished_round_refuses_every_action_in_openspiels_words():
    state = play_randomly(load(2).new_initial_state(), random.Random(5))[-1]
    assert state.is_terminal()
    was = state.history(), state.returns(), str(state)
    for action in (0, state.history()[-1], 40):
        with pytest.raises(
            pyspiel.SpielError, match=f"^Cannot act in terminal states: .*action {action} is not applied"
        ):
            state.apply_action(action)
        assert (state.history(), state.returns(), str(state)) == was


def test_a_move_is_named_only_for_a_seat_at_the_table():
    """A move's target is counted from its mover's seat: a player outside the table (the
    terminal player too, the default once the round is over) is refused, not given a seat."""
    state = dealt(load(2), deal_deck(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD]))
    guard_on_next = loveletter_env.encode_action(GUARD, 1, PRINCE)
    assert state.action_to_string(0, guard_on_next) == "Guard on player_1, naming Prince"
    assert state.action_to_string(1, guard_on_next) == "Guard on player_0, naming Prince"
    for player in (2, 7, pyspiel.PlayerId.TERMINAL, pyspiel.PlayerId.SIMULTANEOUS):
        with pytest.raises(ValueError, match=f"player {int(player)} makes no moves: .*a seat 0..1 or the chance"):
            state.action_to_string(player, guard_on_next)
    final = play_randomly(load(2).new_initial_state(), random.Random(5))[-1]
    with pytest.raises(ValueError, match="player -4 makes no moves"):
        final.action_to_string(guard_on_next)  # the current player of a finished round


def test_a_chance_outcome_that_is_not_a_card_has_no_name():
    state = load(2).new_initial_state()
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 7) == "deal Princess"
    for outcome in (8, 99):
        with pytest.raises(ValueError, match=f"chance outcome {outcome} is not a card"):
            state.action_to_string(pyspiel.PlayerId.CHANCE, outcome)


# Serialization: the actions, replayed; never a pickle ---------------------------------------


@pytest.mark.parametrize(("players", "rules"), [(2, "mini6"), (2, "classic"), (4, "pegasus")])
def test_a_state_serializes_as_its_actions_and_round_trips(players, rules):
    game = load(players, rules)
    states = play_randomly(game.new_initial_state(), random.Random(players))
    assert any(s.is_chance_node() and s.history() for s in states)  # mid-deal states are among them
    for state in states:
        text = state.serialize()
        assert text == "".join(f"{a}\n" for a in state.history())
        copy = game.deserialize_state(text)
        assert type(copy) is LoveLetterState
        assert _fingerprint(copy) == _fingerprint(state)
        assert copy.returns() == state.returns()
        if not state.is_terminal() and not state.is_chance_node():
            action = state.legal_actions()[-1]
            assert _fingerprint(copy.child(action)) == _fingerprint(state.child(action))


@pytest.mark.parametrize("copier", ["pickle", "copy", "deepcopy"])
def test_a_pickled_or_copied_game_is_the_same_game(copier):
    """pyspiel pickles a game as its string and rebuilds only the C++ part, so a Python game
    came back without its attributes (no rules, no deal plan) and failed on first use."""
    import copy
    import pickle

    game = load(3, "pegasus")
    again = {
        "pickle": lambda g: pickle.loads(pickle.dumps(g)),
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
    }[copier](game)
    assert str(again) == str(game) and again.rules is game.rules
    deck = random_deck("pegasus", random.Random(0))
    state, twin = dealt(game, deck), dealt(again, deck)
    assert _fingerprint(twin) == _fingerprint(state)


def _pickled_state_text(tmp_path: Path) -> tuple[str, Path]:
    """A state string in OpenSpiel's default format for a Python game, whose pickle creates a file."""
    import base64
    import pickle

    target = tmp_path / "created-by-unpickling"

    class CreatesAFile:
        def __reduce__(self):
            return open, (str(target), "w")

    blob = base64.b64encode(pickle.dumps({"_round": CreatesAFile()})).decode()
    return f"history=\nmove_number=0\n__dict__={blob}", target


def test_a_pickled_state_string_is_refused_and_never_unpickled(tmp_path):
    game = load(2)
    text, target = _pickled_state_text(tmp_path)
    with pytest.raises(ValueError, match="one integer in 0..40 a line .*line 1 is 'history='"):
        game.deserialize_state(text)
    assert not target.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", r"line 1 is 'abc'"),
        ("0\n1.5", r"line 2 is '1.5'"),
        ("-1", r"line 1 is '-1'"),
        ("41", r"line 1 is '41'"),
        ("9" * 60, r"line 1 is '9{60}'"),
        ("9" * 5000, r"one integer in 0\.\.40 a line .*line 1 is '9{30,}\.\.\.9{30,}'$"),  # past int()'s limit
        ("0" * 5000 + "7", r"one integer in 0\.\.40 a line .*line 1 is '0{30,}\.\.\.0+7'$"),
        ("\u0663", r"line 1 is '\u0663'"),  # a digit, but not one OpenSpiel writes
        ("7\n7", r"line 2 cannot be replayed: chance outcome 7 \(deal Princess\) is not legal"),
        ("0\n8", r"line 2 cannot be replayed: chance outcome 8 is not a card"),
    ],
)
def test_a_bad_state_string_is_refused_by_line(text, message):
    with pytest.raises(ValueError, match=message):
        load(2).deserialize_state(text)


@pytest.mark.parametrize("text", [None, b"7\n", 7, ["7"]])
def test_a_state_that_is_not_text_is_refused_by_type(text):
    with pytest.raises(ValueError, match=f"reads a state from text \\(a str, .*got {type(text).__name__} "):
        load(2).deserialize_state(text)


def test_a_state_string_past_the_end_of_the_round_is_refused():
    game = load(2, "mini6")
    final = play_randomly(game.new_initial_state(), random.Random(1))[-1]
    line = len(final.history()) + 1
    with pytest.raises(ValueError, match=f"line {line} cannot be replayed: Cannot act in terminal states"):
        game.deserialize_state(final.serialize() + "0\n")


# Returns ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("players", "winners", "expected"),
    [
        (2, (1,), [-1.0, 1.0]),
        (2, (0, 1), [0.0, 0.0]),
        (3, (2,), [-1.0, -1.0, 2.0]),
        (3, (0, 2), [0.5, -1.0, 0.5]),
        (4, (1, 2, 3), [-1.0, 1 / 3, 1 / 3, 1 / 3]),
        (4, (0, 1, 2, 3), [0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_round_returns(players, winners, expected):
    assert round_returns(players, winners) == pytest.approx(expected)
    assert sum(round_returns(players, winners)) == pytest.approx(0.0)


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_returns_sum_to_zero_and_follow_the_round_winners(players, rules):
    game = load(players, rules)
    rng = random.Random(7)
    for _ in range(30):
        states = play_randomly(game.new_initial_state(), rng)
        assert all(s.returns() == [0.0] * players for s in states[:-1])
        final = states[-1]
        assert sum(final.returns()) == pytest.approx(0.0)
        winners = final.engine.round_winners
        assert [r > -1 for r in final.returns()] == [p in winners for p in range(players)]


# Observations: the env's, bit for bit ------------------------------------------------------


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_observation_tensor_is_the_envs_observation(players, rules):
    game = load(players, rules)
    rng = random.Random(11 + players)
    for _ in range(4):
        deck = random_deck(rules, rng)
        env = loveletter_env.env(num_players=players, rules=rules, episode="round")
        env.reset(seed=0, options={"deck": list(deck), "first_player": 0})
        state = dealt(game, deck)
        while not state.is_terminal():
            assert env.agent_selection == f"player_{state.current_player()}"
            for seat in range(players):
                observed = env.observe(f"player_{seat}")
                np.testing.assert_array_equal(np.array(state.observation_tensor(seat)), observed["observation"])
                if seat == state.current_player():
                    assert state.legal_actions() == [int(a) for a in np.flatnonzero(observed["action_mask"])]
            action = rng.choice(state.legal_actions())
            state.apply_action(action)
            env.step(action)
        rewards = {p: env.rewards[f"player_{p}"] for p in range(players)}
        assert [rewards[p] > 0 for p in range(players)] == [r > -1 for r in state.returns()]


# Information states -------------------------------------------------------------------


def test_an_opponents_hidden_card_does_not_change_the_information_state():
    game = load(2)
    # Only player_1's card differs: Baron or King (the other lies deep in the draw pile).
    a = dealt(game, deal_deck(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD, GUARD]))
    b = dealt(game, deal_deck(2, hands={0: PRIEST, 1: KING}, draws=[GUARD, GUARD]))
    guard_miss = loveletter_env.encode_action(GUARD, 1, PRINCE)  # a miss in both
    for step in range(2):
        assert a.information_state_string(0) == b.information_state_string(0)
        assert a.information_state_tensor(0) == b.information_state_tensor(0)
        assert a.observation_tensor(0) == b.observation_tensor(0)
        assert a.information_state_string(1) != b.information_state_string(1)
        assert a.information_state_tensor(1) != b.information_state_tensor(1)
        if step == 0:
            a.apply_action(guard_miss)
            b.apply_action(guard_miss)


def test_an_own_card_changes_the_information_state():
    game = load(2)
    a = dealt(game, deal_deck(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD]))
    b = dealt(game, deal_deck(2, hands={0: KING, 1: BARON}, draws=[GUARD]))
    assert a.information_state_string(0) != b.information_state_string(0)
    assert a.information_state_tensor(0) != b.information_state_tensor(0)
    assert a.information_state_string(1) == b.information_state_string(1)
    assert a.information_state_tensor(1) == b.information_state_tensor(1)


def test_what_a_priest_shows_reaches_only_its_player():
    game = load(3)
    a = dealt(game, deal_deck(3, hands={0: PRIEST, 1: BARON, 2: GUARD}, draws=[GUARD]))
    b = dealt(game, deal_deck(3, hands={0: PRIEST, 1: KING, 2: GUARD}, draws=[GUARD]))
    priest_on_1 = loveletter_env.encode_action(PRIEST, 1)
    a.apply_action(priest_on_1)
    b.apply_action(priest_on_1)
    assert a.information_state_string(0) != b.information_state_string(0)  # player_0 saw the card
    assert a.information_state_string(2) == b.information_state_string(2)  # player_2 did not
    assert a.information_state_tensor(2) == b.information_state_tensor(2)


@pytest.mark.parametrize(("players", "rules"), TABLES)
def test_information_states_have_perfect_recall(players, rules):
    """A player's later information state extends every earlier one: the card it was dealt and
    every move slot it had stay as they were (tensor), and so does its string's prefix."""
    game = load(players, rules)
    rng = random.Random(3)
    kept = np.zeros(loveletter_env.OBSERVATION_SIZE, bool)
    kept[SLICES["dealt"]] = kept[SLICES["moves"]] = True
    for _ in range(5):
        states = [s for s in play_randomly(game.new_initial_state(), rng) if not s.is_chance_node()]
        for player in range(players):
            earlier = None
            for state in states:
                tensor = np.array(state.information_state_tensor(player))
                assert tensor.tolist() == state.observation_tensor(player)  # one vector, two names
                if earlier is not None:
                    was = kept & (earlier != 0)
                    np.testing.assert_array_equal(tensor[was], earlier[was])
                earlier = tensor


def test_a_missed_guess_is_heard():
    """The card a Guard names is announced: a miss against player_0 is in its information state."""
    game = load(2)
    seen = []
    for guess in (PRINCE, KING):
        state = dealt(game, deal_deck(2, hands={0: PRIEST, 1: GUARD}, draws=[PRIEST, BARON]))
        state.apply_action(loveletter_env.encode_action(PRIEST, 1))  # player_0 sees the Guard
        state.apply_action(loveletter_env.encode_action(GUARD, 1, guess))  # player_1 misses
        assert state.current_player() == 0
        seen.append((state.information_state_string(0), state.information_state_tensor(0)))
    assert seen[0][0] != seen[1][0]
    assert seen[0][1] != seen[1][1]


def _walk(game, visit, state=None, moves=(), observations=None):
    """Call ``visit(state, moves, observations)`` at every decision node of the whole tree, where
    ``moves`` are the moves so far and ``observations[p]`` player p's observations after the deal
    and after each move."""
    state = state or game.new_initial_state()
    if state.is_terminal():
        return
    if state.is_chance_node():
        for action, _ in state.chance_outcomes():
            _walk(game, visit, state.child(action), moves, observations)
        return
    players = range(game.num_players())
    if observations is None:
        observations = tuple((bytes(np.array(state.observation_tensor(p), np.float32)),) for p in players)
    visit(state, moves, observations)
    for action in state.legal_actions():
        child = state.child(action)
        after = tuple(observations[p] + (bytes(np.array(child.observation_tensor(p), np.float32)),) for p in players)
        _walk(game, visit, child, (*moves, (state.current_player(), action)), after)


def _same_partition(pairs) -> None:
    """``pairs`` of (a, b): a determines b and b determines a."""
    forward, backward = {}, {}
    for a, b in pairs:
        assert forward.setdefault(a, b) == b
        assert backward.setdefault(b, a) == a


@pytest.mark.slow
def test_full_information_states_are_every_move_and_the_observation_after_it():
    """On the whole mini6 tree: two decision nodes share an information state exactly when the
    player saw the same moves and the same observation after each (string and tensor alike)."""
    game = load(2, "mini6")
    strings, tensors, legal = [], [], []

    def visit(state, moves, observations):
        player = state.current_player()
        reference = (player, moves, observations[player])
        string = state.information_state_string(player)
        strings.append((string, reference))
        tensors.append((bytes(np.array(state.information_state_tensor(player), np.float32)), reference))
        legal.append((string, tuple(state.legal_actions())))

    _walk(game, visit)
    _same_partition(strings)
    _same_partition(tensors)
    forward = {}
    for string, actions in legal:  # what a player may do follows from what it knows
        assert forward.setdefault(string, actions) == actions
    assert len({s for s, _ in strings}) == 1800  # the walk reached the whole tree (OpenSpiel's CFR counts 1,800)


def _what_a_player_was_told(state, player) -> tuple:
    """What ``player`` holds and what the table shows it, from the engine directly (not the
    observation): its cards in the order it got them, the discards, who is out or protected,
    whose turn it is and the cards left."""
    game = state.engine
    return (
        game.hand_of(player),
        tuple(map(tuple, game.discards)),
        tuple(game.out),
        tuple(game.protected),
        game.current,
        game.deck_remaining,
    )


@pytest.mark.parametrize(("players", "rules", "information_states"), [(2, "mini6", 2520), (3, "mini6_3p", 994)])
def test_no_information_state_holds_what_its_player_was_not_shown(players, rules, information_states):
    """Over the whole tree, every player's information state at every decision node is exactly
    what it was told turn by turn (its cards, the table, each move as narrated to it), an
    account built without the observation: a hidden card that changed the state would split
    one account into two information states."""
    from loveletter_env.render import narrate

    game = load(players, rules)
    pairs = []

    def walk(state, told):
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                walk(state.child(action), told)
            return
        if told is None:
            told = tuple((_what_a_player_was_told(state, p),) for p in range(players))
        if state.is_terminal():
            return
        for p in range(players):
            account = (p, told[p], tuple(narrate(event, p) for event in state.engine.history))
            pairs.append((state.information_state_string(p), account))
        for action in state.legal_actions():
            child = state.child(action)
            walk(child, tuple(told[p] + (_what_a_player_was_told(child, p),) for p in range(players)))

    walk(game.new_initial_state(), None)
    _same_partition(pairs)
    assert len({info for info, _ in pairs}) == information_states  # the walk reached the whole tree


# The cross-check with training.solve -------------------------------------------------------

#: CFR+ iterations of OpenSpiel's own solver in the cross-check: enough that its best responses
#: pin mini6's value to an interval 0.015 wide in score units (measured: nash_conv 0.090 after 10,
#: 0.031 after 20, an exploitability of 0.0077 in score units, 0.0094 after 40; CFR+ is
#: deterministic, so it is the same every run). 20 take about 80 s on one core.
OPENSPIEL_CFR_ITERATIONS = 20


class _SolvedPolicyInOpenSpiel(policy_lib.Policy):
    """A ``training.solve`` equilibrium as an OpenSpiel policy. The solver keys a decision by
    the observation alone (it recalls the round), so the engine's state gives it directly."""

    def __init__(self, game, solved, observation_key):
        super().__init__(game, list(range(game.num_players())))
        self.solved = solved
        self.observation_key = observation_key
        self.index = {solved.key(i): i for i in range(solved.num_infosets)}

    def action_probabilities(self, state, player_id=None):
        player = state.current_player()
        key = self.observation_key(encode_observation(state.engine, player))
        distribution = self.solved.distribution(self.index[key])
        return {a: float(distribution[a]) for a in state.legal_actions()}


def _value_bracket(game, policy) -> tuple[float, float, float]:
    """OpenSpiel's nash_conv of ``policy`` and the interval it proves holds the game's value
    for player 0 (OpenSpiel's units): [-(best response value of player 1), best response value
    of player 0]."""
    conv = exploitability.nash_conv(game, policy, return_only_nash_conv=False)
    values = expected_game_score.policy_value(game.new_initial_state(), [policy, policy])
    best0 = conv.player_improvements[0] + values[0]
    best1 = conv.player_improvements[1] + values[1]
    return conv.nash_conv, -best1, best0


def _solver():
    return pytest.importorskip("training.exploitability.solver", reason="the exact solver is not in this tree")


@pytest.mark.slow
def test_mini6_openspiel_measures_training_solves_equilibrium_as_it_does():
    """OpenSpiel's exact best responses to the solver's equilibrium find what the solver finds:
    its nash_conv is 4 times, its exploitability 2 times the solver's exploitability, and they
    bracket the solver's first-player value."""
    solve = _solver()
    from loveletter_env.tree import observation_key

    result = solve.solve("mini6", iterations=2000, target=1e-4)
    assert result.exploitability <= 1e-4
    game = load(2, "mini6")
    solved = _SolvedPolicyInOpenSpiel(game, result.policy, observation_key)
    conv, lower, upper = _value_bracket(game, solved)
    assert conv / 4 == pytest.approx(result.exploitability, abs=1e-9)
    assert exploitability.exploitability(game, solved) / 2 == pytest.approx(result.exploitability, abs=1e-9)
    assert lower - 1e-9 <= 2 * result.first_player_score - 1 <= upper + 1e-9


@pytest.mark.slow
def test_mini6_openspiel_cfr_brackets_training_solves_value():
    """OpenSpiel's own CFR+, on the game the solver solves by default, brackets the solver's
    value for player 0 (OpenSpiel's units: 2 * score - 1)."""
    result = _solver().solve("mini6", iterations=2000, target=1e-4)
    game = load(2, "mini6")
    openspiel_cfr = cfr.CFRPlusSolver(game)
    for _ in range(OPENSPIEL_CFR_ITERATIONS):
        openspiel_cfr.evaluate_and_update_policy()
    conv, lower, upper = _value_bracket(game, openspiel_cfr.average_policy())
    assert lower - 1e-9 <= 2 * result.first_player_score - 1 <= upper + 1e-9
    assert conv / 4 < 0.01  # the bracket is narrow: under 0.02 wide in score units


@pytest.mark.slow
def test_mini6_3p_openspiel_nash_conv_is_the_projects_at_three_players():
    """At 3 players OpenSpiel's nash_conv, in its units (a round returns n * score - 1 to each
    seat), is 3 times the project's, for uniform random play and for the solver's profile
    (about 2 minutes on one core, most of it OpenSpiel's best responses in Python)."""
    from loveletter_env.tree import build_tree, observation_key
    from training.exploitability.cfr import TreeWorkspace

    solve = _solver()
    tree = build_tree("mini6_3p")
    result = solve.solve("mini6_3p", iterations=2000, target=0.002, tree=tree)
    game = load(3, "mini6_3p")
    uniform = exploitability.nash_conv(game, policy_lib.UniformRandomPolicy(game))
    assert uniform / 3 == pytest.approx(TreeWorkspace(tree).exploitability(tree.uniform_strategy()).nash_conv, abs=1e-6)
    solved = exploitability.nash_conv(game, _SolvedPolicyInOpenSpiel(game, result.policy, observation_key))
    assert solved / 3 == pytest.approx(result.nash_conv, abs=1e-6)


# The example and the documentation --------------------------------------------------------

#: docs/openspiel.md marks its blocks so that tests/docs/test_readme.py leaves them to this file
#: (they need the openspiel extra, which a plain install lacks).
DOCS_MARKER = "<!-- test: skip: needs the openspiel extra; tests/wrappers/test_openspiel.py runs this block -->"


def _load_example():
    spec = importlib.util.spec_from_file_location("openspiel_example", ROOT / "examples" / "openspiel_mccfr_nfsp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_policy(game, policy, rounds: int = 5) -> None:
    """``policy`` gives a distribution over the legal actions wherever a player acts."""
    rng = random.Random(0)
    for _ in range(rounds):
        for state in play_randomly(game.new_initial_state(), rng):
            if not state.is_chance_node() and not state.is_terminal():
                probs = policy.action_probabilities(state)
                assert sorted(probs) == state.legal_actions()
                assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_the_example_runs_mccfr_on_a_rung_and_nfsp_on_the_full_game(capsys):
    example = _load_example()
    mccfr = example.main(["--algorithm", "mccfr", "--rules", "mini6", "--seconds", "1", "--eval-rounds", "10"])
    out = capsys.readouterr().out
    assert "mccfr: done" in out and "mccfr: exploitability" in out
    _check_policy(load(2, "mini6"), mccfr["mccfr"])
    nfsp = example.main(["--algorithm", "nfsp", "--seconds", "1", "--eval-rounds", "10", "--reservoir", "2000"])
    assert "nfsp: mean score" in capsys.readouterr().out
    _check_policy(load(2), nfsp["nfsp"])


def test_the_example_plays_a_rung_at_its_own_table_size_only(capsys):
    example = _load_example()
    with pytest.raises(SystemExit):
        example.parse_args(["--rules", "mini6", "--players", "3"])
    assert "mini6 is a ladder rung played by 2 players only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.parse_args(["--rules", "mini6_3p", "--players", "2"])
    assert "mini6_3p is a ladder rung played by 3 players only" in capsys.readouterr().err
    assert example.parse_args(["--rules", "mini6_3p"]).players == 3  # the rung's own by default
    assert example.parse_args([]).players == 2


def test_the_example_gives_a_three_player_rungs_exploitability_in_score_units(capsys):
    """Its NashConv in OpenSpiel's units (n * score - 1 a round) over n, then over n again."""
    example = _load_example()
    game = load(3, "mini6_3p")
    uniform = policy_lib.UniformRandomPolicy(game)
    args = example.parse_args(["--rules", "mini6_3p", "--eval-rounds", "2"])
    example.report("uniform", game, uniform, args)
    ours = float(re.search(r"uniform: exploitability ([\d.]+)", capsys.readouterr().out).group(1))
    assert ours == pytest.approx(exploitability.nash_conv(game, uniform) / 9, abs=1e-4)
    from loveletter_env.tree import build_tree
    from training.exploitability.cfr import TreeWorkspace

    tree = build_tree("mini6_3p")  # the project's own figure: nash_conv / 3 in score units
    assert ours == pytest.approx(TreeWorkspace(tree).exploitability(tree.uniform_strategy()).nash_conv / 3, abs=1e-4)


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_the_example_refuses_a_seed_numpy_cannot_take(seed, capsys):
    with pytest.raises(SystemExit):
        _load_example().parse_args(["--seed", seed])
    assert f"--seed must be an integer in 0..2147483647, got {seed}" in capsys.readouterr().err


def test_the_examples_nfsp_progress_says_why_a_loss_is_missing(capsys):
    example = _load_example()
    argv = ["--algorithm", "nfsp", "--seconds", "0.5", "--print-every", "0.1", "--eval-rounds", "2", "--hidden", "8"]
    example.main(argv)
    progress = [line for line in capsys.readouterr().out.splitlines() if "average-policy losses" in line]
    assert progress
    # Half a second fills no reservoir to the 1,000 transitions NFSP learns from.
    assert all("-: no update yet; an agent's first waits for 1,000 transitions in its reservoir" in p for p in progress)
    # NFSP makes a reservoir at its agent's first transition; an update gives a loss.
    fresh = SimpleNamespace(loss=(None, None), _reservoir_buffer=None)
    learning = SimpleNamespace(loss=(0.25, None), _reservoir_buffer=[0] * 1200)
    assert example.nfsp_losses([fresh, learning]).endswith(
        "losses -, 0.250 (-: no update yet; an agent's first "
        "waits for 1,000 transitions in its reservoir, now 0, 1,200)"
    )
    assert example.nfsp_losses([learning, learning]) == "average-policy losses 0.250, 0.250"


def test_the_documentation_blocks_run(monkeypatch):
    text = (ROOT / "docs" / "openspiel.md").read_text(encoding="utf-8")
    blocks = re.findall(re.escape(DOCS_MARKER) + r"\n```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert blocks, f"docs/openspiel.md has no python block marked {DOCS_MARKER!r}"
    monkeypatch.chdir(ROOT)
    for code in blocks:
        exec(compile(code, "docs/openspiel.md", "exec"), {"__name__": "__docs__"})
