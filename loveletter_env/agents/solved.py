"""A solved policy as an agent: ``solved:path=FILE`` plays an equilibrium that
``python -m training.solve`` computed for one round of a ladder rung.

Information sets
----------------
A player's information set is everything it has seen and done this round: the
observation vector at each of its decisions and the action it took at each. The file
stores that as a chain: each information set names the player's previous one (``-1`` at
its first decision), the action taken there, and the observation at this decision.
:func:`observation_key` writes an observation exactly and compactly: its nonzero entries
as ``index * 32 + value`` (every entry is a small whole number below 32), in index order.
The ``tokens`` entries are left out: the solved game is one round, so the agent plays
every round of a longer game as that round.

File format (``numpy.savez_compressed``, read with ``allow_pickle=False``)
-----------------------------------------------------------------------------
* ``format`` (``"loveletter-solved-policy"``), ``version`` (1), ``meta`` (a JSON string:
  rules, iterations, exploitability, first_player_score, ...);
* ``infoset_player`` int8 [I]: 0 for the player who moves first, 1 for the other;
* ``infoset_parent`` int32 [I], ``infoset_parent_action`` int8 [I]: the chain above;
* ``infoset_heard`` int8 [I]: -1, except in a policy solved with every action announced
  (``meta["information"] == "full"``): the other player's action just before; such a
  policy needs to hear the other player's moves, which the env's observation does not
  show, so it is not an agent;
* ``key_offsets`` int64 [I + 1], ``key_entries`` uint16: the observation key of
  information set ``i`` is ``key_entries[key_offsets[i]:key_offsets[i + 1]]``;
* ``action_offsets`` int64 [I + 1], ``actions`` int8, ``probabilities`` float64: the
  legal actions of information set ``i`` (ascending) and the probability of each.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
from numba import njit

from ..actions import NUM_ACTIONS
from ..observation import OBSERVATION_SIZE, SLICES
from .base import legal_actions_of

FORMAT = "loveletter-solved-policy"
FORMAT_VERSION = 1
#: Bits of a key entry that hold the value (entries are ``index * KEY_VALUE_RANGE + value``).
KEY_VALUE_RANGE = 32
_TOKENS = SLICES["tokens"]
_TOKENS_START = _TOKENS.start
_TOKENS_STOP = _TOKENS.stop


@njit(cache=True)
def observation_key_into(observation, out):
    """Write the key of ``observation`` (646 floats) into ``out`` (uint16, at least 646
    entries) and return its length; ``-1 - i`` when entry ``i`` is not a whole number
    in 0..31 (no env observation has one)."""
    n = 0
    for i in range(observation.shape[0]):
        if _TOKENS_START <= i < _TOKENS_STOP:
            continue
        v = observation[i]
        if v != 0:
            whole = np.int64(v)
            if whole != v or whole < 0 or whole >= KEY_VALUE_RANGE:
                return -1 - i
            out[n] = i * KEY_VALUE_RANGE + whole
            n += 1
    return n


def observation_key(observation: np.ndarray) -> bytes:
    """The exact key of one observation vector (see the module docstring), as bytes."""
    vector = np.asarray(observation, dtype=np.float32).reshape(-1)
    if vector.shape[0] != OBSERVATION_SIZE:
        raise ValueError(f"an observation has {OBSERVATION_SIZE} entries, got {vector.shape[0]}")
    out = np.empty(OBSERVATION_SIZE, dtype=np.uint16)
    n = observation_key_into(vector, out)
    if n < 0:
        raise ValueError(f"observation entry {-1 - n} is {vector[-1 - n]!r}: not an env observation")
    return out[:n].tobytes()


def key_to_observation(entries: np.ndarray) -> np.ndarray:
    """The observation vector (float32 [646], tokens zero) a key was made from."""
    entries = np.asarray(entries, dtype=np.int64)
    vector = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    vector[entries // KEY_VALUE_RANGE] = entries % KEY_VALUE_RANGE
    return vector


@dataclass(frozen=True)
class SolvedPolicy:
    """A policy for every information set of one round (the arrays of the file format)."""

    infoset_player: np.ndarray
    infoset_parent: np.ndarray
    infoset_parent_action: np.ndarray
    infoset_heard: np.ndarray
    key_offsets: np.ndarray
    key_entries: np.ndarray
    action_offsets: np.ndarray
    actions: np.ndarray
    probabilities: np.ndarray
    meta: dict[str, Any]

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_parent.shape[0])

    def key(self, infoset: int) -> bytes:
        """The observation key of ``infoset``."""
        return self.key_entries[self.key_offsets[infoset] : self.key_offsets[infoset + 1]].tobytes()

    def distribution(self, infoset: int) -> np.ndarray:
        """float64 [41]: the probability of each action at ``infoset`` (0 for illegal ones)."""
        lo, hi = self.action_offsets[infoset], self.action_offsets[infoset + 1]
        out = np.zeros(NUM_ACTIONS, dtype=np.float64)
        out[self.actions[lo:hi]] = self.probabilities[lo:hi]
        return out

    def save(self, path: str | os.PathLike[str] | BinaryIO) -> None:
        """Write the policy in the documented format (``.npz``) to a path or an open binary file."""
        if not isinstance(path, (str, os.PathLike)):
            self._write(path)
            return
        with open(path, "wb") as f:
            self._write(f)

    def _write(self, f: BinaryIO) -> None:
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        np.savez_compressed(
            f,
            format=np.str_(FORMAT),
            version=np.int64(FORMAT_VERSION),
            meta=np.str_(json.dumps(self.meta, allow_nan=False)),
            **arrays,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SolvedPolicy:
        """Read a policy file; ``FileNotFoundError`` or a ``ValueError`` naming the problem."""
        if not os.path.exists(path):
            raise FileNotFoundError(f"solved policy {os.fspath(path)!r} does not exist")
        try:
            with np.load(path, allow_pickle=False) as data:
                fmt, version = str(data["format"]), int(data["version"])
                if fmt != FORMAT:
                    raise ValueError(f"format {fmt!r}")
                if version != FORMAT_VERSION:
                    raise ValueError(f"version {version} (this code reads {FORMAT_VERSION})")
                arrays = {name: data[name] for name in _ARRAYS if name in data.files or name not in _OPTIONAL}
                # Files from before full-information solving hold observation policies only.
                arrays.setdefault("infoset_heard", np.full(arrays["infoset_parent"].shape, -1, np.int8))
                meta = json.loads(str(data["meta"]))
        except (OSError, KeyError, ValueError, EOFError) as err:
            raise ValueError(f"{os.fspath(path)!r} is not a solved policy file ({err})") from None
        return cls(meta=meta, **arrays)


#: Arrays a file may lack (it was written before they existed); :meth:`SolvedPolicy.load` fills them.
_OPTIONAL = ("infoset_heard",)
_ARRAYS = (
    "infoset_player",
    "infoset_parent",
    "infoset_parent_action",
    "infoset_heard",
    "key_offsets",
    "key_entries",
    "action_offsets",
    "actions",
    "probabilities",
)


class SolvedAgent:
    """Plays a :class:`SolvedPolicy`: maps its observations and actions this round to an
    information set and samples that set's stored probabilities with its own seeded
    generator.

    Args:
        path: a policy file written by ``python -m training.solve``.
        seed: seed of the agent's sampling generator.
    """

    name = "solved"
    #: The agent's choice depends on its earlier observations this round (see
    #: :meth:`replay_action`), so an exact best response replays them.
    remembers_round = True

    def __init__(self, path: str | os.PathLike[str], seed: int | None = None):
        self.path = os.fspath(path)
        self.policy = SolvedPolicy.load(path)
        p = self.policy
        information = p.meta.get("information", "observations")
        if information != "observations":
            raise ValueError(
                f"solved policy {self.path!r} was solved with information={information!r}: it needs every move "
                "announced, and the env shows only observations; solve with information='observations' to play it"
            )
        self._index = {
            (int(parent), int(action), p.key(i)): i
            for i, (parent, action) in enumerate(zip(p.infoset_parent, p.infoset_parent_action))
        }
        self._seed = seed
        self.rng = random.Random(seed)
        self._chain = (-1, -1)

    @property
    def rules(self) -> str:
        return str(self.policy.meta.get("rules", "?"))

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; with ``seed``, reseed the sampling generator."""
        self._chain = (-1, -1)
        if seed is not None:
            self._seed = seed
            self.rng = random.Random(seed)

    def infoset(self, observation: Mapping[str, Any]) -> int:
        """The information set this observation reaches after the agent's plays so far."""
        key = observation_key(observation["observation"])
        found = self._index.get((*self._chain, key))
        if found is None:
            # A new round of a longer game: its first decision has no earlier play.
            found = self._index.get((-1, -1, key))
        if found is None:
            raise ValueError(
                f"solved policy {self.path!r} (rules {self.rules!r}) has no information set for this observation "
                "and history: the agent plays only the rung it was solved for"
            )
        return found

    def action_probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        """float64 [41]: the stored probability of each action here (changes nothing)."""
        legal_actions_of(observation)
        return self.policy.distribution(self.infoset(observation))

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None:
        """Take ``action`` as the agent's play at ``observation`` (its memory moves on)."""
        self._chain = (self.infoset(observation), int(action))

    def act(self, observation: Mapping[str, Any]) -> int:
        infoset = self.infoset(observation)
        lo, hi = self.policy.action_offsets[infoset], self.policy.action_offsets[infoset + 1]
        actions, probs = self.policy.actions[lo:hi], self.policy.probabilities[lo:hi]
        u = self.rng.random() * float(probs.sum())
        pick = int(np.searchsorted(np.cumsum(probs), u, side="right"))
        action = int(actions[min(pick, len(actions) - 1)])
        self._chain = (infoset, action)
        return action

    def __repr__(self) -> str:
        return f"SolvedAgent(path={self.path!r}, seed={self._seed!r})"
