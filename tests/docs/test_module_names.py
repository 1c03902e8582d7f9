"""No two modules of the packages share a file name, so that a name in a traceback, a search
or an editor tab says which module it is. The one exception is the commands: the thin
modules at the top of ``training`` are named for ``python -m training.NAME``, and
``training/__init__.py`` lists them."""

from __future__ import annotations

import re
from collections import defaultdict

from conftest import ROOT

import training

PACKAGES = ("loveletter_env", "training")


def _documented_commands() -> set[str]:
    """The command names ``training``'s docstring lists ("The commands are thin modules at
    the top (...): ``selfplay``, ... and ``export``.")."""
    match = re.search(r"The commands are thin modules at the top[^:]*:(.*?)\.\s", training.__doc__ or "", re.S)
    assert match, "training/__init__.py no longer lists its commands"
    return set(re.findall(r"``(\w+)``", match.group(1)))


def test_the_documented_commands_are_the_modules_at_the_top_of_training():
    modules = {path.stem for path in (ROOT / "training").glob("*.py") if path.name != "__init__.py"}
    assert modules == _documented_commands()


def test_no_two_modules_share_a_file_name_but_the_commands():
    paths = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "__init__.py":
                paths[path.name].append(path.relative_to(ROOT).as_posix())
    commands = {f"training/{name}.py" for name in _documented_commands()}
    shared = {
        name: where
        for name, where in paths.items()
        if len(where) > 1 and not (len(where) == 2 and any(path in commands for path in where))
    }
    assert not shared, f"modules sharing a file name: {shared}"
