"""Files written whole or not at all.

Every tool that writes a file a user keeps (checkpoints, replays, reports, exports, solved
policies) writes it under a temporary name beside its place, then renames it over the old one.
A rename within one folder is atomic, so a crash, a kill or Ctrl-C mid-write leaves the old
file as it was, never half a new one; and processes writing the same report (the processes of
one sweep) never show a reader one half written.

This module depends on nothing else in the package: anything may import it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["replacing", "replacing_together", "temporary_beside"]


def temporary_beside(path: Path) -> Path:
    """The temporary name ``path`` is written under before it is renamed into place: a dotted
    sibling (the same filesystem, so the rename is atomic) carrying this process's id, so that
    processes writing the same file never write into one temporary file."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary file to write, which replaces ``path`` when the block ends without an error.

    Close the file before the block ends (open it in the same ``with`` statement, after this
    one). On an error the temporary file is removed and ``path`` stays as it was. ``path``'s
    folder must exist.
    """
    with replacing_together([path]) as (temporary,):
        yield temporary


@contextlib.contextmanager
def replacing_together(
    paths: Sequence[str | os.PathLike[str]], replaced: list[Path] | None = None
) -> Iterator[list[Path]]:
    """Temporary files to write, one per path, which replace ``paths`` together when the block
    ends without an error: a failure while writing any of them leaves every path as it was, so a
    folder never holds one run's table beside another's chart.

    The renames go in the order of ``paths``; each path renamed is appended to ``replaced`` when
    given, so that a caller whose rename failed part of the way can say which files changed."""
    targets = [Path(path) for path in paths]
    temporaries = [temporary_beside(target) for target in targets]
    try:
        yield temporaries
        for temporary, target in zip(temporaries, targets, strict=True):
            os.replace(temporary, target)
            if replaced is not None:
                replaced.append(target)
    finally:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
