"""The learned best responses' check on docs/agents-strength.md: ``scripts/br_recovery.py``
summarises the measured cells (``docs/assets/br_recovery.json``) into the page's table and picture."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from conftest import ROOT

_spec = importlib.util.spec_from_file_location("br_recovery", ROOT / "scripts" / "br_recovery.py")
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
sys.modules["br_recovery"] = script
_spec.loader.exec_module(script)

DATA = ROOT / "docs" / "assets" / "br_recovery.json"


def test_the_mean_and_its_t_interval_over_seeds():
    cells = [{"target": "rule", "rules": "mini6", "steps": 10, "seed": s, "exact_gain_recovered": v} for s, v in
             enumerate([0.8, 0.9, 1.0])]  # fmt: skip
    [(steps, mean, low, high, seeds)] = script.summary(cells)[("learned", "rule", "mini6")]
    # Standard deviation 0.1 over 3 seeds: half-width t(0.975, 2) * 0.1 / sqrt(3).
    assert (steps, seeds) == (10, 3) and mean == pytest.approx(0.9)
    assert high - mean == pytest.approx(mean - low) == pytest.approx(4.303 * 0.1 / 3**0.5)


def test_the_page_quotes_every_measured_cell(capsys):
    """Each line of the table the data gives stands on the page, figure for figure."""
    cells = json.loads(DATA.read_text())
    assert all(c["command"].startswith("python -m training.exploit ") for c in cells)
    script.main(["draw", str(DATA), "--table"])
    page = (ROOT / "docs" / "agents-strength.md").read_text()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]  # one table per tool
    assert len(rows) == len({(script.tool_of(c), c["target"], c["rules"], script.budget_of(c)) for c in cells})
    for line in rows:
        cells_of = [c.strip() for c in line.strip("|").split("|")]
        rung_turns, mean = cells_of[1], cells_of[3].split(" ")[0]
        assert any(rung_turns in row and mean in row for row in page.splitlines()), line


def test_search_cells_are_summarised_apart_by_their_walks():
    """A learned and a search best response against the same target on the same rung are two
    lines, each over its own budget (turns, walks a decision)."""
    learned = [{"target": "rule", "rules": "mini6", "steps": 10, "seed": s, "exact_gain_recovered": 1} for s in [0, 1]]
    search = [
        {"tool": "search", "target": "rule", "rules": "mini6", "iterations": it, "seed": s, "exact_gain_recovered": v}
        for it, s, v in [(100, 0, 0.2), (100, 1, 0.4), (400, 0, 0.6)]
    ]
    rows = script.summary(learned + search)
    assert [p[0] for p in rows[("learned", "rule", "mini6")]] == [10]
    assert [(p[0], round(p[1], 6), p[4]) for p in rows[("search", "rule", "mini6")]] == [(100, 0.3, 2), (400, 0.6, 1)]


def test_checkpoints_of_one_name_in_two_folders_train_in_two_run_folders():
    """v1/ppo_2p.pt and shipped/ppo_2p.pt: one run folder would refuse (or overwrite) the other."""
    names = {script._cell_name(t, "mini9", 1_000_000, 0) for t in
             ["checkpoints/v1/ppo_2p.pt", "checkpoints/shipped/ppo_2p.pt", "rule"]}  # fmt: skip
    assert names == {"br_v1_ppo_2p_mini9_1000000_s0", "br_shipped_ppo_2p_mini9_1000000_s0", "br_rule_mini9_1000000_s0"}
