"""loveletter_env.retired_flags: a flag a tool no longer takes is refused with its reason."""

from __future__ import annotations

import argparse

import pytest

from loveletter_env.retired_flags import ONE_GAME, retire_flag


@pytest.mark.parametrize(("argv", "nargs"), [(["--information", "full"], "?"), (["--observations-only"], 0)])
def test_a_retired_flag_is_refused_with_its_reason(argv, nargs, capsys):
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--kept", action="store_true")
    retire_flag(parser, argv[0], nargs=nargs)
    assert parser.parse_args(["--kept"]).kept
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(argv)
    assert stop.value.code == 2
    assert f"error: {argv[0]} is retired: {ONE_GAME}" in capsys.readouterr().err
    assert argv[0] not in parser.format_help(), "a retired flag is not offered in --help"
