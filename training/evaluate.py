"""``python -m training.evaluate``: measure agents against each other.

A thin command over two wings: the options, their checks, evaluations and leagues are
:mod:`training.measure.evaluate_command`'s; ``--exact`` (a head-to-head on a ladder rung,
worked out rather than played) is :mod:`training.exploitability.exact_command`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from training.learn.interrupt import loading_command, run_command, sigterm_interrupts, stop_signal

with loading_command(__name__):  # Ctrl-C while main loads (seconds): a message, not a traceback
    from training.exploitability.exact_command import run_exact
    from training.learn.compile_notice import announce_kernel_compilation
    from training.measure.evaluate_command import build_parser, check_arguments, run_evaluation

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    announce_kernel_compilation()
    check_arguments(parser, args)
    # SIGTERM (a scheduler, `kill`, `timeout`) stops the work as Ctrl-C does, reported the same way.
    with sigterm_interrupts():
        if args.exact:
            return run_exact(parser, args)
        try:
            return run_evaluation(parser, args)
        except KeyboardInterrupt as stop:  # run_evaluation has said what was played
            return 128 + stop_signal(stop)  # run_command ends the process by exit_interrupted


if __name__ == "__main__":
    run_command(main, sys.argv[1:])
