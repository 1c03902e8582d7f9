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

Returns: each of the k winners of the round gets (n - k) / k and every other player -1, so
they sum to zero: +1 / -1 at 2 players, and 0 each for a shared win. In the score units of
the project's solver (1 a win, 1/2 a shared win, 0 a loss), a 2-player return is
2 * score - 1.

Information states are perfect recall: for the observing player, the deal they saw (their
hand, the face-up cards), then for every turn the move played (moves are public), and what
the player knew right after it (their hand, the cards they know others hold, the cards
discarded that turn). The tensor also holds the current observation vector.
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
from .validation import MAX_PLAYERS, MIN_PLAYERS, check_num_players

GAME_NAME = "love_letter"
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
    """Which deck positions chance deals, and from which cards.

    ``fixed`` holds the cards at positions no chance node decides (a rung's face-up cards),
    ``chance_positions`` the positions chance fills, in order, and ``counts[v]`` how many
    copies of value ``v`` chance deals in all.
    """

    def __init__(self, rules: Rules, num_players: int):
        face_up = _fixed_face_up(rules, num_players)
        self.fixed: dict[int, int] = {1 + i: card for i, card in enumerate(face_up)}
        self.chance_positions: tuple[int, ...] = tuple(p for p in range(DECK_SIZE) if p not in self.fixed)
        counts = dict(CARD_COUNTS)
        for card in face_up:
            counts[card] -= 1
        self.counts: dict[int, int] = counts

    def max_turns(self, num_players: int) -> int:
        """An upper bound on the moves of a round: every turn starts with a draw from the pile."""
        dealt_before_play = 1 + (3 if num_players == 2 and not self.fixed else len(self.fixed)) + num_players
        return DECK_SIZE - dealt_before_play


def _fixed_face_up(rules: Rules, num_players: int) -> tuple[int, ...]:
    """The face-up cards a preset fixes before the deal (none outside the ladder rungs)."""
    face_up = getattr(rules, "face_up", ())
    return tuple(sorted(face_up)) if face_up else ()


class LoveLetterGame(pyspiel.Game):
    """One round of Love Letter for OpenSpiel (``players``: 2-4, ``rules``: a preset name)."""

    def __init__(self, params: dict[str, Any] | None = None):
        params = {**DEFAULT_PARAMETERS, **(params or {})}
        unknown = sorted(set(params) - set(DEFAULT_PARAMETERS))
        if unknown:
            raise ValueError(f"unknown love_letter parameter(s) {unknown}; parameters are {sorted(DEFAULT_PARAMETERS)}")
        num_players = check_num_players(params["players"])
        rules_name = params["rules"]
        if not isinstance(rules_name, str) or rules_name not in PRESETS:
            raise ValueError(f"rules must be one of {sorted(PRESETS)}, got {rules_name!r}")
        self.rules: Rules = resolve_rules(rules_name)
        # The engine refuses a preset that cannot be played at this table size: ask it first.
        engine.GameState(num_players, self.rules)
        self.plan = DealPlan(self.rules, num_players)
        self.max_turns = self.plan.max_turns(num_players)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=NUM_CARD_TYPES,
            num_players=num_players,
            min_utility=-1.0,
            max_utility=float(num_players - 1),
            utility_sum=0.0,
            max_game_length=self.max_turns,
        )
        super().__init__(_GAME_TYPE, info, {"players": num_players, "rules": rules_name})

    def new_initial_state(self) -> LoveLetterState:
        """The round before the deal: a chance node."""
        return LoveLetterState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: dict | None = None) -> Any:
        """The information-state observer (``perfect_recall=True``), else the env's observation."""
        if params:
            raise ValueError(f"love_letter observers take no parameters, got {params!r}")
        if iig_obs_type is None:
            iig_obs_type = pyspiel.IIGObservationType(perfect_recall=False)
        if not iig_obs_type.public_info or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError(
                "love_letter observes for one player with public information "
                f"(public_info=True, private_info=SINGLE_PLAYER), got {iig_obs_type}"
            )
        if iig_obs_type.perfect_recall:
            return InformationStateObserver(self)
        return EnvObservationObserver()


class Snapshot:
    """What one moment of the round shows each seat: hands, known cards, discard counts."""

    __slots__ = ("actor", "action", "hands", "known", "discarded")

    def __init__(self, state: engine.GameState, actor: int, action: int):
        n = state.num_players
        self.actor = actor
        self.action = action
        self.hands = tuple(state.hand_of(p) for p in range(n))
        self.known = tuple(tuple(row) for row in state.known)
        self.discarded = tuple(len(d) for d in state.discards)


class LoveLetterState(pyspiel.State):
    """A round in progress: the deal (chance nodes), then the engine's game state."""

    def __init__(self, game: LoveLetterGame):
        super().__init__(game)
        self._game = game
        self._n = game.num_players()
        self._deck = [0] * DECK_SIZE
        for position, card in game.plan.fixed.items():
            self._deck[position] = card
        self._to_deal = dict(game.plan.counts)
        self._dealt = 0
        self.engine: engine.GameState | None = None
        #: One snapshot after the deal, then one after every move.
        self.snapshots: list[Snapshot] = []

    def __deepcopy__(self, memo: dict) -> LoveLetterState:
        # pyspiel clones a Python state with copy.deepcopy; this skips the generic walk.
        clone = LoveLetterState.__new__(LoveLetterState)
        pyspiel.State.__init__(clone, self._game)
        clone.__dict__.update(self.__dict__)
        clone._deck = self._deck[:]
        clone._to_deal = dict(self._to_deal)
        clone.engine = None if self.engine is None else self.engine.clone()
        clone.snapshots = self.snapshots[:]
        return clone

    # The deal ------------------------------------------------------------------
    def _deal(self, card: int) -> None:
        plan = self._game.plan
        self._deck[plan.chance_positions[self._dealt]] = card
        self._to_deal[card] -= 1
        self._dealt += 1
        left = [v for v in CARD_VALUES if self._to_deal[v]]
        if len(left) == 1:  # only copies of one card are left: their places are no longer chance
            for position in plan.chance_positions[self._dealt :]:
                self._deck[position] = left[0]
            self._dealt = len(plan.chance_positions)
            self._to_deal[left[0]] = 0
        if self._dealt == len(plan.chance_positions):
            self.engine = engine.new_game(self._n, self._deck, first_player=0, rules=self._game.rules)
            self.snapshots.append(Snapshot(self.engine, -1, -1))

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Each card still to deal, as ``(value - 1, copies left / cards left)``."""
        total = sum(self._to_deal.values())
        return [(v - 1, count / total) for v, count in self._to_deal.items() if count]

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
        if self.engine is None:
            self._deal(int(action) + 1)
            return
        actor = self.engine.current
        engine.step(self.engine, int(action))
        self.snapshots.append(Snapshot(self.engine, actor, int(action)))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {card_name(int(action) + 1)}"
        return describe_action(int(action), player, self._n)

    def is_terminal(self) -> bool:
        return self.engine is not None and self.engine.round_over

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0] * self._n
        assert self.engine is not None
        return round_returns(self._n, self.engine.round_winners)

    def __str__(self) -> str:
        deck = " ".join(card_name(c) if c else "?" for c in self._deck)
        if self.engine is None:
            return f"dealing: {deck}"
        moves = "; ".join(narrate(event, -1) for event in self.engine.history)
        return f"deck: {deck} | hands: {self.engine.hands} | {moves or 'no move yet'}"


# Observers ---------------------------------------------------------------------------


class EnvObservationObserver:
    """The env's observation vector (:func:`~loveletter_env.observation.encode_observation`)."""

    def __init__(self) -> None:
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
        return render_seat_view(state.engine, player)


class InformationStateObserver:
    """Perfect recall: the deal a player saw, then each move and what they knew after it.

    Tensor layout (``dict`` holds the named views): ``observation`` (the current env
    observation), ``dealt`` (own hand after the deal, counts per value), then per move
    slot, up to the game's longest round: ``actor`` (one-hot seat offset from the
    observer), ``action`` (one-hot), ``hand`` (counts per value), ``known`` (per other seat
    offset, one-hot card known), ``discarded`` (per seat offset, counts of values discarded
    in that move).
    """

    def __init__(self, game: LoveLetterGame):
        self.num_players = game.num_players()
        moves = game.max_turns
        pieces = [
            ("observation", (OBSERVATION_SIZE,)),
            ("dealt", (NUM_CARD_TYPES,)),
            ("actor", (moves, MAX_PLAYERS)),
            ("action", (moves, NUM_ACTIONS)),
            ("hand", (moves, NUM_CARD_TYPES)),
            ("known", (moves, MAX_PLAYERS - 1, NUM_CARD_TYPES)),
            ("discarded", (moves, MAX_PLAYERS, NUM_CARD_TYPES)),
        ]
        self.tensor = np.zeros(sum(int(np.prod(shape)) for _, shape in pieces), np.float32)
        self.dict: dict[str, np.ndarray] = {}
        start = 0
        for name, shape in pieces:
            size = int(np.prod(shape))
            self.dict[name] = self.tensor[start : start + size].reshape(shape)
            start += size

    def set_from(self, state: LoveLetterState, player: int) -> None:
        self.tensor.fill(0.0)
        if state.engine is None:
            return
        n = self.num_players
        view = self.dict
        view["observation"][:] = encode_observation(state.engine, player)
        for card in state.snapshots[0].hands[player]:
            view["dealt"][card - 1] += 1
        discards = state.engine.discards
        for slot, (before, after) in enumerate(zip(state.snapshots, state.snapshots[1:])):
            view["actor"][slot, (after.actor - player) % n] = 1
            view["action"][slot, after.action] = 1
            for card in after.hands[player]:
                view["hand"][slot, card - 1] += 1
            for offset in range(1, n):
                card = after.known[player][(player + offset) % n]
                if card:
                    view["known"][slot, offset - 1, card - 1] = 1
            for offset in range(n):
                seat = (player + offset) % n
                for card in discards[seat][before.discarded[seat] : after.discarded[seat]]:
                    view["discarded"][slot, offset, card - 1] += 1

    def string_from(self, state: LoveLetterState, player: int) -> str:
        game_part = f"player_{player} of {self.num_players}"
        if state.engine is None:
            return f"{game_part}: dealing"
        n = self.num_players
        first = state.engine
        dealt = state.snapshots[0]
        face_up = " face up " + _cards(first.face_up) if n == 2 else ""
        parts = [f"{game_part}:{face_up} hand {_cards(dealt.hands[player])}"]
        for before, after, event in zip(state.snapshots, state.snapshots[1:], first.history):
            known = [
                f"player_{seat} {card_name(after.known[player][seat])}"
                for seat in range(n)
                if seat != player and after.known[player][seat]
            ]
            discarded = [
                f"player_{seat} {_cards(first.discards[seat][before.discarded[seat] : after.discarded[seat]])}"
                for seat in range(n)
                if after.discarded[seat] > before.discarded[seat]
            ]
            parts.append(
                f"{narrate(event, player)} Hand {_cards(after.hands[player])}; "
                f"known {', '.join(known) or '-'}; discarded {', '.join(discarded)}"
            )
        return " | ".join(parts)


def _cards(cards: Sequence[int]) -> str:
    return "+".join(card_name(c) for c in cards) if cards else "-"


pyspiel.register_game(_GAME_TYPE, LoveLetterGame)
