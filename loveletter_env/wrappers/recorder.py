"""Record every episode of the AEC env as a replay (:mod:`loveletter_env.replay`).

::

    env = RecordReplay(loveletter_env.env(num_players=2), directory="replays")
    env.reset(seed=0)
    for agent in env.agent_iter():
        ...
        env.step(action)
    env.last_replay            # the finished episode; also saved as replays/episode_00000.json
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.wrappers import BaseWrapper

from ..aec import check_reset_seed
from ..replay import AgentInfo, Replay, ReplayRecorder, checked_details, checked_metadata, save_replay
from ..validation import check_writable


class RecordReplay(BaseWrapper):
    """Wraps a Love Letter AEC env (wrapped or raw) and records each episode.

    Args:
        env: the env to record.
        agents: who plays each seat, for the replay's ``agents`` entry (names, or
            :class:`~loveletter_env.replay.AgentInfo`); default ``player_0 ... player_{n-1}``.
        directory: when given, every finished episode is saved there as
            ``{prefix}_{index:05d}.json``, at the lowest index not taken yet: a replay
            already in the folder (an earlier run's, another recorder's) is never replaced.
        prefix: file name prefix.
        metadata: copied into every replay's ``metadata`` (JSON values: strings, finite
            numbers, booleans, ``None``, lists and string-keyed dicts of them).

    The finished episode is :attr:`last_replay`. :meth:`set_details` attaches what an agent
    reported about its next move (see :func:`~loveletter_env.replay.decision_details`).
    """

    def __init__(
        self,
        env: AECEnv,
        agents: Sequence[str | AgentInfo] | None = None,
        directory: str | os.PathLike | None = None,
        prefix: str = "episode",
        metadata: Mapping[str, Any] | None = None,
    ):
        # Checked before PettingZoo's wrapper reads the env, which fails on anything else with an AttributeError.
        base = getattr(env, "unwrapped", env)
        if not hasattr(base, "game") or not hasattr(base, "num_players"):
            raise ValueError(f"RecordReplay wraps a Love Letter env, got {type(base).__name__}")
        super().__init__(env)
        if isinstance(agents, (str, bytes)):  # a name would be split into one agent per letter
            raise ValueError(f"agents is one name per seat, such as ['rule', 'me'], got {agents!r}")
        if agents is not None and not all(isinstance(a, (str, AgentInfo)) for a in agents):
            # str() would record None as a player named "None".
            raise ValueError(f"agents are names or AgentInfo, one per seat, such as ['rule', 'me'], got {agents!r}")
        self.seat_agents = None if agents is None else [a if isinstance(a, AgentInfo) else AgentInfo(a) for a in agents]
        if self.seat_agents is not None and len(self.seat_agents) != base.num_players:
            raise ValueError(f"{len(self.seat_agents)} agents given for {base.num_players} seats")
        # Checked now: the first save comes with an episode's last move, which the env has made by then.
        # A separator would save outside the folder (an absolute prefix replaces it whole).
        if not isinstance(prefix, str) or any(c in prefix for c in ("/", os.sep, os.altsep or "/", "\0")):
            raise ValueError(
                f"RecordReplay prefix must be a file name without a folder, such as 'episode', got {prefix!r}"
            )
        self.directory = (
            check_writable("RecordReplay directory", directory, folder=True) if directory is not None else None
        )
        self.prefix = prefix
        self.metadata = checked_metadata(metadata)
        self.episodes_saved = 0
        self._next_index = 0  # the first file index that may still be free
        self.last_replay: Replay | None = None
        self.last_path: Path | None = None
        self._recorder: ReplayRecorder | None = None
        self._details: dict[str, Any] | None = None

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        base = self.env.unwrapped
        # The env took the seed, so it is an integer, but maybe numpy's, which JSON cannot hold.
        seed = check_reset_seed(seed)
        metadata = {**self.metadata, "seed": seed} if seed is not None else dict(self.metadata)
        self._recorder = ReplayRecorder(base.num_players, base.rules, base.episode, self.seat_agents, metadata)
        self._recorder.start_round(base.game)
        self._details = None

    def set_details(self, details: Mapping[str, Any] | None) -> None:
        """Attach ``details`` (the replay's JSON form) to the next recorded step.

        Raises :class:`~loveletter_env.replay.ReplayError` (a ``ValueError``), and attaches
        nothing, for details the replay file cannot hold: an unknown key, a value that is
        not a finite JSON number, or probabilities of moves that are not legal now.
        """
        if not details:
            self._details = None
            return
        game = self.env.unwrapped.game
        move_to_come = game if game is not None and not game.round_over else None
        self._details = dict(checked_details(details, move_to_come, "set_details"))

    def step(self, action: Any) -> None:
        base = self.env.unwrapped
        recorder = self._recorder
        if recorder is None or base.game is None:
            raise RuntimeError("call reset() before step()")
        agent = base.agent_selection
        if not base.agents or base.terminations.get(agent) or base.truncations.get(agent):
            self.env.step(action)  # a dead step after the episode's end, or a step past it: nothing to record
            return
        game = base.game
        round_before = game.round
        before = (game.round, game.turn)
        try:
            recorder.record(game, action, self._details)
        except (TypeError, ValueError):
            self.env.step(action)  # no action at all (None, a string): the env refuses it in its own words
            raise
        try:
            self.env.step(action)
        except BaseException:
            # A refused move changes nothing (details included), but an error raised after the move
            # was made (Ctrl-C while a "human" render prints, a wrapper between) must not drop it:
            # the rest of the episode would no longer replay.
            if (game.round, game.turn) == before:
                recorder.discard_last()
            else:
                self._moved(game, round_before)
            raise
        self._moved(game, round_before)

    def _moved(self, game: Any, round_before: int) -> None:
        """Bookkeeping after a recorded move: finish the episode or note the next round's deal."""
        assert self._recorder is not None
        self._details = None
        if all(self.env.unwrapped.terminations.values()):
            self._finish(game)
        elif game.round != round_before:
            self._recorder.start_round(game)

    def _finish(self, game: Any) -> None:
        assert self._recorder is not None
        self.last_replay = self._recorder.finish(game)
        if self.directory is not None:
            self.last_path = self._save(self.last_replay, self.directory)
            self.episodes_saved += 1

    def _save(self, replay: Replay, directory: Path) -> Path:
        """Save ``replay`` under the lowest free ``{prefix}_{index:05d}.json``, never over a file.

        Each recorder counts from 0, so a rerun or a second recorder on the same folder would
        replace the replays already there; the name is claimed by creating it exclusively
        (atomic, so recorders in other processes cannot take it too), then written over whole.
        """
        while True:
            path = directory / f"{self.prefix}_{self._next_index:05d}.json"
            self._next_index += 1
            path.parent.mkdir(parents=True, exist_ok=True)  # as save_replay does: the folder may be gone
            try:
                path.open("x").close()
            except FileExistsError:
                continue
            try:
                return save_replay(replay, path)
            except BaseException:
                path.unlink(missing_ok=True)  # leave no empty file claiming the name
                raise
