"""A person's game against agents, driven one request at a time, and the store of games.

:class:`HumanGame` holds the engine state, the opponents and a replay recorder: the person
plays a move, the agents play until it is the person's turn again (or the round is over),
and every move is narrated as the person's seat saw it. A finished game is saved as a
replay. Opponents come from :class:`OpponentCatalog`: bot names with checked options, or
checkpoints registered when the server started (never a path from a request).
"""

from __future__ import annotations

import ast
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from loveletter_env import engine
from loveletter_env.agents import AGENT_NAMES, make_agent
from loveletter_env.engine import GameState
from loveletter_env.observation import encode_observation
from loveletter_env.render import narrate, round_summary
from loveletter_env.replay import AgentInfo, Replay, ReplayRecorder, decision_details, safe_file_name, save_replay
from loveletter_env.rules import PRESETS, check_rules_for_table
from loveletter_env.validation import is_int

from .views import legal_moves, state_view

#: Bot options a request may set, with the values allowed (ismcts is the only costly bot).
BOT_OPTIONS: dict[str, dict[str, tuple[type, float, float]]] = {
    "random": {},
    "rule": {},
    "belief": {},
    "ismcts": {
        "iterations": (int, 1, 2000),
        "width": (int, 1, 16),
        "model_noise": (float, 0.0, 1.0),
        "tree_depth": (int, 1, 4),
        "exploration": (float, 0.0, 10.0),
    },
}
CHECKPOINT_PREFIX = "checkpoint:"
#: How a replay names the person's seat.
HUMAN = "human"


class RequestError(ValueError):
    """A request the server refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass
class OpponentChoice:
    """A checked opponent: how to build it and how the replay names it."""

    name: str
    spec: str
    options: dict[str, Any]
    build: Callable[[int], Any]


class OpponentCatalog:
    """The opponents a request may name: bots (``"ismcts:iterations=300"``) and the
    checkpoints given at start-up (``"checkpoint:<name>"``).

    Args:
        checkpoints: display name -> checkpoint path, fixed when the server starts.
        load_checkpoint_agent: builds an agent from a path and a seed.
    """

    def __init__(self, checkpoints: dict[str, Path], load_checkpoint_agent: Callable[[Path, int], Any]):
        self.checkpoints = dict(checkpoints)
        self._load = load_checkpoint_agent

    def describe(self) -> dict[str, Any]:
        """What the Play page offers."""
        return {
            "bots": [
                {"name": name, "options": sorted(BOT_OPTIONS[name])} for name in AGENT_NAMES if name in BOT_OPTIONS
            ],
            "checkpoints": sorted(self.checkpoints),
        }

    def choose(self, text: Any) -> OpponentChoice:
        """Check one opponent spec from a request; :class:`RequestError` names what is wrong."""
        if not isinstance(text, str) or not text or len(text) > 200:
            raise RequestError(f"an opponent is a bot name or 'checkpoint:<name>', got {text!r}")
        if text.startswith(CHECKPOINT_PREFIX):
            name = text[len(CHECKPOINT_PREFIX) :]
            if name not in self.checkpoints:
                offered = sorted(self.checkpoints) or "none were given at start-up"
                raise RequestError(f"unknown checkpoint {name!r}; the server offers {offered}")
            path = self.checkpoints[name]
            return OpponentChoice(name, str(path), {}, lambda seed: self._load(path, seed))
        bot, _, option_text = text.partition(":")
        if bot not in BOT_OPTIONS:
            raise RequestError(f"unknown opponent {bot!r}; choose one of {list(BOT_OPTIONS)} or a checkpoint")
        options = self._options(bot, option_text)
        return OpponentChoice(bot, text, options, lambda seed: make_agent(bot, seed=seed, **options))

    @staticmethod
    def _options(bot: str, text: str) -> dict[str, Any]:
        allowed = BOT_OPTIONS[bot]
        options: dict[str, Any] = {}
        for item in filter(None, (s.strip() for s in text.split(","))):
            key, eq, raw = (part.strip() for part in item.partition("="))
            if not eq or key not in allowed:
                names = sorted(allowed) or "none"
                raise RequestError(f"{bot}: bad option {item!r}; options are key=value with keys {names}")
            kind, low, high = allowed[key]
            try:
                value = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                value = None
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or (kind is int and not isinstance(value, int))
            ):
                raise RequestError(
                    f"{bot}: option {key} must be {'a whole number' if kind is int else 'a number'}, got {raw!r}"
                )
            if not low <= value <= high:
                raise RequestError(f"{bot}: option {key} must be in {low:g}..{high:g}, got {raw}")
            options[key] = value
        return options


def observation_of(state: GameState, seat: int) -> dict[str, np.ndarray]:
    """The env's observation dict for the player to act at ``seat``."""
    mask = np.zeros(41, dtype=np.int8)
    mask[list(engine.legal_actions(state))] = 1
    return {"observation": encode_observation(state, seat), "action_mask": mask}


class HumanGame:
    """One person (at ``seat``) against agents, one round or a whole game.

    Args:
        opponents: one checked choice per other seat, in seat order.
        num_players: 2, 3 or 4.
        seat: the person's seat.
        rules: a preset name.
        length: ``"round"`` or ``"game"``.
        seed: seeds the deals and the agents.
        on_finish: called with the replay when the game (or round) is over.
    """

    def __init__(
        self,
        opponents: list[OpponentChoice],
        num_players: int,
        seat: int,
        rules: str,
        length: str,
        seed: int,
        on_finish: Callable[[HumanGame, Replay], str | None],
    ):
        self.id = secrets.token_hex(8)
        self.lock = threading.Lock()
        self.seat = seat
        self.length = length
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        others = [p for p in range(num_players) if p != seat]
        agent_seeds = {p: int(self.rng.integers(2**31)) for p in others}
        self.agents = {p: choice.build(agent_seeds[p]) for p, choice in zip(others, opponents, strict=True)}
        infos = [AgentInfo(HUMAN)] * num_players
        self.names = ["you"] * num_players
        for p, choice in zip(others, opponents, strict=True):
            infos[p] = AgentInfo(choice.name, choice.spec, choice.options, agent_seeds[p])
            self.names[p] = f"{choice.name} (player_{p})"
        self.recorder = ReplayRecorder(
            num_players, rules, length, infos, {"source": "training.serve", "seed": seed, "human_seat": seat}
        )
        self.state = engine.new_game(num_players, self._deck(), int(self.rng.integers(num_players)), rules)
        self.log: list[str] = []
        self.bot_seconds: list[float] = []
        self.replay_file: str | None = None
        self._on_finish = on_finish
        self._begin_round()

    @property
    def finished(self) -> bool:
        """No more moves: the game is over, or the one round of a ``round`` game is."""
        return self.state.round_over and (self.length == "round" or self.state.game_over)

    def _deck(self) -> list[int]:
        return list(self.recorder.rules.shuffled_deck(self.rng))

    def _begin_round(self) -> None:
        self.recorder.start_round(self.state)
        starter = "you start" if self.state.current == self.seat else f"player_{self.state.current} starts"
        self.log.append(f"Round {self.state.round}: {starter}.")
        self._play_agents()

    def _name(self, seat: int) -> str:
        return "you" if seat == self.seat else f"player_{seat}"

    def _play(self, action: int, details: dict[str, Any] | None = None) -> None:
        self.recorder.record(self.state, action, details)
        event = engine.step(self.state, action)
        self.log.append(narrate(event, self.seat))
        if self.state.round_over:
            self.log += round_summary(self.state, self.seat).splitlines()
            if self.finished:
                self._finish()

    def _play_agents(self) -> None:
        state = self.state
        while not state.round_over and state.current != self.seat:
            agent = self.agents[state.current]
            start = time.perf_counter()
            observation = observation_of(state, state.current)
            details = decision_details(agent, observation, state.current, state.num_players)
            action = int(agent.act(observation))
            self.bot_seconds.append(time.perf_counter() - start)
            self._play(action, details)

    def _finish(self) -> None:
        replay = self.recorder.finish(self.state)
        if self.state.game_over:
            self.log.append(f"Game over: {', '.join(self._name(p) for p in self.state.game_winners)} won the game.")
        try:
            self.replay_file = self._on_finish(self, replay)
        except OSError as exc:  # the game itself is fine: say so in its log rather than fail the move
            self.log.append(f"The replay could not be saved: {exc}")

    def move(self, action: Any) -> None:
        """The person plays ``action``; the agents answer. :class:`RequestError` when it is not legal."""
        state = self.state
        if self.finished:
            raise RequestError("this game is over; start a new one", status=409)
        if state.round_over:
            raise RequestError("the round is over; ask for the next round first", status=409)
        legal = engine.legal_actions(state)
        if not is_int(action) or action not in legal:
            raise RequestError(f"action {action!r} is not one of your legal moves {list(legal)}")
        self._play(action)
        self._play_agents()

    def next_round(self) -> None:
        """Deal the next round of a whole game."""
        if self.finished:
            raise RequestError("this game is over; start a new one", status=409)
        if not self.state.round_over:
            raise RequestError("the round is still being played", status=409)
        engine.start_round(self.state, self._deck())
        self._begin_round()

    def view(self) -> dict[str, Any]:
        """The page's picture of the game, from the person's seat."""
        state = self.state
        your_turn = not state.round_over and state.current == self.seat
        return {
            "id": self.id,
            "seat": self.seat,
            "length": self.length,
            "finished": self.finished,
            "replay_file": self.replay_file,
            "legal": legal_moves(state) if your_turn else [],
            "log": self.log,
            "view": state_view(state, self.seat, self.names, reveal=state.round_over),
        }


class GameStore:
    """The games in progress, by id; the oldest are dropped past ``capacity``."""

    def __init__(self, capacity: int = 200):
        self.capacity = capacity
        self._games: OrderedDict[str, HumanGame] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, game: HumanGame) -> None:
        with self._lock:
            self._games[game.id] = game
            while len(self._games) > self.capacity:
                self._games.popitem(last=False)

    def get(self, game_id: str) -> HumanGame:
        with self._lock:
            game = self._games.get(game_id)
        if game is None:
            raise RequestError(f"no game with id {game_id!r} (unknown, or dropped when the server restarted)", 404)
        return game


def replay_saver(directory: Path | None) -> Callable[[HumanGame, Replay], str | None]:
    """A callback that writes a finished game's replay into ``directory`` and returns its file name."""

    def save(game: HumanGame, replay: Replay) -> str | None:
        if directory is None:
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        name = safe_file_name(f"web-{stamp}-{game.id}") + ".json"
        save_replay(replay, directory / name)
        return name

    return save


def check_new_game(body: Any, catalog: OpponentCatalog) -> dict[str, Any]:
    """Check a new-game request and return the arguments of :class:`HumanGame` (less ``on_finish``)."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    unknown = sorted(set(body) - {"players", "opponents", "rules", "length", "seat", "seed"})
    if unknown:
        raise RequestError(f"unknown fields {unknown}")
    players = body.get("players", 2)
    if not isinstance(players, int) or isinstance(players, bool) or players not in (2, 3, 4):
        raise RequestError(f"players must be 2, 3 or 4, got {players!r}")
    opponents = body.get("opponents", ["belief"])
    if not isinstance(opponents, list) or not opponents:
        raise RequestError("opponents must be a non-empty list")
    if len(opponents) > players - 1:
        raise RequestError(f"{len(opponents)} opponents given for {players - 1} other seats")
    opponents = opponents + [opponents[-1]] * (players - 1 - len(opponents))
    choices = [catalog.choose(o) for o in opponents]
    rules = body.get("rules", "classic")
    if rules not in PRESETS:
        raise RequestError(f"rules must be one of {sorted(PRESETS)}, got {rules!r}")
    try:
        check_rules_for_table(rules, players)
    except ValueError as error:
        raise RequestError(str(error)) from None
    length = body.get("length", "game")
    if length not in ("round", "game"):
        raise RequestError(f"length must be 'round' or 'game', got {length!r}")
    seat = body.get("seat", 0)
    if not is_int(seat) or not 0 <= seat < players:
        raise RequestError(f"seat must be a seat in 0..{players - 1}, got {seat!r}")
    seed = body.get("seed")
    if seed is None:
        seed = secrets.randbelow(2**31)
    elif not is_int(seed) or not 0 <= seed < 2**63:
        raise RequestError(f"seed must be a non-negative whole number, got {seed!r}")
    return {"opponents": choices, "num_players": players, "seat": seat, "rules": rules, "length": length, "seed": seed}
