"""Replays: a whole game (or one round) as a small, versioned JSON file.

A replay holds what it takes to play the game again on the engine and nothing that the
engine can work out by itself:

* ``num_players``, the ``rules`` (preset name and every field) and the ``episode`` kind;
* ``agents``: one entry per seat (``name``, the ``spec`` that builds it, ``options``, ``seed``);
* ``rounds``: each round's ``deck`` (top card first), ``first_player`` and ``steps``, every
  step the acting ``player``, the ``action`` index and optional ``details`` (what the agent
  thought: ``probabilities`` over legal moves, a ``value`` estimate, ``hand_beliefs``);
* ``result``: every round's winners, the game's winners and the final tokens;
* ``metadata``: free-form notes (which tool wrote the file, seeds, episode index).

Loading re-simulates every step through :mod:`loveletter_env.engine`. A file that was
corrupted or edited by hand (an illegal move, a wrong actor, a result that does not
follow from the moves) is refused with a :class:`ReplayError` that names the first bad
step. :class:`ReplayRecorder` builds replays as a game is played;
:func:`replay_frames` walks a replay one move at a time for viewers, and
:func:`iter_decisions` gives every decision with the observation its seat had.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import engine
from .actions import NUM_ACTIONS, describe_action
from .cards import CARD_VALUES, validate_deck
from .engine import MAX_PLAYERS, MIN_PLAYERS, GameState, TurnEvent
from .observation import encode_observation
from .rules import PRESETS, Rules

REPLAY_FORMAT = "loveletter-replay"
REPLAY_VERSION = 1
#: ``round``: one round; ``game``: rounds until the game is won; ``rounds``: rounds of a game
#: that was stopped before anyone won (``winners`` is then empty).
EPISODE_KINDS = ("round", "game", "rounds")
#: Files larger than this are refused before parsing (a whole game is a few tens of KiB).
MAX_REPLAY_BYTES = 2_000_000
_MAX_ROUNDS = 64  # a 2-player classic game ends after at most 13 rounds; this leaves room for any preset


class ReplayError(ValueError):
    """A replay that cannot be read or does not replay: the message says where and why."""


@dataclass
class AgentInfo:
    """Who sat at one seat: ``name`` for display, ``spec`` that rebuilds the agent (a bot
    name with options, a checkpoint path; ``None`` for a person), its ``options`` and ``seed``."""

    name: str
    spec: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec, "options": dict(self.options), "seed": self.seed}


@dataclass
class Step:
    """One decision: ``player`` (a seat) played ``action``; ``details`` is what the agent
    reported about its choice (JSON-ready, see :func:`decision_details`), or ``None``."""

    player: int
    action: int
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"player": self.player, "action": self.action}
        if self.details:
            d["details"] = self.details
        return d


@dataclass
class RoundRecord:
    """One round: its ``deck`` (16 values, top first), who started, and every step."""

    deck: tuple[int, ...]
    first_player: int
    steps: list[Step] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"deck": list(self.deck), "first_player": self.first_player, "steps": [s.to_dict() for s in self.steps]}


@dataclass
class Replay:
    """A recorded game or round. ``result`` is ``{"round_winners": [[seats], ...],
    "winners": [seats], "tokens": [per seat]}``; ``winners`` are the round's winners for a
    ``"round"`` episode and the game's for a ``"game"``."""

    num_players: int
    rules: Rules
    episode: str
    agents: list[AgentInfo]
    rounds: list[RoundRecord]
    result: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form written by :func:`save_replay` (a copy: editing it leaves the replay as it is)."""
        return copy.deepcopy(
            {
                "format": REPLAY_FORMAT,
                "version": REPLAY_VERSION,
                "num_players": self.num_players,
                "rules": rules_to_dict(self.rules),
                "episode": self.episode,
                "agents": [a.to_dict() for a in self.agents],
                "rounds": [r.to_dict() for r in self.rounds],
                "result": self.result,
                "metadata": self.metadata,
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @property
    def num_steps(self) -> int:
        return sum(len(r.steps) for r in self.rounds)


# Rules <-> JSON ---------------------------------------------------------------------


def rules_to_dict(rules: Rules) -> dict[str, Any]:
    """Every field of ``rules``, so a replay does not depend on what a preset name means later."""
    return {
        "name": rules.name,
        "tokens_to_win": list(rules.tokens_to_win),
        "discard_sum_tiebreak": rules.discard_sum_tiebreak,
        "king_ignores_handmaid": rules.king_ignores_handmaid,
        **({} if rules.in_play is None else {"in_play": list(rules.in_play)}),
    }


def _rules_from(data: Any) -> Rules:
    if isinstance(data, str):
        if data not in PRESETS:
            raise ReplayError(f"rules: unknown preset {data!r}; presets are {sorted(PRESETS)}")
        return PRESETS[data]
    if not isinstance(data, dict):
        raise ReplayError(f"rules must be a preset name or an object, got {type(data).__name__}")
    tokens = data.get("tokens_to_win")
    if not (isinstance(tokens, list) and len(tokens) == 3 and all(_is_int(t) and 1 <= t <= 50 for t in tokens)):
        raise ReplayError(f"rules.tokens_to_win must be three whole numbers in 1..50, got {tokens!r}")
    flags = {k: data.get(k) for k in ("discard_sum_tiebreak", "king_ignores_handmaid")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ReplayError(f"rules.{key} must be true or false, got {value!r}")
    name = data.get("name", "custom")
    if not isinstance(name, str) or len(name) > 64:
        raise ReplayError(f"rules.name must be a short string, got {name!r}")
    in_play = data.get("in_play")
    if in_play is not None and not (isinstance(in_play, list) and all(_is_int(c) for c in in_play)):
        raise ReplayError(f"rules.in_play must be a list of card values, got {in_play!r}")
    try:
        return Rules(
            name=name,
            tokens_to_win=tuple(tokens),
            in_play=None if in_play is None else tuple(in_play),
            **flags,  # type: ignore[arg-type]
        )
    except ValueError as error:
        raise ReplayError(f"rules: {error}") from None


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_prob(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and -1e-6 <= x <= 1 + 1e-6


# Decision details -------------------------------------------------------------------


def decision_details(agent: Any, observation: Mapping[str, Any], actor: int, num_players: int) -> dict[str, Any] | None:
    """What ``agent`` can say about its coming decision, in the replay's JSON form.

    Agents that offer ``explain(observation) -> dict`` report any of ``probabilities``
    (action index -> probability, legal moves only), ``value`` (the expected outcome: a
    network's estimate of the -1..1 reward, which may stray a little outside it) and
    ``hand_beliefs`` (seat offset -> {card value: probability}). Offsets are turned into
    seats here, so the file reads the same from every seat. Call it before ``act``:
    ``explain`` never changes the agent. Agents without ``explain`` give ``None``.
    """
    explain = getattr(agent, "explain", None)
    if not callable(explain):
        return None
    raw = explain(observation)
    if not raw:
        return None
    details: dict[str, Any] = {}
    if raw.get("probabilities") is not None:
        details["probabilities"] = {str(int(a)): round(float(p), 4) for a, p in raw["probabilities"].items()}
    if raw.get("value") is not None:
        details["value"] = round(float(raw["value"]), 4)
    if raw.get("hand_beliefs"):
        details["hand_beliefs"] = {
            str((actor + int(offset)) % num_players): [round(float(dist.get(v, 0.0)), 4) for v in CARD_VALUES]
            for offset, dist in raw["hand_beliefs"].items()
        }
    return details or None


def _check_details(details: Any, state: GameState, where: str) -> None:
    if not isinstance(details, dict):
        raise ReplayError(f"{where}: details must be an object, got {type(details).__name__}")
    unknown = set(details) - {"probabilities", "value", "hand_beliefs"}
    if unknown:
        raise ReplayError(f"{where}: unknown details {sorted(unknown)}")
    legal = {str(a) for a in engine.legal_actions(state)}
    probs = details.get("probabilities")
    if probs is not None and (
        not isinstance(probs, dict) or not all(k in legal and _is_prob(p) for k, p in probs.items())
    ):
        raise ReplayError(f"{where}: details.probabilities must map legal actions to probabilities, got {probs!r}")
    value = details.get("value")
    if value is not None and not (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ):
        raise ReplayError(f"{where}: details.value must be a finite number, got {value!r}")
    beliefs = details.get("hand_beliefs")
    if beliefs is not None:
        seats = {str(p) for p in range(state.num_players) if p != state.current}
        if not isinstance(beliefs, dict) or not all(
            k in seats and isinstance(v, list) and len(v) == len(CARD_VALUES) and all(map(_is_prob, v))
            for k, v in beliefs.items()
        ):
            raise ReplayError(f"{where}: details.hand_beliefs must map other seats to 8 probabilities, got {beliefs!r}")


# Recording --------------------------------------------------------------------------


class ReplayRecorder:
    """Builds a :class:`Replay` while a game is played on the engine.

    Call :meth:`start_round` after each deal, :meth:`record` before each
    ``engine.step`` and :meth:`finish` once the episode is over::

        recorder = ReplayRecorder(num_players=2, rules="classic", episode="round", agents=[...])
        state = engine.new_game(2, deck, first, "classic")
        recorder.start_round(state)
        while not state.round_over:
            action = ...
            recorder.record(state, action)
            engine.step(state, action)
        replay = recorder.finish(state)
    """

    def __init__(
        self,
        num_players: int,
        rules: str | Rules = "classic",
        episode: str = "game",
        agents: Sequence[AgentInfo] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ):
        if episode not in EPISODE_KINDS:
            raise ValueError(f"episode must be one of {EPISODE_KINDS}, got {episode!r}")
        self.num_players = num_players
        self.rules = engine.resolve_rules(rules)
        self.episode = episode
        self.agents = list(agents) if agents is not None else [AgentInfo(f"player_{i}") for i in range(num_players)]
        if len(self.agents) != num_players:
            raise ValueError(f"{len(self.agents)} agent entries for {num_players} seats")
        self.metadata = dict(metadata or {})
        self.rounds: list[RoundRecord] = []

    def start_round(self, state: GameState) -> None:
        """Note the round just dealt on ``state`` (its deck and first player)."""
        if state.turn != 0 or state.round_over:
            raise ValueError("start_round() must be called right after a round is dealt, before any step")
        self.rounds.append(RoundRecord(tuple(state.deck), state.current))

    def record(self, state: GameState, action: int, details: Mapping[str, Any] | None = None) -> None:
        """Note that the player to act on ``state`` plays ``action`` (call before stepping)."""
        if not self.rounds:
            raise ValueError("call start_round() before record()")
        self.rounds[-1].steps.append(Step(state.current, int(action), dict(details) if details else None))

    def discard_last(self) -> None:
        """Forget the last recorded step (its ``engine.step`` raised, so it never happened)."""
        self.rounds[-1].steps.pop()

    def finish(self, state: GameState) -> Replay:
        """The finished :class:`Replay`; ``state`` is the game at the end of the episode."""
        if not state.round_over:
            raise ValueError("the round is not over: finish() takes the state at the end of the episode")
        return Replay(
            self.num_players,
            self.rules,
            self.episode,
            list(self.agents),
            list(self.rounds),
            result_of(state, self.episode, self._round_winners()),
            dict(self.metadata),
        )

    def _round_winners(self) -> list[list[int]]:
        # Re-derived by simulating what was recorded, which also checks the recording.
        draft = Replay(self.num_players, self.rules, self.episode, self.agents, self.rounds, {}, {})
        return [
            list(f.state.round_winners)
            for f in replay_frames(draft, check_result=False)
            if f.event is not None and f.state.round_over
        ]


def result_of(state: GameState, episode: str, round_winners: list[list[int]]) -> dict[str, Any]:
    """The ``result`` entry for a finished episode."""
    winners = state.round_winners if episode == "round" else state.game_winners
    return {"round_winners": round_winners, "winners": list(winners), "tokens": list(state.tokens)}


# Re-simulation ----------------------------------------------------------------------


@dataclass
class Frame:
    """One moment of a replay: the deal of a round (``event`` is ``None``) or the state
    right after a step. ``state`` is a private copy; ``details`` are the step's details."""

    round_index: int
    step_index: int  # -1 for the deal
    state: GameState
    event: TurnEvent | None
    step: Step | None


def replay_frames(replay: Replay, check_result: bool = True) -> Iterator[Frame]:
    """Play ``replay`` on the engine, yielding the deal of every round and the state after
    every step. Raises :class:`ReplayError` at the first step that does not replay."""
    state: GameState | None = None
    n = replay.num_players
    round_winners: list[list[int]] = []
    for r, rnd in enumerate(replay.rounds):
        where = f"round {r + 1}"
        try:
            if state is None:
                state = engine.new_game(n, rnd.deck, rnd.first_player, replay.rules)
            else:
                expected = min(state.round_winners)
                if rnd.first_player != expected:
                    raise ReplayError(
                        f"{where}: first_player is player_{rnd.first_player}, but the previous round's winner "
                        f"player_{expected} starts it"
                    )
                engine.start_round(state, rnd.deck)
        except ReplayError:
            raise
        except ValueError as exc:
            raise ReplayError(f"{where}: {exc}") from None
        yield Frame(r, -1, state.clone(), None, None)
        for i, step in enumerate(rnd.steps):
            at = f"{where}, step {i + 1}"
            if state.round_over:
                raise ReplayError(f"{at}: the round was already over after step {i}; the file has extra steps")
            if step.player != state.current:
                raise ReplayError(f"{at}: the step is by player_{step.player}, but player_{state.current} is to act")
            if step.details is not None:
                _check_details(step.details, state, at)
            try:
                event = engine.step(state, step.action)
            except ValueError as exc:
                raise ReplayError(f"{at}: {exc}") from None
            yield Frame(r, i, state.clone(), event, step)
        if not state.round_over:
            raise ReplayError(f"{where}: the steps end after step {len(rnd.steps)}, but the round is not over")
        round_winners.append(list(state.round_winners))
        if state.game_over and r + 1 < len(replay.rounds):
            raise ReplayError(f"round {r + 2}: the game was already over after round {r + 1}")
    if state is None:
        raise ReplayError("the replay has no rounds")
    if replay.episode == "round" and len(replay.rounds) != 1:
        raise ReplayError(f"a 'round' replay holds exactly one round, this one holds {len(replay.rounds)}")
    if replay.episode == "rounds" and state.game_over:
        raise ReplayError("the game is over: a replay of a whole game has episode 'game', not 'rounds'")
    if replay.episode == "game" and not state.game_over:
        raise ReplayError(f"the game is not over after round {len(replay.rounds)}: a 'game' replay ends with the game")
    if check_result:
        _check_result(replay, state, round_winners)


def _check_result(replay: Replay, final: GameState, round_winners: list[list[int]]) -> None:
    expected = result_of(final, replay.episode, round_winners)
    for key in ("round_winners", "winners", "tokens"):
        if replay.result.get(key) != expected[key]:
            raise ReplayError(
                f"result.{key} is {replay.result.get(key)!r}, but replaying the moves gives {expected[key]!r}"
            )


@dataclass
class Decision:
    """One decision of a replay as the deciding seat saw it: its env ``observation``
    (``{"observation", "action_mask"}``, exactly what the env would have given that
    agent), the ``action`` taken, and the ``agent`` who took it."""

    round_index: int
    step_index: int
    player: int
    agent: AgentInfo
    observation: dict[str, np.ndarray]
    action: int
    details: dict[str, Any] | None


def iter_decisions(replay: Replay) -> Iterator[Decision]:
    """Every decision of ``replay``, in order, with the acting seat's observation: the
    (observation, action) pairs that imitation learning trains on."""
    before: GameState | None = None
    for frame in replay_frames(replay):
        if frame.step is not None and before is not None:
            player = frame.step.player
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            mask[list(engine.legal_actions(before))] = 1
            observation = {"observation": encode_observation(before, player), "action_mask": mask}
            yield Decision(
                frame.round_index,
                frame.step_index,
                player,
                replay.agents[player],
                observation,
                frame.step.action,
                frame.step.details,
            )
        before = frame.state


def validate_replay(replay: Replay) -> GameState:
    """Re-simulate ``replay`` and return the final state; :class:`ReplayError` if it does not replay."""
    final = None
    for frame in replay_frames(replay):
        final = frame.state
    assert final is not None
    return final


# Parsing, saving, loading -----------------------------------------------------------


def _require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    if key not in data:
        raise ReplayError(f"{where}{key} is missing")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ReplayError(f"{where}{key} must be {names}, got {value!r}")
    return value


def replay_from_dict(data: Any) -> Replay:
    """Build a :class:`Replay` from its JSON form and re-simulate it.

    Raises :class:`ReplayError` naming the first problem: a missing or malformed field,
    another format or version, or the first step that does not replay.
    """
    if not isinstance(data, dict):
        raise ReplayError(f"a replay is a JSON object, got {type(data).__name__}")
    if data.get("format") != REPLAY_FORMAT:
        raise ReplayError(f"not a Love Letter replay (format is {data.get('format')!r}, expected {REPLAY_FORMAT!r})")
    if data.get("version") != REPLAY_VERSION:
        raise ReplayError(f"replay version {data.get('version')!r} is not supported (this code reads {REPLAY_VERSION})")
    n = _require(data, "num_players", int)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise ReplayError(f"num_players must be 2, 3 or 4, got {n}")
    rules = _rules_from(data.get("rules"))
    episode = data.get("episode")
    if episode not in EPISODE_KINDS:
        raise ReplayError(f"episode must be one of {EPISODE_KINDS}, got {episode!r}")
    agents_data = _require(data, "agents", list)
    if len(agents_data) != n:
        raise ReplayError(f"agents lists {len(agents_data)} seats for a {n}-player table")
    agents = []
    for seat, a in enumerate(agents_data):
        where = f"agents[{seat}]."
        if not isinstance(a, dict):
            raise ReplayError(f"agents[{seat}] must be an object, got {a!r}")
        name = _require(a, "name", str, where)
        spec = a.get("spec")
        options = a.get("options") or {}
        seed = a.get("seed")
        if spec is not None and not isinstance(spec, str):
            raise ReplayError(f"{where}spec must be a string or null, got {spec!r}")
        if not isinstance(options, dict):
            raise ReplayError(f"{where}options must be an object, got {options!r}")
        if seed is not None and not _is_int(seed):
            raise ReplayError(f"{where}seed must be a whole number or null, got {seed!r}")
        agents.append(AgentInfo(name, spec, dict(options), seed))
    rounds_data = _require(data, "rounds", list)
    if not rounds_data or len(rounds_data) > _MAX_ROUNDS:
        raise ReplayError(f"rounds must list 1..{_MAX_ROUNDS} rounds, got {len(rounds_data)}")
    rounds = []
    for r, rd in enumerate(rounds_data):
        where = f"round {r + 1}: "
        if not isinstance(rd, dict):
            raise ReplayError(f"{where}a round must be an object")
        try:
            deck = validate_deck(_require(rd, "deck", list, where))
        except ReplayError:
            raise
        except ValueError as exc:
            raise ReplayError(f"{where}{exc}") from None
        first = _require(rd, "first_player", int, where)
        if not 0 <= first < n:
            raise ReplayError(f"{where}first_player must be a seat in 0..{n - 1}, got {first}")
        steps = []
        for i, sd in enumerate(_require(rd, "steps", list, where)):
            at = f"round {r + 1}, step {i + 1}: "
            if not isinstance(sd, dict):
                raise ReplayError(f"{at}a step must be an object, got {sd!r}")
            player = _require(sd, "player", int, at)
            action = _require(sd, "action", int, at)
            if not 0 <= action < NUM_ACTIONS:
                raise ReplayError(f"{at}action must be in 0..{NUM_ACTIONS - 1}, got {action}")
            steps.append(Step(player, action, sd.get("details")))
        rounds.append(RoundRecord(deck, first, steps))
    result = _require(data, "result", dict)
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ReplayError(f"metadata must be an object, got {metadata!r}")
    replay = Replay(n, rules, episode, agents, rounds, result, metadata)
    validate_replay(replay)
    return replay


def parse_replay(text: str | bytes) -> Replay:
    """Parse and re-simulate a replay from JSON text (see :func:`replay_from_dict`)."""
    if len(text) > MAX_REPLAY_BYTES:
        raise ReplayError(f"the replay is {len(text)} bytes; the limit is {MAX_REPLAY_BYTES}")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReplayError(f"not valid JSON: {exc}") from None
    return replay_from_dict(data)


def load_replay(path: str | os.PathLike) -> Replay:
    """Read, check and re-simulate the replay file at ``path``.

    Raises :class:`ReplayError` for a missing, oversized, malformed or tampered file,
    naming the file and the first problem.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_REPLAY_BYTES:
            raise ReplayError(f"{str(path)!r} is {size} bytes; the limit is {MAX_REPLAY_BYTES}")
        text = path.read_bytes()
    except OSError as exc:
        raise ReplayError(f"cannot read replay {str(path)!r}: {exc.strerror or exc}") from None
    try:
        return parse_replay(text)
    except ReplayError as exc:
        raise ReplayError(f"{str(path)!r}: {exc}") from None


def save_replay(replay: Replay, path: str | os.PathLike) -> Path:
    """Write ``replay`` as JSON to ``path`` (folders created; written to a temporary file
    and renamed, so a crash never leaves half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(replay.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(text: str) -> str:
    """``text`` reduced to letters, digits, ``.``, ``_`` and ``-`` (for replay file names)."""
    return _UNSAFE.sub("-", text).strip("-.") or "replay"


def step_description(replay: Replay, step: Step) -> str:
    """A step's move in words (``"Guard on player_1, naming Priest"``)."""
    return describe_action(step.action, step.player, replay.num_players)
