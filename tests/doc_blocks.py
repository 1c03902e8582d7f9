"""The fenced code blocks of ``README.md`` and ``docs/**/*.md``, with their markers: what
``tests/docs/test_readme.py`` runs and ``tests/docs/test_commands.py`` parses.

A block may follow one marker line:

* ``<!-- test: skip: REASON -->``: too slow to run in the tests (it trains or measures for
  minutes, installs packages or waits for a person);
* ``<!-- test: needs: EXTRA ... -->``: it needs those extras of ``pyproject.toml``;
* ``<!-- snippet: ... -->`` (``docs/libraries.md`` only): ``test_libraries.py`` runs it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LIBRARIES_PAGE = ROOT / "docs" / "libraries.md"
SKIP = "test: skip:"
NEEDS = "test: needs:"
BLOCK = re.compile(
    r"^(?:<!-- (?P<marker>[^\n]*?) -->\n)?```(?P<lang>python|bash)\n(?P<code>.*?)^```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


class Block(NamedTuple):
    where: str  # "docs/page.md:LINE" of the opening fence
    lang: str
    code: str
    skip_reason: str | None
    needs: tuple[str, ...] = ()  # extras of pyproject.toml


def read_blocks() -> list[Block]:
    """Every ``python`` and ``bash`` block of the pages, in page order, each distinct code once
    (the front page repeats a snippet of ``docs/libraries.md``), the snippets left out."""
    snippets = {
        ("python", m["code"])
        for m in BLOCK.finditer(LIBRARIES_PAGE.read_text(encoding="utf-8"))
        if (m["marker"] or "").startswith("snippet:")
    }
    blocks, seen = [], set(snippets)
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            marker = match["marker"] or ""
            if page == LIBRARIES_PAGE and marker.startswith("snippet:"):
                continue
            if (match["lang"], match["code"]) in seen:
                continue
            seen.add((match["lang"], match["code"]))
            line = text.count("\n", 0, match.start("lang")) + 1
            reason = marker[len(SKIP) :].strip() if marker.startswith(SKIP) else None
            needs = tuple(marker[len(NEEDS) :].split()) if marker.startswith(NEEDS) else ()
            where = f"{page.relative_to(ROOT)}:{line}"
            blocks.append(Block(where, match["lang"], match["code"], reason, needs))
    return blocks
