"""The import graph of ``loveletter_env`` and ``training``, and the picture of it on docs/architecture.md.

``python scripts/architecture.py`` writes ``docs/assets/architecture.svg``: the layers of
``loveletter_env`` and the wings of ``training`` as the page declares them (its ``###``
headings, lowest first, each over a table of its modules), a column of boxes per package,
each box naming its modules and the groups they import (read from the source with
:mod:`ast`), an arrow beside each column for the way the imports run (down) and one from
``training`` to ``loveletter_env``.
``--check`` writes nothing and exits 1 when the file on disk is not the one it would write.
``tests/docs/test_architecture.py`` reads the same declaration and the same graph.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # loveletter_env.atomic_files, from a checkout not installed
PAGE = ROOT / "docs" / "architecture.md"
PICTURE = ROOT / "docs" / "assets" / "architecture.svg"
PACKAGES = ("loveletter_env", "training")
#: The page's section that declares each package's groups, lowest first.
SECTIONS = {"loveletter_env": "## The layers of loveletter_env", "training": "## The wings of training"}


def module_files(root: Path = ROOT) -> list[str]:
    """Every module of the two packages, as a path from the repository root."""
    return sorted(p.relative_to(root).as_posix() for package in PACKAGES for p in (root / package).rglob("*.py"))


def _dotted(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """``module path -> the module paths of the two packages it imports``.

    Every ``import`` statement counts, wherever it stands: at the top, inside a function (a
    deferred import still ties the two modules together) or under ``TYPE_CHECKING``.
    ``from package import name`` counts as importing the module ``package.name`` where there
    is one, else the package.
    """
    paths = module_files(root)
    by_name = {_dotted(p): p for p in paths}

    def known(name: str) -> str | None:
        while name and name not in by_name:
            name = name.rpartition(".")[0]
        return by_name.get(name)

    graph: dict[str, set[str]] = {}
    for path in paths:
        here = _dotted(path)
        package = here if path.endswith("__init__.py") else here.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    source = f"{base}.{source}" if source else base
                names = [f"{source}.{a.name}" if f"{source}.{a.name}" in by_name else source for a in node.names]
            else:
                continue
            targets.update(t for t in map(known, names) if t is not None and t != path)
        graph[path] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def declared_groups(page: str) -> dict[str, list[tuple[str, list[str]]]]:
    """``package -> [(group name, [module paths]), ...]``, lowest group first, read off the page:
    under the package's section, each ``### N. name`` heading opens a group and every table
    row whose first cell is a backticked ``.py`` path is one of its modules."""
    declared: dict[str, list[tuple[str, list[str]]]] = {}
    sections = re.split(r"^(?=## )", page, flags=re.MULTILINE)
    for package, title in SECTIONS.items():
        section = next((s for s in sections if s.startswith(title)), None)
        if section is None:
            raise ValueError(f"{PAGE.name} has no section {title!r}")
        groups = []
        for chunk in re.split(r"^### ", section, flags=re.MULTILINE)[1:]:
            heading = chunk.splitlines()[0]
            name = re.sub(r"^\d+\.\s*", "", heading).strip()
            modules = re.findall(r"^\| `([\w/]+\.py)` \|", chunk, flags=re.MULTILINE)
            groups.append((name, modules))
        declared[package] = groups
    return declared


def group_of(declared: dict[str, list[tuple[str, list[str]]]]) -> dict[str, tuple[str, int]]:
    """``module path -> (package, the index of its group, lowest 0)``."""
    return {
        module: (package, rank)
        for package, groups in declared.items()
        for rank, (_, modules) in enumerate(groups)
        for module in modules
    }


# The picture ------------------------------------------------------------------------------------

WIDTH, BOX_W, LINE, TOP = 1000, 400, 15, 40
COLUMN_X = {"loveletter_env": 60, "training": 1000 - 60 - BOX_W}
CHARS_PER_LINE = 62
GROUP_WORD = {"loveletter_env": "layers", "training": "wings"}


def _wrapped(words: list[str]) -> list[str]:
    lines, line = [], ""
    for word in words:
        if line and len(line) + 2 + len(word) > CHARS_PER_LINE:
            lines.append(line + ",")
            line = word
        else:
            line = f"{line}, {word}" if line else word
    return [*lines, line] if line else lines


def _short(package: str, module: str) -> str:
    name = module.removeprefix(package + "/").removesuffix(".py")
    if name == "__init__":
        return "(the package)"
    return name.removesuffix("__init__")  # a subpackage's own module reads "agents/"


def picture(graph: dict[str, set[str]], declared: dict[str, list[tuple[str, list[str]]]]) -> str:
    """The SVG: each package a column of boxes, lowest group at the bottom, each box naming its
    modules and the groups they import (read off ``graph``)."""
    where = group_of(declared)
    imported: dict[tuple[str, int], set[tuple[str, int]]] = {}
    for module, targets in graph.items():
        if module in where:
            imported.setdefault(where[module], set()).update(
                where[t] for t in targets if t in where and where[t] != where[module]
            )
    texts: dict[tuple[str, int], list[str]] = {}
    notes: dict[tuple[str, int], list[str]] = {}
    for package, groups in declared.items():
        for rank, (_, modules) in enumerate(groups):
            key = (package, rank)
            texts[key] = _wrapped([_short(package, m) for m in modules])
            uses = sorted(imported.get(key, set()))
            own = ", ".join(str(r + 1) for p, r in uses if p == package)
            other = ", ".join(str(r + 1) for p, r in uses if p != package)
            notes[key] = [f"imports {package} {GROUP_WORD[package]}: {own or 'none'}"]
            if other:
                notes[key].append(f"imports loveletter_env layers: {other}")
    heights = {key: 30 + LINE * (len(texts[key]) + len(notes[key])) for key in texts}
    column_height = {p: sum(heights[p, r] + 24 for r in range(len(g))) for p, g in declared.items()}
    total = max(column_height.values())
    boxes: dict[tuple[str, int], int] = {}  # (package, rank) -> top y
    for package, groups in declared.items():
        y = TOP + total
        for rank in range(len(groups)):
            y -= heights[package, rank] + 24
            boxes[package, rank] = y + 24
    height = TOP + total + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" font-family="DejaVu Sans, Arial, sans-serif">',
        "<title>The layers of loveletter_env and the wings of training, and which way the imports run"
        " (generated by scripts/architecture.py)</title>",
        '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    for package, groups in declared.items():
        x = COLUMN_X[package]
        out.append(
            f'<text x="{x + BOX_W // 2}" y="{TOP - 14}" text-anchor="middle" font-size="16" '
            f'font-weight="bold">{package}/</text>'
        )
        for rank, (name, _) in enumerate(groups):
            y, key = boxes[package, rank], (package, rank)
            out.append(
                f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{heights[key]}" rx="6" '
                'fill="#f3effa" stroke="#6a4fa3"/>'
            )
            out.append(
                f'<text x="{x + 10}" y="{y + 19}" font-size="13" font-weight="bold">{rank + 1}. {escape(name)}</text>'
            )
            for i, line in enumerate(texts[key]):
                out.append(
                    f'<text x="{x + 10}" y="{y + 36 + i * LINE}" font-size="11" fill="#333">{escape(line)}</text>'
                )
            for i, line in enumerate(notes[key], start=len(texts[key])):
                out.append(
                    f'<text x="{x + 10}" y="{y + 36 + i * LINE}" font-size="11" font-style="italic" '
                    f'fill="#6a4fa3">{escape(line)}</text>'
                )
        # One arrow beside the column: every import in it runs down (the test holds this).
        side = x - 30 if package == "loveletter_env" else x + BOX_W + 30
        out.append(
            f'<path d="M{side},{TOP + 10} L{side},{TOP + total - 10}" stroke="#555" stroke-width="2.5" '
            'marker-end="url(#head)"/>'
        )
        out.append(
            f'<text x="{side}" y="{TOP + total // 2}" font-size="12" text-anchor="middle" '
            f'transform="rotate(-90 {side - 8} {TOP + total // 2})">imports run down</text>'
        )
    bridge_y = TOP + total // 2
    left, right = COLUMN_X["loveletter_env"] + BOX_W, COLUMN_X["training"]
    out.append(
        f'<path d="M{right - 4},{bridge_y} L{left + 4},{bridge_y}" stroke="#555" stroke-width="2.5" '
        'marker-end="url(#head)"/>'
    )
    out.append(
        f'<text x="{(left + right) // 2}" y="{bridge_y - 10}" text-anchor="middle" font-size="12">imports</text>'
    )
    out.append(
        f'<text x="{WIDTH // 2}" y="{height - 14}" text-anchor="middle" font-size="12" fill="#333">'
        "Lowest group at the bottom. training imports loveletter_env, never the reverse.</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the picture is out of date")
    args = parser.parse_args(argv)
    try:
        declared = declared_groups(PAGE.read_text(encoding="utf-8"))
    except ValueError as err:  # a section renamed on the page: one line naming it, not a traceback
        parser.error(str(err))
    drawn = picture(import_graph(), declared)
    if args.check:
        current = PICTURE.read_text(encoding="utf-8") if PICTURE.exists() else ""
        if current != drawn:
            print(f"{PICTURE.relative_to(ROOT)} is out of date: run python scripts/architecture.py", file=sys.stderr)
            return 1
        return 0
    from loveletter_env.atomic_files import replacing

    with replacing(PICTURE) as temporary:  # whole or not at all: never half a picture on the page
        temporary.write_text(drawn, encoding="utf-8")
    print(f"wrote {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
