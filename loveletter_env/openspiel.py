"""Love Letter as an OpenSpiel game: ``import loveletter_env.openspiel`` registers ``love_letter``.

One episode is one round, player 0 moves first, and the rules are the project's own: every
move goes through :mod:`loveletter_env.engine`, and the observation tensor is
:func:`~loveletter_env.observation.encode_observation`, the env's observation vector.

Chance deals the deck one card at a time before play, each card drawn from the cards not
yet dealt with its exact probability (count / cards left). Chance outcome ``v - 1`` deals
card value ``v``. The whole order is fixed before the first move because the engine takes
a full deck; no player sees any of it until the engine shows it to them, so the
information states are those of a game whose cards are revealed as they are drawn. On a
ladder rung the face-up cards are fixed (sorted, at deck positions 1..16-k), so chance
deals only the k cards in play.

Parameters (``pyspiel.load_game("love_letter", {"players": 3, "rules": "pegasus"})``):

* ``players``: 2, 3 or 4 (default 2).
* ``rules``: a preset name from :data:`loveletter_env.rules.PRESETS` (default ``"classic"``).
Information states. A player's information state tensor and its observation tensor are the
same vector: the env's observation (:func:`~loveletter_env.observation.encode_observation`),
which is the player's information state at a table: every announced move, what each made
public and what the player was shown, with perfect recall (docs/environment.md). The
information state string is that vector exactly (its nonzero entries), the observation
string the seat's view in words. The former ``information`` parameter is refused: there is
one game, the table's.

An action the state cannot take changes nothing: a chance outcome not in
``chance_outcomes()`` or a move not in ``legal_actions()`` is a ``ValueError`` naming the
legal ones, and any action on a finished round a ``pyspiel.SpielError``. ``state.serialize()``
writes the round's actions one integer a line, and ``game.deserialize_state`` replays them,
never unpickling (pyspiel's ``deserialize_game_and_state`` still unpickles, see
docs/openspiel.md: a Python game cannot override it).

Returns: each of the k winners of the round gets (n - k) / k and every other player -1, so
they sum to zero: +1 / -1 at 2 players, and 0 each for a shared win. In the score units of
the project's solver (1 a win, 1/2 a shared win, 0 a loss), a 2-player return is
2 * score - 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyspiel

from . import engine
from .actions import NUM_ACTIONS, describe_action
from .cards import CARD_COUNTS, CARD_VALUES, DECK_SIZE, NUM_CARD_TYPES, card_name
from .observation import OBSERVATION_SIZE, encode_observation
from .render import narrate, render_seat_view
from .rules import PRESETS, Rules, resolve_rules
from .validation import MAX_PLAYERS, MIN_PLAYERS, check_num_players, shown

GAME_NAME = "love_letter"
#: Digits of the largest action: a line of a state string never needs more.
_ACTION_DIGITS = len(str(NUM_ACTIONS - 1))
DEFAULT_PARAMETERS: dict[str, Any] = {"players": 2, "rules": "classic"}

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Love Letter (one round)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=MAX_PLAYERS,
    min_num_players=MIN_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMETERS,
)


def round_returns(num_players: int, winners: Sequence[int]) -> list[float]:
    """Zero-sum returns of a finished round: (n - k) / k to each of the k winners, -1 to the rest."""
    share = (num_players - len(winners)) / len(winners)
    return [share if p in winners else -1.0 for p in range(num_players)]


class DealPlan:
    """One game's constants: its table size and rules, and which deck positions chance deals.

    ``fixed`` holds the cards at positions no chance node decides (a rung's face-up cards,
    sorted), ``chance_positions`` the positions chance fills, in order, ``counts[v]`` how
    many copies of value ``v`` chance deals in all, and ``max_turns`` the most moves a
    round can take (every turn begins with a draw from the pile).
    """

    def __init__(self, rules: Rules, num_players: int):
        self.rules = rules
        self.num_players = num_players
        face_up = rules.face_up_cards or ()
        self.fixed: dict[int, int] = {1 + i: card for i, card in enumerate(face_up)}
        self.chance_positions: tuple[int, ...] = tuple(p for p in range(DECK_SIZE) if p not in self.fixed)
        counts = dict(CARD_COUNTS)
        for card in face_up:
            counts[card] -= 1
        self.counts: dict[int, int] = counts
        self.max_turns = DECK_SIZE - (1 + rules.face_up_count(num_players) + num_players)

    def __deepcopy__(self, memo: dict) -> DealPlan:
        return self  # never changes: every state of a game shares it


class LoveLetterGame(pyspiel.Game):
    """One round of Love Letter for OpenSpiel (``players``: 2-4, ``rules``: a preset name)."""

    def __init__(self, params: dict[str, Any] | None = None):
        params = {**DEFAULT_PARAMETERS, **(params or {})}
        if "information" in params:
            raise ValueError(
                "the love_letter parameter 'information' is retired: a player's information state is the "
                "env's observation (version 2), which hears every announced move with perfect recall, so "
                "there is one game, the table's; leave the parameter out"
            )
        unknown = sorted(set(params) - set(DEFAULT_PARAMETERS))
        if unknown:
            raise ValueError(f"unknown love_letter parameter(s) {unknown}; parameters are {sorted(DEFAULT_PARAMETERS)}")
        num_players = check_num_players(params["players"], "players")
        rules_name = params["rules"]
        if not isinstance(rules_name, str) or rules_name not in PRESETS:
            raise ValueError(f"rules must be one of {sorted(PRESETS)}, got {rules_name!r}")
        self.rules: Rules = resolve_rules(rules_name)
        self.rules.check_num_players(num_players, "players")  # a rung plays at its own table size only
        self.plan = DealPlan(self.rules, num_players)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=NUM_CARD_TYPES,
            num_players=num_players,
            min_utility=-1.0,
            max_utility=float(num_players - 1),
            utility_sum=0.0,
            max_game_length=self.plan.max_turns,
        )
        super().__init__(_GAME_TYPE, info, {"players": num_players, "rules": rules_name})

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickle (and ``copy``) the game as its parameters, loaded again through pyspiel.

        pyspiel's own pickling of a game keeps only its string and rebuilds the C++ part, so a
        Python game came back without ``rules`` and ``plan`` and failed on first use.
        """
        return _load_game, (self.get_parameters(),)

    def new_initial_state(self) -> LoveLetterState:
        """The round before the deal: a chance node."""
        return LoveLetterState(self)

    def max_chance_nodes_in_history(self) -> int:
        """One chance node at most per deck position the deal leaves to chance: OpenSpiel adds
        it to ``max_game_length`` for ``max_history_length``, which code may size buffers by."""
        return len(self.plan.chance_positions)

    def deserialize_state(self, text: str) -> LoveLetterState:
        """The state :meth:`LoveLetterState.serialize` wrote: its actions, one integer a line,
        replayed through ``apply_action`` on a new round, so every one is checked as it is played.

        Anything else (text that is no ``str`` too) is a ``ValueError`` naming the line or the
        type; nothing is ever unpickled (OpenSpiel's
        default for a Python game unpickles what follows ``__dict__=``, which can run any code).
        """
        if not isinstance(text, str):  # bytes or None would fail inside split() with no word of the state
            raise ValueError(
                f"love_letter reads a state from text (a str, as serialize() writes it), got {type(text).__name__} "
                f"{shown(text)}"
            )
        state = self.new_initial_state()
        for number, line in enumerate(text.split("\n"), 1):
            line = line.strip()
            if not line:
                continue
            # The length is checked before int(): Python refuses to read more than 4,300 digits
            # (leading zeros too), with a message that says nothing of the state.
            if not (line.isascii() and line.isdecimal()) or len(line) > _ACTION_DIGITS or int(line) >= NUM_ACTIONS:
                raise ValueError(
                    f"love_letter reads a state as its actions, one integer in 0..{NUM_ACTIONS - 1} a line "
                    f"(as serialize() writes them); line {number} is {shown(line)}"
                )
            try:
                state.apply_action(int(line))
            except (ValueError, pyspiel.SpielError) as error:
                raise ValueError(f"love_letter state line {number} cannot be replayed: {error}") from None
        return state

    def make_py_observer(self, iig_obs_type: Any = None, params: dict | None = None) -> Any:
        """The env's observation, which is also the information state (``perfect_recall=True``)."""
        if params:
            raise ValueError(f"love_letter observers take no parameters, got {params!r}")
        if iig_obs_type is None:
            iig_obs_type = pyspiel.IIGObservationType(perfect_recall=False)
        if not iig_obs_type.public_info or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError(
                "love_letter observes for one player with public information "
                f"(public_info=True, private_info=SINGLE_PLAYER), got public_info={iig_obs_type.public_info}, "
                f"private_info={iig_obs_type.private_info.name}"
            )
        return EnvObservationObserver(exact_strings=iig_obs_type.perfect_recall)


def _load_game(parameters: dict[str, Any]) -> LoveLetterGame:
    """The game with these parameters, as ``pyspiel.load_game`` builds it: what an unpickled
    game is (this module registers the game, so unpickling imports it first)."""
    return pyspiel.load_game(GAME_NAME, parameters)


class _Round:
    """The mutable part of a state: the deal so far, then the engine's game."""

    def __init__(self, plan: DealPlan):
        self.plan = plan
        self.deck = [0] * DECK_SIZE
        for position, card in plan.fixed.items():
            self.deck[position] = card
        self.to_deal = dict(plan.counts)
        self.dealt = 0
        self.engine: engine.GameState | None = None

    def __deepcopy__(self, memo: dict) -> _Round:
        # pyspiel clones a Python state by deep-copying its attributes: the engine's clone is faster.
        clone = _Round.__new__(_Round)
        clone.plan = self.plan
        clone.deck = self.deck[:]
        clone.to_deal = dict(self.to_deal)
        clone.dealt = self.dealt
        clone.engine = None if self.engine is None else self.engine.clone()
        return clone


class LoveLetterState(pyspiel.State):
    """A round in progress: the deal (chance nodes), then the engine's game state."""

    def __init__(self, game: LoveLetterGame):
        super().__init__(game)
        self._round = _Round(game.plan)  # the only attribute: a clone deep-copies it

    @property
    def engine(self) -> engine.GameState | None:
        """The engine's game state once the deal is done (``None`` while chance deals)."""
        return self._round.engine

    # The deal ------------------------------------------------------------------
    def _deal(self, card: int) -> None:
        deal = self._round
        plan = deal.plan
        deal.deck[plan.chance_positions[deal.dealt]] = card
        deal.to_deal[card] -= 1
        deal.dealt += 1
        left = [v for v in CARD_VALUES if deal.to_deal[v]]
        if len(left) == 1:  # only copies of one card are left: their places are no longer chance
            for position in plan.chance_positions[deal.dealt :]:
                deal.deck[position] = left[0]
            deal.dealt = len(plan.chance_positions)
            deal.to_deal[left[0]] = 0
        if deal.dealt == len(plan.chance_positions):
            deal.engine = engine.new_game(plan.num_players, deal.deck, first_player=0, rules=plan.rules)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Each card still to deal, as ``(value - 1, copies left / cards left)``."""
        to_deal = self._round.to_deal
        total = sum(to_deal.values())
        return [(v - 1, count / total) for v, count in to_deal.items() if count]

    def _check_outcome(self, outcome: int) -> int:
        """``outcome`` if chance may deal it now; else a ``ValueError`` naming the legal ones."""
        legal = [o for o, _ in self.chance_outcomes()]
        if outcome in legal:
            return outcome
        if 0 <= outcome < NUM_CARD_TYPES:
            why = f"(deal {card_name(outcome + 1)}) is not legal: no {card_name(outcome + 1)} is left to deal"
        else:
            why = f"is not a card: outcome v - 1 deals card value v, 0..{NUM_CARD_TYPES - 1}"
        words = ", ".join(f"{o} ({card_name(o + 1)})" for o in legal)
        raise ValueError(f"chance outcome {outcome} {why}; legal outcomes: {words}")

    # OpenSpiel's state API -----------------------------------------------------
    def current_player(self) -> int:
        if self.engine is None:
            return int(pyspiel.PlayerId.CHANCE)
        if self.engine.round_over:
            return int(pyspiel.PlayerId.TERMINAL)
        return self.engine.current

    def _legal_actions(self, player: int) -> list[int]:
        assert self.engine is not None and player == self.engine.current
        return list(engine.legal_actions(self.engine))

    def _apply_action(self, action: int) -> None:
        # Every check comes before any change: pyspiel records the action only if this returns.
        game = self._round.engine
        if game is None:
            self._deal(self._check_outcome(int(action)) + 1)
            return
        if game.round_over:
            raise pyspiel.SpielError(
                f"Cannot act in terminal states: the round is over, so action {action} is not applied"
            )
        engine.step(game, int(action))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if not 0 <= action < NUM_CARD_TYPES:
                raise ValueError(
                    f"chance outcome {action} is not a card: outcome v - 1 deals card value v, 0..{NUM_CARD_TYPES - 1}"
                )
            return f"deal {card_name(int(action) + 1)}"
        num_players = self._round.plan.num_players
        # A move names its target by seat, counted from the mover: a seat outside the table
        # (or the terminal player, the default once the round is over) would name a wrong one.
        if not 0 <= player < num_players:
            raise ValueError(
                f"player {player} makes no moves: action_to_string takes a seat 0..{num_players - 1} "
                f"or the chance player ({int(pyspiel.PlayerId.CHANCE)})"
            )
        return describe_action(int(action), player, num_players)

    def serialize(self) -> str:
        """The round's actions, chance outcomes and moves, one integer a line, as OpenSpiel's C++
        games write a state: :meth:`LoveLetterGame.deserialize_state` replays them."""
        return "".join(f"{action}\n" for action in self.history())

    def is_terminal(self) -> bool:
        return self.engine is not None and self.engine.round_over

    def returns(self) -> list[float]:
        game = self._round.engine
        if game is None or not game.round_over:
            return [0.0] * self._round.plan.num_players
        return round_returns(self._round.plan.num_players, game.round_winners)

    def __str__(self) -> str:
        deck = " ".join(card_name(c) if c else "?" for c in self._round.deck)
        if self.engine is None:
            return f"dealing: {deck}"
        moves = "; ".join(narrate(event, -1) for event in self.engine.history)
        return f"deck: {deck} | hands: {self.engine.hands} | {moves or 'no move yet'}"


# Observers ---------------------------------------------------------------------------


class EnvObservationObserver:
    """The env's observation vector (:func:`~loveletter_env.observation.encode_observation`):
    the observation tensor and, being the player's information state, the information state
    tensor too.

    Strings: with ``exact_strings`` (the information state), the player and the vector's
    nonzero entries as ``index:value``, so two strings are equal exactly when the player's
    information states are; otherwise the seat's view in words.
    """

    def __init__(self, exact_strings: bool = False) -> None:
        self.exact_strings = exact_strings
        self.tensor = np.zeros(OBSERVATION_SIZE, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: LoveLetterState, player: int) -> None:
        if state.engine is None:
            self.tensor.fill(0.0)  # nothing is dealt yet, so nothing is observed
        else:
            self.tensor[:] = encode_observation(state.engine, player)

    def string_from(self, state: LoveLetterState, player: int) -> str:
        if state.engine is None:
            return f"player_{player}: dealing"
        if self.exact_strings:
            return f"player_{player}: {_observation_text(encode_observation(state.engine, player))}"
        return render_seat_view(state.engine, player)


def _observation_text(observation: np.ndarray) -> str:
    """An observation vector exactly and briefly: its nonzero entries as ``index:value``."""
    return " ".join(f"{i}:{int(observation[i])}" for i in np.flatnonzero(observation))


pyspiel.register_game(_GAME_TYPE, LoveLetterGame)
