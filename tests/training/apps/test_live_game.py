"""The game loop the terminal and the web app share (``training.apps.live_game.LiveGame``):
its arguments, the person's moves, and agents that break the protocol."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from loveletter_env import engine
from loveletter_env.agents.random_agent import RandomAgent
from training.apps.live_game import BotFailed, IllegalMove, LiveGame, NotNow, Opponent


def _opponent(build: Any = RandomAgent, name: str = "bot") -> Opponent:
    return Opponent(name, name, {}, build)


def _play_out(game: LiveGame, seed: int = 0) -> None:
    """The person plays random legal moves until the game is finished."""
    rng = np.random.default_rng(seed)
    while not game.finished:
        if game.state.round_over:
            game.next_round()
        elif game.agents_to_move:
            game.play_on()
        else:
            game.move(int(rng.choice(list(engine.legal_actions(game.state)))))


def _persons_turn(num_players: int = 2) -> LiveGame:
    """A one-round game at the person's (seat 0) first turn."""
    for seed in range(50):
        game = LiveGame([_opponent()] * (num_players - 1), num_players, 0, "classic", seed, "round")
        if not game.state.round_over and game.state.current == 0:
            return game
    raise AssertionError("no seed in 0..49 deals a round that waits for the person")


def test_a_seed_deals_the_same_game_and_leaves_the_global_generators_alone():
    random.seed(1)
    np.random.seed(1)
    expected = (random.random(), np.random.random())
    random.seed(1)
    np.random.seed(1)
    logs = []
    for _ in range(2):
        game = LiveGame([_opponent(), _opponent()], 3, 1, "classic", 11, "game", agent_turns_per_call=2)
        _play_out(game)
        logs.append(game.log)
    assert logs[0] == logs[1] and logs[0][-1].startswith("Game over")
    assert (random.random(), np.random.random()) == expected


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        # Each was accepted, or failed naming nothing the caller gave: "zip() argument 2 is
        # shorter than argument 1", numpy's "expected non-negative integer", a game of
        # max_rounds=0 that still played a round, a seed True that dealt seed 1's cards.
        ({"seat": 2}, r"seat must be a seat in 0\.\.1, got 2"),
        ({"seat": -1}, r"seat must be a seat in 0\.\.1, got -1"),
        ({"length": "rounds"}, r"length must be one of \('round', 'game'\), got 'rounds'"),
        ({"max_rounds": 0}, r"max_rounds must be a positive integer, got 0"),
        ({"seed": True}, r"seed must be None or a non-negative integer"),
        ({"seed": 1.5}, r"seed must be None or a non-negative integer"),
        ({"agent_turns_per_call": 0}, r"agent_turns_per_call must be a positive integer, got 0"),
        ({"opponents": [_opponent()] * 2}, r"2 opponents given for the 1 other seat of a 2-player table"),
    ],
)
def test_arguments_that_cannot_make_a_game_are_refused_by_name(args, problem):
    given: dict[str, Any] = {"opponents": [_opponent()], "num_players": 2, "seat": 0, "rules": "classic", "seed": 0}
    with pytest.raises(ValueError, match=problem):
        LiveGame(**(given | args))


@pytest.mark.parametrize("action", [10**5000, "x" * 1_000_000, [[[[[[30]]]]]]], ids=["huge int", "1 MB text", "nested"])
def test_a_move_that_is_no_action_is_refused_as_illegal_in_a_short_message(action):
    # A 5,000-digit integer failed with Python's "Exceeds the limit (4300 digits) for integer string
    # conversion" instead of IllegalMove; a 1 MB string was echoed back whole.
    game = _persons_turn()
    log = list(game.log)
    with pytest.raises(IllegalMove, match="is not one of your legal moves") as refused:
        game.move(action)
    assert len(str(refused.value)) < 300
    assert game.log == log and game.state.current == 0


class _Explains(RandomAgent):
    """Plays as the random bot, and explains each move with :attr:`explanation` (of the observation)."""

    explanation: Any = None

    def explain(self, observation: Any) -> dict[str, Any]:
        return type(self).explanation(observation)


def _first_legal(observation: Any) -> int:
    return int(np.flatnonzero(observation["action_mask"])[0])


@pytest.mark.parametrize(
    ("explanation", "problem"),
    [
        # Each was recorded as it came. Illegal moves or the agent's own seat: the whole game was
        # played, then its end failed with a ReplayError that named no agent, the game not stopped
        # and no replay kept. A probability above 1: the replay was saved, and could not be loaded.
        (
            lambda obs: {"probabilities": {a: 1 / 41 for a in range(41)}},
            r"explain\(\): details\.probabilities must map legal actions to probabilities",
        ),
        (
            lambda obs: {"hand_beliefs": {0: {1: 1.0}}},
            r"explain\(\): details\.hand_beliefs must map other seats to 8 probabilities",
        ),
        (
            lambda obs: {"probabilities": {_first_legal(obs): 1.5}},
            # Without the move's number: it would show a card of the agent's hand.
            r"details cannot be written to a replay: details\.probabilities must be <= 1\.000001",
        ),
    ],
    ids=["illegal moves", "own seat", "above 1"],
)
def test_an_explanation_a_replay_cannot_hold_stops_the_game_at_that_move(explanation, problem):
    agent = type("Explains", (_Explains,), {"explanation": staticmethod(explanation)})
    expected = rf"^agent explains at player_1 explained its move with details a replay cannot hold: {problem}; the game"
    game = None
    with pytest.raises(BotFailed, match=expected):
        game = LiveGame([_opponent(agent, "explains")], 2, 0, "classic", 3, "game")
        _play_out(game)
    if game is not None:  # else the agent moved first: the game was not even made
        assert game.stopped is not None and game.log[-1].startswith("Game stopped: agent explains at player_1")
        assert not any(line.startswith("Round") and "won by" in line for line in game.log)


class _WritesItsMask:
    """Marks every action legal in the observation it is given, and plays action 0."""

    def __init__(self, seed: int) -> None:
        pass

    def act(self, observation: Any) -> int:
        observation["action_mask"][:] = 1
        return 0


def test_an_agent_that_writes_into_its_mask_is_stopped_without_showing_its_hand():
    # Its move passed the check against the mask it had rewritten: the engine then refused it with an
    # IllegalActionError listing the agent's legal moves (its hand) and the game was not stopped.
    for seed in range(50):  # until action 0 (Guard on offset 1 naming Priest) is illegal for the agent
        try:
            game = LiveGame([_opponent(_WritesItsMask, "writer")], 2, 0, "classic", seed, "round")
        except BotFailed as exc:
            failure = str(exc)
            break
        if game.state.round_over:
            continue
        try:
            game.move(list(engine.legal_actions(game.state))[0])
        except BotFailed as exc:
            failure = str(exc)
            assert game.stopped is not None and game.log[-1].startswith("Game stopped: agent writer at player_1")
            with pytest.raises(NotNow, match="this game was stopped"):
                game.move(0)
            break
    else:
        raise AssertionError("no seed in 0..49 makes action 0 illegal for the agent")
    assert failure.startswith("agent writer at player_1 returned action 0, which is not legal here")
    assert "legal:" not in failure and "legal actions" not in failure


def test_a_game_built_without_its_deal_plays_nothing_until_started():
    # The terminal builds the game first, so that it can tell what the agents did even when one
    # fails in the first round's opening moves; started, it is the game a plain build deals.
    waiting = LiveGame([_opponent(), _opponent()], 3, 2, "classic", seed=4, start=False)
    assert waiting.log == [] and waiting.round_starts == []
    for call in (lambda: waiting.move(0), waiting.play_on, waiting.next_round):
        with pytest.raises(NotNow, match="the game has not started: call start"):
            call()
    waiting.start()
    dealt = LiveGame([_opponent(), _opponent()], 3, 2, "classic", seed=4)
    assert waiting.log == dealt.log and waiting.state.hands == dealt.state.hands
    with pytest.raises(NotNow, match="the game has started"):
        waiting.start()


def test_a_failing_agents_long_error_is_shown_by_its_first_line_cut_short():
    # A 100,000-character error went whole to the person, three times in the web's answer.
    class Talkative:
        def act(self, observation):
            raise RuntimeError("my hand is the Princess " + "x" * 100_000 + "\nsecond line")

    game = LiveGame([_opponent(lambda seed: Talkative(), "talker")], 2, 0, "classic", 0, start=False)
    with pytest.raises(BotFailed) as failure:
        game.start()
        _play_out(game)
    shown = "agent talker at player_1 failed: RuntimeError: my hand is the Princess xx"
    for text in (str(failure.value), game.stopped, game.log[-1]):
        assert text.startswith(shown) or text.startswith(f"Game stopped: {shown}")
        assert len(text) < 300 and "..." in text and "second line" not in text
