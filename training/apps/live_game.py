"""A person's game against agents, one move at a time: what the terminal
(:mod:`training.apps.terminal`) and the web app (:mod:`training.apps.web.games`) both play.

:class:`LiveGame` deals from its seed, lets the agents play until it is the person's
turn (or the round is over), takes the person's move, narrates every move as the
person's seat saw it into :attr:`LiveGame.log`, and records the game as a replay. The
caller only asks for moves and shows the log: the terminal reads them from standard
input, the web app from requests. An agent that fails (its code raises, or it answers an
illegal move) stops the game (:class:`BotFailed`); the person never moves for another seat.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from loveletter_env import engine
from loveletter_env.actions import ACTION_GUESS, NUM_ACTIONS
from loveletter_env.agents.base import AgentError, checked_act
from loveletter_env.cards import CARD_COUNTS
from loveletter_env.engine import GameState
from loveletter_env.observation import encode_observation
from loveletter_env.render import narrate, round_summary
from loveletter_env.replay import AgentInfo, Replay, ReplayError, ReplayRecorder, checked_details, decision_details
from loveletter_env.validation import check_choice, check_int, check_num_players, check_seat, check_seed, is_int, shown

#: How a replay names the person's seat.
HUMAN = "human"


class NotNow(ValueError):
    """A move or a deal asked for when the game is not there: the round or the game is over,
    or the round is still being played."""


class IllegalMove(ValueError):
    """A move that is not one of the person's legal moves."""


class BotFailed(AgentError):
    """An agent failed to choose a move: it raised, or answered a move that is not legal.
    The game is stopped (:attr:`LiveGame.stopped` says why) and takes no more moves."""


#: The most characters of a failing agent's own error text a game shows (its first line).
MAX_FAILURE_TEXT = 200

#: Why the apps do not offer a Guard guess that :func:`unseen_guesses` leaves out.
SEEN_GUESS_REASON = "you can see every copy: in your hand, face up or discarded"


def unseen_guesses(state: GameState, seat: int) -> list[int]:
    """The cards ``seat`` may name with a Guard and could still find in another hand: the
    values 2..8 with a copy that ``seat`` cannot see (not in its own hand, face up or in
    anyone's discards).

    The rules keep naming any other card legal (a sure miss): the terminal and the web app
    offer only these, so that both leave out the same names.
    """
    seen = [*state.hand_of(seat), *state.face_up, *(card for pile in state.discards for card in pile)]
    # The nameable values come from the action table, so a new card needs no change here.
    return [value for value in sorted(set(ACTION_GUESS) - {0}) if seen.count(value) < CARD_COUNTS[value]]


def observation_of(state: GameState, seat: int) -> dict[str, np.ndarray]:
    """The env's observation dict for ``seat`` (mask all zeros when not to act)."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    if seat == state.current and not state.round_over:
        mask[list(engine.legal_actions(state))] = 1
    return {"observation": encode_observation(state, seat), "action_mask": mask}


def rules_refusal(label: str, agent_rules: object, rules: str) -> str | None:
    """Why an agent that plays only ``agent_rules`` (a solved policy: the rung it was solved
    for) cannot sit at a table of ``rules``, or ``None`` when it can (``agent_rules`` is not a
    preset name: the agent plays any rules)."""
    if not isinstance(agent_rules, str) or agent_rules == rules:
        return None
    return f"{label} plays only rules {agent_rules!r}, the rung it was solved for; choose those rules, got {rules!r}"


@dataclass
class Opponent:
    """An agent to seat: ``build(seed)`` makes it; ``name``, ``spec`` and ``options`` are how
    the replay names and rebuilds it."""

    name: str
    spec: str | None
    options: dict[str, Any]
    build: Callable[[int], Any] = field(repr=False)


def _checked_explanation(details: dict[str, Any], state: GameState, label: str) -> dict[str, Any]:
    """``details`` (the agent ``label`` explaining its move on ``state``) as a replay file holds
    them, else :class:`AgentError` naming what is wrong.

    Checked before the move, as the env's recorder checks them: the replay checks every step again
    when the game ends, and an explanation naming an illegal move failed there, the game's replay
    lost and no agent named. The message leaves out the values the agent gave (the failure is
    chained to it): its probabilities, or the moves they name, would show the agent's hand.
    """
    try:
        return dict(checked_details(details, state, "explain()"))
    except ReplayError as exc:
        problem = re.sub(r", got .*", "", str(exc), flags=re.DOTALL)
        problem = re.sub(r"(details\.probabilities)\.\d+", r"\1", problem)
        raise AgentError(f"agent {label} explained its move with details a replay cannot hold: {problem}") from exc


class LiveGame:
    """One person (at ``seat``) against agents, one round or a whole game.

    Args:
        opponents: one per other seat, in seat order.
        num_players: 2, 3 or 4.
        seat: the person's seat.
        rules: a preset name.
        seed: seeds the deals and the agents (``None``: fresh entropy).
        length: ``"round"`` (one round) or ``"game"`` (until someone wins the game).
        max_rounds: with ``"game"``, stop after this many rounds even if nobody has won.
        metadata: kept in the replay.
        agent_turns_per_call: the most agent moves one call plays, each agent's once at most
            (``None``: every move up to the person's turn or the round's end). A server
            answering one request per call sets it to the number of agents, so that each agent
            moves at most once per request even once the person is out; :meth:`play_on` then
            plays the next ones.
        start: deal the first round now (the agents then play up to the person's turn). With
            ``False`` the game is built (its agents too) but nothing is dealt until :meth:`start`:
            a caller that must tell what the agents did even when one fails at once has the
            game in hand before they play (the terminal).

    The agents play as soon as the round is dealt, so :attr:`log` may already hold moves
    (even the whole round, at a table where the person is put out before their turn).

    Raises ``ValueError`` naming an argument that cannot make a game, before any agent is built.
    """

    def __init__(
        self,
        opponents: Sequence[Opponent],
        num_players: int,
        seat: int,
        rules: str,
        seed: int | None,
        length: str = "game",
        max_rounds: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        agent_turns_per_call: int | None = None,
        start: bool = True,
    ):
        # Checked here, not only by the apps: a bad seat failed as "zip() argument 2 is shorter than
        # argument 1", a seed True dealt seed 1's cards, max_rounds=0 still played a round, and
        # agent_turns_per_call=0 left the agents to move forever.
        num_players = check_num_players(num_players)
        self.seat = check_seat("seat", seat, num_players)
        if len(opponents) != num_players - 1:
            raise ValueError(
                f"{len(opponents)} opponents given for the {num_players - 1} other seat"
                f"{'s' * (num_players > 2)} of a {num_players}-player table"
            )
        self.agent_turns_per_call = (
            None if agent_turns_per_call is None else check_int("agent_turns_per_call", agent_turns_per_call, low=1)
        )
        self.length = check_choice("length", length, ("round", "game"))
        if max_rounds is not None:
            max_rounds = check_int("max_rounds", max_rounds, low=1)
        self.max_rounds = 1 if length == "round" else max_rounds
        self.rng = np.random.default_rng(check_seed(seed, allow_none=True))
        others = [p for p in range(num_players) if p != seat]
        agent_seeds = {p: int(self.rng.integers(2**31)) for p in others}
        self.agents = {p: opponent.build(agent_seeds[p]) for p, opponent in zip(others, opponents, strict=True)}
        for p, opponent in zip(others, opponents, strict=True):
            # Before any move: such an agent would fail at its first turn, after the person's move.
            problem = rules_refusal(opponent.name, getattr(self.agents[p], "rules", None), rules)
            if problem is not None:
                raise ValueError(problem)
        self.infos = [AgentInfo(HUMAN)] * num_players
        for p, opponent in zip(others, opponents, strict=True):
            self.infos[p] = AgentInfo(opponent.name, opponent.spec, opponent.options, agent_seeds[p])
        self.recorder = ReplayRecorder(num_players, rules, length, self.infos, metadata)
        self.state = engine.new_game(num_players, self._deck(), int(self.rng.integers(num_players)), rules)
        #: Every line told so far: round starts, moves, round ends, the end of the game.
        self.log: list[str] = []
        #: The indices in :attr:`log` of the lines that start a round.
        self.round_starts: list[int] = []
        #: Wall-clock and CPU seconds of each agent decision (observation, explanation, move).
        self.bot_seconds: list[float] = []
        self.bot_cpu_seconds: list[float] = []
        #: The finished game's replay (``None`` until :attr:`finished`, and for a stopped game).
        self.replay: Replay | None = None
        #: Why the game was stopped before its end (an agent failed), else ``None``.
        self.stopped: str | None = None
        self._last_round_end: GameState | None = None  # the game as the last finished round left it
        if start:
            self._begin_round()

    def start(self) -> None:
        """Deal the first round of a game built with ``start=False``; the agents play up to the
        person's turn (:class:`BotFailed` when one fails)."""
        if self.round_starts:
            raise NotNow("the game has started")
        self._begin_round()

    @property
    def finished(self) -> bool:
        """No more moves: the game is over, the last round asked for is, or the game was
        :attr:`stopped`."""
        if self.stopped is not None:
            return True
        state = self.state
        return state.round_over and (
            state.game_over or (self.max_rounds is not None and state.round >= self.max_rounds)
        )

    @property
    def agents_to_move(self) -> bool:
        """Agents have moves to make before the person's turn or the round's end, which
        :meth:`play_on` plays (only with :attr:`agent_turns_per_call`)."""
        state = self.state
        return self.stopped is None and not state.round_over and state.current != self.seat

    def name(self, seat: int) -> str:
        """How the log names ``seat``: ``you`` for the person."""
        return "you" if seat == self.seat else f"player_{seat}"

    def move(self, action: Any) -> None:
        """The person plays ``action``; the agents answer. :class:`NotNow` when it is not the
        person's move to make, :class:`IllegalMove` when ``action`` is not legal, and
        :class:`BotFailed` when an agent fails while answering (the game is then stopped)."""
        self._check_playing()
        if self.state.round_over:
            raise NotNow("the round is over; ask for the next round first")
        if self.state.current != self.seat:
            # Never the legal moves of another seat: they would show its hand.
            raise NotNow(f"it is not your turn: player_{self.state.current} is to move")
        legal = engine.legal_actions(self.state)
        if not is_int(action) or action not in legal:
            # shown(): a 5,000-digit integer cannot be written out, and a long text is not echoed whole.
            raise IllegalMove(f"action {shown(action)} is not one of your legal moves {list(legal)}")
        self._play(int(action))
        self._play_agents()

    def play_on(self) -> None:
        """The agents play their next moves (at most :attr:`agent_turns_per_call`). :class:`NotNow`
        when it is the person's turn or the round is over, :class:`BotFailed` when one fails."""
        self._check_playing()
        if not self.agents_to_move:
            raise NotNow("no agent is to move: it is your turn, or the round is over")
        self._play_agents()

    def next_round(self) -> None:
        """Deal the next round of the game; the agents play up to the person's turn
        (:class:`BotFailed` when one fails)."""
        self._check_playing()
        if not self.state.round_over:
            raise NotNow("the round is still being played")
        engine.start_round(self.state, self._deck())
        self._begin_round()

    def replay_so_far(self) -> Replay | None:
        """The game as a replay for a game that ends before its end (the person leaves, an
        agent fails): the finished game's replay once there is one, else the rounds finished
        so far as a ``"rounds"`` replay (the round being played is left out), else ``None``."""
        if self.replay is not None:
            return self.replay
        end = self._last_round_end
        if end is None:
            return None
        finished = ReplayRecorder(end.num_players, self.recorder.rules, "rounds", self.infos, self.recorder.metadata)
        finished.rounds = self.recorder.rounds[: end.round]
        return finished.finish(end)

    def on_finish(self, replay: Replay) -> None:
        """Called once with the replay when the game is finished (subclasses save it)."""

    def _check_playing(self) -> None:
        if not self.round_starts:
            raise NotNow("the game has not started: call start()")
        if self.stopped is not None:
            raise NotNow(f"this game was stopped: {self.stopped}; start a new one")
        if self.finished:
            raise NotNow("this game is over; start a new one")

    def _deck(self) -> list[int]:
        return list(self.recorder.rules.shuffled_deck(self.rng))

    def _begin_round(self) -> None:
        self.recorder.start_round(self.state)
        starter = "you start" if self.state.current == self.seat else f"player_{self.state.current} starts"
        self.round_starts.append(len(self.log))
        self.log.append(f"Round {self.state.round}: {starter}.")
        self._play_agents()

    def _play(self, action: int, details: dict[str, Any] | None = None) -> None:
        self.recorder.record(self.state, action, details)
        self.log.append(narrate(engine.step(self.state, action), self.seat))
        if self.state.round_over:
            self._last_round_end = self.state.clone()
            self.log += round_summary(self.state, self.seat).splitlines()
            if self.finished:
                self._finish()

    def _play_agents(self) -> None:
        state = self.state
        cap = self.agent_turns_per_call
        moved: set[int] = set()
        while not state.round_over and state.current != self.seat:
            if cap is not None and (len(moved) == cap or state.current in moved):
                return  # the rest waits for play_on: with the person out, two agents left alternate
            moved.add(state.current)
            player = state.current
            agent = self.agents[player]
            label = f"{self.infos[player].name} at player_{player}"
            start, start_cpu = time.perf_counter(), time.thread_time()
            observation = observation_of(state, player)
            legal = engine.legal_actions(state)
            try:
                details = decision_details(agent, observation, player, state.num_players)
                if details is not None:
                    details = _checked_explanation(details, state, label)
                action = checked_act(agent, observation, name=label)
                if action not in legal:
                    # Checked against the game, not only the mask the agent was given: an agent that wrote
                    # into that mask passed checked_act, and the engine's refusal listed its hand.
                    raise AgentError(f"agent {label} returned action {action}, which is not legal here")
            except Exception as exc:  # any failure of an agent's code: the game cannot go on
                self._stop(label, exc)
            self.bot_seconds.append(time.perf_counter() - start)
            self.bot_cpu_seconds.append(time.thread_time() - start_cpu)
            self._play(action, details)

    def _stop(self, label: str, exc: Exception) -> NoReturn:
        """Stop the game because the agent ``label`` failed with ``exc``, and raise :class:`BotFailed`."""
        if isinstance(exc, AgentError):
            # It names the agent and what it returned; the legal moves it may list would show the agent's hand.
            problem = re.sub(r" \(legal: \[[^\]]*\]\)", "", str(exc))
        else:
            # Its first line, cut short: the person sees it (the web page gets it three times), and
            # an agent's own text can be long or print what it holds; the whole error is chained.
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if len(text) > MAX_FAILURE_TEXT:
                text = text[: MAX_FAILURE_TEXT - 3] + "..."
            problem = f"agent {label} failed: {type(exc).__name__}: {text}"
        self.stopped = problem
        self.log.append(f"Game stopped: {problem}.")
        raise BotFailed(f"{problem}; the game was stopped") from exc

    def _finish(self) -> None:
        if self.length != "round":
            self.recorder.episode = "game" if self.state.game_over else "rounds"
        self.replay = self.recorder.finish(self.state)
        if self.state.game_over:
            self.log.append(f"Game over: {', '.join(self.name(p) for p in self.state.game_winners)} won the game.")
        self.on_finish(self.replay)
