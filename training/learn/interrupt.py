"""Ctrl-C and SIGTERM for long runs: stop at the next safe point, or at once on a second signal.

A training run interrupted in the middle of a rollout or an update holds a state no
checkpoint should capture (half a rollout played, generators advanced). Inside
:class:`StopRequest`, a first Ctrl-C (SIGINT) or SIGTERM only sets
:attr:`StopRequest.requested`; the loop checks it where its state is whole (after an
update), saves and stops. A second one raises ``KeyboardInterrupt`` as usual, for a run
that must end now. SIGTERM is what job schedulers, ``timeout``, ``kill`` and ``docker stop``
send before they force a process off (and the only one of the two that reaches a job a
shell started in the background), so a preempted run keeps its last update too.

Command lines end an interrupted run with 128 + the signal's number, what a shell reports
for a process that signal ended (:data:`EXIT_INTERRUPTED`, 130, for Ctrl-C), and a message
instead of a traceback.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any, NoReturn

#: Exit status of a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 128 + signal.SIGINT

#: The signals :class:`StopRequest` turns into a request to stop, each with the handler
#: Python starts with (it only takes over a signal nobody else has claimed).
STOP_SIGNALS: dict[int, Any] = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


def exit_interrupted(signum: int = signal.SIGINT) -> NoReturn:
    """End a command stopped by ``signum`` (Ctrl-C by default) with status 128 + ``signum``,
    ignoring any further stop signal on the way out: the stop is already under way, and one
    that lands after Python has put back the system's default handler (late in its shutdown)
    would kill the process by the signal instead of letting it exit with its status."""
    if threading.current_thread() is threading.main_thread():
        for stop_signal in STOP_SIGNALS:
            signal.signal(stop_signal, signal.SIG_IGN)
    sys.exit(128 + signum)


def signal_name(signum: int) -> str:
    """How messages name a stop signal: ``"Ctrl-C"`` for SIGINT, else its name (``"SIGTERM"``)."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


class RunInterrupted(KeyboardInterrupt):
    """A command's run stopped by a signal after it saved what it had; the message says where.

    A ``KeyboardInterrupt``, so callers that only expect Ctrl-C still stop; command lines
    print the message and end with :func:`exit_interrupted` ``(signum)``.
    """

    def __init__(self, message: str, signum: int = signal.SIGINT):
        super().__init__(message)
        self.signum = signum


class StopRequest:
    """Context manager: the first SIGINT or SIGTERM asks the loop to stop (``requested``
    becomes True, ``signal`` records which, and ``notice`` is printed to stderr); the second
    raises ``KeyboardInterrupt``.

    It only takes over a signal that still has Python's starting handler, and only in the
    main thread (signal handlers can only be set there); elsewhere it does nothing and
    ``requested`` stays False, so the signal behaves as it did.
    """

    def __init__(self, notice: str = "stopping at the next safe point; press Ctrl-C again to stop at once"):
        self.notice = notice
        self.requested = False
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            self.uninstall()
            raise KeyboardInterrupt
        self.requested = True
        self.signal = signum
        print(f"\n{signal_name(signum)}: {self.notice}", file=sys.stderr, flush=True)

    def install(self) -> StopRequest:
        """Take over SIGINT and SIGTERM (where allowed, see the class); :meth:`uninstall` gives them back."""
        if threading.current_thread() is threading.main_thread():
            for signum, default in STOP_SIGNALS.items():
                if signal.getsignal(signum) is default:
                    self._previous[signum] = default
                    signal.signal(signum, self._handle)
        return self

    def uninstall(self) -> None:
        """Restore the handlers found by :meth:`install`."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}

    def __enter__(self) -> StopRequest:
        return self.install()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.uninstall()
