"""docs/architecture.md against the code: every module listed, imports running down, no new
circles, the picture current, and the files a new card, a rule option or a new bot touches.

The page's tables are the one statement of the layers of ``loveletter_env`` and the wings of
``training``; ``scripts/architecture.py`` reads them and the import graph (with :mod:`ast`,
every import statement counted, inside functions too) for both the picture and these tests.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cut_short

from loveletter_env import cards

_spec = importlib.util.spec_from_file_location("architecture", ROOT / "scripts" / "architecture.py")
assert _spec is not None and _spec.loader is not None
architecture = importlib.util.module_from_spec(_spec)
sys.modules["architecture"] = architecture
_spec.loader.exec_module(architecture)

PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
FLAT_PAGE = " ".join(PAGE.split())
GRAPH = architecture.import_graph()
DECLARED = architecture.declared_groups(PAGE)
WHERE = architecture.group_of(DECLARED)
#: Where a card's constant or a card's name could give it a meaning.
SOURCE_FOLDERS = ("loveletter_env", "training", "examples", "scripts")
CARD_CONSTANTS = [name.upper() for name in cards.CARD_NAMES.values()]
NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5}


def _section(title: str) -> str:
    """The text under heading ``title``, up to the next heading of its level or a higher one."""
    level = len(title) - len(title.lstrip("#"))
    found = re.search(rf"^{re.escape(title)}\n(.*?)(?=^#{{1,{level}}} )", PAGE + "\n# end", re.MULTILINE | re.DOTALL)
    assert found, f"docs/architecture.md has no section {title!r}"
    return found[1]


def _table_paths(text: str) -> list[str]:
    """The backticked paths in the first cell of each table row of ``text``."""
    return re.findall(r"^\| `([\w./]+)` \|", text, flags=re.MULTILINE)


def test_the_scripts_reader_finds_every_group():
    assert [name for name, _ in DECLARED["loveletter_env"]] == [
        "basics",
        "engine",
        "views",
        "compiled core",
        "environments and files",
        "agents",
        "adapters and tools",
    ]
    assert [name for name, _ in DECLARED["training"]] == ["measure", "learn", "exploitability", "apps", "commands"]


def test_every_module_is_listed_once_and_every_listed_module_exists():
    listed = [module for groups in DECLARED.values() for _, modules in groups for module in modules]
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"docs/architecture.md lists these modules more than once: {twice}"
    on_disk = set(architecture.module_files())
    missing, gone = sorted(on_disk - set(listed)), sorted(set(listed) - on_disk)
    assert not missing, f"modules missing from docs/architecture.md (add each to its layer or wing): {missing}"
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"


def test_imports_run_down_the_layers_and_wings():
    upward = sorted(
        f"{module} ({DECLARED[WHERE[module][0]][WHERE[module][1]][0]}) imports {target} "
        f"({DECLARED[WHERE[target][0]][WHERE[target][1]][0]})"
        for module, targets in GRAPH.items()
        for target in targets
        if WHERE[module][0] == WHERE[target][0] and WHERE[target][1] > WHERE[module][1]
    )
    assert not upward, "imports that run up:\n" + "\n".join(upward)


def test_the_environment_package_never_imports_training():
    back = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if module.startswith("loveletter_env/")
        for target in targets
        if target.startswith("training/")
    )
    assert not back, back


def test_the_only_circles_are_the_ones_the_page_lists():
    listed = {
        frozenset(re.findall(r"`([\w/]+\.py)`", row))
        for row in re.findall(r"^\| (`[^|]*)\|", _section("## Which way the imports run"), flags=re.MULTILINE)
    }
    found = {frozenset(group) for group in architecture.circles(GRAPH)}
    assert not found - listed, f"modules that import each other round a circle: {sorted(map(sorted, found - listed))}"
    assert not listed - found, (
        f"docs/architecture.md lists circles that are gone: {sorted(map(sorted, listed - found))}"
    )


def test_the_circle_finder_finds_a_loop_through_a_deferred_import(tmp_path):
    # a imports b at the top, b imports a inside a function: still one circle.
    for package in architecture.PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "training" / "a.py").write_text("from training import b\n")
    (tmp_path / "training" / "b.py").write_text("def f():\n    from .a import x\n")
    graph = architecture.import_graph(tmp_path)
    assert graph["training/b.py"] == {"training/a.py"}
    assert architecture.circles(graph) == [["training/a.py", "training/b.py"]]


def test_the_page_says_what_the_core_imports():
    found = re.search(r"it imports, from outside `core/`: (.*?)\.", FLAT_PAGE)
    assert found, "docs/architecture.md no longer says what the compiled core imports"
    said = set(re.findall(r"`(\w+)`", found[1]))
    imported = {
        target.removeprefix("loveletter_env/").removesuffix(".py").removesuffix("/__init__")
        for module, targets in GRAPH.items()
        if module.startswith("loveletter_env/core/")
        for target in targets
        if not target.startswith("loveletter_env/core/")
    }
    assert said == imported


def test_the_picture_is_current():
    drawn = architecture.picture(GRAPH, DECLARED)
    assert architecture.PICTURE.read_text(encoding="utf-8") == drawn, (
        "docs/assets/architecture.svg is out of date: run python scripts/architecture.py"
    )
    assert "](assets/architecture.svg)" in PAGE


def _files_naming(pattern: str, folders: tuple[str, ...], suffixes: set[str]) -> set[str]:
    word = re.compile(pattern)
    return {
        path.relative_to(ROOT).as_posix()
        for folder in folders
        for path in (ROOT / folder).rglob("*")
        if path.suffix in suffixes and word.search(path.read_text(encoding="utf-8"))
    }


def test_the_files_a_new_card_touches_are_the_listed_ones():
    naming = _files_naming(rf"\b({'|'.join(CARD_CONSTANTS)})\b", SOURCE_FOLDERS, {".py"})
    listed = set(_table_paths(_section("### A new card")))
    assert naming - listed == set(), f"files name a card's constant but are not on the page: {sorted(naming - listed)}"
    assert listed - naming == set(), f"files on the page no longer name a card's constant: {sorted(listed - naming)}"


def _code_strings(path: Path) -> set[str]:
    """The string constants of a module's code: its docstrings left out, which only describe."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    documented = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented) and node.body and isinstance(node.body[0], ast.Expr)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


def test_the_files_a_new_bot_touches_are_the_listed_ones():
    """A file whose code names every bot (as ``"rule"`` or ``"ismcts:..."``), or every search,
    holds a list that a new bot joins: the page's table of the new bot's files is exactly them."""
    from loveletter_env.agents import BOTS

    searches = [name for name, bot in BOTS.items() if "iterations" in bot.options]

    def names(strings: set[str], bots: list[str]) -> bool:
        return all(any(s == bot or s.startswith(f"{bot}:") for s in strings) for bot in bots)

    naming = set()
    for folder in SOURCE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            strings = _code_strings(path)
            if names(strings, list(BOTS)) or names(strings, searches):
                naming.add(path.relative_to(ROOT).as_posix())
    listed = set(_table_paths(_section("### A new bot")))
    assert naming - listed == set(), (
        f"files list every bot or search but are not on the page: {sorted(naming - listed)}"
    )
    assert listed - naming == set(), f"files on the page no longer list every bot or search: {sorted(listed - naming)}"


def test_the_browser_pages_that_name_cards_are_the_listed_ones():
    static = "training/apps/web/static"
    words = rf"\b({'|'.join(cards.CARD_NAMES.values())})\b"
    naming = {Path(p).name for p in _files_naming(words, (static,), {".js", ".html", ".css"})}
    found = re.search(r"the browser pages \(`[\w/]+/(\w+\.\w+)` and `(\w+\.\w+)`", FLAT_PAGE)
    assert found, "docs/architecture.md no longer names the browser pages that name cards"
    assert naming == {found[1], found[2]}


def test_the_files_naming_the_king_options_record_byte_are_the_listed_ones():
    found = re.search(r"`RULE_KING_IGNORES_HANDMAID`, which (\w+) files name: (.*?), a list", FLAT_PAGE)
    assert found, "docs/architecture.md no longer says which files name the option's byte"
    listed = {f"loveletter_env/{name}" for name in re.findall(r"`([\w/]+\.py)`", found[2])}
    assert NUMBER_WORDS[found[1]] == len(listed)
    assert _files_naming(r"\bRULE_KING_IGNORES_HANDMAID\b", SOURCE_FOLDERS, {".py"}) == listed


def test_the_script_says_when_the_picture_is_out_of_date(capsys):
    assert architecture.main(["--check"]) == 0


def test_a_write_that_fails_part_way_leaves_the_old_picture(tmp_path):
    """The picture is written whole or not at all: a write cut short (a full disk, here a file
    size limit below the picture's size) leaves the old file as it was."""
    picture = tmp_path / "architecture.svg"
    picture.write_text("old picture")
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import architecture as s\n"
        f"s.PICTURE = s.Path({str(picture)!r}); s.ROOT = s.PICTURE.parent; sys.exit(s.main([]))\n"
    )
    run_cut_short([sys.executable, "-c", code], limit=1000)
    assert picture.read_text() == "old picture"
    assert [p.name for p in tmp_path.iterdir()] == ["architecture.svg"]  # no temporary file left beside it


def test_a_page_without_its_sections_is_one_line_of_error(tmp_path, monkeypatch, capsys):
    page = tmp_path / "architecture.md"
    page.write_text(PAGE.replace("## The wings of training", "## The parts of training"), encoding="utf-8")
    monkeypatch.setattr(architecture, "PAGE", page)
    for argv in ([], ["--check"]):
        with pytest.raises(SystemExit) as stop:
            architecture.main(argv)
        assert stop.value.code == 2
        assert "architecture.md has no section '## The wings of training'" in capsys.readouterr().err
