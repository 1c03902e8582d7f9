"""Flags the command lines once took, refused with a sentence that says why.

A flag a tool once took keeps a refusal here instead of vanishing, so a command line
written for it fails with a reason rather than argparse's "unrecognized arguments".
"""

from __future__ import annotations

import argparse

#: Why no tool takes a choice of information sets (the flags that once chose refuse with it).
ONE_GAME = (
    "the observation is the player's information state (every announced move, perfect recall), so there is one game"
)


class _RetiredFlag(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"{option_string} is retired: {ONE_GAME}")


def retire_flag(parser: argparse.ArgumentParser, flag: str, nargs: int | str | None = "?") -> None:
    """Make ``parser`` refuse ``flag`` (with or without a value: ``nargs``) with one sentence
    naming it, so a command line written for the information modes says why it stopped working."""
    parser.add_argument(flag, nargs=nargs, action=_RetiredFlag, help=argparse.SUPPRESS)
