"""``python -m loveletter_env.observation``: prints the observation layout as the Markdown
tables of docs/environment.md (:func:`loveletter_env.observation.layout_table`).

A module of its own, not a ``__main__`` block of the layout's module: the package imports
that module before ``-m`` would run it, and Python then warns that it runs a second copy.
"""

from __future__ import annotations

from loveletter_env.observation import layout_table


def main() -> None:
    print(layout_table())


if __name__ == "__main__":
    main()
