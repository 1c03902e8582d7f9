"""Files written whole or not at all: what every tool that keeps a file writes through."""

from __future__ import annotations

import os

import pytest

from loveletter_env.atomic_files import replacing, replacing_together, temporary_beside


def test_a_finished_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old")
    with replacing(path) as temporary:
        temporary.write_text("new")
        assert path.read_text() == "old"  # nobody sees the new file half written
    assert path.read_text() == "new"
    assert os.listdir(tmp_path) == ["report.md"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt), replacing(path) as temporary:
        temporary.write_text("half")
        raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.md"]


def test_a_failed_write_of_a_new_file_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="bad value"), replacing(tmp_path / "new.csv") as temporary:
        temporary.write_text("half")
        raise ValueError("bad value")
    assert os.listdir(tmp_path) == []


def test_files_written_together_change_together_or_not_at_all(tmp_path):
    table, chart = tmp_path / "table.md", tmp_path / "chart.png"
    table.write_text("old table")
    chart.write_text("old chart")
    with pytest.raises(RuntimeError), replacing_together([table, chart]) as (new_table, new_chart):
        new_table.write_text("new table")
        raise RuntimeError("the chart failed to draw")
    assert (table.read_text(), chart.read_text()) == ("old table", "old chart")
    assert sorted(os.listdir(tmp_path)) == ["chart.png", "table.md"]

    with replacing_together([table, chart]) as (new_table, new_chart):
        new_table.write_text("new table")
        new_chart.write_text("new chart")
    assert (table.read_text(), chart.read_text()) == ("new table", "new chart")
    assert sorted(os.listdir(tmp_path)) == ["chart.png", "table.md"]


def test_the_temporary_name_is_a_hidden_sibling_of_this_process(tmp_path):
    temporary = temporary_beside(tmp_path / "latest.pt")
    assert temporary.parent == tmp_path
    assert temporary.name.startswith(".latest.pt.")
    assert str(os.getpid()) in temporary.name


def test_a_rename_that_fails_part_of_the_way_says_which_files_were_replaced(tmp_path, monkeypatch):
    paths = [tmp_path / name for name in ("a", "b", "c")]
    real_replace = os.replace

    def replace(source, target):
        if os.path.basename(target) == "b":
            raise OSError("the disk died")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    replaced: list = []
    with pytest.raises(OSError, match="the disk died"), replacing_together(paths, replaced) as asides:
        for aside in asides:
            aside.write_text("new")
    assert replaced == [paths[0]] and paths[0].read_text() == "new"
    assert not paths[1].exists() and not paths[2].exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]  # no temporary file left
