"""Every figure that the README, the documentation and the configs quote in more than one
place says the same in each of them.

``docs/figures.yaml`` holds each such figure once, with what it measures and every place
that quotes it: a file and a phrase of that file, ``{}`` standing where the figure is. A
quote may give the whole figure (``54.6% (52.4–56.8)``) or only its first number
(``54.6%``); bold markers, line breaks and ``%`` signs inside the interval do not count, and
`` … `` in a phrase stands for any short text between its two parts. When
a figure changes, change it in ``docs/figures.yaml``: this test then names every place that
still quotes the old one. When a sentence that quotes a figure is reworded, update its phrase.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from conftest import ROOT

FIGURES_FILE = ROOT / "docs" / "figures.yaml"
SLOT = "{}"
GAP = " … "


def _figures() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(FIGURES_FILE.read_text(encoding="utf-8"))


def _flat(text: str) -> str:
    """``text`` without bold markers and comment signs (``#`` of a YAML comment), its runs of
    whitespace as one space: a phrase may wrap across lines."""
    text = re.sub(r"^[ \t]*# ?", "", text.replace("**", ""), flags=re.MULTILINE)
    return re.sub(r"\s+", " ", text)


def _written(figure: str) -> str:
    """A figure as the test compares it: no ``%`` signs inside its parentheses."""
    return re.sub(r"\([^)]*\)", lambda interval: interval[0].replace("%", ""), _flat(figure).strip())


def _pattern(part: str) -> str:
    """A regular expression for part of a phrase: its text, where `` … `` matches a short gap."""
    return ".{0,400}?".join(re.escape(_flat(piece)) for piece in part.split(GAP))


def _quotes(text: str, phrase: str) -> list[str]:
    """What stands where the phrase's ``{}`` is, at each place of ``text`` that matches the phrase."""
    before, after = (_pattern(part) for part in phrase.split(SLOT))
    # Short, and never across a table cell: a figure, not the rest of a paragraph.
    return [quote.strip() for quote in re.findall(f"{before}([^|]{{1,60}}?){after}", _flat(text))]


def test_every_entry_is_complete():
    for name, entry in _figures().items():
        assert set(entry) == {"figure", "what", "quoted"}, f"{name}: keys are figure, what and quoted"
        places = sum(len(phrases) for phrases in entry["quoted"].values())
        assert places >= 2, f"{name}: quoted in {places} place; the file is for figures quoted in several"
        for path, phrases in entry["quoted"].items():
            assert (ROOT / path).is_file(), f"{name}: no file {path}"
            for phrase in phrases:
                assert phrase.count(SLOT) == 1, f"{name}, {path}: {phrase!r} needs one {SLOT} where the figure is"


@pytest.mark.parametrize("name", list(_figures()))
def test_every_place_quotes_the_figure(name):
    entry = _figures()[name]
    figure = _written(str(entry["figure"]))
    accepted = {figure, figure.split(" (")[0]}
    wrong = []
    for path, phrases in entry["quoted"].items():
        text = (ROOT / path).read_text(encoding="utf-8")
        for phrase in phrases:
            found = _quotes(text, phrase)
            if not found:
                wrong.append(f"{path} no longer has the phrase {phrase!r} (reworded? update docs/figures.yaml)")
            wrong += [f"{path} says {quote!r} in {phrase!r}" for quote in map(_written, found) if quote not in accepted]
    assert not wrong, f"{name} is {entry['figure']} in docs/figures.yaml, but:\n" + "\n".join(wrong)


def test_a_changed_figure_is_caught_where_it_is_quoted():
    text = "| `belief` bot | `rule` bot | 2 | **54.6%** (52.4%–56.8%) | 50% |\nbeats it 54.6% of the\ntime"
    assert list(map(_written, _quotes(text, "| `belief` bot | `rule` bot | 2 | {} |"))) == ["54.6% (52.4–56.8)"]
    assert _quotes(text, "beats it {} of the time") == ["54.6%"]
    assert _quotes(text, "| `ismcts` bot | {} |") == []
    assert _quotes(text, "| `belief` bot … | 2 | {} |") == ["54.6% (52.4%–56.8%)"]
    assert _quotes("# wins\n# 35.3% against", "wins {} against") == ["35.3%"]  # across YAML comment lines
