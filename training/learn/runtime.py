"""Where a run executes, which process owns its folder, and how its random streams are seeded.

- :func:`pick_device`: the torch device a config's ``device`` names;
- :func:`claim_run_folder` / :class:`RunLock`: a run folder belongs to one process at a time,
  and a new run never writes over a folder that holds one;
- :func:`derive_seed`: independent seeds for every random stream of a run (acting, minibatch
  order, opponent draws, bots, evaluations...), mixed from the run's seed and a stream id,
  so no code touches a global random state.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
import torch

from loveletter_env.batched.driver import check_device  # noqa: F401 (the one device check, re-exported for training)
from loveletter_env.validation import check_writable
from training.learn.config import ConfigError

#: The file a process holds locked while it owns a run folder; it holds the owner's pid.
LOCK_FILE = ".lock"
#: The file whose presence means a folder holds a run (what ``--resume`` continues from).
RUN_MARKER = "latest.pt"
#: Files a run writes beside its config.yaml, metrics.csv (which a new run writes anew) and
#: latest.pt. A run that dies before its first save leaves some (best.pt, TensorBoard events).
RUN_OUTPUTS = ("best.pt", "result.pt", "learning_curve.png", "tb/events.out.tfevents.*", "snapshots/*_*.pt")

if sys.platform == "win32":
    import msvcrt

    _LOCK_OFFSET = 1024  # lock a byte past the pid text: a Windows lock bars reading what it covers

    def _lock(file: IO[str]) -> None:
        file.seek(_LOCK_OFFSET)
        msvcrt.locking(file.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(file: IO[str]) -> None:
        file.seek(_LOCK_OFFSET)
        msvcrt.locking(file.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(file: IO[str]) -> None:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(file: IO[str]) -> None:
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)


def pick_device(name: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' was requested but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(name)


def derive_seed(*parts: int) -> int:
    """A 63-bit seed mixed from several integers (run seed, stream id, update...)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class RunFolderError(ConfigError):
    """A run folder that cannot be used: it cannot be written, another process owns it, or
    a new run would write over the run it holds. The message names the folder."""


class RunLock:
    """Ownership of a run folder: an operating-system lock on its :data:`LOCK_FILE`.

    The system drops the lock when the owning process ends, however it ends (a crash,
    ``kill -9``, a power cut), so a folder is never left locked by a process that is gone;
    the file stays, holding the last owner's pid. Two locks on one folder exclude each other
    in one process too. Use as a context manager, or :meth:`acquire` / :meth:`release`.
    """

    def __init__(self, run_dir: str | os.PathLike[str]):
        self.run_dir = Path(run_dir)
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the folder now."""
        return self._file is not None

    def acquire(self) -> RunLock:
        """Take the folder (which must exist); :class:`RunFolderError` naming the owner's pid if
        another holder has it."""
        if self._file is not None:
            return self
        path = self.run_dir / LOCK_FILE
        try:
            file = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held open as the lock)
        except OSError as err:
            raise RunFolderError(f"run folder {str(self.run_dir)!r} cannot be written ({err.strerror})") from None
        try:
            _lock(file)
        except OSError:
            file.seek(0)
            owner = file.read(32).strip() or "not yet written"
            file.close()
            raise RunFolderError(
                f"run folder {str(self.run_dir)!r} is in use by another run (pid {owner}); two runs writing one "
                "folder would mix their files: wait for that run to end, or pick another run name"
            ) from None
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file
        return self

    def release(self) -> None:
        """Give the folder up (nothing happens if it is not held)."""
        file, self._file = self._file, None
        if file is not None:
            try:
                _unlock(file)
            finally:
                file.close()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()


def holds_run(run_dir: str | os.PathLike[str]) -> bool:
    """Whether ``run_dir`` holds a run (its :data:`RUN_MARKER`), which a new run must not overwrite.

    :class:`RunFolderError` naming the folder where looking it up fails (a name too long for
    the file system, a folder that may not be searched): such a folder cannot be said to hold
    no run, and the bare ``OSError`` would reach the user as a traceback.
    """
    try:
        return (Path(run_dir) / RUN_MARKER).exists()
    except OSError as err:
        why = f"looking it up fails ({err.strerror})"
        raise RunFolderError(f"run folder {str(run_dir)!r} cannot be used: {why}") from None


def claim_run_folder(run_dir: str | os.PathLike[str], resume: bool = False) -> RunLock:
    """Create ``run_dir`` if needed and take it (a held :class:`RunLock`) for a run that writes there.

    Everything a run would otherwise fail on later is checked here, before it starts:

    - the folder can be created and written in;
    - no other process owns it (two runs started together with one run name);
    - unless ``resume``, it holds no run yet: a new run would overwrite its ``latest.pt``,
      nor what a run that died before its first save left (:data:`RUN_OUTPUTS`), which the new
      run's files would mix with. This is checked once the lock is held, so no run can finish
      in between.

    Raises :class:`RunFolderError`, whose message names the folder and the problem.
    """
    run_dir = Path(run_dir)
    try:
        check_writable("run folder", run_dir, folder=True)
        run_dir.mkdir(parents=True, exist_ok=True)
    except ValueError as err:
        raise RunFolderError(str(err)) from None
    except OSError as err:
        raise RunFolderError(f"run folder {str(run_dir)!r} cannot be created ({err.strerror})") from None
    lock = RunLock(run_dir).acquire()
    if not resume and holds_run(run_dir):
        lock.release()
        raise RunFolderError(
            f"run folder {str(run_dir)!r} already holds a run (its {RUN_MARKER}), which a new run would overwrite: "
            "pick another run name"
        )
    if resume:  # a resumed run's own files, snapshots and all: nothing to look for
        return lock
    leftovers = sorted({str(path.relative_to(run_dir)) for pattern in RUN_OUTPUTS for path in run_dir.glob(pattern)})
    if leftovers:
        lock.release()
        listed = ", ".join(leftovers[:5]) + (f" and {len(leftovers) - 5} more" if len(leftovers) > 5 else "")
        raise RunFolderError(
            f"run folder {str(run_dir)!r} holds what a run that stopped before its first save left ({listed}), "
            "which a new run's files would mix with: remove those files or pick another run name"
        )
    return lock
