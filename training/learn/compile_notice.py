"""A word on stderr while numba compiles the game's kernels.

The compiled core compiles each kernel on its first use and caches it on disk; a first run
otherwise sits at 0% for tens of seconds without a word. The command-line tools call
:func:`announce_kernel_compilation` before their work. (No torch here: ``training.evaluate``
forks its workers only while torch is not loaded.)
"""

from __future__ import annotations

import sys

from numba.core import event as numba_event
from tqdm import tqdm

#: What a command prints, once per process, when numba starts compiling a kernel.
COMPILING_KERNELS = (
    "compiling the game's kernels on first use (tens of seconds); they are cached on disk, so later runs start at once"
)


class _CompileNotice(numba_event.Listener):
    """Prints :data:`COMPILING_KERNELS` at the first compilation of the process."""

    def __init__(self) -> None:
        self.installed = False
        self.said = False

    def on_start(self, event: numba_event.Event) -> None:
        if not self.said:
            self.said = True
            # tqdm.write: a progress bar on the terminal is redrawn below the line, not torn.
            tqdm.write(COMPILING_KERNELS, file=sys.stderr)

    def on_end(self, event: numba_event.Event) -> None:
        pass


_NOTICE = _CompileNotice()


def announce_kernel_compilation() -> None:
    """Say on stderr, once per process, when numba starts compiling a kernel.

    numba fires its ``numba:compile`` event only for a kernel missing from its on-disk cache,
    never for one loaded from it, so a run with the kernels cached stays quiet. Calling this
    again changes nothing.
    """
    if not _NOTICE.installed:
        numba_event.register("numba:compile", _NOTICE)
        _NOTICE.installed = True
