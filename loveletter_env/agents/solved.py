"""A solved policy as an agent: ``solved:path=FILE`` plays an equilibrium that
``python -m training.solve`` computed for one round of a ladder rung.

Information sets
----------------
A player's information set is its seat and its observation: the observation recalls the
whole round as the player saw it (every announced move, its own cards as received, what
it was shown), so the observation alone tells the agent where it is.
:func:`loveletter_env.tree.observation_key` writes an observation exactly and compactly:
its nonzero entries as ``index * 32 + value`` (every entry is a small whole number below
32), in index order. The ``tokens`` entries are left out: the solved game is one round,
so the agent plays every round of a longer game as that round.

Policy file format (version 4)
------------------------------
A ``numpy.savez_compressed`` archive, read with ``allow_pickle=False``; every entry is
required. ``I`` is the number of information sets.

* ``format`` (``"loveletter-solved-policy"``), ``version`` (4), ``meta`` (a JSON object:
  ``num_players``, the rung's table size, an integer 2, 3 or 4; rules, iterations,
  exploitability, nash_conv, first_player_score, ...);
* ``infoset_player`` int8 [I]: the seat of the set's player, 0 for the player who moves
  first, then in turn order up to ``num_players - 1``;
* ``key_offsets`` int64 [I + 1], ``key_entries`` uint16: the observation key of
  information set ``i`` is ``key_entries[key_offsets[i]:key_offsets[i + 1]]``, a different
  key for each set;
* ``action_offsets`` int64 [I + 1], ``actions`` int8, ``probabilities`` float64: the
  legal actions of information set ``i`` (at least one, ascending, each in 0..40) and
  the probability of each: finite, non-negative, summing to 1 per information set.

:meth:`SolvedPolicy.load` checks all of this and refuses a file that breaks any of it
with a :class:`PolicyFileError` naming the file. Version 3 files (2-player rungs only)
still load: they are version 4 without ``num_players`` in ``meta``, which is then 2, and
with seats 0 and 1 only. Files of versions 1 and 2 (version 2 chained each information
set to the player's previous one, before the observation recalled the round) are
refused: solve the rung again with ``python -m training.solve RUNG``.
"""

from __future__ import annotations

import json
import os
import random
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from ..actions import NUM_ACTIONS
from ..observation import OBSERVATION_SIZE
from ..tree import KEY_VALUE_RANGE, observation_key
from .base import legal_actions_of

FORMAT = "loveletter-solved-policy"
FORMAT_VERSION = 4
#: The versions :meth:`SolvedPolicy.load` reads: version 3 held 2-player rungs only.
READABLE_VERSIONS = (3, 4)
#: The table sizes a policy may be for.
POLICY_PLAYERS = (2, 3, 4)
#: Largest distance of a policy's per-information-set probability sum from 1.
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SolvedPolicy:
    """A policy for every information set of one round (the arrays of the file format)."""

    infoset_player: np.ndarray
    key_offsets: np.ndarray
    key_entries: np.ndarray
    action_offsets: np.ndarray
    actions: np.ndarray
    probabilities: np.ndarray
    meta: dict[str, Any]

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_player.shape[0])

    @property
    def num_players(self) -> int:
        """The rung's table size (``meta["num_players"]``; 2 in a version 3 file)."""
        return int(self.meta.get("num_players", 2))

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
            meta=np.str_(json.dumps({**self.meta, "num_players": self.num_players}, allow_nan=False)),
            **arrays,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SolvedPolicy:
        """Read a policy file and check it against the file format (module docstring).

        Raises:
            FileNotFoundError: ``path`` does not exist.
            PolicyFileError: (a ``ValueError``) anything else: not a regular file, a damaged
                archive, another format or version, or arrays that break the format.
        """
        where = f"solved policy {os.fspath(path)!r}"
        if not os.path.exists(path):
            raise FileNotFoundError(f"{where} does not exist")
        if not os.path.isfile(path):
            # A FIFO or device would block or never end; a folder is no policy either.
            raise PolicyFileError(f"{where} is not a regular file")
        if not zipfile.is_zipfile(path):
            # np.load would try other formats on it and answer about pickles.
            raise PolicyFileError(f"{where} is not a .npz archive: it is damaged or not a solved policy file")
        try:
            with np.load(path, allow_pickle=False) as data:
                entries = {name: data[name] for name in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            raise PolicyFileError(f"{where} is damaged or not a solved policy file ({err})") from None
        return cls(**_checked_entries(where, entries))


class PolicyFileError(ValueError):
    """A solved policy file that cannot be played: damaged, of another format or version,
    or with arrays that break the format; the message names the file."""


#: Each array of the format, with its dtype: the file's are converted to these once checked.
_ARRAYS: dict[str, type[np.generic]] = {
    "infoset_player": np.int8,
    "key_offsets": np.int64,
    "key_entries": np.uint16,
    "action_offsets": np.int64,
    "actions": np.int8,
    "probabilities": np.float64,
}


def _scalar(value: np.ndarray, kinds: str) -> Any:
    """The one value of a 0-d array of one of the dtype ``kinds``, else ``None``."""
    return value.item() if value.ndim == 0 and value.dtype.kind in kinds else None


def _checked_entries(where: str, entries: dict[str, np.ndarray]) -> dict[str, Any]:
    """The fields of a :class:`SolvedPolicy` from a file's entries, or a :class:`PolicyFileError`."""

    def refuse(problem: str) -> PolicyFileError:
        return PolicyFileError(f"{where} {problem}")

    fmt = _scalar(entries["format"], "U") if "format" in entries else None
    if fmt != FORMAT:
        raise refuse(f"is not a solved policy file (its format is {fmt!r}, expected {FORMAT!r})")
    version = _scalar(entries["version"], "iu") if "version" in entries else None
    meta_text = _scalar(entries["meta"], "U") if "meta" in entries else None
    try:
        meta = json.loads(meta_text) if meta_text is not None else None
    except ValueError:
        meta = None
    if version is None:
        raise refuse("has no version number")
    rung = meta.get("rules") if isinstance(meta, dict) and isinstance(meta.get("rules"), str) else "RUNG"
    again = f"solve the rung again with `python -m training.solve {rung}`"
    if version not in READABLE_VERSIONS:
        readable = " and ".join(map(str, READABLE_VERSIONS))
        raise refuse(f"is format version {version}, and this code reads versions {readable} only: {again}")
    if not isinstance(meta, dict):
        shown = "no meta entry" if meta_text is None else "a meta entry that is not a JSON object"
        raise refuse(f"has {shown} (rules, iterations, ...)")
    if version == 3:
        if "num_players" in meta and meta["num_players"] != 2:
            raise refuse(
                f"is format version 3, which holds 2-player rungs only, yet its meta says num_players "
                f"{meta['num_players']!r}"
            )
        num_players = 2
    else:
        stated = meta.get("num_players")
        if type(stated) is not int or stated not in POLICY_PLAYERS:
            raise refuse(f"has meta num_players {stated!r}, expected the rung's table size: 2, 3 or 4")
        num_players = stated
    information = meta.get("information", "observations")
    if information != "observations":
        raise refuse(
            f"was solved with information={information!r}, a game the solver no longer has (the observation "
            f"shows every announced move, so there is one game): {again}"
        )
    missing = [name for name in _ARRAYS if name not in entries]
    if missing:
        raise refuse(f"lacks the array{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    arrays = {}
    for name, dtype in _ARRAYS.items():
        value = entries[name]
        kinds = "f" if dtype is np.float64 else "iu"
        if value.ndim != 1 or value.dtype.kind not in kinds:
            kind = "floating-point" if kinds == "f" else "integer"
            raise refuse(f"has {name} of shape {value.shape} and dtype {value.dtype}, expected a 1-d {kind} array")
        arrays[name] = value
    n = arrays["infoset_player"].shape[0]
    if n == 0:
        raise refuse("holds no information set")
    for offsets, values in (("key_offsets", "key_entries"), ("action_offsets", "actions")):
        o = arrays[offsets].astype(np.int64)
        if o.shape[0] != n + 1 or o[0] != 0 or o[-1] != arrays[values].shape[0] or (np.diff(o) < 0).any():
            raise refuse(
                f"has {offsets} that do not cut {values} ({arrays[values].shape[0]} entries) into "
                f"{n} information sets in order"
            )
    if arrays["probabilities"].shape != arrays["actions"].shape:
        raise refuse(f"has {arrays['probabilities'].shape[0]} probabilities for {arrays['actions'].shape[0]} actions")
    if not np.isin(arrays["infoset_player"], range(num_players)).all():
        raise refuse(f"has an infoset_player outside the seats 0..{num_players - 1} of its {num_players}-player rung")
    keys = arrays["key_entries"].astype(np.int64)
    if ((keys < 0) | (keys >= OBSERVATION_SIZE * KEY_VALUE_RANGE)).any():
        raise refuse(f"has a key entry outside 0..{OBSERVATION_SIZE * KEY_VALUE_RANGE - 1}")
    entries16 = arrays["key_entries"].astype(np.uint16)
    key_offsets = arrays["key_offsets"].astype(np.int64)
    seen: dict[bytes, int] = {}
    for i in range(n):
        first = seen.setdefault(entries16[key_offsets[i] : key_offsets[i + 1]].tobytes(), i)
        if first != i:
            raise refuse(f"has information sets {first} and {i} with one observation key")
    actions = arrays["actions"].astype(np.int64)
    bad = np.flatnonzero((actions < 0) | (actions >= NUM_ACTIONS))
    if bad.size:
        raise refuse(f"has action id {actions[bad[0]]}, and action ids are 0..{NUM_ACTIONS - 1}")
    starts = arrays["action_offsets"][:-1].astype(np.int64)
    if (np.diff(arrays["action_offsets"]) < 1).any():
        raise refuse("has an information set with no legal action")
    rising = np.diff(actions) > 0
    rising[starts[1:] - 1] = True  # a new information set starts its own ascent
    if not rising.all():
        raise refuse("has an information set whose actions are not listed once each, in ascending order")
    probs = arrays["probabilities"].astype(np.float64)
    if not np.isfinite(probs).all() or (probs < 0).any():
        raise refuse("has a probability that is negative, NaN or infinite")
    sums = np.add.reduceat(probs, starts)
    worst = int(np.argmax(np.abs(sums - 1.0)))
    if abs(sums[worst] - 1.0) > SUM_TOLERANCE:
        raise refuse(f"has information set {worst} whose probabilities sum to {sums[worst]:.6g}, not 1")
    fields: dict[str, Any] = {name: arrays[name].astype(dtype, copy=False) for name, dtype in _ARRAYS.items()}
    fields["meta"] = meta
    return fields


class SolvedAgent:
    """Plays a :class:`SolvedPolicy`: maps each observation to its information set and
    samples that set's stored probabilities with its own seeded generator.

    Args:
        path: a policy file written by ``python -m training.solve``.
        seed: seed of the agent's sampling generator.
    """

    name = "solved"
    #: The observation recalls the round, so the agent keeps no memory of its own.
    remembers_round = False

    def __init__(self, path: str | os.PathLike[str], seed: int | None = None):
        self.path = os.fspath(path)
        self.policy = SolvedPolicy.load(path)
        self._index = {self.policy.key(i): i for i in range(self.policy.num_infosets)}
        self._seed = seed
        self.rng = random.Random(seed)

    @property
    def rules(self) -> str:
        return str(self.policy.meta.get("rules", "?"))

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; with ``seed``, reseed the sampling generator."""
        if seed is not None:
            self._seed = seed
            self.rng = random.Random(seed)

    def infoset(self, observation: Mapping[str, Any]) -> int:
        """The information set of this observation."""
        found = self._index.get(observation_key(observation["observation"]))
        if found is None:
            raise ValueError(
                f"solved policy {self.path!r} (rules {self.rules!r}) has no information set for this observation: "
                "the agent plays only the rung it was solved for"
            )
        return found

    def action_probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        """float64 [41]: the stored probability of each action here (changes nothing)."""
        legal_actions_of(observation)
        return self.policy.distribution(self.infoset(observation))

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None:
        """Nothing to remember: the next observation recalls ``action``."""

    def act(self, observation: Mapping[str, Any]) -> int:
        infoset = self.infoset(observation)
        lo, hi = self.policy.action_offsets[infoset], self.policy.action_offsets[infoset + 1]
        actions, probs = self.policy.actions[lo:hi], self.policy.probabilities[lo:hi]
        u = self.rng.random() * float(probs.sum())
        pick = int(np.searchsorted(np.cumsum(probs), u, side="right"))
        action = int(actions[min(pick, len(actions) - 1)])
        return action

    def __repr__(self) -> str:
        return f"SolvedAgent(path={self.path!r}, seed={self._seed!r})"
