"""The code in the README and the documentation pages runs as written.

Every ``python`` and ``bash`` block of ``README.md`` and ``docs/**/*.md`` is run, from the
repository root (examples name files such as ``checkpoints/shipped/ppo_2p.pt``), except:

* a block right after the marker ``<!-- test: skip: REASON -->``: commands that train or
  measure for minutes, install packages or wait for a person. The reason is required and
  shows in pytest's skip report (``-ra``), so what is not run stays visible;
* ``<!-- snippet: ... -->`` blocks of ``docs/libraries.md``, which ``test_libraries.py`` runs
  with the optional library each one needs.

A block whose code is identical to another one's runs once (the front page's
Stable-Baselines3 example is also a snippet of ``docs/libraries.md``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LIBRARIES_PAGE = ROOT / "docs" / "libraries.md"
SKIP = "test: skip:"
BLOCK = re.compile(
    r"^(?:<!-- (?P<marker>[^\n]*?) -->\n)?```(?P<lang>python|bash)\n(?P<code>.*?)^```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


class Block(NamedTuple):
    where: str  # "docs/page.md:LINE" of the opening fence
    lang: str
    code: str
    skip_reason: str | None


def _blocks() -> list[Block]:
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
                continue  # test_libraries.py runs these
            if (match["lang"], match["code"]) in seen:
                continue
            seen.add((match["lang"], match["code"]))
            line = text.count("\n", 0, match.start("lang")) + 1
            reason = marker[len(SKIP) :].strip() if marker.startswith(SKIP) else None
            where = f"{page.relative_to(ROOT)}:{line}"
            blocks.append(Block(where, match["lang"], match["code"], reason))
    return blocks


BLOCKS = _blocks()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small networks on a shared 2-core machine run faster, and steadier, on one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_markers_give_a_reason():
    for page in PAGES:
        for marker in re.findall(r"<!-- (test:[^\n]*?) -->", page.read_text(encoding="utf-8")):
            assert marker.startswith(SKIP) and marker[len(SKIP) :].strip(), f"{page.name}: bad marker {marker!r}"


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


def _run(block: Block, monkeypatch) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"{block.where}: {block.skip_reason}")
    if block.lang == "python":
        monkeypatch.chdir(ROOT)
        exec(compile(block.code, block.where, "exec"), {"__name__": "__docs__"})
        return
    # `python` in a bash block is the interpreter running the tests.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=ROOT,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{block.where} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_docs_block_runs(block, monkeypatch, capsys):
    _run(block, monkeypatch)


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
