"""What a non-editable install (``pip install .``, a wheel) ships: every file the packages hold
besides their Python modules is named by ``pyproject.toml``'s package-data.

An editable install reads the working tree, so a file that package-data leaves out (a new
image or script of the web app) works for every developer and is missing from a wheel; this
checks the rule without building one (a build takes seconds and needs setuptools). With no
MANIFEST.in and no setuptools-scm, package-data is all a wheel takes besides the modules.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before Python 3.11
    import tomli as tomllib

#: Files a build makes or a run leaves in the packages' folders: never shipped, never read from there.
LEFTOVER_DIRS = ("__pycache__",)
LEFTOVER_SUFFIXES = (".py", ".pyc", ".pyo")


def _setuptools(root: Path) -> dict:
    with open(root / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["tool"]["setuptools"]


def packaged_data(root: Path = ROOT) -> set[Path]:
    """The files package-data puts in a wheel: each pattern globbed in its package's folder,
    as setuptools does (the key ``"*"`` names every package)."""
    setuptools = _setuptools(root)
    covered: set[Path] = set()
    for package, patterns in setuptools.get("package-data", {}).items():
        folders = (
            [path.parent for top in _top_packages(root) for path in (root / top).rglob("__init__.py")]
            if package == "*"
            else [root / package.replace(".", "/")]
        )
        for folder in folders:
            for pattern in patterns:
                covered.update(Path(match) for match in glob.glob(str(folder / pattern), recursive=True))
    return {path.resolve() for path in covered if path.is_file()}


def _top_packages(root: Path) -> list[str]:
    """The top-level packages that packages.find's ``include`` names (``loveletter_env*`` -> ``loveletter_env``)."""
    include = _setuptools(root)["packages"]["find"]["include"]
    return sorted({pattern.rstrip("*").split(".")[0] for pattern in include} & {p.name for p in root.iterdir()})


def data_files(root: Path = ROOT) -> set[Path]:
    """Every file in the packages' folders other than Python modules and build leftovers."""
    found: set[Path] = set()
    for top in _top_packages(root):
        for path in (root / top).rglob("*"):
            if path.is_file() and path.suffix not in LEFTOVER_SUFFIXES and not set(path.parts) & set(LEFTOVER_DIRS):
                found.add(path.resolve())
    return found


def test_both_packages_are_found():
    assert _top_packages(ROOT) == ["loveletter_env", "training"]


def test_package_data_covers_every_file_the_packages_hold():
    missing = sorted(str(path.relative_to(ROOT)) for path in data_files() - packaged_data())
    assert not missing, (
        "files in the packages that a wheel would leave out (add a pattern to "
        f"[tool.setuptools.package-data] in pyproject.toml): {missing}"
    )


def test_the_web_apps_pages_are_packaged():
    """The files the web app serves from its package folder (training.apps.web.app.STATIC_DIR)."""
    static = ROOT / "training" / "apps" / "web" / "static"
    pages = {static / name for name in ("index.html", "app.js", "style.css")}
    assert all(page.is_file() for page in pages)
    assert {page.resolve() for page in pages} <= packaged_data()


def test_the_check_sees_a_file_left_out(tmp_path):
    """A file of a kind package-data does not name is reported (the check is not vacuous)."""
    for top in _top_packages(ROOT):
        (tmp_path / top).mkdir()
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    static = tmp_path / "training" / "apps" / "web" / "static"
    static.mkdir(parents=True)
    (static / "index.html").write_text("<html></html>")
    (static / "logo.svg").write_text("<svg/>")
    (static / "__pycache__").mkdir()
    (static / "__pycache__" / "x.pyc").write_bytes(b"")
    assert data_files(tmp_path) - packaged_data(tmp_path) == {(static / "logo.svg").resolve()}
