"""The README's Python examples run as written (the "Use with other libraries" section
has its own, extra-aware test in test_libraries.py)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CORE = README.split("## Use with other libraries", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", CORE, re.DOTALL)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(code, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # examples name files relative to the repository root
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
