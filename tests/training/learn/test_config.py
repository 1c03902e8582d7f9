"""Run configs (``training.learn.config``): bad values and files are a ``ConfigError`` naming the
key, before training starts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, subprocess_env

from training.learn.config import MAX_RULES_WEIGHT, ConfigError, load_config, save_config, text_override
from training.selfplay import main as selfplay_main


@pytest.mark.parametrize(
    "override, message",
    [
        ("eval.opponents=[nosuchbot]", r"eval.opponents must be names from .*got \['nosuchbot'\]"),
        ("eval.opponents=[guided]", r"eval.opponents: bot 'guided' cannot be built .*policy=PATH"),
        ("opponents.bot_names=[guided]", r"opponents.bot_names: bot 'guided' cannot be built"),
        ("seed=1180591620717411303424", r"seed must be < 2\*\*63, got 1180591620717411303424"),  # 2**70
        ("ppo.learning_rate=1e300", r"ppo.learning_rate must be <= 1, got 1e\+300"),
        ("env.num_games=100000000", r"env.num_games must be <= 65536, got 100000000"),
        ("env.rollout_steps=1000000", r"env.rollout_steps must be <= 4096"),
        ("env.num_games=65536", r"env.num_games times env.rollout_steps .* at most 1,048,576 turns"),
        ("model.hidden_sizes=[100000000]", r"model.hidden_sizes\[0\] must be <= 65536, got 100000000"),
        (f"model.hidden_sizes={[8] * 17}", r"model.hidden_sizes must hold at most 16 items"),
        ("model.hidden_sizes=[60000,60000]", r"model.hidden_sizes must give a network of at most 100,000,000"),
        ("torch_threads=100000000", r"torch_threads must be <= 1024"),
        # Evaluations play at most MAX_EPISODES rounds a call: more failed with a traceback at the
        # first evaluation, or at the run's end for final_rounds, after the training time was spent.
        ("eval.rounds=200000000", r"eval.rounds must be <= 100000000, got 200000000"),
        ("eval.final_rounds=200000000", r"eval.final_rounds must be <= 100000000, got 200000000"),
        ("learning_rate=1e-3", r"unknown config key\(s\) \['learning_rate'\] \(did you mean 'ppo.learning_rate'\?\)"),
        ("ppo.learnin_rate=1e-3", r"did you mean 'ppo.learning_rate'\?"),
        ("model=&m [*m]", r"model\[0\] refers to itself \(a recursive YAML alias\)"),
        # Strict types: text is no number or boolean, a boolean no number, a fraction no integer.
        ("eval.greedy='true'", r"eval.greedy must be true or false, got 'true'"),
        ("seed='3'", r"seed must be an integer, got '3'"),
        ("ppo.learning_rate=true", r"ppo.learning_rate must be a finite number, got True"),
        ("ppo.update_epochs=4.5", r"ppo.update_epochs must be an integer, got 4.5"),
        ('run_name="a\\0b"', r"run_name must be a plain folder name .*got 'a\\x00b'"),
        ('out_dir="runs\\0"', r"out_dir must be a path without NUL characters"),
        (f"run_name={'x' * 300}", r"run_name must be at most 255 characters long, got 'x+\.\.\.x+'$"),
        # Empty paths (`--set out_dir=$DIR` with DIR unset) meant the working folder, or no init at all.
        ("out_dir=", r"out_dir must name a file or folder, got ''"),
        ("model.init_from=", r"model.init_from must name a file or folder, got ''"),
        ("ppo..gamma=0.9", r"an override's key is names joined by single dots .*got 'ppo..gamma=0.9'"),
    ],
)
def test_bad_config_values_are_a_config_error_before_training(tmp_path, capsys, override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(["--no-progress", "--set", f"out_dir={tmp_path}", "--set", override])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # nothing was started


@pytest.mark.parametrize(
    "weights",
    [
        "env.rules_weights=[1e308, 1e308]",
        # In a stage the weights once passed the check, and the run crashed at the stage's turn.
        "schedule=[{at_step: 256, set: {env.rules_weights: [1e308, 1e308]}}]",
    ],
    ids=["top level", "schedule stage"],
)
def test_huge_curriculum_weights_are_a_config_error_before_training(tmp_path, capsys, weights):
    overrides = ["env.rules=[mini6, mini7]", weights]
    message = r"env.rules_weights\[0\] must be <= 1000000, got 1e\+308"
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(["--no-progress", "--set", f"out_dir={tmp_path}", *(a for o in overrides for a in ("--set", o))])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # nothing was started


def test_the_default_run_uses_one_torch_thread_in_the_model_and_the_shipped_file():
    # Fixed, not the machine's core count or load, so a seeded run gives the same weights
    # everywhere; one, because beside another job two threads waited on each other and
    # the run played several times fewer turns per CPU-second (docs/training.md).
    assert load_config(None).torch_threads == 1
    assert load_config(ROOT / "configs" / "default.yaml").torch_threads == 1


def test_the_largest_curriculum_weights_are_accepted():
    config = load_config(None, ["env.rules=[mini6, mini7]", "env.rules_weights=[1e6, 1e6]"])
    assert config.env.rules_weights == [MAX_RULES_WEIGHT, MAX_RULES_WEIGHT]


@pytest.mark.parametrize(
    "text, message",
    [
        ("1: 2\n", r"config key 1 must be a name, got the int 1"),
        ("ppo:\n  true: 4\n", r"config key ppo.True must be a name, got the bool True"),
        ("env: &e\n  num_players: *e\n", r"env.num_players refers to itself \(a recursive YAML alias\)"),
        ("eval: &a [1, *a]\n", r"eval\[1\] refers to itself"),
    ],
    ids=["integer key", "boolean key", "recursive mapping", "recursive list"],
)
def test_bad_config_files_are_a_config_error_naming_the_key(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_quoted_text_stays_text_and_exponents_are_numbers(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('run_name: "1e5"\nppo:\n  learning_rate: 3e-4\n  ent_coef: 1.0e-3\ntotal_steps: 1e6\n')
    config = load_config(path)
    assert config.run_name == "1e5"
    assert config.ppo.learning_rate == 3e-4 and config.ppo.ent_coef == 1e-3
    assert config.total_steps == 1_000_000 and isinstance(config.total_steps, int)
    assert load_config(None, ['run_name="1e5"']).run_name == "1e5"
    with pytest.raises(ConfigError, match=r"run_name must be a string, got 100000.0"):
        load_config(None, ["run_name=1e5"])  # unquoted, YAML reads a number


def _aliases_of_aliases(levels: int) -> str:
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, message",
    [
        ("env: " + "[" * 5000 + "]" * 5000 + "\n", r"is nested too deeply \(the limit is 32 levels\)"),
        ("env: " + "[" * 40 + "]" * 40 + "\n", r"nested too deeply: env(\[0\]){31,32} is more than 32 levels down"),
        ("seed: " + "9" * 5000 + "\n", r"is not valid YAML: Exceeds the limit \(4300 digits\)"),
        (_aliases_of_aliases(7), r"holds more than 100,000 lists and mappings"),
    ],
    ids=["deeper than the stack", "deep", "5000 digits", "aliases of aliases"],
)
def test_config_files_that_would_exhaust_the_parser_are_refused(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)
    if text.count("\n") == 1:  # the same value given as an override
        with pytest.raises(ConfigError, match=message):
            load_config(None, [text.replace(": ", "=", 1).strip()])


def test_config_files_are_read_only_to_the_size_limit(tmp_path):
    from training.learn.config import MAX_CONFIG_BYTES

    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_CONFIG_BYTES)
    with pytest.raises(ConfigError, match=r"big.yaml' is too large: the limit is 1,000,000 bytes"):
        load_config(big)
    if Path("/dev/zero").exists():  # endless, and reports a size of 0
        with pytest.raises(ConfigError, match=r"'/dev/zero' is not a file"):
            load_config("/dev/zero")


def test_shared_yaml_aliases_are_still_fine(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("opponents:\n  bot_names: &bots [rule]\neval:\n  opponents: *bots\n  best_by: rule\n")
    config = load_config(path)  # an alias used twice is no loop
    assert config.opponents.bot_names == config.eval.opponents == ["rule"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # PyYAML alone keeps the second section and drops num_games: 64 without a word.
        (
            "env: {num_games: 64}\nppo: {learning_rate: 3e-4}\nenv: {rollout_steps: 8}\n",
            "'env' is given twice, on line 1 and on line 3",
        ),
        ("seed: 1\nseed: 2\n", "'seed' is given twice, on line 1 and on line 2"),
        ("env: {num_games: 64, num_games: 32}\n", "'num_games' is given twice, on line 1 and on line 1"),
    ],
)
def test_a_key_given_twice_is_refused_naming_its_lines(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="is not valid YAML") as error:
        load_config(path)
    assert message in str(error.value)


def test_a_merged_key_may_still_be_given_again():
    """``<<: *base`` then a key of the base is YAML's way to override it, not a key given twice."""
    config = load_config(None, ["eval={every: 0, <<: {every: 5, rounds: 10}}"])
    assert (config.eval.every, config.eval.rounds) == (0, 10)


@pytest.mark.parametrize("name", ["trial #2", "42", "2024-01-01", "null", "yes", "1e5", 'say "hi"'])
def test_a_run_name_is_taken_as_given(name):
    """--run-name is a name, not YAML: no comment, number, date or null is read into it."""
    from training.learn.selfplay_command import build_parser, new_run_overrides

    args = build_parser().parse_args(["--run-name", name])
    assert load_config(None, new_run_overrides(args)).run_name == name


def test_an_empty_run_name_is_refused_not_replaced_by_the_default(tmp_path, capsys):
    """``--run-name ""`` (an unset shell variable) once trained into ``default`` without a word."""
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(["--no-progress", "--set", f"out_dir={tmp_path}", "--run-name", ""])
    assert exit_info.value.code == 2
    assert "run_name must be a plain folder name (no '/', '\\' or NUL, not '.' or '..'), got ''" in (
        capsys.readouterr().err
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "overrides", "message"),
    [
        ("ppo:\n  learning_rate: abc\n", [], r": ppo.learning_rate must be a finite number, got 'abc'$"),
        ("ppo:\n  learnig_rate: 1\n", [], r": unknown config key\(s\) \['ppo.learnig_rate'\] \(did you mean"),
        # Another problem from an override is said beside the file's.
        (
            "seed: -1\n",
            ["ppo.gamma=2"],
            r" with its overrides: seed must be >= 0, got -1; ppo.gamma must be <= 1, got 2",
        ),
    ],
    ids=["bad value", "unknown key", "with an override"],
)
def test_a_bad_config_file_is_named_with_its_key(tmp_path, capsys, text, overrides, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    named = re.escape(f"config file {str(path)!r}") + message
    with pytest.raises(ConfigError, match=named):
        load_config(path, overrides)
    out = tmp_path / "runs"
    with pytest.raises(SystemExit):
        selfplay_main(["--config", str(path), "--set", f"out_dir={out}", *(a for o in overrides for a in ("--set", o))])
    assert re.search(named, capsys.readouterr().err)
    assert not out.exists()


def test_an_override_that_breaks_a_good_file_is_named_by_its_key_alone(tmp_path):
    with pytest.raises(ConfigError, match=r"^ppo.gamma must be <= 1, got 2$"):
        load_config(ROOT / "configs" / "default.yaml", ["ppo.gamma=2"])


def test_a_resumed_runs_edited_config_is_named(tmp_path, capsys):
    """``--resume`` of a run whose config.yaml was edited into a bad one names that file, and
    leaves the folder as it was."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "latest.pt").write_bytes(b"not read: the config is checked first")
    (run / "config.yaml").write_text("ppo:\n  learning_rate: -1\n")
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(["--resume", str(run), "--no-progress", "--set", "total_steps=512"])
    assert exit_info.value.code == 2
    expected = f"config file {str(run / 'config.yaml')!r}: ppo.learning_rate must be > 0, got -1"
    assert expected in capsys.readouterr().err
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir()} == before


def test_the_commands_that_train_read_config_and_set_alike():
    """``--config`` and ``--set`` come from :func:`add_config_options` in every command that
    trains: the same words give the same arguments of ``load_config``, with the same help."""
    from training.exploitability import learned_response
    from training.learn.config import SET_EXAMPLE
    from training.learn.selfplay_command import build_parser as selfplay_parser

    words = ["--config", "configs/4p.yaml", "--set", "ppo.learning_rate=3e-4", "--set", "env.num_players=[2]"]
    examples = {"selfplay": SET_EXAMPLE, "exploit": learned_response.SET_EXAMPLE}
    for command, parser in (("selfplay", selfplay_parser()), ("exploit", learned_response._parser())):
        args = parser.parse_args(words)
        assert (args.config, args.overrides) == ("configs/4p.yaml", ["ppo.learning_rate=3e-4", "env.num_players=[2]"])
        assert parser.parse_args([]).overrides == []
        assert examples[command] in " ".join(parser.format_help().split())
    # Each help's example works: self-play's on the built-in defaults, whose curriculum has
    # 2-player rungs; the best response's beside the keys it sets itself.
    example = selfplay_parser().parse_args(SET_EXAMPLE.split())
    assert load_config(None, example.overrides).env.num_players == [2, 3, 4]
    example = learned_response._parser().parse_args(["rule", *learned_response.SET_EXAMPLE.split()])
    learned_response.refuse_own_keys(example.overrides)
    overrides = learned_response.exploit_overrides(None, 2, 512, None, rules="mini6", bot="rule")
    assert load_config(None, [*overrides, *example.overrides]).opponents.current == 0.2


def test_a_config_extends_its_base_section_by_section(tmp_path):
    """``base:`` names a file relative to the one naming it; sections merge key by key and any
    other value (a list, a number) replaces the base's whole; a base may have its own base."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "root.yaml").write_text(
        "seed: 7\ntotal_steps: 1000\nenv:\n  rules: [classic, mini6]\n  rules_weights: [3, 1]\n  num_games: 64\n"
    )
    (tmp_path / "recipes" / "middle.yaml").write_text("base: root.yaml\nppo:\n  clip_coef: 0.1\n  ent_coef: 0.01\n")
    top = tmp_path / "top.yaml"
    top.write_text("base: recipes/middle.yaml\ntotal_steps: 2000\nenv:\n  rules: [mini7]\n  rules_weights: null\n")
    config = load_config(top, ["ppo.ent_coef=0.03"])
    assert (config.seed, config.total_steps) == (7, 2000)
    assert config.env.rules == ["mini7"] and config.env.rules_weights is None  # replaced, not merged
    assert config.env.num_games == 64  # the section merged: the base's other keys stay
    assert (config.ppo.clip_coef, config.ppo.ent_coef) == (0.1, 0.03)  # --set still comes last


@pytest.mark.parametrize(
    "files, message",
    [
        ({"top.yaml": "base: missing.yaml\n"}, r"'.*top.yaml': base 'missing.yaml' \(.*missing.yaml\) does not exist"),
        ({"top.yaml": "base: sub\n", "sub/x": ""}, r"'.*top.yaml': base 'sub' \(.*sub\) is not a file"),
        ({"top.yaml": "base: [a.yaml]\n"}, r"top.yaml': base must name the config file it extends, got \['a.yaml'\]"),
        ({"top.yaml": "base: ''\n"}, r"base must name the config file it extends, got ''"),
        ({"top.yaml": "base: top.yaml\n"}, r"'.*top.yaml': base 'top.yaml' closes a loop .*top.yaml -> .*top.yaml$"),
        (
            {"top.yaml": "base: a.yaml\n", "a.yaml": "base: b.yaml\n", "b.yaml": "base: a.yaml\n"},
            r"'.*b.yaml': base 'a.yaml' closes a loop .*top.yaml -> .*a.yaml -> .*b.yaml -> .*a.yaml$",
        ),
        ({"top.yaml": "base: a.yaml\n", "a.yaml": "seed: [\n"}, r"config file '.*a.yaml' is not valid YAML"),
        ({"top.yaml": "base: a.yaml\n", "a.yaml": "ppo:\n  learnin_rate: 1\n"}, r"did you mean 'ppo.learning_rate'"),
    ],
    ids=["missing", "a folder", "a list", "empty", "itself", "a loop of three", "bad YAML in the base", "bad key"],
)
def test_a_bad_base_is_named_with_the_file_that_names_it(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path / "top.yaml")


SHIPPED_RECIPES = ["ppo_2p", "ppo_2p_eq", "ppo_2to4p", "ppo_2to4p_eq"]
#: Keys whose value in a config differs on purpose from what its shipped network recorded:
#: the older files recorded greedy evaluations, and every config now samples.
CHANGED_SINCE = {"eval.greedy"}


@pytest.mark.parametrize("name", SHIPPED_RECIPES)
def test_each_shipped_network_is_what_its_config_trains(name):
    """The one command of a shipped network still gives the config its run recorded, so an edit
    of a recipe, or of the file it extends, cannot silently change what that command trains.
    Keys the network predates are not compared; neither are where and under which name it ran."""
    from training.learn.checkpoint import load_checkpoint
    from training.learn.config import dotted_keys, to_dict

    recorded = dotted_keys(load_checkpoint(ROOT / "checkpoints" / "shipped" / f"{name}.pt")["config"])
    configured = dotted_keys(to_dict(load_config(ROOT / "configs" / f"{name}.yaml")))
    differ = {
        key: (recorded[key], configured[key])
        for key in recorded
        if key not in {"run_name", "out_dir", *CHANGED_SINCE} and recorded[key] != configured[key]
    }
    assert not differ, f"configs/{name}.yaml no longer trains what checkpoints/shipped/{name}.pt recorded: {differ}"
    assert set(recorded) <= set(configured)


@pytest.mark.parametrize(
    "override, value",
    [("seed=010", 10), ("seed=0o17", 15), ("seed=0x10", 16), ("seed=1_000", 1000), ("seed=+7", 7)],
)
def test_integers_read_as_yaml_1_2_does(override, value):
    """A leading zero is no octal (YAML 1.1 read ``--set seed=010`` as 8, and ``08`` as text)."""
    assert load_config(None, [override]).seed == value


@pytest.mark.parametrize(
    "override, message",
    [
        ("total_steps=1:30", r"total_steps must be an integer, got '1:30'"),
        ("ppo.gamma=0:0.5", r"ppo.gamma must be a finite number, got '0:0.5'"),
    ],
)
def test_colon_numbers_are_text_not_base_60(override, message):
    """YAML 1.1 read ``1:30`` as 90 and ``0:0.5`` as 0.5 (base 60); as text they are refused,
    naming the key."""
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_eval_opponents_are_named_once():
    """Two evaluations against one bot play twice, and the run keeps only the second's figures
    (they are keyed by the bot's name, as are the metrics' columns)."""
    with pytest.raises(ConfigError, match=r"eval.opponents must name each bot once, got \['rule', 'random', 'rule'\]"):
        load_config(None, ["eval.opponents=[rule, random, rule]"])


@pytest.mark.skipif(sys.platform == "win32", reason="a file-size limit (RLIMIT_FSIZE) is POSIX")
def test_save_config_leaves_the_old_file_when_a_write_fails(tmp_path):
    """A write that fails part of the way (a full disk; here a file-size limit) leaves the
    config.yaml that was there as it was, and no other file: ``--resume`` rewrites a run's
    config.yaml, and a run whose config.yaml is cut short can no longer be resumed."""
    path = tmp_path / "config.yaml"
    save_config(load_config(), path)
    before = path.read_bytes()
    script = (
        "import resource, signal, sys\n"
        "from training.learn.config import load_config, save_config\n"
        "config = load_config(None, ['total_steps=6000000'])\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
        "try:\n"
        "    save_config(config, sys.argv[1])\n"
        "except OSError:\n"
        "    sys.exit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=subprocess_env(), timeout=120
    )
    assert done.returncode == 3, done.stderr
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]


@pytest.mark.parametrize("name", ["1e5", "3e-4", "08", "0o17", "010", "1:30", "true", "null", "2024-01-01"])
def test_a_saved_config_reads_back_as_it_was(tmp_path, name):
    """A run's config.yaml is what ``--resume`` reads: a name that reads as a number (``--run-name
    1e5``) must be written quoted, or the run could not be resumed."""
    config = load_config(None, [text_override("run_name", name)])
    save_config(config, tmp_path / "config.yaml")
    assert load_config(tmp_path / "config.yaml") == config


def test_set_rules_drops_the_weights_of_the_files_rules():
    """``--config configs/default.yaml`` is the built-in defaults (``--help`` says so), and with
    them ``--set env.rules=mini8`` alone trains on mini8: the file's weights are for its own
    five rules, as the defaults' are, and go with them unless the overrides give new ones."""
    default = ROOT / "configs" / "default.yaml"
    assert load_config(default, ["env.rules=mini8"]) == load_config(None, ["env.rules=mini8"])
    config = load_config(ROOT / "configs" / "ppo_2p_eq.yaml", ["env.rules=[classic, mini6]"])
    assert config.env.rules == ["classic", "mini6"] and config.env.rules_weights is None
    weighted = load_config(default, ["env.rules_weights=[3, 1]", "env.rules=[classic, mini6]"])
    assert weighted.env.rules_weights == [3, 1]
