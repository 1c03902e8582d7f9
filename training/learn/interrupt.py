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

Why :func:`exit_interrupted` runs an empty ``exec`` before it exits: CPython (3.11 here)
marks a ``KeyboardInterrupt`` as unhandled whenever it leaves code run from a *string*
by ``exec``/``eval`` (``run_eval_code_obj`` sets the flag that the top level sets for an
uncaught one), even if a caller catches it afterwards. Under ``python -m`` the
interpreter, once finalized, then looks only at that flag: it puts back SIGINT's
default action and sends itself SIGINT, so the process dies by the signal (status -2,
which a shell shows as 130) whatever ``sys.exit`` asked for, and ignoring SIGINT
beforehand cannot stop it. Such code runs in the main thread more often than it seems:
the first call of a compiled function initializes numba, which imports modules that
build functions from strings (``dataclasses``, ``namedtuple``, scipy's
``exec("from numpy import *")``), and under load a Ctrl-C that lands in those seconds
may land inside one. A string ``exec`` that completes clears the flag again, so
:func:`exit_interrupted` runs one after the stop signals are ignored, when no further
``KeyboardInterrupt`` can set it. A second signal that lands in a command's own
``except KeyboardInterrupt`` before that point escapes ``main``; :func:`run_command`
catches it and ends the command the same way. The same start-up of numba loses some
Ctrl-Cs outright (a ``KeyboardInterrupt`` raised in a ``__del__`` or a ctypes callback is
printed and dropped); :func:`run_command` sends those again.

A command's life has two more windows that :func:`run_command` cannot cover by itself: the
seconds its module spends importing its ``main`` (torch, numba, optuna) before
:func:`run_command` is called, which :func:`loading_command` covers (and
:func:`loading_package` the import of the package ``training`` itself, which ``python -m``
runs first), and Python's shutdown once ``main`` has returned, when late on SIGINT has its
default action again (see :func:`run_command`).

SIGTERM's default action ends a process at once, by the signal. Commands whose work has no
safe point to reach (an evaluation, a solve) stop on it as on Ctrl-C inside
:func:`sigterm_interrupts`: what they kept is reported, and they exit with status 143.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType, TracebackType
from typing import Any, NoReturn

#: Exit status of a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 128 + signal.SIGINT

#: The signals :class:`StopRequest` turns into a request to stop, each with the handler
#: Python starts with (it only takes over a signal nobody else has claimed).
STOP_SIGNALS: dict[int, Any] = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


def exit_interrupted(signum: int | None = None) -> NoReturn:
    """End a command stopped by ``signum`` with status 128 + ``signum``; by default the
    signal behind the ``KeyboardInterrupt`` being handled (see :func:`stop_signal`), so a
    command's ``except KeyboardInterrupt`` ends a SIGTERM with 143 and a Ctrl-C with 130.

    Further stop signals are ignored on the way out: the stop is already under way, and
    one that lands after Python has put back the system's default handler (late in its
    shutdown) would kill the process by the signal instead. The interpreter's mark of an
    unhandled ``KeyboardInterrupt`` is then cleared, or ``python -m`` would still end by
    SIGINT (see the module's docstring).
    """
    if signum is None:
        signum = stop_signal(sys.exc_info()[1])
    if threading.current_thread() is threading.main_thread():
        _ignore_stop_signals()
    exec("", {})  # clears the mark; only a string exec does (see the module's docstring)
    sys.exit(128 + signum)


def _ignore_stop_signals() -> None:
    # signal.signal first runs the handler of a signal still pending, so a second Ctrl-C
    # that arrived a moment ago raises here, before the handler is replaced: try again.
    while True:
        try:
            for stop_signal in STOP_SIGNALS:
                signal.signal(stop_signal, signal.SIG_IGN)
            return
        except KeyboardInterrupt:
            continue


def run_command(main: Callable[[list[str]], object], argv: Sequence[str]) -> None:
    """Run a command line's ``main(argv)`` (a ``python -m`` module's last line) and exit with
    the status it returns when that is an ``int`` (0 for anything else: a report, a path); a
    returned 130 (or 143) ends by :func:`exit_interrupted`, as a stop must.

    A command catches its own ``KeyboardInterrupt``, prints what it kept and calls
    :func:`exit_interrupted`; a second Ctrl-C that lands in that handler before it ends
    escapes ``main`` and would end the process with a traceback and by the signal. It ends
    here instead, with the status of the signal (a :class:`RunInterrupted` names it).

    Meanwhile a Ctrl-C that Python drops is sent again (see :func:`_resend_lost_ctrl_c`), and one
    that a library turned into an error of its own ends the command as a Ctrl-C too (see
    :func:`_stop_behind`).

    Once ``main`` has returned, the stop signals are ignored: the work is done, and Python's
    shutdown takes moments (seconds once torch is loaded), late in which it puts back SIGINT's
    default action, so a Ctrl-C there would end a finished command by the signal (status
    -2, a failure to a shell or CI) instead of with the status it returned.
    """
    try:
        with _resending_lost_ctrl_c():
            status = main(list(argv))
            if threading.current_thread() is threading.main_thread():
                _ignore_stop_signals()  # finished: nothing left that a stop could keep
    except KeyboardInterrupt as stop:
        print("\ninterrupted", file=sys.stderr)
        exit_interrupted(stop_signal(stop))
    except BrokenPipeError:
        _end_with_closed_output()
    except Exception as error:
        behind = _stop_behind(error)
        if behind is None:
            raise
        print("\ninterrupted", file=sys.stderr)
        exit_interrupted(stop_signal(behind))
    if type(status) is int and status - 128 in STOP_SIGNALS:
        exit_interrupted(status - 128)  # a main that caught its stop and returned its status
    sys.exit(status if type(status) is int else 0)


@contextlib.contextmanager
def loading_command(module_name: str) -> Iterator[None]:
    """Around the imports of a command module (``python -m training.NAME``) that load its
    ``main``: they take seconds (torch, numba, optuna), and :func:`run_command` is not running
    yet, so a Ctrl-C then would end the command with a traceback and by the signal.

    Run as the program (``module_name``, the module's ``__name__``, is ``"__main__"``), a
    Ctrl-C inside ends it as :func:`run_command` does: a one-line message and status 130;
    one that Python drops is sent again. Imported (``from training.selfplay import main``),
    it does nothing: a Ctrl-C then is the importer's.
    """
    if module_name != "__main__":
        yield
        return
    try:
        with _resending_lost_ctrl_c():
            yield
    except KeyboardInterrupt:
        print("\ninterrupted while the command started; nothing was done", file=sys.stderr)
        exit_interrupted()


def loading_package(package: str) -> contextlib.AbstractContextManager[None]:
    """:func:`loading_command` around the imports of a package of commands (``training``):
    ``python -m training.NAME`` imports the package (numba, numpy: most of a second) before
    NAME's own :func:`loading_command` runs. Imported any other way, the package is a
    library's, and a Ctrl-C while it loads is the importer's."""
    return loading_command("__main__" if _imported_by_python_m(package) else package)


def _imported_by_python_m(package: str) -> bool:
    """Whether ``python -m PACKAGE.NAME`` imports ``package`` now, on its way to NAME.

    While ``python -m`` imports the packages above the module it runs, ``sys.argv[0]`` is
    still ``"-m"`` (it becomes the module's path once the module is found); the module is
    named in ``sys.orig_argv``, alone or glued to ``-m`` (``-mtraining.selfplay``).
    """
    if sys.argv[:1] != ["-m"]:
        return False
    return any(arg.removeprefix("-m").startswith(f"{package}.") for arg in sys.orig_argv[1:])


@contextlib.contextmanager
def _resending_lost_ctrl_c() -> Iterator[None]:
    """Inside the block, a Ctrl-C that Python drops is sent again (see :func:`_resend_lost_ctrl_c`)."""
    previous_hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(_resend_lost_ctrl_c, previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook


def _stop_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` that ``error`` was raised from or while handling, if any.

    A Ctrl-C can land in a library's lazy import, and the library then fails on its
    half-imported module while it handles it and raises an error of its own: torch's ONNX
    exporter, whose ``except torch._dynamo.exc...`` clause fails on ``torch._dynamo`` when the
    Ctrl-C broke off that import, and which wraps that in its ``TorchExportError``. The
    command was stopped, not broken: it ends as stopped, not with the library's traceback.
    """
    seen: set[int] = set()
    waiting: list[BaseException | None] = [error]
    while waiting:
        current = waiting.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        waiting += [current.__cause__, current.__context__]
    return None


def _end_with_closed_output() -> NoReturn:
    """The reader of standard output left (``python -m training.evaluate ... | head``): end
    quietly, as a shell tool does, with status 1. Python would print a traceback, and another
    at exit, when it flushes output that can no longer be written, unless stdout points
    elsewhere first."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


def _resend_lost_ctrl_c(previous_hook: Callable[[Any], object], unraisable: Any) -> None:
    """``sys.unraisablehook`` while a command runs.

    Python cannot raise an exception out of a ``__del__``, a weakref callback or a ctypes
    callback; it prints it and drops it. A Ctrl-C that lands in one (numba, loading its
    compiled functions, runs many: llvmlite's object cache is a ctypes callback) was lost,
    and the command ran on. Such a ``KeyboardInterrupt`` is not printed: its signal (SIGINT,
    or SIGTERM where :func:`sigterm_interrupts` raised it: a Ray cluster's finalizers run while
    a run stops, and a SIGTERM resent as SIGINT ended it with 130, not 143) is sent to the main
    thread again, a moment later, from a thread of its own (sent from here, it would be raised
    in this hook and dropped too), until it lands where it can be raised.
    """
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
        previous_hook(unraisable)
        return
    _thread.start_new_thread(_send_stop_to_main_thread, (stop_signal(unraisable.exc_value),))


def _send_stop_to_main_thread(signum: int) -> None:
    time.sleep(0.05)
    main_thread = threading.main_thread().ident
    # Only while Python handles the signal: ignored, the stop is under way; at the system's
    # default (Python finalizing), it would kill the process.
    if main_thread is not None and callable(signal.getsignal(signum)):
        signal.pthread_kill(main_thread, signum)


def signal_name(signum: int) -> str:
    """How messages name a stop signal: ``"Ctrl-C"`` for SIGINT, else its name (``"SIGTERM"``)."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def stop_signal(stop: BaseException | None) -> int:
    """The signal that raised ``stop``, a ``KeyboardInterrupt`` or one raised while handling
    one (an evaluation's report of the rounds it played): the ``signum`` of a
    :class:`RunInterrupted` in its chain, else SIGINT (Ctrl-C)."""
    seen: set[int] = set()
    while stop is not None and id(stop) not in seen:
        seen.add(id(stop))
        if isinstance(stop, RunInterrupted):
            return stop.signum
        stop = stop.__cause__ or stop.__context__
    return signal.SIGINT


class _SigtermInterrupts:
    """SIGTERM's handler inside :func:`sigterm_interrupts` (a class, so that
    :class:`StopRequest` knows it): raises a :class:`RunInterrupted` naming SIGTERM."""

    def __init__(self) -> None:
        self.pid = os.getpid()

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self.pid:
            # A child forked inside the block inherits the handler: an evaluation's pool
            # worker, which its parent ends with SIGTERM. It must die by it, as before.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise RunInterrupted("SIGTERM", signum)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Inside the block, SIGTERM stops the command as Ctrl-C does: it raises a
    :class:`RunInterrupted` (a ``KeyboardInterrupt``) whose ``signum`` is SIGTERM, which the
    command handles as a Ctrl-C (it reports what it kept) and :func:`exit_interrupted` ends
    with status 143. SIGTERM's own action would end the process by the signal at once,
    without a word (an evaluation's figures and its workers lost, the workers left running).

    Only where SIGTERM still has its starting action, and in the main thread (signals are
    set there); a :class:`StopRequest` inside takes SIGTERM over as usual.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    handler = _SigtermInterrupts()
    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is handler:  # not once a stop ignores further signals
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


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

    It only takes over a signal that still has Python's starting handler (or SIGTERM's of
    :func:`sigterm_interrupts`), and only in the main thread (signal handlers can only be set
    there); elsewhere it does nothing and ``requested`` stays False, so the signal behaves as
    it did.
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
                current = signal.getsignal(signum)
                if current is default or isinstance(current, _SigtermInterrupts):
                    self._previous[signum] = current
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
