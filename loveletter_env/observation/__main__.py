"""``python -m loveletter_env.observation``: prints the observation layout as the Markdown
tables of docs/environment.md (:func:`loveletter_env.observation.layout_table`).

A module of its own, not a ``__main__`` block of the layout's module: the package imports
that module before ``-m`` would run it, and Python then warns that it runs a second copy.
"""

from __future__ import annotations

import argparse
import os
import sys

from loveletter_env.observation import layout_table


def main(argv: list[str] | None = None) -> None:
    """Print the layout tables; ``--help`` says so, and any argument is refused by name
    (the command takes none: without a parser, ``--help`` printed the tables)."""
    argparse.ArgumentParser(
        prog="python -m loveletter_env.observation",
        description="Print the observation layout (every field's indices, shape and meaning, then one "
        "move-record slot) as the Markdown tables of docs/environment.md.",
    ).parse_args(argv)
    try:
        print(layout_table(), flush=True)
    except BrokenPipeError:
        # The reader left (``| head``): end quietly, as a shell tool does. Python would print a
        # traceback, and another at exit when it flushes what it can no longer write, unless
        # standard output points elsewhere first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
