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
  exploitability, nash_conv, first_player_score, ..., and ``infosets_sha256``);
* ``infoset_player`` int8 [I]: the seat of the set's player, 0 for the player who moves
  first, then in turn order up to ``num_players - 1``;
* ``key_offsets`` int64 [I + 1], ``key_entries`` uint16: the observation key of
  information set ``i`` is ``key_entries[key_offsets[i]:key_offsets[i + 1]]``, a different
  key for each set;
* ``action_offsets`` int64 [I + 1], ``actions`` int8, ``probabilities`` float64: the
  legal actions of information set ``i`` (at least one, ascending, each in 0..40) and
  the probability of each: finite, non-negative, summing to 1 per information set.

:meth:`SolvedPolicy.load` checks all of this and refuses a file that breaks any of it
with a :class:`PolicyFileError` naming the file and the problem. Version 3 files (2-player
rungs only) still load: they are version 4 without ``num_players`` in ``meta``, which is
then 2, and with seats 0 and 1 only. Files of versions 1 and 2 (version 2 chained each
information set to the player's previous one, before the observation recalled the round)
are refused: solve the rung again with ``python -m training.solve RUNG``.

What loading also checks
------------------------
* **The rung.** ``meta.rules`` must name a ladder rung, and the file's information sets
  (seats, keys and legal action lists, in order) must be that rung's: their
  :func:`infoset_digest` is compared with the rung's in :data:`RUNG_INFOSETS`, a table kept
  here because building ``mini9``'s tree to compare takes minutes and gigabytes. The solver
  stores the digest in ``meta.infosets_sha256``; a file that has one must match it, and a
  file written before it existed is checked against the table alone. So a policy is never
  offered for rules it cannot play.
* **Bounds.** Only the format's entries are read. Each is checked from its ``.npy`` header
  (type, shape, and size against the rung's and against the bytes the archive holds for it)
  before anything is allocated, ``meta`` is at most :data:`MAX_META_CHARS` characters of
  strict JSON (:func:`loveletter_env.strict_json.read_json`: bounded nesting, no NaN, no key
  twice).
* **Its solve's folder.** ``python -m training.solve`` writes ``policy.npz``,
  ``convergence.png`` and, last, ``result.json``, which records the SHA-256 digest of the
  other two. A ``policy.npz`` beside a ``result.json`` must match that record, so a folder
  left with the files of two solves (one stopped while it replaced them) is refused, naming
  the files that changed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import tokenize
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..actions import NUM_ACTIONS
from ..atomic_files import replacing
from ..observation import OBSERVATION_SIZE, SLICES
from ..rules import PRESETS
from ..strict_json import read_json
from ..tree import KEY_VALUE_RANGE, observation_key
from ..validation import check_seed
from .base import legal_actions_of

FORMAT = "loveletter-solved-policy"
FORMAT_VERSION = 4
#: The versions :meth:`SolvedPolicy.load` reads: version 3 held 2-player rungs only.
READABLE_VERSIONS = (3, 4)
#: The table sizes a policy may be for.
POLICY_PLAYERS = (2, 3, 4)
#: Largest distance of a policy's per-information-set probability sum from 1.
SUM_TOLERANCE = 1e-6
#: The observation entry that is 1 when the observing seat is the one to act (``to_act`` of offset 0).
_TO_ACT_SELF = SLICES["to_act"].start
#: The meta key of :func:`infoset_digest` of the policy's information sets.
DIGEST_KEY = "infosets_sha256"
#: The files ``python -m training.solve`` writes into its folder, in the order it renames
#: them into place: the record (``result.json``) last.
POLICY_FILE, PLOT_FILE, RECORD_FILE = "policy.npz", "convergence.png", "result.json"
#: The record's entry that maps each other file of the solve to its SHA-256 digest.
MANIFEST_KEY = "sha256"


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
        """Write the policy in the documented format (``.npz``) to a path or an open binary file.

        A path is written whole or not at all (:func:`~loveletter_env.atomic_files.replacing`):
        a failure or Ctrl-C while writing leaves the file already there as it was."""
        if not isinstance(path, (str, os.PathLike)):
            self._write(path)
            return
        with replacing(path) as temporary, open(temporary, "wb") as f:
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

        Only the entries of the format are read, each checked from its ``.npy`` header (its
        type and its size against the rung's and the file's) before it is allocated. A file
        named ``policy.npz`` beside a ``result.json`` is checked against that record of its
        solve (:func:`_check_solve_folder`).

        Raises:
            FileNotFoundError: ``path`` does not exist.
            PolicyFileError: (a ``ValueError``) anything else: not a regular file, a damaged
                archive, another format or version, arrays that break the format or are not
                those of the rung the policy names, or a folder that mixes two solves.
        """
        where = f"solved policy {os.fspath(path)!r}"
        if not os.path.exists(path):
            raise FileNotFoundError(f"{where} does not exist")
        if not os.path.isfile(path):
            # A FIFO or device would block or never end; a folder is no policy either.
            raise PolicyFileError(f"{where} is not a regular file")
        in_solve_folder = _record_beside(path) is not None
        try:
            # One open file for the digest and the reading, so both see the same bytes.
            with open(path, "rb") as f:
                file_digest = _sha256_of(f) if in_solve_folder else ""
                if not zipfile.is_zipfile(f):
                    # np.load would try other formats on it and answer about pickles.
                    raise PolicyFileError(f"{where} is not a .npz archive: it is damaged or not a solved policy file")
                with zipfile.ZipFile(f) as archive:
                    fields = _read_policy(_Entries(where, archive, os.fstat(f.fileno()).st_size))
        except PolicyFileError:
            raise
        except _DAMAGED as err:
            raise PolicyFileError(f"{where} is damaged or not a solved policy file ({err})") from None
        if in_solve_folder:
            _check_solve_folder(path, fields["meta"], file_digest)
        return cls(**fields)


class PolicyFileError(ValueError):
    """A solved policy file that cannot be played: damaged, of another format or version,
    with arrays that break the format or are not its rung's, or in a folder that mixes two
    solves; the message names the file and the problem."""


#: Each array of the format, with its dtype: the file's are converted to these once checked.
_ARRAYS: dict[str, type[np.generic]] = {
    "infoset_player": np.int8,
    "key_offsets": np.int64,
    "key_entries": np.uint16,
    "action_offsets": np.int64,
    "actions": np.int8,
    "probabilities": np.float64,
}


@dataclass(frozen=True)
class RungInfosets:
    """What the policy of one rung holds: its numbers of information sets, key entries and
    legal actions, and :func:`infoset_digest` of its information sets, as the solver's tree
    (:func:`loveletter_env.tree.build_tree`) gives them."""

    infosets: int
    key_entries: int
    actions: int
    sha256: str

    def array_sizes(self) -> dict[str, int]:
        """The length of each array of the format in this rung's policy."""
        n = self.infosets
        return {
            "infoset_player": n,
            "key_offsets": n + 1,
            "key_entries": self.key_entries,
            "action_offsets": n + 1,
            "actions": self.actions,
            "probabilities": self.actions,
        }


#: Each rung's information sets, computed once from its tree. Tests rebuild every tree but
#: mini9's and compare them with this table; mini9's tree takes minutes and 3 GB to build,
#: so its row was computed once, the same way (docs/solving.md says how).
RUNG_INFOSETS: dict[str, RungInfosets] = {
    "mini6": RungInfosets(1_800, 56_477, 7_157, "da0c2b1222f4e4f409dd16a2ba7c8d41b96d38cface2204ce5e02798374b6219"),
    "mini7": RungInfosets(23_834, 850_597, 84_857, "47dd3512678afa4e47e94f7fe0df26a2c0343714f21ef6b09adaad53c1967154"),
    "mini8": RungInfosets(
        312_941, 12_904_600, 926_421, "586bb76668be32b5f6c66118172aa930e93ca7905d05e38f57f3bb74825c9408"
    ),
    "mini9": RungInfosets(
        4_486_551, 208_358_403, 14_857_668, "640547d4ef8c082b1c944015434e3f613b494a4acb1bd1d549bb8ea5c59a26aa"
    ),
    "mini6_3p": RungInfosets(545, 15_463, 4_194, "6946bd35fdef22a7cf45db6ea1969ddfd4c336e3cfdc44bc1832e71c269eb2c7"),
    "mini7_3p": RungInfosets(
        20_357, 702_307, 104_553, "c0fe96d3765cc5e3f63cd0e32688ff9b6218aa32f9b312f695d69cfc0cc6c459"
    ),
    "mini8_3p": RungInfosets(
        732_582, 29_907_702, 2_898_466, "69ecac1d3f4e0d6f16805a3654676fa9e83ba60d044252c90499e2c769214c3e"
    ),
    "mini7_4p": RungInfosets(1_554, 45_930, 16_918, "33f6a1cce6eef311c815ad20c499e8b1eaac8098e17414f3ed03990e6ae957b5"),
    "mini8_4p": RungInfosets(
        87_436, 3_239_662, 603_565, "2226b524116d3b3d15797e97cf6581aa4860cd7e3dfeb471a9e27b71b43a6bf4"
    ),
}

#: The arrays :func:`infoset_digest` covers, each with the byte layout it is hashed in.
_DIGESTED = {
    "infoset_player": "<i1",
    "key_offsets": "<i8",
    "key_entries": "<u2",
    "action_offsets": "<i8",
    "actions": "<i1",
}


def infoset_digest(
    infoset_player: np.ndarray,
    key_offsets: np.ndarray,
    key_entries: np.ndarray,
    action_offsets: np.ndarray,
    actions: np.ndarray,
) -> str:
    """The SHA-256 hex digest of a rung's information sets, in order: each one's seat,
    observation key and legal actions (a policy's arrays, or a :class:`~loveletter_env.tree.GameTree`'s).

    Each array is hashed as the little-endian bytes of one fixed type after its name and
    length, so arrays that differ in any entry, or in where a key or an action list ends,
    hash differently. Hashing is linear in the arrays: about a second for ``mini9``'s 0.5 GB.
    """
    digest = hashlib.sha256(b"loveletter information sets 1\n")
    arrays = (infoset_player, key_offsets, key_entries, action_offsets, actions)
    for (name, layout), values in zip(_DIGESTED.items(), arrays):
        flat = np.ascontiguousarray(values, dtype=layout).reshape(-1)
        digest.update(f"{name} {flat.shape[0]}\n".encode())
        digest.update(flat.view(np.uint8).data)
    return digest.hexdigest()


def _sha256_of(f: BinaryIO) -> str:
    """The SHA-256 hex digest of an open file's bytes, read in chunks; the file is left at its start."""
    digest = hashlib.sha256()
    f.seek(0)
    while chunk := f.read(1 << 20):
        digest.update(chunk)
    f.seek(0)
    return digest.hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 hex digest of a file's bytes (what a solve's record lists, :data:`MANIFEST_KEY`)."""
    with open(path, "rb") as f:
        return _sha256_of(f)


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


#: What reading a damaged archive raises (RuntimeError: an encrypted member; NotImplementedError:
#: a compression method zipfile lacks; TokenError: a ``.npy`` header whose text is cut short,
#: which numpy reads with Python's tokenizer).
_DAMAGED = (
    OSError,
    ValueError,
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    RuntimeError,
    NotImplementedError,
    tokenize.TokenError,
)
#: The ``.npy`` header versions read: numpy writes 1.0, and 2.0 for a header over 64 KiB.
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
#: What one compressed byte can inflate to at most (deflate's limit is 1032 to 1), and an
#: allowance for the smallest streams: a member claiming more is damaged.
_DEFLATE_RATIO, _DEFLATE_SLACK = 1032, 1024


class _Entries:
    """A policy archive's ``.npy`` members, read one at a time and only when asked for: each
    is checked from its header (type, shape, and the bytes the archive says it holds, which
    the file's size bounds) before anything is allocated for it."""

    def __init__(self, where: str, archive: zipfile.ZipFile, file_size: int):
        self.where = where
        self.archive = archive
        self.file_size = file_size
        self.members = {info.filename[:-4]: info for info in archive.infolist() if info.filename.endswith(".npy")}

    def refuse(self, problem: str) -> PolicyFileError:
        return PolicyFileError(f"{self.where} {problem}")

    def __contains__(self, name: str) -> bool:
        return name in self.members

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype the member ``name`` declares, read from its header alone."""
        info = self.members[name]
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise self.refuse(f"has its {name} entry compressed by a method numpy never writes")
        if info.header_offset + info.compress_size > self.file_size:
            raise self.refuse(f"is damaged: its {name} entry runs past the end of the file")
        stored = info.compress_type == zipfile.ZIP_STORED
        if info.file_size > (info.compress_size if stored else info.compress_size * _DEFLATE_RATIO + _DEFLATE_SLACK):
            raise self.refuse(
                f"is damaged: its {name} entry claims {info.file_size:,} bytes, more than its "
                f"{info.compress_size:,} stored bytes can hold"
            )
        with self.archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            reader = _HEADER_READERS.get(version)
            if reader is None:
                raise self.refuse(
                    f"has its {name} entry in .npy version {version[0]}.{version[1]}, which no policy uses"
                )
            shape, _, dtype = reader(member)
            data_size = info.file_size - member.tell()
        if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
            raise self.refuse(f"has a {name} entry of dtype {dtype}, which no policy holds")
        claimed = math.prod(shape) * dtype.itemsize
        if claimed != data_size:
            raise self.refuse(
                f"is damaged: its {name} entry holds {data_size:,} bytes of data where its header says {claimed:,}"
            )
        return shape, dtype

    def read(self, name: str) -> np.ndarray:
        """The member ``name``'s array (its header checked first by the caller)."""
        with self.archive.open(self.members[name]) as member:
            return np.lib.format.read_array(member, allow_pickle=False)

    def scalar(self, name: str, kinds: str, max_size: int) -> Any:
        """The one value of the 0-d member ``name`` if its dtype is of one of ``kinds`` and at most
        ``max_size`` bytes, else ``None``."""
        if name not in self.members:
            return None
        shape, dtype = self.header(name)
        if shape != () or dtype.kind not in kinds or dtype.itemsize > max_size:
            return None
        return self.read(name).item()


#: The largest meta entry read, in characters (a solve writes a few hundred).
MAX_META_CHARS = 1 << 16
#: Bytes a character of a numpy string takes (UTF-32).
_CHAR_SIZE = 4


def _meta_text(entries: _Entries) -> str | None:
    """The meta entry's text; ``None`` if there is none or it is not a string. One longer
    than :data:`MAX_META_CHARS` is refused from its header, unread."""
    if "meta" not in entries:
        return None
    shape, dtype = entries.header("meta")
    if shape != () or dtype.kind != "U":
        return None
    chars = dtype.itemsize // _CHAR_SIZE
    if chars > MAX_META_CHARS:
        raise entries.refuse(
            f"has a meta entry of {chars:,} characters, and at most {MAX_META_CHARS:,} are read "
            "(a solve writes a few hundred)"
        )
    return str(entries.read("meta").item())


def _read_policy(entries: _Entries) -> dict[str, Any]:
    """The fields of a :class:`SolvedPolicy` from a file's entries, or a :class:`PolicyFileError`."""
    refuse = entries.refuse
    fmt = entries.scalar("format", "U", _CHAR_SIZE * len(FORMAT))
    if fmt != FORMAT:
        raise refuse(f"is not a solved policy file (its format is {fmt!r}, expected {FORMAT!r})")
    version = entries.scalar("version", "iu", 8)
    meta_text = _meta_text(entries)
    meta: Any = None
    meta_problem = ""
    if meta_text is not None:
        try:
            meta = read_json(meta_text)
        except ValueError as err:
            meta_problem = f" ({err})"
    if version is None:
        raise refuse("has no version number")
    named = meta.get("rules") if isinstance(meta, dict) else None
    rules = named if isinstance(named, str) else "RUNG"
    again = f"solve the rung again with `python -m training.solve {rules if rules in RUNG_INFOSETS else 'RUNG'}`"
    if version not in READABLE_VERSIONS:
        readable = " and ".join(map(str, READABLE_VERSIONS))
        raise refuse(f"is format version {version}, and this code reads versions {readable} only: {again}")
    if not isinstance(meta, dict):
        shown = "no meta entry" if meta_text is None else f"a meta entry that is not a JSON object{meta_problem}"
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
    rung = RUNG_INFOSETS.get(rules)  # rules: the meta's when it is a string
    if rung is None:
        raise refuse(
            f"names the rules {meta.get('rules')!r} in its meta, which are no ladder rung: a solved policy plays "
            f"one of {', '.join(RUNG_INFOSETS)}, the rung it was solved for"
        )
    stored = meta.get(DIGEST_KEY)
    if stored is not None and not _is_sha256(stored):
        raise refuse(f"has a meta {DIGEST_KEY} that is not a SHA-256 digest (64 lowercase hex digits)")
    missing = [name for name in _ARRAYS if name not in entries]
    if missing:
        raise refuse(f"lacks the array{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    arrays = {}
    sizes = rung.array_sizes()
    for name, dtype in _ARRAYS.items():
        shape, found = entries.header(name)
        kinds = "f" if dtype is np.float64 else "iu"
        if len(shape) != 1 or found.kind not in kinds:
            kind = "floating-point" if kinds == "f" else "integer"
            raise refuse(f"has {name} of shape {shape} and dtype {found}, expected a 1-d {kind} array")
        if shape[0] != sizes[name]:
            raise refuse(
                f"has {shape[0]:,} entries in {name} where a {rules} policy has {sizes[name]:,} (its "
                f"{rung.infosets:,} information sets hold {rung.actions:,} legal actions): it is not the "
                f"policy of {rules}, the rung its meta names"
            )
        arrays[name] = entries.read(name)
    n = rung.infosets
    for offsets, values in (("key_offsets", "key_entries"), ("action_offsets", "actions")):
        o = arrays[offsets].astype(np.int64)
        if o[0] != 0 or o[-1] != arrays[values].shape[0] or (np.diff(o) < 0).any():
            raise refuse(
                f"has {offsets} that do not cut {values} ({arrays[values].shape[0]} entries) into "
                f"{n} information sets in order"
            )
    if not np.isin(arrays["infoset_player"], range(num_players)).all():
        raise refuse(f"has an infoset_player outside the seats 0..{num_players - 1} of its {num_players}-player rung")
    players = PRESETS[rules].rung_players
    if num_players != players:
        # The digest covers the arrays, not the meta: a num_players larger than the rung's
        # (its seats all within it) would load unseen, and the policy say another table size.
        raise refuse(
            f"has meta num_players {num_players}, but {rules}, the rung its meta names, is played by {players} players"
        )
    # Ranges from the extremes, without a wider copy (mini9 has 208 million key entries).
    keys = arrays["key_entries"]
    if int(keys.min()) < 0 or int(keys.max()) >= OBSERVATION_SIZE * KEY_VALUE_RANGE:
        raise refuse(f"has a key entry outside 0..{OBSERVATION_SIZE * KEY_VALUE_RANGE - 1}")
    bad = np.flatnonzero((arrays["actions"] < 0) | (arrays["actions"] >= NUM_ACTIONS))
    if bad.size:
        raise refuse(f"has action id {arrays['actions'][bad[0]]}, and action ids are 0..{NUM_ACTIONS - 1}")
    actions = arrays["actions"].astype(np.int8)  # 0..40 now: their differences fit
    starts = arrays["action_offsets"][:-1].astype(np.int64)
    if (np.diff(arrays["action_offsets"]) < 1).any():
        raise refuse("has an information set with no legal action")
    rising = np.diff(actions) > 0
    rising[starts[1:] - 1] = True  # a new information set starts its own ascent
    if not rising.all():
        raise refuse("has an information set whose actions are not listed once each, in ascending order")
    # The rung's own information sets, each key once, with their legal actions: what the
    # agent looks up as it plays, so a file of another rung or an edited one is refused here
    # rather than at its first move. The digest is checked against the rung's, which the
    # table keeps, since building the tree to compare takes minutes for mini9.
    digest = infoset_digest(*(arrays[name] for name in _DIGESTED))
    if digest != rung.sha256:
        edited = "" if stored is None or stored == digest else " nor those it was solved with (the file was edited)"
        raise refuse(
            f"has information sets or legal actions that are not those of {rules}, the rung its meta names,"
            f"{edited or ' (another rung or another version of the tree, or an edited file)'}: {again}"
        )
    if stored is not None and stored != digest:
        raise refuse(f"has a meta {DIGEST_KEY} that is not the digest of its information sets (an edited meta)")
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


#: The largest solve record (``result.json``) read, in bytes (a solve writes a few KB).
MAX_RECORD_BYTES = 1 << 20


def _check_solve_folder(path: str | os.PathLike[str], meta: dict[str, Any], file_digest: str) -> None:
    """Refuse a policy file named :data:`POLICY_FILE` whose folder's :data:`RECORD_FILE`
    records another solve.

    ``python -m training.solve`` writes the record last, with the SHA-256 digest of each
    other file of the solve (:data:`MANIFEST_KEY`). A solve stopped between its renames (a
    kill, a crash) leaves the new files beside the old record: the files whose digest no
    longer matches are named. A record of an earlier version, without digests, must at least
    give the policy's rules, iterations and exploitability.
    """
    policy = Path(path)
    record_path = _record_beside(path)
    if record_path is None:
        return
    where = f"solved policy {os.fspath(path)!r}"
    folder = str(policy.parent)
    again = f"solve again with `python -m training.solve {meta['rules']} --out {folder} --force`"
    record = _read_record(where, record_path)
    manifest = record.get(MANIFEST_KEY)
    if manifest is None:
        fields = ("rules", "iterations", "exploitability")
        theirs, ours = [record.get(k) for k in fields], [meta.get(k) for k in fields]
        if theirs != ours:
            raise PolicyFileError(
                f"{where} is not the solve that {record_path} records (rules, iterations and exploitability "
                f"{ours} in the policy, {theirs} in the record): the folder mixes two solves; {again}"
            )
        return
    if (
        not isinstance(manifest, dict)
        or POLICY_FILE not in manifest
        or not set(manifest) <= {POLICY_FILE, PLOT_FILE}
        or not all(_is_sha256(d) for d in manifest.values())
    ):
        raise PolicyFileError(
            f"{where} sits beside a {RECORD_FILE} whose {MANIFEST_KEY} entry is not a digest of each file of the "
            f"solve ({POLICY_FILE} and {PLOT_FILE}): {again}"
        )
    changed = []
    for name, digest in manifest.items():
        file = policy.with_name(name)
        found = file_digest if name == POLICY_FILE else file_sha256(file) if file.is_file() else None
        if found != digest:
            changed.append(name if found is not None else f"{name} (missing)")
    if changed:
        raise PolicyFileError(
            f"{where} is in a folder that mixes two solves: {' and '.join(changed)} changed since {record_path} "
            f"recorded the solve (a solve stopped while it replaced its files?); {again}"
        )


def _record_beside(path: str | os.PathLike[str]) -> Path | None:
    """The record of the solve a policy file is part of: ``result.json`` beside a file named
    ``policy.npz``; ``None`` for any other file (one saved on its own)."""
    policy = Path(path)
    record = policy.with_name(RECORD_FILE)
    return record if policy.name == POLICY_FILE and os.path.lexists(record) else None


def _read_record(where: str, record_path: Path) -> dict[str, Any]:
    """A solve's record as a JSON object, read with a bound on its size and nesting."""
    try:
        if not record_path.is_file():  # a FIFO would block the read forever
            raise ValueError("it is not a regular file")
        with open(record_path, "rb") as f:
            raw = f.read(MAX_RECORD_BYTES + 1)
        if len(raw) > MAX_RECORD_BYTES:
            raise ValueError(f"it is larger than {MAX_RECORD_BYTES:,} bytes")
        record = read_json(raw)
        if not isinstance(record, dict):
            raise ValueError("it is not a JSON object")
    except (OSError, ValueError) as err:
        problem = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise PolicyFileError(
            f"{where} sits beside a {RECORD_FILE} that is not the record of a solve ({problem}), so whether "
            "the folder's files belong together cannot be told"
        ) from None
    return record


class SolvedAgent:
    """Plays a :class:`SolvedPolicy`: maps each observation to its information set and
    samples that set's stored probabilities with its own seeded generator.

    Args:
        path: a policy file written by ``python -m training.solve``.
        seed: seed of the agent's sampling generator (``None``: fresh entropy), an integer in
            ``0..MAX_SEED`` (:func:`~loveletter_env.validation.check_seed`), as every bot's.

    Raises:
        ValueError: a bad ``seed`` (a float, a bool, a string, a negative or too large integer).
    """

    name = "solved"
    #: The observation recalls the round, so the agent keeps no memory of its own.
    remembers_round = False
    #: Its probabilities are the file's, not estimated (see :class:`~.base.ProbabilisticAgent`).
    exact_probabilities = True

    def __init__(self, path: str | os.PathLike[str], seed: int | None = None):
        # Checked first, as the bots check theirs: random.Random takes any float, str or huge
        # integer as a seed, so 1.5 would silently sample another stream than 1.
        self._seed = check_seed(seed, allow_none=True)
        self.path = os.fspath(path)
        self.policy = SolvedPolicy.load(path)
        self._index = {self.policy.key(i): i for i in range(self.policy.num_infosets)}
        self.rng = random.Random(self._seed)

    @property
    def rules(self) -> str:
        return str(self.policy.meta.get("rules", "?"))

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; with ``seed`` (checked as in the constructor), reseed the sampling generator."""
        if seed is not None:
            self._seed = check_seed(seed)
            self.rng = random.Random(self._seed)

    def infoset(self, observation: Mapping[str, Any]) -> int:
        """The information set of this observation (a ``ValueError`` when it is none of the rung's)."""
        found = self._index.get(observation_key(observation["observation"]))  # which checks its size
        if found is None and np.asarray(observation["observation"]).reshape(-1)[_TO_ACT_SELF] != 1:
            # Every information set is a decision of its seat: this is no rung's, whatever the rules.
            raise ValueError(
                f"solved policy {self.path!r}: this observation is not of the seat to act, yet its action mask "
                "allows a move: the mask belongs to another observation"
            )
        if found is None:
            raise ValueError(
                f"solved policy {self.path!r} (rules {self.rules!r}) has no information set for this observation: "
                "the agent plays only the rung it was solved for"
            )
        return found

    def _decision(self, observation: Mapping[str, Any]) -> int:
        """The information set of an observation the agent is to act on, checked.

        Raises:
            ValueError: the mask has no legal action (the seat is not to act), the observation
                is of a seat that is not to act though its mask allows a move, it is no
                information set of the rung, or its mask is not that set's legal actions.
        """
        # The mask first, as the bots check it: a seat that is not to act has no information
        # set either, and "not the rung it was solved for" would blame the wrong thing.
        legal = legal_actions_of(observation)
        infoset = self.infoset(observation)
        lo, hi = self.policy.action_offsets[infoset], self.policy.action_offsets[infoset + 1]
        if self.policy.actions[lo:hi].tolist() != legal:
            raise ValueError(
                f"solved policy {self.path!r}: the action mask allows {legal}, but this observation's legal "
                f"actions are {self.policy.actions[lo:hi].tolist()}: the mask is not this observation's"
            )
        return infoset

    def action_probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        """float64 [41]: the stored probability of each action here (changes nothing)."""
        return self.policy.distribution(self._decision(observation))

    def replay_action(self, observation: Mapping[str, Any], action: int) -> None:
        """Nothing to remember: the next observation recalls ``action``."""

    def act(self, observation: Mapping[str, Any]) -> int:
        infoset = self._decision(observation)
        lo, hi = self.policy.action_offsets[infoset], self.policy.action_offsets[infoset + 1]
        actions, probs = self.policy.actions[lo:hi], self.policy.probabilities[lo:hi]
        u = self.rng.random() * float(probs.sum())
        pick = int(np.searchsorted(np.cumsum(probs), u, side="right"))
        action = int(actions[min(pick, len(actions) - 1)])
        return action

    def __repr__(self) -> str:
        return f"SolvedAgent(path={self.path!r}, seed={self._seed!r})"
