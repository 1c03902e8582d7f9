"""Where a rule option is read: few places, so that changing one touches few files.

docs/architecture.md lists what a card change and a rule option touch; this test keeps the
King's Handmaid option within that list.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The files that may name the King's Handmaid option: its definition, the reference engine,
#: the compiled core's records, the observation's rule field, replays and the card reference.
ALLOWED = {
    "loveletter_env/rules.py",
    "loveletter_env/engine.py",
    "loveletter_env/core/__init__.py",
    "loveletter_env/observation.py",
    "loveletter_env/replay.py",
    "loveletter_env/render.py",
}


def _files_naming(word: str) -> set[str]:
    return {
        str(path.relative_to(REPO))
        for folder in ("loveletter_env", "training")
        for path in (REPO / folder).rglob("*.py")
        if word in path.read_text(encoding="utf-8")
    }


def test_the_king_option_is_read_in_six_files_at_most():
    naming = _files_naming("king_ignores_handmaid")
    assert naming <= ALLOWED, f"new files read the option: {sorted(naming - ALLOWED)}"
    assert len(ALLOWED) <= 6
