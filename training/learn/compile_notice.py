"""A word on stderr while numba compiles the game's kernels.

The compiled core compiles each kernel on its first use and caches it on disk; a first run
otherwise sits at 0% for tens of seconds without a word. The command-line tools call
:func:`announce_kernel_compilation` before their work. (No torch here: ``training.evaluate``
forks its workers only while torch is not loaded.)
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
from typing import Any

from numba.core import event as numba_event
from tqdm import tqdm

#: What a command prints, once (its forked workers included), when numba starts compiling a kernel.
COMPILING_KERNELS = (
    "compiling the game's kernels on first use (tens of seconds); they are cached on disk, so later runs start at once"
)


class _CompileNotice(numba_event.Listener):
    """Prints :data:`COMPILING_KERNELS` at the first compilation of the command.

    Once installed, whether it was said lives in shared memory, so the workers a command forks
    (``training.evaluate --workers N``), which each compile for themselves on a first run,
    say it once between them rather than once each, in lines torn into one another.
    """

    def __init__(self) -> None:
        self.installed = False
        self._said = False  # until install(): this process's own
        self._shared: Any = None  # from install(): a multiprocessing.Value that forked workers share

    @property
    def said(self) -> bool:
        """Whether the notice was printed, by this process or one it shares the notice with."""
        return bool(self._shared.value) if self._shared is not None else self._said

    @said.setter
    def said(self, value: bool) -> None:
        if self._shared is not None:
            self._shared.value = int(value)
        else:
            self._said = bool(value)

    def install(self) -> None:
        """Listen to numba's compilations (again: nothing happens)."""
        if self.installed:
            return
        # Only forked workers inherit it (spawned ones never install the notice): the fork
        # context's semaphore needs no resource-tracker process.
        if "fork" in multiprocessing.get_all_start_methods():
            with contextlib.suppress(OSError, ImportError):  # no shared memory or semaphores: one per process
                self._shared = multiprocessing.get_context("fork").Value("b", int(self._said))
        numba_event.register("numba:compile", self)
        self.installed = True

    def on_start(self, event: numba_event.Event) -> None:
        # Test and set under the shared lock: workers forked together compile together.
        with self._shared.get_lock() if self._shared is not None else contextlib.nullcontext():
            if self.said:
                return
            self.said = True
        # tqdm.write: a progress bar on the terminal is redrawn below the line, not torn.
        tqdm.write(COMPILING_KERNELS, file=sys.stderr)

    def on_end(self, event: numba_event.Event) -> None:
        pass


_NOTICE = _CompileNotice()


def announce_kernel_compilation() -> None:
    """Say on stderr, once per command (its forked workers included), when numba starts
    compiling a kernel.

    numba fires its ``numba:compile`` event only for a kernel missing from its on-disk cache,
    never for one loaded from it, so a run with the kernels cached stays quiet. Calling this
    again changes nothing.
    """
    _NOTICE.install()
