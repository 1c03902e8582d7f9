"""Love Letter: a PettingZoo AEC environment (2 to 4 players).

| | |
| --- | --- |
| Import | ``import loveletter_env; env = loveletter_env.env(num_players=2)`` |
| Registered id | ``loveletter/loveletter_v0`` (PettingZoo), ``loveletter/LoveLetter-v0`` (Gymnasium, one seat) |
| Actions | Discrete, masked |
| Parallel API | No (turn-based) |
| Agents | ``player_0`` ... ``player_{n-1}``, n = 2, 3 or 4 |
| Action space | ``Discrete(41)``, the same layout for every table size |
| Observation space | ``Dict(observation=Box(0, 16, (1382,), float32), action_mask=Box(0, 1, (41,), int8))`` |
| Observation values | small whole numbers stored as float32, each in [0, 16] |

Love Letter is a card game of deduction and risk for 2 to 4 players: each player holds
one card, draws a second on their turn and plays one of the two, whose effect (guess a
card, look at a hand, compare hands, swap hands...) may knock a player out of the round.
The last player in, or the highest card when the deck runs out, wins the round and a
token; the first to the token target wins the game.

Observation (version 2, 1382 entries): the observing seat's information state, all it
can know and nothing more. The summary of the round (its hand, every discard, face-up
cards, tokens, who is out or protected, the cards it has seen or ruled out, the counts of
cards not yet seen) fills the first 646 entries, version 1's whole vector; then come the
card it was dealt, the card it just drew, and the move record: one slot per move of the
round in order, 12 slots (:data:`~loveletter_env.observation.MAX_MOVES`, the most moves a
round can hold), each with who moved, the card, its target and a Guard's named card, who
went out and what was forced face up, and what the move showed this seat alone. Seats are
relative to the observer (offset 0 is the observer, 1 the next seat in turn order; seats
past the table are zero padding). The fields are :data:`loveletter_env.observation.LAYOUT`
(``python -m loveletter_env.observation`` prints the table); ``decode_observation``
turns a vector back into a readable view.

Action mask: ``action_mask[a]`` is 1 when action ``a`` is legal for the agent to act,
and all zeros for every other agent. An action whose mask entry is 0 raises
:class:`~loveletter_env.engine.IllegalActionError` (a ``ValueError``) and changes nothing;
``loveletter_env.describe_action`` names any action in words.

Action space (targets are seat offsets from the acting player): 0-20 Guard on offset 1-3
naming a value 2-8, 22-24 Priest, 26-28 Baron, 35-37 King on offset 1-3, 31-34 Prince on
offset 0-3 (0: yourself), 30 Handmaid, 39 Countess, 40 Princess; 21, 25, 29 and 38 play the
Guard, Priest, Baron or King with no effect when no one can be chosen
(see :mod:`loveletter_env.actions`).

Rewards: 0 during the episode; at its end +1 for each winner (several after a shared
showdown) and -1 for every other player. ``info`` at the end holds ``winners`` and ``tokens``.

Arguments (``env(...)``/``raw_env(...)``): ``num_players`` (2, 3 or 4), ``rules`` (a preset
name, ``"classic"`` by default, or a :class:`~loveletter_env.rules.Rules`), ``episode``
(``"game"``: rounds until the token target; ``"round"``: one round) and ``render_mode``
(``None``, ``"ansi"``, ``"human"``). ``reset(seed=..., options={"deck": [...],
"first_player": k})`` fixes the first round's deck and starting seat.

Version history:

* ``loveletter_v0``: initial release, observation layout version 1 (646 entries).
* ``loveletter_v0``, observation layout version 2 (1382 entries, the current
  :data:`~loveletter_env.observation.OBSERVATION_VERSION`): the cards dealt and drawn and
  the move record after version 1's entries, which keep their places (a version 1 network
  reads that prefix: :func:`~loveletter_env.observation.observation_for_layout`).

The package's ``loveletter_env.env`` is this module's :func:`env`, and ``loveletter_env.raw_env``
its :class:`raw_env`, as PettingZoo's own games name theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from . import engine
from .actions import NUM_ACTIONS, action_index
from .cards import FULL_DECK
from .core import kernels, new_records
from .core.layout import CURRENT, GAME_OVER, ROUND_OVER
from .core.record_view import RecordGameState
from .engine import IllegalActionError
from .observation import OBSERVATION_HIGH, OBSERVATION_SIZE
from .render import render_seat_view
from .rules import CLASSIC, Rules, check_rules_for_table
from .validation import check_episode, check_num_players, check_seat, check_seed, shown

RENDER_MODES = ("human", "ansi")
RESET_OPTIONS = ("deck", "first_player")


class DeckShuffler:
    """Shuffled decks drawn from one numpy ``Generator``, made in batches.

    One ``permuted`` call for many decks costs about what a single shuffle does, and
    the sequence of decks depends only on the generator's seed, not on the batching.
    On a ladder rung (``rules``) only the cards in play are shuffled: the face-up cards
    lie sorted at positions 1 to 16 - k of every deck.
    """

    def __init__(self, rng: np.random.Generator, batch: int = 64, rules: Rules = CLASSIC):
        self.rng = rng
        self.batch = batch
        self._block = np.empty((0, len(FULL_DECK)), dtype=np.uint8)
        self._used = 0
        # The deck the shuffle starts from, and the positions it shuffles (all 16 off the ladder).
        self._template = np.array(FULL_DECK if rules.in_play is None else rules.deck_from_in_play(rules.in_play))
        self._shuffled = list(
            range(len(FULL_DECK)) if rules.in_play is None else rules.in_play_positions(rules.rung_players)
        )

    def next_array(self) -> np.ndarray:
        """The next deck as a uint8 array of 16 cards, top first."""
        if self._used == len(self._block):
            block = np.tile(self._template.astype(np.uint8), (self.batch, 1))
            cards = np.tile(self._template[self._shuffled].astype(np.int64), (self.batch, 1))
            block[:, self._shuffled] = self.rng.permuted(cards, axis=1)
            self._block, self._used = block, 0
        self._used += 1
        return self._block[self._used - 1]

    def next(self) -> tuple[int, ...]:
        """The next deck as a tuple of 16 cards, top first."""
        return tuple(self.next_array().tolist())


def check_reset_seed(seed: Any) -> int | None:
    """``seed`` as an ``int`` (or ``None``); a bool, a non-integer or a seed outside
    ``0..MAX_SEED`` is a ``ValueError`` naming it (Gymnasium's own check raises its generic
    error type)."""
    return check_seed(seed, allow_none=True)


def reset_options_dict(options: Any) -> dict[Any, Any]:
    """A copy of ``reset``'s ``options`` (``None``: none). Anything but a mapping is refused:
    ``dict()`` would take a list of pairs as options, and a string or number fail inside it."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        example = "{'deck': ..., 'first_player': 0}"
        raise ValueError(f"options must be a dict such as {example} or None, got {shown(options)}")
    return dict(options)


def _warn_unknown_reset_options(options: dict[Any, Any]) -> None:
    """Warn about keys of ``options`` that reset does not read.

    A warning, not an error: PettingZoo's ``api_test`` passes ``{"options": 1}`` to check
    that ``reset`` takes options, so a key ``options`` that holds no mapping passes silently;
    one that does is a caller's options nested one level too deep, and is named as such.
    """
    nested = options.get("options")
    if isinstance(nested, Mapping):
        gymnasium.logger.warn(
            f"ignoring reset options nested under the key 'options' ({shown(list(nested))}): pass "
            f"options={{'deck': ..., 'first_player': ...}} itself; known options: {list(RESET_OPTIONS)}"
        )
    unknown = [key for key in options if key not in RESET_OPTIONS and key != "options"]
    if unknown:
        known = list(RESET_OPTIONS)
        gymnasium.logger.warn(f"ignoring unknown reset option(s) {shown(unknown)}; known options: {known}")


def check_reset_options(
    options: dict[str, Any], num_players: int, rules: Rules = CLASSIC
) -> tuple[tuple[int, ...] | None, int | None]:
    """The ``deck`` and ``first_player`` reset options, checked (each ``None`` if absent).
    On a ladder rung the deck must also lay the rung's face-up cards (see
    :meth:`~loveletter_env.rules.Rules.check_deck`)."""
    deck = options.get("deck")
    first = options.get("first_player")
    if deck is not None:
        deck = rules.check_deck(deck)
    if first is not None:
        first = check_seat("first_player", first, num_players)
    return deck, first


def env(**kwargs: Any) -> wrappers.OrderEnforcingWrapper:
    """The Love Letter AEC environment, wrapped as PettingZoo's classic envs are.

    Takes the same keyword arguments as :class:`raw_env`. Illegal actions raise
    :class:`~loveletter_env.engine.IllegalActionError` (a ``ValueError``) rather than
    being punished, so no TerminateIllegalWrapper is applied.
    """
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


class raw_env(AECEnv):
    """Love Letter as a PettingZoo AEC environment.

    Args:
        num_players: 2, 3 or 4.
        rules: a preset name (``"classic"``, ``"pegasus"``, the other presets of
            :data:`~loveletter_env.rules.PRESETS`, or a 2-player ladder rung ``"mini6"`` ..
            ``"mini9"``) or a :class:`~loveletter_env.rules.Rules` object.
        episode: ``"round"`` (an episode is one round) or ``"game"`` (rounds until a
            player reaches the token target).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns text) or ``"human"`` (prints it).

    Observations are dicts ``{"observation": float32[OBSERVATION_SIZE], "action_mask": int8[41]}``;
    the mask is all zeros for agents that are not to act. Rewards are 0 until the episode
    ends, then +1 for each winner and -1 for everyone else.
    """

    metadata = {
        "render_modes": list(RENDER_MODES),
        "name": "loveletter_v0",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        num_players: int = 2,
        rules: str | Rules = "classic",
        episode: str = "game",
        render_mode: str | None = None,
    ):
        super().__init__()
        check_num_players(num_players)
        check_episode(episode)
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")
        self.num_players = int(num_players)
        self.rules = check_rules_for_table(rules, self.num_players)
        self.episode = episode
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        # A space of its own for every agent, down to its parts: seeding one agent's space
        # must not move another's samples.
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, OBSERVATION_HIGH, (OBSERVATION_SIZE,), np.float32),
                    "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        # The game lives in a compiled-core record; ``game`` is a live GameState view of it.
        self._record = new_records([self.num_players], self.rules)[0]
        self._game: RecordGameState | None = None
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None

    @property
    def game(self) -> engine.GameState | None:
        """The game in progress (``None`` before the first reset): a read-only
        :class:`~loveletter_env.engine.GameState` that always shows the current state."""
        return self._game

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self.possible_agents[self._seat(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self.possible_agents[self._seat(agent)]]

    def _seat(self, agent: str) -> int:
        """The seat of ``agent``; anything but one of :attr:`possible_agents` (a seat number,
        a list of names) is a ``ValueError`` naming it and the agents, not a bare dict error."""
        try:
            return self.agent_name_mapping[agent]
        except (KeyError, TypeError):  # TypeError: an unhashable value such as a list of names
            raise ValueError(f"unknown agent {shown(agent)}; agents are {self.possible_agents}") from None

    # Episode control ---------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start an episode. ``options`` may hold ``"deck"`` (16 card values, top first:
        the first round's order) and ``"first_player"`` (the seat that starts round 1)."""
        options = reset_options_dict(options)
        _warn_unknown_reset_options(options)
        # Validate before touching anything, so a bad seed or option leaves the env as it was.
        seed = check_reset_seed(seed)
        deck, first = check_reset_options(options, self.num_players, self.rules)
        if seed is not None or self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            self._decks = DeckShuffler(self._np_random, rules=self.rules)
        rng = self._np_random
        first_seat = int(rng.integers(self.num_players)) if first is None else first
        cards = self._decks.next_array() if deck is None else np.array(deck, dtype=np.uint8)
        record = self._record
        kernels.restart_game(record)
        kernels.start_round(record, cards, first_seat)
        if self._game is None:
            self._game = RecordGameState(record, self.rules)
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[record[CURRENT]]
        if self.render_mode == "human":
            self.render()

    def step(self, action: int | None) -> None:
        """The selected agent plays ``action``. An action whose mask entry is 0 raises
        :class:`IllegalActionError` and changes nothing."""
        record = self._require_reset()
        if not self.agents:  # every agent was stepped out: PettingZoo's own wrapper only warns here
            raise RuntimeError("the episode is over and every agent has left it: call reset() to start another")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        # Checked here, before any compiled code sees it: an illegal action changes nothing.
        if type(action) is not int:
            # numpy integers and 0-d integer arrays (members of the action space) are welcome;
            # floats and bools are not silently truncated.
            index = action_index(action)
            if index is None:
                self._refuse(action)
            action = index
        if not 0 <= action < NUM_ACTIONS or not kernels.play_if_legal(record, action):
            self._refuse(action)
        self._cumulative_rewards[agent] = 0.0
        if record[ROUND_OVER]:
            if self.episode == "round" or record[GAME_OVER]:
                self._end_episode()
            else:
                kernels.start_round(record, self._decks.next_array(), kernels.lowest_round_winner(record))
        if not record[ROUND_OVER]:
            self.agent_selection = self.possible_agents[record[CURRENT]]
        if self.render_mode == "human":
            self.render()

    def _refuse(self, action: Any) -> NoReturn:
        game = self._require_game()
        raise IllegalActionError(action, engine.legal_actions(game), game.current, self.num_players)

    def _require_game(self) -> RecordGameState:
        if self._game is None:
            raise RuntimeError("call reset() before step() or observe()")
        return self._game

    def _require_reset(self) -> np.ndarray:
        self._require_game()
        return self._record

    def _end_episode(self) -> None:
        game = self._require_game()
        winners = game.round_winners if self.episode == "round" else game.game_winners
        for i, a in enumerate(self.possible_agents):
            self.rewards[a] = 1.0 if i in winners else -1.0
            self.terminations[a] = True
            self.infos[a] = {"winners": [self.possible_agents[w] for w in winners], "tokens": list(game.tokens)}
        self._accumulate_rewards()

    # Observation -------------------------------------------------------------------
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        record = self._require_reset()
        seat = self._seat(agent)
        observation = np.empty(OBSERVATION_SIZE, dtype=np.float32)
        mask = np.empty(NUM_ACTIONS, dtype=np.int8)
        kernels.observe_seat(record, seat, observation, mask)
        return {"observation": observation, "action_mask": mask}

    def action_mask(self, agent: str | None = None) -> np.ndarray:
        """The legal-action mask of ``agent`` (default: the agent to act)."""
        self._require_reset()  # before reading agent_selection, which reset() sets
        return self.observe(self.agent_selection if agent is None else agent)["action_mask"]

    # Rendering ---------------------------------------------------------------------
    def render(self) -> str | None:
        """Text of what the player to act can see ("ansi" returns it, "human" prints it)."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() was called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        if self.game is None:
            text = "(call reset() first)"
        else:
            text = render_seat_view(self.game, self.agent_name_mapping[self.agent_selection])
        if self.render_mode == "ansi":
            return text
        print(text + "\n")
        return None

    def close(self) -> None:
        pass
