"""Where a rule option is read: few places, so that changing one touches few files.

docs/architecture.md lists what a card change and a rule option touch, and names the files
that read the King's Handmaid option. These tests find the files that read it and require
them to be exactly the files listed here, each with its reason, and exactly the files the
page names: a new reader, a reader that stopped reading it, or a page out of step fails.
"""

from __future__ import annotations

import re

from conftest import ROOT

OPTION = "king_ignores_handmaid"
#: The source the package and its tools run (the web app's page and script included).
SOURCE_FOLDERS = ("loveletter_env", "training", "examples", "scripts")
SOURCE_SUFFIXES = {".py", ".js", ".html", ".sh"}
#: The files that read the option, and why each must.
READERS = {
    "loveletter_env/rules.py": "defines the option, its presets and its checks",
    "loveletter_env/engine.py": "the reference engine applies it when it lists the King's targets",
    "loveletter_env/core/__init__.py": "writes it into a record's byte, which the compiled kernels read",
    "loveletter_env/observation/__init__.py": "shows it to the players, and rebuilds the rules from what a seat sees",
    "loveletter_env/replay.py": "saves it with a game and checks it on load",
    "loveletter_env/render.py": "the card reference words the King and the Handmaid by it",
}
NUMBER_WORDS = {"four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def _files_reading(word: str) -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for folder in SOURCE_FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in SOURCE_SUFFIXES and word in path.read_text(encoding="utf-8")
    }


def _files_the_architecture_page_names() -> tuple[int, set[str]]:
    """The count and the files of the page's sentence "N files name it: `a`, `b`, ...;"."""
    text = " ".join((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split())
    found = re.search(r"\((\w+) files name it: ([^;]*);", text)
    assert found, "docs/architecture.md no longer says which files name the option"
    files = {f"loveletter_env/{name}" for name in re.findall(r"`([^`]+)`", found[2])}
    return NUMBER_WORDS[found[1]], files


def test_the_files_that_read_the_king_option_are_the_listed_ones():
    reading = _files_reading(OPTION)
    assert not reading - READERS.keys(), (
        f"files read {OPTION} without a listed reason: {sorted(reading - READERS.keys())}"
    )
    assert not READERS.keys() - reading, f"listed files no longer read {OPTION}: {sorted(READERS.keys() - reading)}"


def test_the_architecture_page_names_the_same_files():
    count, named = _files_the_architecture_page_names()
    assert named == READERS.keys()
    assert count == len(named)
