"""A person's game against agents, driven one request at a time, and the store of games.

:class:`HumanGame` is the terminal's :class:`~training.apps.live_game.LiveGame` (the person
plays a move, the agents play until it is the person's turn again, every move narrated as
the person's seat saw it) with an id, a lock and a view for the page; a finished game is
saved as a replay. Opponents come from :class:`OpponentCatalog`: the bots of
:data:`loveletter_env.agents.BOTS` with options checked against its ranges, or checkpoints
and solved policies registered when the server started (never a path from a request).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import logging
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loveletter_env.agents import BOTS, CHECKPOINT, make_agent
from loveletter_env.agents.specs import SOLVED, resolve_agent
from loveletter_env.replay import Replay, safe_file_name, save_replay
from loveletter_env.rules import PRESETS, check_rules_for_table
from loveletter_env.validation import EPISODE_KINDS, PLAYER_COUNTS, is_int, shown
from training.apps.live_game import BotFailed, IllegalMove, LiveGame, NotNow, Opponent, rules_refusal
from training.apps.web.views import legal_moves, seat_name, state_view

#: CPU seconds one search iteration may cost, by search (a bot with an ``iterations`` option,
#: whose decisions cost in proportion to it) and table size: the 95th percentile
#: over the decisions of rounds against random moves (each decision's CPU time divided by its
#: iterations), rounded up, as ``python -m training.apps.web.timings --costs`` measured it on the
#: development machine, with the other options at their most costly (``width`` 0 or 16, the
#: deepest tree). ``ismcts`` at ``tree_depth`` 1 runs on the compiled core; deeper trees run in
#: Python. ``guided`` is the larger of its figures with the network or the card-counting bot
#: modelling the others.
ITERATION_SECONDS: dict[str, dict[int, float]] = {
    "ismcts": {2: 0.006e-3, 3: 0.011e-3, 4: 0.018e-3},
    "ismcts-tree": {2: 0.28e-3, 3: 0.58e-3, 4: 1.2e-3},
    "guided": {2: 0.55e-3, 3: 1.0e-3, 4: 1.3e-3},
}
#: The most CPU time the bots may be expected to spend answering one request (each bot plays
#: at most once per request: a move, a new game or a new round).
MAX_REQUEST_SECONDS = 1.0
CHECKPOINT_PREFIX = "checkpoint:"
#: The network ``guided`` searches with by default, by table size, as the server names the
#: files it offers by default: at 3 or 4 players the version 1 network, which plays stronger
#: there than the shipped version 2 one (docs/agents-strength.md).
DEFAULT_NETWORKS = {2: "shipped/ppo_2p", 4: "v1/ppo_2to4p"}
#: How a request names a solved policy offered at start-up: ``"solved:<name>"``.
SOLVED_PREFIX = f"{SOLVED}:"
#: The longest opponent spec a request may give.
MAX_SPEC_CHARS = 200

logger = logging.getLogger(__name__)


class RequestError(ValueError):
    """A request the server refuses or could not carry out; ``status`` is the HTTP status to
    answer with, and ``game`` the view of the game it leaves (sent with the error, so that the
    page can draw it), if any."""

    def __init__(self, message: str, status: int = 400, game: dict[str, Any] | None = None):
        super().__init__(message)
        self.status = status
        self.game = game


@dataclass(frozen=True)
class OfferedPolicy:
    """A policy file of ``python -m training.solve`` offered at start-up, and the rules
    preset of the ladder rung it was solved for (the only rules it can play)."""

    path: Path
    rules: str


@dataclass
class OpponentChoice(Opponent):
    """A checked opponent (how to build it, how the replay names it), with the CPU seconds one
    of its decisions may take at the table it was chosen for (0 for the bots that do not
    search), and the only rules preset it can play (``None``: any)."""

    spec: str  # a request's opponent is always named by one
    seconds_per_decision: float = 0.0
    rules: str | None = None


def log_agent_failure(exc: BotFailed) -> None:
    """Tell the server's console what went wrong inside an agent (the page gets the message only)."""
    logger.error("%s", exc, exc_info=exc.__cause__)


def bot_setting(bot: str, options: dict[str, Any], name: str) -> Any:
    """The value of option ``name`` of ``bot`` as ``options`` set it, else the bot's default."""
    return options.get(name, inspect.signature(BOTS[bot].factory).parameters[name].default)


def searches_a_tree(bot: str, options: dict[str, Any]) -> bool:
    """Whether ``bot`` with ``options`` is ``ismcts`` searching a tree deeper than one move, in Python."""
    return bot == "ismcts" and bot_setting(bot, options, "tree_depth") > 1


def search_cost(bot: str, options: dict[str, Any], players: int) -> float:
    """The CPU seconds one decision of ``bot`` with ``options`` may take at ``players`` (see
    :data:`ITERATION_SECONDS`); 0 for the bots that do not search."""
    if "iterations" not in BOTS[bot].options:
        return 0.0
    if bot not in ITERATION_SECONDS:  # a new search, offered before its cost was measured
        raise RequestError(f"{bot}: the server knows no cost of its iterations (ITERATION_SECONDS)", 500)
    kind = "ismcts-tree" if searches_a_tree(bot, options) else bot
    return bot_setting(bot, options, "iterations") * ITERATION_SECONDS[kind][players]


class OpponentCatalog:
    """The opponents a request may name: bots (``"ismcts:iterations=300"``), the
    checkpoints given at start-up (``"checkpoint:<name>"``, or the plain name when no bot
    has it) and the solved policies given at start-up (``"solved:<name>"``).

    Args:
        checkpoints: display name -> checkpoint path, fixed when the server starts.
        load_checkpoint_agent: builds an agent from a path and a seed.
        policies: display name -> solved policy, fixed when the server starts.
    """

    def __init__(
        self,
        checkpoints: dict[str, Path],
        load_checkpoint_agent: Callable[[Path, int], Any],
        policies: dict[str, OfferedPolicy] | None = None,
    ):
        self.checkpoints = dict(checkpoints)
        self._load = load_checkpoint_agent
        self.policies = dict(policies or {})

    def bots(self) -> list[str]:
        """The bots on offer: every bot of the registry, those that need a network (``guided``)
        when a checkpoint was given at start-up."""
        return [name for name, bot in BOTS.items() if self.checkpoints or not bot.needs_checkpoint]

    def describe(self) -> dict[str, Any]:
        """What the Play page offers."""
        return {
            "bots": [
                {
                    "name": name,
                    "description": BOTS[name].description,
                    "table_sizes": list(BOTS[name].table_sizes),
                    "options": sorted(BOTS[name].options),
                    "allowed": {key: option.describe() for key, option in sorted(BOTS[name].options.items())},
                }
                for name in self.bots()
            ],
            "checkpoints": sorted(self.checkpoints),
            "policies": [{"name": name, "rules": self.policies[name].rules} for name in sorted(self.policies)],
            "max_request_seconds": MAX_REQUEST_SECONDS,
        }

    def default_policy(self, players: int) -> str:
        """The checkpoint ``guided`` searches with when the request names none: the default
        network for the table size when it was offered, else the first offered."""
        default = DEFAULT_NETWORKS[2] if players == 2 else DEFAULT_NETWORKS[4]
        return default if default in self.checkpoints else sorted(self.checkpoints)[0]

    def _checkpoint_build(
        self, name: str, build: Callable[[int], Any], what: str = "checkpoint"
    ) -> Callable[[int], Any]:
        """``build``, with a ``what`` (a checkpoint, a solved policy) that no longer loads
        (changed or deleted on disk since the server started) answered as a clear error
        rather than a crash."""

        def checked(seed: int) -> Any:
            try:
                return build(seed)
            except (ValueError, OSError) as exc:
                raise RequestError(
                    f"{what} {name!r} no longer loads (changed or removed since the server started): {exc}",
                    503,
                ) from None

        return checked

    def choose(self, text: Any, players: int) -> OpponentChoice:
        """Check one opponent spec from a request for a ``players`` table; :class:`RequestError`
        names what is wrong."""
        if not isinstance(text, str) or not text or len(text) > MAX_SPEC_CHARS:
            raise RequestError(
                f"an opponent is a bot name (with options: 'ismcts:iterations=300'), 'checkpoint:<name>', "
                f"a checkpoint's name or 'solved:<name>', at most {MAX_SPEC_CHARS} characters; got {shown(text)}"
            )
        if text.startswith(SOLVED_PREFIX):
            return self._solved(text[len(SOLVED_PREFIX) :])
        name = text[len(CHECKPOINT_PREFIX) :] if text.startswith(CHECKPOINT_PREFIX) else text
        if text.startswith(CHECKPOINT_PREFIX) or (text in self.checkpoints and text not in BOTS):
            if name not in self.checkpoints:
                offered = sorted(self.checkpoints) or "none were given at start-up"
                raise RequestError(f"unknown checkpoint {shown(name)}; the server offers {offered}")
            path = self.checkpoints[name]
            return OpponentChoice(
                name, str(path), {}, self._checkpoint_build(name, lambda seed: self._load(path, seed))
            )
        bot, _, option_text = text.partition(":")
        if bot not in self.bots():
            raise RequestError(
                f"unknown opponent {shown(bot)}; choose one of {self.bots()}, or a checkpoint "
                f"({sorted(self.checkpoints) or 'none were given at start-up'})"
            )
        if players not in BOTS[bot].table_sizes:
            raise RequestError(f"{bot} plays at tables of {list(BOTS[bot].table_sizes)} players, not {players}")
        options = self._options(bot, option_text)
        # A network option names a checkpoint offered at start-up; the agent is given its path.
        networks = [key for key, option in BOTS[bot].options.items() if option.kind == CHECKPOINT]
        for key in networks:
            options.setdefault(key, self.default_policy(players))
        agent_options = {**options, **{key: self.checkpoints[options[key]] for key in networks}}
        build: Callable[[int], Any] = lambda seed: make_agent(bot, seed=seed, **agent_options)  # noqa: E731
        for key in networks:
            build = self._checkpoint_build(options[key], build)
        return OpponentChoice(bot, text, options, build, search_cost(bot, options, players))

    def _solved(self, name: str) -> OpponentChoice:
        if name not in self.policies:
            offered = sorted(self.policies) or "none were given at start-up (--policies FILE)"
            raise RequestError(f"unknown solved policy {shown(name)}; the server offers {offered}")
        policy = self.policies[name]
        spec = f"{SOLVED}:path={policy.path}"
        build = self._checkpoint_build(name, lambda seed: resolve_agent(spec, seed=seed), "solved policy")
        return OpponentChoice(SOLVED, spec, {}, build, rules=policy.rules)

    def _options(self, bot: str, text: str) -> dict[str, Any]:
        allowed = BOTS[bot].options
        options: dict[str, Any] = {}
        for item in filter(None, (s.strip() for s in text.split(","))):
            key, eq, raw = (part.strip() for part in item.partition("="))
            if not eq or key not in allowed:
                names = sorted(allowed) or "none"
                raise RequestError(f"{bot}: bad option {shown(item)}; options are key=value with keys {names}")
            option = allowed[key]
            if option.kind == CHECKPOINT:
                if raw not in self.checkpoints:
                    raise RequestError(
                        f"{bot}: option {key} must be a checkpoint the server offers {sorted(self.checkpoints)}, "
                        f"got {shown(raw)}"
                    )
                options[key] = raw
                continue
            if option.kind is str:
                if raw not in option.choices:
                    raise RequestError(f"{bot}: option {key} must be one of {list(option.choices)}, got {shown(raw)}")
                options[key] = raw
                continue
            try:
                value = ast.literal_eval(raw)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or (option.kind is int and not isinstance(value, int))
            ):
                raise RequestError(
                    f"{bot}: option {key} must be {'a whole number' if option.kind is int else 'a number'}, "
                    f"got {shown(raw)}"
                )
            if not option.low <= value <= option.high:
                raise RequestError(f"{bot}: option {key} must be in {option.low:g}..{option.high:g}, got {raw}")
            options[key] = value
        return options


def check_work(choices: list[OpponentChoice], players: int) -> None:
    """Refuse opponents whose answer to one request may cost more than
    :data:`MAX_REQUEST_SECONDS` of CPU time (every bot plays at most once per request:
    :class:`HumanGame` plays one agent move per other seat, then waits to be asked on)."""
    seconds = sum(choice.seconds_per_decision for choice in choices)
    if seconds > MAX_REQUEST_SECONDS:
        searching = [c for c in choices if c.seconds_per_decision]
        # Iterations scaled down alike until the sum fits: a remedy that works as stated.
        scale = MAX_REQUEST_SECONDS / seconds
        fits = sorted(
            {
                f"{c.spec}: iterations<={max(1, math.floor(bot_setting(c.name, c.options, 'iterations') * scale))}"
                for c in searching
            }
        )
        deeper = any(searches_a_tree(c.name, c.options) for c in searching)
        raise RequestError(
            f"these opponents may think for up to {seconds:.1f} s of CPU time per move at {players} players "
            f"({', '.join(sorted({c.spec for c in searching}))}); the server allows {MAX_REQUEST_SECONDS:g} s: "
            f"lower iterations ({'; '.join(fits)}), {'use tree_depth=1, ' if deeper else ''}"
            "or fewer searching opponents"
        )


class HumanGame(LiveGame):
    """A :class:`~training.apps.live_game.LiveGame` played through requests: it has an id and
    a lock, answers a move at the wrong time or an illegal one with a :class:`RequestError`,
    saves itself with ``on_finish`` when finished, and draws itself for the page (:meth:`view`).

    Args:
        opponents: one checked choice per other seat, in seat order.
        num_players: 2, 3 or 4.
        seat: the person's seat.
        rules: a preset name.
        length: ``"round"`` or ``"game"``.
        seed: seeds the deals and the agents.
        on_finish: called with the game and its replay when the game (or round) is over;
            returns the replay's file name.
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
        # Set before the game starts: the agents may finish a round before the person plays.
        self.id = secrets.token_hex(8)
        self.lock = threading.Lock()
        self.seed = seed
        self.replay_file: str | None = None
        self._save = on_finish
        metadata = {"source": "training.serve", "seed": seed, "human_seat": seat}
        super().__init__(
            opponents, num_players, seat, rules, seed, length, metadata=metadata, agent_turns_per_call=num_players - 1
        )

    @property
    def names(self) -> list[str]:
        """How the page names each seat: ``player_1 (rule)``, ``player_0 (you)``.

        Read from the seats :class:`LiveGame` checked and seated: built from the arguments before
        it ran, a bad seat or opponent count failed as a ``zip()`` error instead of its message.
        """
        return [seat_name(p, "you" if p == self.seat else info.name) for p, info in enumerate(self.infos)]

    def on_finish(self, replay: Replay) -> None:
        try:
            self.replay_file = self._save(self, replay)
        except OSError as exc:  # the game itself is fine: say so in its log rather than fail the move
            self.log.append(f"The replay could not be saved: {exc}")

    def move(self, action: Any) -> None:
        """The person plays ``action``; the agents answer. :class:`RequestError` when it is not
        the person's move to make (409) or not legal (400), or when an agent fails (500, with
        the stopped game's view)."""
        with self._as_request_errors():
            super().move(action)

    def play_on(self) -> None:
        """The bots' next moves, once each at most, while the view says ``waiting``."""
        with self._as_request_errors():
            super().play_on()

    def next_round(self) -> None:
        """Deal the next round of a whole game."""
        with self._as_request_errors():
            super().next_round()

    @contextlib.contextmanager
    def _as_request_errors(self) -> Iterator[None]:
        """The game's refusals as the answers of a request: not now 409, an illegal move 400,
        a failing agent 500 with the stopped game's view."""
        try:
            yield
        except NotNow as exc:
            raise RequestError(str(exc), 409) from None
        except IllegalMove as exc:
            raise RequestError(str(exc)) from None
        except BotFailed as exc:
            raise self._failure(exc) from None

    def _failure(self, exc: BotFailed) -> RequestError:
        log_agent_failure(exc)
        finished_rounds = self.replay_so_far()  # the rounds played before the bot failed are kept
        if finished_rounds is not None and self.replay_file is None:
            self.on_finish(finished_rounds)
        return RequestError(str(exc), 500, game=self.view())

    def view(self) -> dict[str, Any]:
        """The page's picture of the game, from the person's seat."""
        state = self.state
        your_turn = not state.round_over and state.current == self.seat
        return {
            "id": self.id,
            "seat": self.seat,
            "length": self.length,
            "finished": self.finished,
            "stopped": self.stopped,
            "waiting": self.agents_to_move,
            "replay_file": self.replay_file,
            "legal": legal_moves(state) if your_turn and self.stopped is None else [],
            "log": self.log,
            "view": state_view(state, self.seat, self.names, reveal=state.round_over),
        }


class GameStore:
    """The games in play, by id, at most ``capacity`` of them.

    A new game takes the place of a finished one, or of one nobody has touched for
    ``idle_seconds``; when every place holds a game in play, new games are refused (429)
    rather than a player's game dropped.
    """

    def __init__(self, capacity: int = 64, idle_seconds: float = 1800.0, clock: Callable[[], float] = time.monotonic):
        self.capacity = capacity
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._games: OrderedDict[str, tuple[HumanGame, float]] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._games)

    def _make_room(self) -> None:
        if len(self._games) < self.capacity:
            return
        now = self._clock()
        for game_id, (game, used) in self._games.items():
            if game.finished or now - used > self.idle_seconds:
                del self._games[game_id]
                return
        raise RequestError(
            f"the server already has {self.capacity} games in play; finish one, or try again later "
            f"(a game nobody touches for {self.idle_seconds / 60:g} minutes makes room)",
            429,
        )

    def check_room(self) -> None:
        """Raise :class:`RequestError` (429) unless a new game would find a place (checked
        before the game is built, so a refused request costs nothing)."""
        with self._lock:
            self._make_room()

    def add(self, game: HumanGame) -> None:
        with self._lock:
            self._make_room()
            self._games[game.id] = (game, self._clock())

    def get(self, game_id: str) -> HumanGame:
        with self._lock:
            entry = self._games.get(game_id)
            if entry is not None:
                self._games[game_id] = (entry[0], self._clock())
                self._games.move_to_end(game_id)
        if entry is None:
            raise RequestError(
                f"no game with id {shown(game_id)} (unknown, finished long ago, or dropped when the server restarted)",
                404,
            )
        return entry[0]


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
        raise RequestError(f"unknown fields {shown(unknown)}")
    players = body.get("players", 2)
    if not is_int(players) or players not in PLAYER_COUNTS:
        raise RequestError(f"players must be 2, 3 or 4, got {shown(players)}")
    opponents = body.get("opponents", ["belief"])
    if not isinstance(opponents, list) or not opponents:
        raise RequestError("opponents must be a non-empty list")
    if len(opponents) > players - 1:
        raise RequestError(f"{len(opponents)} opponents given for {players - 1} other seats")
    opponents = opponents + [opponents[-1]] * (players - 1 - len(opponents))
    choices = [catalog.choose(o, players) for o in opponents]
    check_work(choices, players)
    rules = body.get("rules", "classic")
    if not isinstance(rules, str) or rules not in PRESETS:
        raise RequestError(f"rules must be one of {sorted(PRESETS)}, got {shown(rules)}")
    try:
        check_rules_for_table(rules, players)
    except ValueError as error:
        raise RequestError(str(error)) from None
    for text, choice in zip(opponents, choices):
        problem = rules_refusal(text, choice.rules, rules)
        if problem is not None:
            raise RequestError(problem)
    length = body.get("length", "game")
    if not isinstance(length, str) or length not in EPISODE_KINDS:
        raise RequestError(f"length must be 'round' or 'game', got {shown(length)}")
    seat = body.get("seat", 0)
    if not is_int(seat) or not 0 <= seat < players:
        raise RequestError(f"seat must be a seat in 0..{players - 1}, got {shown(seat)}")
    seed = body.get("seed")
    if seed is None:
        seed = secrets.randbelow(2**31)
    elif not is_int(seed) or not 0 <= seed < 2**63:
        raise RequestError(f"seed must be a non-negative whole number, got {shown(seed)}")
    return {"opponents": choices, "num_players": players, "seat": seat, "rules": rules, "length": length, "seed": seed}
