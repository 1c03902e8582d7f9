"""Ctrl-C for long runs: stop at the next safe point, or at once on a second press.

A training run interrupted in the middle of a rollout or an update holds a state no
checkpoint should capture (half a rollout played, generators advanced). Inside
:class:`StopRequest`, a first Ctrl-C only sets :attr:`StopRequest.requested`; the loop
checks it where its state is whole (after an update), saves and stops. A second Ctrl-C
raises ``KeyboardInterrupt`` as usual, for a run that must end now.

Command lines end an interrupted run with :data:`EXIT_INTERRUPTED` (128 + SIGINT, what a
shell reports for a process ended by Ctrl-C) and a message instead of a traceback.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any, NoReturn

#: Exit status of a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 128 + signal.SIGINT


def exit_interrupted() -> NoReturn:
    """End a command stopped by Ctrl-C with :data:`EXIT_INTERRUPTED`, ignoring any further
    Ctrl-C on the way out: the stop is already under way, and a press that lands after
    Python has put back the system's default handler (late in its shutdown) would kill the
    process by the signal instead of letting it exit with its status."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(EXIT_INTERRUPTED)


class StopRequest:
    """Context manager: the first SIGINT asks the loop to stop (``requested`` becomes
    True and ``notice`` is printed to stderr); the second raises ``KeyboardInterrupt``.

    It only takes over SIGINT where Python's default handler is installed and in the
    main thread (signal handlers can only be set there); elsewhere it does nothing and
    ``requested`` stays False, so Ctrl-C behaves as it did.
    """

    def __init__(self, notice: str = "stopping at the next safe point; press Ctrl-C again to stop at once"):
        self.notice = notice
        self.requested = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            signal.signal(signal.SIGINT, self._previous)
            raise KeyboardInterrupt
        self.requested = True
        print(f"\n{self.notice}", file=sys.stderr, flush=True)

    def install(self) -> StopRequest:
        """Take over SIGINT (where allowed, see the class); :meth:`uninstall` gives it back."""
        if threading.current_thread() is threading.main_thread():
            current = signal.getsignal(signal.SIGINT)
            if current is signal.default_int_handler:
                self._previous = current
                signal.signal(signal.SIGINT, self._handle)
        return self

    def uninstall(self) -> None:
        """Restore the SIGINT handler found by :meth:`install`."""
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def __enter__(self) -> StopRequest:
        return self.install()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.uninstall()
