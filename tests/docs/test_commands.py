"""Every command line the documentation shows still parses, the slow ones included.

``test_readme.py`` runs the blocks it can. A ``test: skip`` block (a run of minutes or
hours) never runs, so a renamed option or a moved config key would leave it broken unseen.
Here every ``python -m training...``, ``python -m loveletter_env...`` and
``python scripts/NAME.py`` command of every ``bash`` block, of the comments of ``configs/``
and of ``docs/figures.yaml`` (what measures each figure again) goes to its own argument
parser, in this process, and stops there; a new self-play run also loads its config with
every ``--set``, as the run itself does before it trains.

A command in a ``for`` loop is checked with each of the loop's values, a variable set on a
line of its own (``replays=$(mktemp -d)``) with its value, and a command substitution stands
for a path. Left out: the commands after a ``git checkout`` of another revision in their
block (they reproduce a figure with the code it was measured on), and commands with a
variable that their block does not set.
"""

from __future__ import annotations

import argparse
import itertools
import re
import runpy
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import ROOT
from doc_blocks import read_blocks

from training.learn.config import read_yaml

#: The packages whose command lines are checked.
PACKAGES = ("training", "loveletter_env")
#: What separates two commands, or a command from its redirections, for the shell.
OPERATORS = ";&|<>\n"
#: A shell variable, ``$seed`` or ``${seed}``, and a command substitution, ``$(mktemp -d)``.
VARIABLE = re.compile(r"\$\{?(\w+)\}?")
COMMAND_SUBSTITUTION = re.compile(r"\$\([^()]*\)")
#: A comment line of a config file that is a command.
CONFIG_COMMENT_COMMAND = re.compile(r"^#\s+(?P<command>python3? .*)$")
FIGURES = "docs/figures.yaml"


class Command(NamedTuple):
    where: str  # "docs/page.md:LINE #N": the block's opening fence, the command's place in it
    words: list[str]  # as the shell splits them, from "python" on


def without_comments(code: str) -> str:
    """``code`` less its comments: from a ``#`` that starts a word outside quotes to the
    line's end, the newline kept (a comment ends its command, not the block)."""
    kept: list[str] = []
    quote = None
    i = 0
    while i < len(code):
        char = code[i]
        if quote is None and char == "#" and (i == 0 or code[i - 1].isspace()):
            end = code.find("\n", i)
            i = len(code) if end < 0 else end
            continue
        if char == "\\" and quote != "'":
            kept.append(code[i : i + 2])  # an escaped character, a quote or a newline, stays as it is
            i += 2
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        kept.append(char)
        i += 1
    return "".join(kept)


def shell_commands(code: str) -> Iterator[list[str]]:
    """The simple commands of a bash block, each as the shell's words, without its leading
    ``NAME=value`` assignments and its redirections; a newline, pipe, ``;`` or ``&&`` ends one."""
    lexer = shlex.shlex(without_comments(code).replace("\\\n", " "), posix=True, punctuation_chars=OPERATORS)
    lexer.whitespace = " \t\r"  # a newline ends a command: it is an operator here
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    redirected = False
    for token in [*lexer, "\n"]:
        if not set(token) <= set(OPERATORS):
            if not redirected:
                words.append(token)
            redirected = False
            continue
        if token[0] in "<>":  # a redirection: its target is the next word, and the command goes on
            if words and words[-1].isdigit():
                words.pop()  # the 2 of 2>/dev/null
            redirected = True
            continue
        command = list(itertools.dropwhile(is_assignment, words))
        if words:
            yield command or words  # a line of assignments alone sets shell variables
        words = []


def is_assignment(word: str) -> bool:
    """Whether a shell word is ``NAME=value``."""
    return word.partition("=")[0].isidentifier() and "=" in word


def is_ours(words: list[str]) -> bool:
    """Whether ``words`` run a module of :data:`PACKAGES` or a script of ``scripts/``."""
    if words[0] not in ("python", "python3") or len(words) < 2:
        return False
    if words[1] == "-m":
        return len(words) > 2 and words[2].split(".")[0] in PACKAGES
    return words[1].startswith("scripts/") and words[1].endswith(".py")


def with_loop_values(words: list[str], loops: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    """``words`` once for each value of the ``for`` loops whose variables they use, each with
    a label naming the values (``""`` when they use none); none when they use a variable
    that no loop of the block sets."""
    names = sorted({name for word in words for name in VARIABLE.findall(word)})
    if not set(names) <= loops.keys():
        return []
    variants = []
    for values in itertools.product(*(loops[name] for name in names)):
        value_of = dict(zip(names, values))
        label = ", ".join(f"{name}={value}" for name, value in value_of.items())
        variants.append((label, [VARIABLE.sub(lambda m, value_of=value_of: value_of[m[1]], word) for word in words]))
    return variants


def documented_commands() -> list[Command]:
    """The commands of :data:`PACKAGES` and ``scripts/`` in every bash block of the pages, a
    command in a ``for`` loop once for each value."""
    commands = []
    for block in read_blocks():
        if block.lang != "bash":
            continue
        older, loops = False, {}
        code = COMMAND_SUBSTITUTION.sub("SUBSTITUTED", block.code)  # a path in every use the pages make
        for number, words in enumerate(shell_commands(code), 1):
            if words[0] == "git" and len(words) > 2 and words[1] in ("checkout", "switch"):
                older = words[-1] not in ("-", "main")
            if words[0] == "for" and len(words) > 2 and words[2] == "in":
                loops[words[1]] = words[3:]
            if all(is_assignment(word) for word in words):  # replays=$(mktemp -d)
                loops.update((name, [value]) for name, _, value in (word.partition("=") for word in words))
            if is_ours(words) and not older:
                for label, expanded in with_loop_values(words, loops):
                    commands.append(Command(f"{block.where} #{number}{f' ({label})' if label else ''}", expanded))
    return commands


def config_commands() -> list[Command]:
    """The commands that the comments of ``configs/`` give on lines of their own (``#   python ...``)."""
    commands = []
    for path in sorted((ROOT / "configs").rglob("*.yaml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if found := CONFIG_COMMENT_COMMAND.match(line):
                commands += [
                    Command(f"{path.relative_to(ROOT)}:{number}", words)
                    for words in shell_commands(found["command"])
                    if is_ours(words)
                ]
    return commands


def figure_commands() -> list[Command]:
    """The commands that measure the figures of ``docs/figures.yaml`` again, ``$WORK`` (the
    scratch folder that ``scripts/figures.py`` gives them) standing for a path."""
    commands = []
    for name, entry in read_yaml(ROOT / FIGURES).items():
        lines = entry["command"] if isinstance(entry["command"], list) else [entry["command"]]
        for number, line in enumerate(lines, 1):
            commands += [
                Command(f"{FIGURES}: {name} #{number}", words)
                for words in shell_commands(line.replace("$WORK", "WORK"))
                if is_ours(words)
            ]
    return commands


COMMANDS = documented_commands() + config_commands() + figure_commands()


class _Parsed(Exception):
    """What the patched ``parse_args`` raises with its result: the command stops there."""


def parsed(words: list[str], monkeypatch) -> argparse.Namespace:
    """``words`` parsed by the parser of the module or script they run, as the shell would
    start it, and nothing run past the parsing. A parse error fails with the parser's message."""
    real_parse_args = argparse.ArgumentParser.parse_args

    def parse_and_stop(parser, args=None, namespace=None):
        raise _Parsed(real_parse_args(parser, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    monkeypatch.chdir(ROOT)
    if words[1] == "-m":
        target, argv = words[2], words[3:]
        monkeypatch.setattr(sys, "argv", [target, *argv])
        run = lambda: runpy.run_module(target, run_name="__main__", alter_sys=True)  # noqa: E731
    else:
        target, argv = words[1], words[2:]
        monkeypatch.setattr(sys, "argv", [target, *argv])
        monkeypatch.syspath_prepend(str(ROOT / Path(target).parent))  # as python puts a script's folder first
        run = lambda: runpy.run_path(str(ROOT / target), run_name="__main__")  # noqa: E731
    try:
        run()
    except _Parsed as stop:
        return stop.args[0]
    except SystemExit as exit:
        if exit.code in (0, None):  # --help
            return argparse.Namespace()
        raise
    pytest.fail(f"{target} ran to its end without parsing its command line")


def problem(words: list[str], monkeypatch, capsys) -> str | None:
    """What is wrong with the command line ``words``: its parser's error, or for a new
    self-play run the error its config with every ``--set`` gives; ``None`` when it parses."""
    try:
        args = parsed(words, monkeypatch)
    except SystemExit:
        return capsys.readouterr().err.strip()
    if words[1:3] != ["-m", "training.selfplay"] or getattr(args, "resume", None):
        return None
    from training.learn.config import ConfigError, load_config
    from training.learn.selfplay_command import new_run_overrides

    # A config outside configs/ is a file an earlier command writes (a sweep's best trial).
    if args.config is not None and Path(args.config).parts[0] != "configs" and not (ROOT / args.config).is_file():
        return None
    try:
        load_config(args.config and ROOT / args.config, new_run_overrides(args))
    except ConfigError as err:
        return str(err)
    return None


# runpy warns that a module it runs as __main__ was imported before, as the package's own
# imports do: harmless here, where nothing runs past the parsing.
@pytest.mark.filterwarnings("ignore:.*found in sys.modules after import of package:RuntimeWarning")
@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_documented_command_parses(command: Command, monkeypatch, capsys):
    if found := problem(command.words, monkeypatch, capsys):
        pytest.fail(f"{command.where}: {shlex.join(command.words)}\n{found}", pytrace=False)


def test_the_commands_are_found():
    """The reader finds what the shell would run: comments, continuations, quotes and
    redirections as bash reads them."""
    code = (
        "NUMBA_ENABLE_CUDASIM=1 python -m training.selfplay --set 'a=b c' \\\n"
        "    --run-name x   # the run's name, with a quote in the comment\n"
        "python -m training.solve mini6 --json 2>/dev/null > out.json | "
        'python -c "\nimport json  # not a comment\n"\n'
        "git checkout 975ebc3 && python -m training.exploit A --exact; git checkout main\n"
    )
    assert list(shell_commands(code)) == [
        ["python", "-m", "training.selfplay", "--set", "a=b c", "--run-name", "x"],
        ["python", "-m", "training.solve", "mini6", "--json"],
        ["python", "-c", "\nimport json  # not a comment\n"],
        ["git", "checkout", "975ebc3"],
        ["python", "-m", "training.exploit", "A", "--exact"],
        ["git", "checkout", "main"],
    ]
    assert len(COMMANDS) > 100  # every page's commands, not a reader that finds none


def test_a_command_in_a_loop_is_checked_with_each_value():
    words = ["python", "-m", "training.solve", "$rung", "--out", "solved/${rung}"]
    assert with_loop_values(words, {"rung": ["mini6", "mini7"], "seed": ["0"]}) == [
        ("rung=mini6", ["python", "-m", "training.solve", "mini6", "--out", "solved/mini6"]),
        ("rung=mini7", ["python", "-m", "training.solve", "mini7", "--out", "solved/mini7"]),
    ]
    assert with_loop_values(["python", "-m", "training.solve", "mini6"], {}) == [("", words[:3] + ["mini6"])]
    assert with_loop_values(["python", "-m", "training.exploit", "$RUN/result.pt"], {"rung": ["mini6"]}) == []


@pytest.mark.parametrize(
    "line, message",
    [
        ("python -m training.evaluate rule random --no-such-option", "unrecognized arguments: --no-such-option"),
        ("python scripts/fork_run.py average", "the following arguments are required"),
        ("python -m training.selfplay --set ppo.no_such_key=1", "no_such_key"),
        ("python -m training.selfplay --set env.num_players=[4]", "env.num_players must be [2] on the ladder rung"),
        ("python -m training.selfplay --config configs/no_such.yaml", "configs/no_such.yaml"),
    ],
)
def test_a_stale_option_or_config_key_is_named(line, message, monkeypatch, capsys):
    assert message in (problem(shlex.split(line), monkeypatch, capsys) or "")


def test_a_command_that_parses_has_no_problem(monkeypatch, capsys):
    line = "python -m training.selfplay --config configs/rung_equilibrium.yaml --set env.rules=mini8 --run-name x"
    assert problem(shlex.split(line), monkeypatch, capsys) is None
