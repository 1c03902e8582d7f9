"""The code in the README and the documentation pages runs as written.

Every ``python`` and ``bash`` block of ``README.md`` and ``docs/**/*.md`` is run, from the
repository root (examples name files such as ``checkpoints/shipped/ppo_2p.pt``), except:

* a block right after the marker ``<!-- test: skip: REASON -->``: commands that train or
  measure for minutes, install packages or wait for a person. The reason is required and
  shows in pytest's skip report (``-ra``), so what is not run stays visible;
* a block right after ``<!-- test: needs: EXTRA ... -->`` (extras of ``pyproject.toml``) runs
  where those extras are installed and is skipped, naming the ``pip install`` line, where one
  is missing: ``pip install -e ".[dev]"`` then ``pytest`` passes. Under ``CI=true`` such a
  block is never skipped: a missing extra fails it, since CI (``.ci/run``) installs them all;
* ``<!-- snippet: ... -->`` blocks of ``docs/libraries.md``, which ``test_libraries.py`` runs
  with the optional library each one needs.

A block whose code is identical to another one's runs once (the front page's
Stable-Baselines3 example is also a snippet of ``docs/libraries.md``). A skipped block's
commands are still parsed, by ``test_commands.py``.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import ROOT
from doc_blocks import BLOCK, LIBRARIES_PAGE, NEEDS, PAGES, SKIP, Block, read_blocks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before Python 3.11
    import tomli as tomllib

#: The modules whose import shows that an extra of pyproject.toml is installed, for the extras
#: a block may need.
EXTRA_MODULES = {
    "ray": ("ray",),
    "bench": ("pgx",),
    "web": ("starlette", "uvicorn"),
    "onnx": ("onnx", "onnxscript", "onnxruntime"),
    "torchrl": ("torchrl",),
    "tianshou": ("tianshou",),
}
IN_CI = os.environ.get("CI", "").lower() == "true"
BLOCKS = read_blocks()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small networks on a shared 2-core machine run faster, and steadier, on one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies: extra name -> requirements."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["optional-dependencies"]


def _with_included(extras: Iterable[str]) -> set[str]:
    """``extras`` and the extras they install in turn (``libraries`` is ``loveletter-env[torchrl,...]``)."""
    table, found, todo = _extras(), set(), list(extras)
    while todo:
        extra = todo.pop()
        if extra not in found:
            found.add(extra)
            for requirement in table[extra]:
                if inner := re.fullmatch(r"loveletter-env\[([\w,-]+)\]", requirement):
                    todo.extend(inner[1].split(","))
    return found


def test_markers_give_a_reason_or_known_extras():
    for page in PAGES:
        for marker in re.findall(r"<!-- (test:[^\n]*?) -->", page.read_text(encoding="utf-8")):
            if marker.startswith(NEEDS):
                extras = marker[len(NEEDS) :].split()
                assert extras, f"{page.name}: {marker!r} names no extra"
                for extra in extras:
                    assert extra in _extras(), f"{page.name}: {marker!r}: {extra!r} is not an extra of pyproject.toml"
                    assert extra in EXTRA_MODULES, f"{page.name}: {marker!r}: add {extra!r} to EXTRA_MODULES"
            else:
                assert marker.startswith(SKIP) and marker[len(SKIP) :].strip(), f"{page.name}: bad marker {marker!r}"


def test_ci_installs_the_extras_the_docs_need():
    """The main environment of .ci/run (the one that runs this file) installs every extra a block needs."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    installs = [m[1] for line in lines if (m := re.match(r'python -m pip install [^"]*-e "\.\[([\w,-]+)\]"', line))]
    assert len(installs) == 1, f".ci/run should install the project once into its main environment: {installs}"
    installed = _with_included(installs[0].split(","))
    for block in BLOCKS:
        missing = set(block.needs) - installed
        assert not missing, f"{block.where} needs {sorted(missing)}, which .ci/run does not install"


def test_some_block_needs_an_extra():
    """The marker is in use, so the tests above test something (docs/scaling.md runs --ray)."""
    assert any(block.needs for block in BLOCKS)


def test_the_examples_that_always_ran_still_run():
    """The quick-start examples are run, never skipped (here, or as snippets in test_libraries.py)."""
    snippets = [m["code"] for m in BLOCK.finditer(LIBRARIES_PAGE.read_text(encoding="utf-8")) if m["marker"]]
    run = "\n".join([b.code for b in BLOCKS if b.lang == "python" and b.skip_reason is None] + snippets)
    for line in (
        'env = loveletter_env.env(num_players=2, rules="classic", episode="round", render_mode="human")',
        "state = engine.new_game(3, deck=",
        'bots = {a: make_agent("belief", seed=i)',
        'result = evaluate(["belief", "rule"]',
        'agent = load_agent("checkpoints/shipped/ppo_2p.pt")',
        'env = BatchedLoveLetter(num_games=4096, num_players=2, rules="classic"',
        "model = MaskablePPO(",
    ):
        assert line in run, f"no run example contains {line!r}"


def _missing_extras(extras: Iterable[str]) -> list[str]:
    """The extras among ``extras`` with a module that does not import."""
    missing = []
    for extra in extras:
        try:
            for module in EXTRA_MODULES[extra]:
                importlib.import_module(module)
        except ImportError:
            missing.append(extra)
    return missing


def _skip_or_fail_without_extras(block: Block, in_ci: bool) -> None:
    """Skip ``block`` where an extra it needs is missing; in CI, which installs them all, fail."""
    if missing := _missing_extras(block.needs):
        extras = f"{', '.join(missing)} extra{'s' if len(missing) > 1 else ''}"
        reason = f'{block.where} needs the {extras}: pip install -e ".[{",".join(missing)}]"'
        if in_ci:
            pytest.fail(f"{reason}; CI must install it (.ci/run)", pytrace=False)
        pytest.skip(reason)


def _run(block: Block, monkeypatch, scratch: Path) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"{block.where}: {block.skip_reason}")
    _skip_or_fail_without_extras(block, IN_CI)
    # The pages write to fixed /tmp/... paths as a reader would; each test writes to a folder of
    # its own instead, so that two runs on one machine (a CI clone beside a checkout) never read
    # or replace each other's files (mktemp makes names of its own already).
    code = block.code.replace("/tmp/", f"{scratch}/")
    if block.lang == "python":
        monkeypatch.chdir(ROOT)
        exec(compile(code, block.where, "exec"), {"__name__": "__docs__"})
        return
    # `python` in a bash block is the interpreter running the tests.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=ROOT,
        env={**os.environ, "PATH": path},  # not TMPDIR: Ray's socket paths under pytest's tmp_path pass 107 bytes
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{block.where} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_docs_block_runs(block, monkeypatch, capsys, tmp_path):
    _run(block, monkeypatch, tmp_path)


class _NotInstalled:
    """A meta path finder that makes ``names`` (and their submodules) fail to import, as if not installed."""

    def __init__(self, names: Iterable[str]):
        self.names = set(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def _uninstall(monkeypatch, *names: str) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in names]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NotInstalled(names), *sys.meta_path])


def test_a_block_whose_extra_is_missing_is_skipped_naming_the_install(monkeypatch):
    block = Block("docs/page.md:1", "bash", "python -m training.evaluate rule random --ray\n", None, ("ray",))
    _uninstall(monkeypatch, "ray")
    with pytest.raises(pytest.skip.Exception, match=re.escape('needs the ray extra: pip install -e ".[ray]"')):
        _skip_or_fail_without_extras(block, in_ci=False)
    with pytest.raises(pytest.fail.Exception, match=r"CI must install it"):
        _skip_or_fail_without_extras(block, in_ci=True)


def test_a_block_whose_extras_are_installed_runs(monkeypatch):
    """``json`` stands in for an installed extra; only the missing extra is named."""
    monkeypatch.setitem(EXTRA_MODULES, "present", ("json",))
    monkeypatch.setitem(EXTRA_MODULES, "absent", ("json", "no_such_module_anywhere"))
    _skip_or_fail_without_extras(Block("page.md:1", "bash", "true\n", None, ("present",)), in_ci=True)
    block = Block("page.md:1", "bash", "true\n", None, ("present", "absent"))
    with pytest.raises(pytest.skip.Exception, match=r"needs the absent extra: pip install -e \"\.\[absent\]\"$"):
        _skip_or_fail_without_extras(block, in_ci=False)


# The rules page agrees with the code ------------------------------------------------
def _table(page: Path, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with ``header``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_rules_page_lists_every_card_with_its_value_and_copies():
    from loveletter_env.cards import CARD_COUNTS, CARD_NAMES

    rows = _table(ROOT / "docs" / "rules.md", "| value | card | copies |")
    assert {(int(value), name, int(copies)) for value, name, copies, _ in rows} == {
        (value, CARD_NAMES[value], CARD_COUNTS[value]) for value in CARD_NAMES
    }


def test_the_rules_page_lists_every_preset_as_the_code_defines_it():
    from loveletter_env.rules import PRESETS

    rows = _table(ROOT / "docs" / "rules.md", "| preset | tokens")
    documented = {}
    for preset, tokens, tie, king in rows:
        name = re.match(r"`(\w+)`", preset)[1]
        documented[name] = (
            tuple(int(t) for t in tokens.split(" / ")),
            tie.startswith("highest discard sum") or tie == "as `classic`",
            "may choose a protected player" in king,
        )
    assert documented == {
        name: (rules.tokens_to_win, rules.discard_sum_tiebreak, rules.king_ignores_handmaid)
        for name, rules in PRESETS.items()
    }


def test_the_rules_page_deals_every_rung_as_the_code_does():
    """The deal section gives, per table size, how many cards the rungs lay face up and leave
    to draw; the rungs for 3 and 4 players lay face-up cards too, unlike the printed rules there."""
    from loveletter_env.rules import LADDER, RUNG_PLAYERS

    text = " ".join((ROOT / "docs" / "rules.md").read_text(encoding="utf-8").split())
    said = {
        int(players): tuple(map(int, sizes))
        for players, *sizes in re.findall(
            r"at (\d) players, (\d+) to (\d+) cards? face up and a draw pile of (\d+) to (\d+)", text
        )
    }
    dealt = {}
    for players in RUNG_PLAYERS:
        rungs = [rules for rules in LADDER if rules.rung_players == players]
        face_up = [rules.face_up_count(players) for rules in rungs]
        draw = [len(rules.in_play or ()) - 1 - players for rules in rungs]
        dealt[players] = (min(face_up), max(face_up), min(draw), max(draw))
    assert said == dealt


def test_the_environment_page_shows_the_observation_layout_the_code_defines():
    """The layout tables are generated (python -m loveletter_env.observation): a field added,
    moved or resized without regenerating the page fails here."""
    from loveletter_env.observation import layout_table

    assert layout_table() in (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")


# The front page's install steps ------------------------------------------------------
def _section_blocks(page: Path, heading: str) -> list[str]:
    """The code of every fenced block under ``heading`` (up to the next ``## `` heading)."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return [m["code"] for m in BLOCK.finditer(text[start : end if end >= 0 else None])]


def test_the_readme_installs_cpu_torch_before_the_project_and_only_installs():
    """Run top to bottom, the install block never pulls PyPI's CUDA torch (several GB on
    Linux) and neither trains nor tests: those are blocks of their own after it."""
    install, *after = _section_blocks(ROOT / "README.md", "## Install")
    commands = [line.split("#")[0].strip() for line in install.splitlines() if line.split("#")[0].strip()]
    assert commands == [
        "pip install torch --index-url https://download.pytorch.org/whl/cpu",
        'pip install -e ".[dev]"',
    ]
    assert commands[0] in (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert [block.strip() for block in after] == ["python -m training.selfplay", "pytest"]


def test_the_front_page_counts_the_bots():
    from loveletter_env.agents import AGENT_NAMES

    words = {3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven"}
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert f"{words[len(AGENT_NAMES)]} bots of" in text
    for other in set(words.values()) - {words[len(AGENT_NAMES)]}:
        assert f"{other} bots" not in text


def test_the_install_page_lists_every_extra_and_what_ci_installs():
    """docs/install.md's table of extras has a row for every extra of pyproject.toml that
    installs something, and its ``libraries`` row names every other extra .ci/run installs."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    rows = {
        name: row
        for row in re.findall(r"^\| (`[^|]*`) \|.*$", text, flags=re.MULTILINE)
        for name in re.findall(r"`([\w-]+)`", row)
    }
    for extra, requirements in _extras().items():
        if requirements:  # the empty `sb3` extra installs nothing: it stays for old install commands
            assert extra in rows, f"docs/install.md's table of extras has no row for {extra!r}"
    line = next(line for line in text.splitlines() if line.startswith("| `libraries` |"))
    said = set(re.findall(r"`([\w-]+)`", line.split("what CI installs beside", 1)[1]))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installed = re.search(r'python -m pip install [^"\n]*-e "\.\[([\w,-]+)\]"', ci)
    assert installed, ".ci/run installs no extras into its main environment"
    assert said == set(installed[1].split(",")) - {"libraries"}, line


def test_the_libraries_page_names_masks_that_the_gymnasium_env_gives():
    """Each mask the first table of docs/libraries.md names for ``gymnasium.make`` evaluates,
    on what ``gymnasium.make`` returns (wrappers and all), to the legal actions of the reset."""
    import gymnasium
    import numpy as np

    import loveletter_env  # noqa: F401  (registers the id)

    text = LIBRARIES_PAGE.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| one learner against fixed opponents"))
    expressions = re.findall(r"`([^`]*mask[^`]*)`", row.rsplit("|", 2)[1])
    assert expressions, row
    env = gymnasium.make("loveletter/LoveLetter-v0")
    _, info = env.reset(seed=0)
    legal = np.flatnonzero(env.unwrapped.action_masks())
    for expression in expressions:
        mask = eval(expression, {"env": env, "info": info})  # noqa: S307  (the page's own code)
        assert np.array_equal(np.flatnonzero(mask), legal), expression
