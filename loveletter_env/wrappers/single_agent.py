"""Love Letter as a Gymnasium single-agent env: one learning seat against fixed opponents.

Registered as ``"loveletter/LoveLetter-v0"`` on ``import loveletter_env``::

    env = gymnasium.make("loveletter/LoveLetter-v0", num_players=2, opponents="rule")

Every other seat is played by an opponent agent (a bot name, a checkpoint path or an
agent object, see :mod:`loveletter_env.wrappers.opponents`). The learner's seat is drawn
from the env's seeded generator at every reset, so the learner plays first and later
equally often. The legal-action mask comes both from :meth:`LoveLetterGymEnv.action_masks`
(the sb3-contrib convention) and as ``info["action_mask"]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ..actions import NUM_ACTIONS, action_index
from ..aec import (
    OBSERVATION_HIGH,
    RESET_OPTIONS,
    check_reset_options,
    check_reset_seed,
    raw_env,
    reset_options_dict,
)
from ..agents.base import checked_act
from ..agents.specs import reset_agent
from ..observation import OBSERVATION_SIZE
from ..render import render_seat_view
from ..rules import Rules
from ..validation import is_int, shown
from .opponents import OpponentSpec, make_opponents

if TYPE_CHECKING:
    from ..agents.base import Agent

ILLEGAL_ACTION_MODES = ("lose", "raise")
#: Reward given for an illegal action under ``illegal_action="lose"``: the same as a loss.
ILLEGAL_ACTION_REWARD = -1.0
_SEED_BOUND = 2**31


class LoveLetterGymEnv(gymnasium.Env[np.ndarray, np.int64]):
    """One Love Letter seat as a Gymnasium env; the other seats are played by opponents.

    Args:
        num_players: 2, 3 or 4.
        opponents: one opponent description for every other seat, or a sequence of
            ``num_players - 1`` of them, in turn order after the learner. A description
            is a bot name (``"random"``, ``"rule"``, ...), a checkpoint path, or an agent.
        rules: a preset name or a :class:`~loveletter_env.rules.Rules` object.
        episode: ``"game"`` (rounds until the token target) or ``"round"``.
        learner_seat: fix the learner's seat; ``None`` draws it at every reset.
        illegal_action: what a legal-mask violation does: ``"lose"`` ends the episode with
            reward -1 and ``info["illegal_action"] = True`` (so unmasked samplers such as
            ``check_env`` work); ``"raise"`` raises the AEC env's ``IllegalActionError``.
            Either way an action outside ``0..40`` (or not an integer) is a ``ValueError``
            that changes nothing.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.

    Observations are the AEC env's float32 vectors seen from the learner's seat. The
    reward is 0 until the episode ends, then +1 if the learner won and -1 otherwise.
    Once an episode has ended the mask is all ones: no action is taken there, and an
    all-zero mask would make a masked softmax undefined in vectorised rollouts.

    With ``episode="round"`` the round can end before the learner acts (an opponent's
    Guard or Baron). Such deals are replayed inside ``reset``, since Gymnasium has no way
    to start an episode that is already over; their results are listed in
    ``info["unplayed_rewards"]`` of the reset so evaluations can count them.
    """

    metadata = {"render_modes": ["human", "ansi"], "render_fps": 1}

    def __init__(
        self,
        num_players: int = 2,
        opponents: OpponentSpec | Sequence[OpponentSpec] = "random",
        rules: str | Rules = "classic",
        episode: str = "game",
        learner_seat: int | None = None,
        illegal_action: str = "lose",
        render_mode: str | None = None,
    ):
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {illegal_action!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        # The AEC env only formats text: in "human" mode it would also print every
        # opponent's turn, while this env shows the table once per learner decision.
        text_mode = None if render_mode is None else "ansi"
        self.aec = raw_env(num_players=num_players, rules=rules, episode=episode, render_mode=text_mode)
        self.num_players = self.aec.num_players
        self._check_seat(learner_seat, "learner_seat")
        self.fixed_learner_seat = learner_seat
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.opponents: list[Agent] = make_opponents(opponents, self.num_players - 1)
        self.observation_space = spaces.Box(0.0, OBSERVATION_HIGH, (OBSERVATION_SIZE,), np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.learner_seat = 0
        self._done = True
        #: Why the last episode was abandoned midway (an opponent or its reset raised, or the
        #: learner played an illegal action under "lose"), else None.
        self._abandoned: str | None = None

    # Gymnasium API -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start an episode and play the opponents until the learner is to act.

        ``options`` may hold ``"learner_seat"`` (this episode only) and the AEC env's
        ``"deck"`` and ``"first_player"`` (both apply to the first deal of the episode).
        """
        # Everything is checked before anything changes: a refused reset leaves the
        # episode in progress, the learner's seat and the generators as they were.
        seed = check_reset_seed(seed)
        options = reset_options_dict(options)
        seat = options.pop("learner_seat", self.fixed_learner_seat)
        self._check_seat(seat, "learner_seat")
        check_reset_options(options, self.num_players, self.aec.rules)
        # Named here, not by the AEC env: its warning would leave out "learner_seat", and come
        # again for every deal replayed below.
        unknown = [key for key in options if key not in RESET_OPTIONS]
        if unknown:
            known = [*RESET_OPTIONS, "learner_seat"]
            gymnasium.logger.warn(f"ignoring unknown reset option(s) {shown(unknown)}; known options: {known}")
        options = {key: value for key, value in options.items() if key in RESET_OPTIONS}
        # From here the episode before is gone. Until the opponents have played up to the learner's
        # turn, step() must refuse: a reset cut short (Ctrl-C, an error) would otherwise leave the
        # last episode's "in progress" beside a new deal, and the learner's action played in the
        # seat of whoever is to act there.
        self._done = True
        self._abandoned = "reset() did not finish"
        super().reset(seed=seed)
        rng = self.np_random
        self.learner_seat = int(rng.integers(self.num_players)) if seat is None else int(seat)
        self._learner = self.aec.possible_agents[self.learner_seat]
        unplayed: list[float] = []
        while True:
            self.aec.reset(seed=int(rng.integers(_SEED_BOUND)), options=options)
            with self._abandon_on_error("reset()"):
                for opponent in self.opponents:
                    if callable(getattr(opponent, "reset", None)):
                        # Drawn even for a reset that takes no seed: the other draws stay as they are.
                        reset_agent(opponent, int(rng.integers(_SEED_BOUND)))
                self._done = False
                self._play_opponents()
            if not self._done:
                break
            # Replaying the same deck and first player would end the same way.
            options = {}
            unplayed.append(self._learner_reward())
        self._abandoned = None
        info = self._info()
        if unplayed:
            info["unplayed_rewards"] = unplayed
        if self.render_mode == "human":
            self.render()
        return self._observation(), info

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        """The learner plays ``action``; the opponents then play until the learner's next turn."""
        if self._done:
            why = f"the last episode was abandoned when {self._abandoned}; " if self._abandoned else ""
            raise RuntimeError(f"step() needs an episode in progress: {why}call reset() first")
        # An index outside the action space is no move at all (a -1 sentinel, an off-by-one), not
        # an illegal move: "lose" would end the episode on a bug of the caller's, so it is refused.
        index = action_index(action)  # numpy integers and 0-d integer arrays too
        if index is None or not 0 <= index < NUM_ACTIONS:
            raise ValueError(f"action must be an integer index in 0..{NUM_ACTIONS - 1}, got {action!r}")
        action = index
        legal = self.action_masks()[action] == 1
        if not legal and self.illegal_action == "lose":
            self._done = True
            self._abandoned = f"the learner played the illegal action {action}"
            info = self._info()
            info["illegal_action"] = True
            if self.render_mode == "human":  # Gymnasium's human mode renders at every step
                self.render()
            return self._observation(), ILLEGAL_ACTION_REWARD, True, False, info
        self.aec.step(int(action))  # an illegal action raises here and changes nothing
        with self._abandon_on_error("step()"):
            self._play_opponents()
        reward = self._learner_reward() if self._done else 0.0
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward, self._done, False, self._info()

    def action_masks(self) -> np.ndarray:
        """The learner's legal-action mask (int8[41]); all ones once the episode is over."""
        if self._done:
            return np.ones(NUM_ACTIONS, dtype=np.int8)
        return self.aec.observe(self._learner)["action_mask"]

    def render(self) -> str | None:
        """The table as the learner's seat sees it (``"ansi"`` returns it, ``"human"`` prints it);
        after an episode abandoned midway, with no seat to act and no moves, and why it ended."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() was called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        if self.aec.game is None:  # before the first reset no seat is selected: the AEC env says so
            text = self.aec.render()
        elif self._abandoned:
            # The table stopped midway: no seat acts, and step() would refuse every move.
            seat = self.aec.agent_name_mapping[self._learner]
            table = render_seat_view(self.aec.game, seat, halted=True)
            text = f"{table}\nEpisode over: abandoned when {self._abandoned}; call reset()"
        else:
            # Show the learner's view even when an opponent's turn ended the episode.
            selected, self.aec.agent_selection = self.aec.agent_selection, self._learner
            try:
                text = self.aec.render()
            finally:
                self.aec.agent_selection = selected
        if self.render_mode == "ansi":
            return text
        print(f"{text}\n")
        return None

    def close(self) -> None:
        self.aec.close()

    # Internals -----------------------------------------------------------------------
    @contextmanager
    def _abandon_on_error(self, call: str) -> Iterator[None]:
        """End the episode when an opponent (its ``act`` or ``reset``) raises inside ``call``.

        The AEC env is then left with an opponent to act: a later ``step`` would play the
        learner's action in the opponent's seat. The error goes on to the caller, and ``step``
        refuses until a ``reset`` succeeds.
        """
        try:
            yield
        except BaseException as err:
            self._done = True
            self._abandoned = f"an opponent failed in {call} ({type(err).__name__}: {err})"
            raise

    def _check_seat(self, seat: Any, name: str) -> None:
        if seat is not None and (not is_int(seat) or not 0 <= seat < self.num_players):
            raise ValueError(f"{name} must be None or a seat in 0..{self.num_players - 1}, got {seat!r}")

    def _play_opponents(self) -> None:
        """Step the AEC env with the opponents' actions until the learner acts or the episode ends."""
        aec = self.aec
        # Opponents sit in turn order after the learner: offset k plays opponents[k - 1].
        while not aec.terminations[self._learner]:
            agent = aec.agent_selection
            if agent == self._learner:
                return
            offset = (aec.agent_name_mapping[agent] - self.learner_seat) % self.num_players
            opponent = self.opponents[offset - 1]
            aec.step(checked_act(opponent, aec.observe(agent), name=f"{opponent!r} (the opponent at {agent})"))
        self._done = True

    def _learner_reward(self) -> float:
        return float(self.aec.rewards[self._learner])

    def _observation(self) -> np.ndarray:
        return self.aec.observe(self._learner)["observation"]

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"action_mask": self.action_masks(), "learner_seat": self.learner_seat}
        if self._done and self.aec.infos[self._learner]:
            info.update(
                winners=list(self.aec.infos[self._learner]["winners"]),
                tokens=list(self.aec.infos[self._learner]["tokens"]),
            )
        return info
