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

Writing goes through :func:`replay_json` (and :func:`save_replay`, which every tool uses): a
replay holding a NaN or an infinity, which JSON cannot hold and loading would refuse, is
refused before any file is touched. :func:`decision_details` leaves such numbers out of an
agent's explanation, so a recorded game always saves.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)
from typing_extensions import TypedDict

from . import engine
from .actions import NUM_ACTIONS
from .atomic_files import replacing
from .cards import CARD_VALUES, validate_deck
from .engine import MAX_PLAYERS, MIN_PLAYERS, GameState, TurnEvent
from .observation import encode_observation
from .rules import MAX_TOKENS_TO_WIN, PRESETS, Rules
from .schema import dotted, explain, shown
from .strict_json import read_json

REPLAY_FORMAT = "loveletter-replay"
REPLAY_VERSION = 1
#: ``round``: one round; ``game``: rounds until the game is won; ``rounds``: rounds of a game
#: that was stopped before anyone won (``winners`` is then empty).
EPISODE_KINDS = ("round", "game", "rounds")
#: Files larger than this are refused before parsing (a whole game is a few tens of KiB).
MAX_REPLAY_BYTES = 2_000_000
_MAX_ROUNDS = 64  # a 2-player classic game ends after at most 13 rounds; this leaves room for any preset


#: Longest agent name: the longest path Linux opens (a checkpoint agent is named by its path), so
#: every replay the tools write reads back. (A viewer may show fewer: it repeats names every move.)
MAX_NAME_CHARS = 4096


class ReplayError(ValueError):
    """A replay that cannot be read, does not replay, or cannot be written (a NaN in it): the
    message says where and why."""


# The classes below are also the schema of the JSON file: a file is checked against their field
# types (strict types: no "3" for 3, no true for 1; no NaN or infinity; no unknown keys) by
# pydantic when it is read. Code that builds them directly is trusted and not checked.
Probability = Annotated[StrictFloat, Field(ge=-1e-6, le=1 + 1e-6)]


class Details(TypedDict, total=False):
    """What an agent reported about one decision (see :func:`decision_details`)."""

    probabilities: dict[str, Probability]
    value: StrictFloat
    hand_beliefs: dict[str, Annotated[list[Probability], Field(min_length=8, max_length=8)]]


@dataclass
class AgentInfo:
    """Who sat at one seat: ``name`` for display, ``spec`` that rebuilds the agent (a bot
    name with options, a checkpoint path; ``None`` for a person), its ``options`` and ``seed``."""

    name: Annotated[StrictStr, Field(max_length=MAX_NAME_CHARS)]
    spec: StrictStr | None = None
    options: dict[str, JsonValue] = field(default_factory=dict)
    seed: StrictInt | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec, "options": dict(self.options), "seed": self.seed}


@dataclass
class Step:
    """One decision: ``player`` (a seat) played ``action``; ``details`` is what the agent
    reported about its choice (JSON-ready, see :func:`decision_details`), or ``None``."""

    player: StrictInt
    action: Annotated[StrictInt, Field(ge=0, lt=NUM_ACTIONS)]
    details: Details | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"player": self.player, "action": self.action}
        if self.details:
            d["details"] = self.details
        return d


@dataclass
class RoundRecord:
    """One round: its ``deck`` (16 values, top first), who started, and every step."""

    deck: Annotated[tuple[int, ...], PlainValidator(validate_deck)]
    first_player: StrictInt
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
        """The replay as compact JSON text (:func:`replay_json`: refused if it holds a non-finite number)."""
        return replay_json(self)

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
        **({} if rules.in_play is None else {"in_play": list(rules.in_play), "rung_players": rules.rung_players}),
    }


def _preset(data: Any) -> Any:
    """A preset name as the rules it names."""
    if not isinstance(data, str):
        return data
    if data not in PRESETS:
        raise ValueError(f"unknown preset {shown(data)}; presets are {sorted(PRESETS)}")
    return rules_to_dict(PRESETS[data])


# Strictness comes from the field types: a strict model would take only instances for the dataclasses.
_FILE_RULES = ConfigDict(extra="forbid", allow_inf_nan=False)


class _RulesFile(BaseModel):
    model_config = _FILE_RULES

    name: Annotated[StrictStr, Field(max_length=64)] = "custom"
    tokens_to_win: Annotated[
        list[Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS_TO_WIN)]], Field(min_length=3, max_length=3)
    ]
    discard_sum_tiebreak: StrictBool
    king_ignores_handmaid: StrictBool
    in_play: list[Annotated[StrictInt, Field(ge=1, le=8)]] | None = None
    rung_players: Annotated[StrictInt, Field(ge=2, le=4)] = 2


def _rules_of(file: _RulesFile) -> Rules:
    """The :class:`Rules` a checked ``rules`` entry describes."""
    fields = file.model_dump()
    fields["tokens_to_win"] = tuple(file.tokens_to_win)
    fields["in_play"] = None if file.in_play is None else tuple(file.in_play)
    try:
        return Rules(**fields)
    except ValueError as error:  # a card set no rung can hold: too many copies, too few cards
        raise ReplayError(f"rules: {error}") from None


def rules_from_dict(data: Any) -> Rules:
    """The rules a replay's ``rules`` entry names: a preset name, or every field as
    :func:`rules_to_dict` writes them. Raises :class:`ReplayError` naming a bad field."""
    try:
        file = _RulesFile.model_validate(_preset(data))
    except ValidationError as exc:
        raise ReplayError(explain(exc, lambda loc: dotted(("rules", *loc)))) from None
    except ValueError as error:
        raise ReplayError(f"rules: {error}") from None
    return _rules_of(file)


class _Result(TypedDict):
    round_winners: list[list[StrictInt]]
    winners: list[StrictInt]
    tokens: list[StrictInt]


class _ReplayFile(BaseModel):
    """A replay's JSON form (``format`` and ``version`` are checked first, by :func:`replay_from_dict`)."""

    model_config = _FILE_RULES

    format: str
    version: int
    num_players: Annotated[StrictInt, Field(ge=MIN_PLAYERS, le=MAX_PLAYERS)]
    rules: Annotated[_RulesFile, BeforeValidator(_preset)]
    episode: Literal["round", "game", "rounds"]
    agents: list[AgentInfo]
    rounds: Annotated[list[RoundRecord], Field(min_length=1, max_length=_MAX_ROUNDS)]
    result: _Result
    metadata: dict[str, JsonValue] = {}


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
    # JSON holds no NaN or infinity, and a replay file holding one would not load: an explanation
    # with such a number says nothing about the move, which is recorded without it.
    spoiled = [key for key, value in details.items() if _first_non_finite(value, ()) is not None]
    if spoiled:
        warnings.warn(
            f"{type(agent).__name__} explained a move with numbers that are not finite (NaN or infinity) in its "
            f"{' and '.join(spoiled)}; the replay records the move without them",
            RuntimeWarning,
            stacklevel=2,
        )
        for key in spoiled:
            del details[key]
    return details or None


class _ReplayParts(BaseModel):
    """A replay's metadata and one step's details as the file holds them: the rules
    :func:`load_replay` reads them by (JSON types only, no NaN or infinity, no unknown details key)."""

    model_config = _FILE_RULES

    metadata: dict[str, JsonValue] = {}
    details: Details | None = None


def _checked_part(name: str, value: Any) -> Any:
    try:
        return getattr(_ReplayParts.model_validate({name: value}), name)
    except ValidationError as exc:
        raise ReplayError(f"{name} cannot be written to a replay: {explain(exc, _where)}") from None


def checked_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """``metadata`` as a replay file holds it, checked when given: a value the file cannot hold
    would otherwise surface only when the episode is saved, and lose the whole replay.

    Raises:
        ReplayError: ``metadata`` is no mapping, or naming the field that is no finite JSON value
            (a numpy number among them: give ``int(x)`` or ``float(x)``).
    """
    if metadata is not None and not isinstance(metadata, Mapping):  # dict() would fail naming nothing
        raise ReplayError(f"metadata must be a dict of JSON values, got {shown(metadata)}")
    return dict(_checked_part("metadata", dict(metadata or {})))


def checked_details(details: Mapping[str, Any], state: GameState | None, where: str) -> Details:
    """``details`` for the move about to be played on ``state``, as a replay file holds them
    (with no ``state``, no move to come, their form alone is checked).

    Raises:
        ReplayError: naming the problem: an unknown key, a number that is not finite, or
            probabilities or beliefs of moves or seats the file could not replay.
    """
    if not isinstance(details, Mapping):
        raise ReplayError(f"{where}: details must be a dict such as {{'value': 0.5}}, got {shown(details)}")
    checked = cast(Details, _checked_part("details", dict(details)))
    if state is not None:
        _check_details(checked, state, where)
    return checked


def _check_details(details: Details, state: GameState, where: str) -> None:
    """Details may name only the legal moves and the other seats (their types are the schema's)."""
    probabilities = details.get("probabilities") or {}
    if not set(probabilities) <= {str(a) for a in engine.legal_actions(state)}:
        raise ReplayError(
            f"{where}: details.probabilities must map legal actions to probabilities, got {shown(probabilities)}"
        )
    beliefs = details.get("hand_beliefs") or {}
    if not set(beliefs) <= {str(p) for p in range(state.num_players) if p != state.current}:
        raise ReplayError(
            f"{where}: details.hand_beliefs must map other seats to 8 probabilities, got {shown(beliefs)}"
        )


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
        self.metadata = checked_metadata(metadata)
        self.rounds: list[RoundRecord] = []

    def start_round(self, state: GameState) -> None:
        """Note the round just dealt on ``state`` (its deck and first player)."""
        if state.turn != 0 or state.round_over:
            raise ValueError("start_round() must be called right after a round is dealt, before any step")
        self.rounds.append(RoundRecord(tuple(state.deck), state.current))

    def record(self, state: GameState, action: int, details: Mapping[str, Any] | None = None) -> None:
        """Note that the player to act on ``state`` plays ``action`` (call before stepping).

        Raises:
            ReplayError: ``details`` the file cannot hold (see :func:`checked_details`); nothing is
                recorded. Found only when the episode is saved (or loaded), they would lose the
                whole replay.
        """
        if not self.rounds:
            raise ValueError("call start_round() before record()")
        steps = self.rounds[-1].steps
        where = f"round {len(self.rounds)}, step {len(steps) + 1}"
        steps.append(Step(state.current, int(action), checked_details(details, state, where) if details else None))

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
    details: Details | None


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


def _where(loc: Sequence[Any]) -> str:
    """Where an error is: ``("rounds", 1, "steps", 4, "action")`` -> ``round 2, step 5: action``."""
    parts = [p for p in loc if p not in _JSON_VALUE_TAGS]
    place = ""
    for kind, name in (("rounds", "round"), ("steps", "step")):
        if len(parts) > 1 and parts[0] == kind and isinstance(parts[1], int):
            place += f"{', ' if place else ''}{name} {parts[1] + 1}"
            parts = parts[2:]
    path = dotted(parts)
    return f"{place}: {path}" if place and path else place or path or "the replay"


# The parts pydantic's JsonValue adds to an error's place (the type it was read as).
_JSON_VALUE_TAGS = {"list", "dict", "str", "bool", "int", "float"}


def replay_from_dict(data: Any) -> Replay:
    """Build a :class:`Replay` from its JSON form and re-simulate it.

    Raises :class:`ReplayError` naming the first problem: a missing or malformed field,
    another format or version, or the first step that does not replay.
    """
    if not isinstance(data, dict):
        raise ReplayError(f"a replay is a JSON object, got {type(data).__name__}")
    if data.get("format") != REPLAY_FORMAT:
        raise ReplayError(
            f"not a Love Letter replay (format is {shown(data.get('format'))}, expected {REPLAY_FORMAT!r})"
        )
    version = data.get("version")
    if type(version) is not int or version != REPLAY_VERSION:  # true and 1.0 are equal to 1 in Python
        raise ReplayError(f"replay version {shown(version)} is not supported (this code reads {REPLAY_VERSION})")
    try:
        file = _ReplayFile.model_validate(data)
    except ValidationError as exc:
        raise ReplayError(explain(exc, _where)) from None
    n = file.num_players
    if len(file.agents) != n:
        raise ReplayError(f"agents lists {len(file.agents)} seats for a {n}-player table")
    for r, rnd in enumerate(file.rounds):
        if not 0 <= rnd.first_player < n:
            raise ReplayError(f"round {r + 1}: first_player must be a seat in 0..{n - 1}, got {rnd.first_player}")
    rules = _rules_of(file.rules)
    replay = Replay(n, rules, file.episode, file.agents, file.rounds, dict(file.result), file.metadata)
    validate_replay(replay)
    return replay


def parse_replay(text: str | bytes) -> Replay:
    """Parse and re-simulate a replay from JSON text (see :func:`replay_from_dict`), read
    strictly (:func:`loveletter_env.strict_json.read_json`) and at most
    :data:`MAX_REPLAY_BYTES` long."""
    size = len(text)
    if isinstance(text, str) and size <= MAX_REPLAY_BYTES:
        # The limit is in bytes, as a file or upload of this text is measured; a character takes
        # at least one, so longer text is too large already. A lone surrogate counts its 3 bytes
        # here and is left for the JSON reader to name.
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_REPLAY_BYTES:
        raise ReplayError(f"the replay is too large: the limit is {MAX_REPLAY_BYTES:,} bytes")
    try:
        data = read_json(text)
    except ValueError as exc:
        raise ReplayError(f"not valid JSON: {exc}") from None
    return replay_from_dict(data)


def read_replay_text(path: str | os.PathLike) -> bytes:
    """The text of the replay file at ``path``, read no further than one byte past the size
    limit (so :func:`parse_replay` refuses an oversized file without reading all of it).
    Raises :class:`ReplayError` saying why a path cannot be read (``"it is not a regular
    file"``, the system's reason)."""
    path = Path(path)
    try:
        # Looking can fail as reading can (a name too long, a folder without access): both in the try.
        if path.exists() and not path.is_file():
            # Opening a FIFO waits for a writer forever; a device may never end.
            raise ReplayError("it is not a regular file")
        with path.open("rb") as file:
            return file.read(MAX_REPLAY_BYTES + 1)  # at most: a file may grow while it is read
    except OSError as exc:
        raise ReplayError(exc.strerror or str(exc)) from None


def load_replay(path: str | os.PathLike) -> Replay:
    """Read, check and re-simulate the replay file at ``path``.

    Raises :class:`ReplayError` for a missing, oversized, malformed or tampered file, or a
    path that is not a regular file (a folder, pipe or device), naming the file and the
    first problem.
    """
    try:
        text = read_replay_text(path)
    except ReplayError as exc:
        raise ReplayError(f"cannot read replay {str(path)!r}: {exc}") from None
    try:
        return parse_replay(text)
    except ReplayError as exc:
        raise ReplayError(f"{str(path)!r}: {exc}") from None


def _first_non_finite(value: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], float] | None:
    """Where in ``value`` (a JSON-ready structure) the first NaN or infinity is, and that number."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (loc, value)
    items: Any = value.items() if isinstance(value, Mapping) else ()
    if isinstance(value, (list, tuple)):
        items = enumerate(value)
    for key, item in items:
        found = _first_non_finite(item, (*loc, key))
        if found is not None:
            return found
    return None


def replay_json(replay: Replay, indent: int | None = None) -> str:
    """``replay`` as JSON text: what :func:`save_replay` writes (``indent`` spaces a level;
    ``None``, the default, for compact text).

    Raises :class:`ReplayError` naming the place of a NaN or infinite number (JSON has none, and
    :func:`load_replay` would refuse the file), of a value JSON cannot hold at all, or of one the
    file's schema refuses (an unknown details key, an agent name too long): a replay built in
    code is written only in a form that loads again.
    """
    data = replay.to_dict()
    found = _first_non_finite(data, ())
    if found is not None:
        loc, number = found
        raise ReplayError(
            f"cannot write the replay: {_where(loc)} is {number!r}, and a replay holds finite numbers only"
        )
    try:
        if indent is None:
            text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        else:
            text = json.dumps(data, indent=indent, allow_nan=False)
    except (TypeError, ValueError) as exc:  # a value of a type JSON has not (a numpy number, a set...)
        raise ReplayError(f"cannot write the replay: {exc}") from None
    try:
        _ReplayFile.model_validate(data)  # the schema load_replay reads the file by
    except ValidationError as exc:
        raise ReplayError(f"cannot write the replay: {explain(exc, _where)}") from None
    return text


def save_replay(replay: Replay, path: str | os.PathLike) -> Path:
    """Write ``replay`` as JSON to ``path`` (folders created; written to a temporary file
    and renamed, so a crash never leaves half a file).

    Every tool that saves replays writes through here. A replay that cannot be written as JSON
    (see :func:`replay_json`: a NaN, say) raises :class:`ReplayError` before anything on disk
    is touched: no folder is made, and a file already at ``path`` stays as it was.
    """
    text = replay_json(replay, indent=1) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(text: str) -> str:
    """``text`` reduced to letters, digits, ``.``, ``_`` and ``-`` (for replay file names)."""
    return _UNSAFE.sub("-", text).strip("-.") or "replay"
