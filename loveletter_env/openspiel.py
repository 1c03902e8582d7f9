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

    ``fixed`` holds the cards at positions no chance node decides (a rung's face-up cards,
    sorted), ``chance_positions`` the positions chance fills, in order, ``counts[v]`` how
    many copies of value ``v`` chance deals in all, and ``max_turns`` the most moves a
    round can take (every turn begins with a draw from the pile).
    """

    def __init__(self, rules: Rules, num_players: int):
        face_up = rules.face_up_cards or ()
        self.fixed: dict[int, int] = {1 + i: card for i, card in enumerate(face_up)}
        self.chance_positions: tuple[int, ...] = tuple(p for p in range(DECK_SIZE) if p not in self.fixed)
        counts = dict(CARD_COUNTS)
        for card in face_up:
            counts[card] -= 1
        self.counts: dict[int, int] = counts
        self.max_turns = DECK_SIZE - (1 + rules.face_up_count(num_players) + num_players)


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
        self.rules.check_num_players(num_players)  # a rung is 2-player only
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


class _Table:
    """What every state of one game shares and never changes: table size, rules and deal plan.

    pyspiel clones a Python state by deep-copying its attributes; this one is shared, not copied.
    """

    def __init__(self, num_players: int, rules: Rules, plan: DealPlan):
        self.num_players = num_players
        self.rules = rules
        self.plan = plan

    def __deepcopy__(self, memo: dict) -> _Table:
        return self


class _Round:
    """The mutable part of a state: the deal so far, then the engine's game and the snapshots."""

    def __init__(self, table: _Table):
        self.deck = [0] * DECK_SIZE
        for position, card in table.plan.fixed.items():
            self.deck[position] = card
        self.to_deal = dict(table.plan.counts)
        self.dealt = 0
        self.engine: engine.GameState | None = None
        self.snapshots: list[Snapshot] = []

    def __deepcopy__(self, memo: dict) -> _Round:
        # pyspiel clones states by deep-copying their attributes: the engine's clone is much faster.
        clone = _Round.__new__(_Round)
        clone.deck = self.deck[:]
        clone.to_deal = dict(self.to_deal)
        clone.dealt = self.dealt
        clone.engine = None if self.engine is None else self.engine.clone()
        clone.snapshots = self.snapshots[:]  # snapshots never change once taken
        return clone


class LoveLetterState(pyspiel.State):
    """A round in progress: the deal (chance nodes), then the engine's game state."""

    def __init__(self, game: LoveLetterGame):
        super().__init__(game)
        self._table = _Table(game.num_players(), game.rules, game.plan)
        self._round = _Round(self._table)

    @property
    def engine(self) -> engine.GameState | None:
        """The engine's game state once the deal is done (``None`` while chance deals)."""
        return self._round.engine

    @property
    def snapshots(self) -> list[Snapshot]:
        """One snapshot after the deal, then one after every move."""
        return self._round.snapshots

    # The deal ------------------------------------------------------------------
    def _deal(self, card: int) -> None:
        plan = self._table.plan
        deal = self._round
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
            deal.engine = engine.new_game(self._table.num_players, deal.deck, first_player=0, rules=self._table.rules)
            deal.snapshots.append(Snapshot(deal.engine, -1, -1))

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Each card still to deal, as ``(value - 1, copies left / cards left)``."""
        to_deal = self._round.to_deal
        total = sum(to_deal.values())
        return [(v - 1, count / total) for v, count in to_deal.items() if count]

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
        game = self._round.engine
        if game is None:
            self._deal(int(action) + 1)
            return
        actor = game.current
        engine.step(game, int(action))
        self._round.snapshots.append(Snapshot(game, actor, int(action)))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {card_name(int(action) + 1)}"
        return describe_action(int(action), player, self._table.num_players)

    def is_terminal(self) -> bool:
        return self.engine is not None and self.engine.round_over

    def returns(self) -> list[float]:
        game = self._round.engine
        if game is None or not game.round_over:
            return [0.0] * self._table.num_players
        return round_returns(self._table.num_players, game.round_winners)

    def __str__(self) -> str:
        deck = " ".join(card_name(c) if c else "?" for c in self._round.deck)
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
        moves = game.plan.max_turns
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
