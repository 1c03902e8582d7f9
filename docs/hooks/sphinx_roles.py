"""MkDocs hook: render the Sphinx roles of the project's docstrings for the API pages.

The docstrings cross-reference with Sphinx roles (``:func:`step```, ``:class:`~loveletter_env.rules.Rules```),
which Markdown would print as they are. This hook turns each role into inline code, and a
fully qualified name into an optional mkdocs-autorefs reference, which becomes a link when
the API pages render that object and stays plain code when they do not. ``~`` shows only the
last component, as in Sphinx.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):<code>(?P<target>[^<]+)</code>")
LINKABLE = ("loveletter_env.", "training.")


def _render(match: re.Match) -> str:
    target = match["target"].strip()
    short = target.startswith("~")
    name = target.lstrip("~").lstrip(".")
    shown = name.rsplit(".", 1)[-1] if short else name
    if name.startswith(LINKABLE):
        return f'<autoref identifier="{name}" optional><code>{shown}</code></autoref>'
    return f"<code>{shown}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Rewrite the roles in a page's HTML, before mkdocs-autorefs resolves references."""
    return ROLE.sub(_render, html)
