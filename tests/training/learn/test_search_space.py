"""The hyperparameter search's file (training/learn/search_space.py): what it reads, and every
mistake it names before a trial trains."""

from __future__ import annotations

import textwrap

import pytest
from conftest import ROOT

from training.learn.config import ConfigError, load_config, to_dict
from training.learn.search_space import load_search_space

SPACE = """
set:
  env.rules: mini6
  total_steps: 4096
rules: mini6
space:
  ppo.learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, log: true}
  model.hidden_sizes: {type: categorical, choices: [[16], [32, 32]]}
"""


def write(tmp_path, text: str):
    path = tmp_path / "space.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "configs" / "sweeps").glob("*.yaml")))
def test_the_shipped_search_files_read(name):
    space = load_search_space(ROOT / "configs" / "sweeps" / name)
    assert space.rules in ("mini6", "mini7") and len(space.seeds) >= 3
    assert space.report_points()[-1] == space.total_steps


def test_a_trial_config_is_the_base_with_the_values_and_the_run(tmp_path):
    space = load_search_space(write(tmp_path, SPACE))
    assert space.report_points() == [512, 1024, 1536, 2048, 2560, 3072, 3584, 4096]
    config = space.trial_config(
        {"ppo.learning_rate": 3e-4, "model.hidden_sizes": "[32, 32]"}, 7, "seed_7", tmp_path / "trial"
    )
    assert config.ppo.learning_rate == 3e-4 and config.model.hidden_sizes == [32, 32]
    assert (config.seed, config.run_name, config.out_dir) == (7, "seed_7", str(tmp_path / "trial"))
    assert config.env.rules == ["mini6"] and config.total_steps == 4096


def test_one_entry_of_a_list_is_searched(tmp_path):
    path = write(
        tmp_path,
        """
        set: {env.rules: [mini6, mini7], env.rules_weights: [1.0, 1.0]}
        rules: mini7
        space:
          env.rules_weights[0]: {type: float, low: 0.1, high: 4.0, log: true}
        """,
    )
    config = load_search_space(path).trial_config({"env.rules_weights[0]": 0.25}, 0, "r", tmp_path)
    assert config.env.rules_weights == [0.25, 1.0]


def test_the_command_line_replaces_the_files_keys(tmp_path):
    space = load_search_space(
        write(tmp_path, SPACE), overrides={"total_steps": 2000}, seeds=[3, 4, 5], trials=2, report_every=1000
    )
    assert (space.total_steps, space.seeds, space.trials, space.report_points()) == (2000, [3, 4, 5], 2, [1000, 2000])


def test_a_base_config_file_is_read_under_the_set_keys(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("ppo:\n  ent_coef: 0.007\nenv:\n  rules: mini7\n", encoding="utf-8")
    space = load_search_space(write(tmp_path, f"config: {base}\n" + SPACE.replace("\nrules: mini6\n", "\n")))
    assert space.base["ppo"]["ent_coef"] == 0.007 and space.base["env"]["rules"] == ["mini6"]
    assert space.base == to_dict(load_config(base, ["env.rules=mini6", "total_steps=4096"]))


def test_a_base_config_that_extends_another_is_read_whole(tmp_path):
    (tmp_path / "recipe.yaml").write_text("ppo:\n  ent_coef: 0.007\n  clip_coef: 0.1\n", encoding="utf-8")
    changes = tmp_path / "changes.yaml"
    changes.write_text("base: recipe.yaml\nppo:\n  clip_coef: 0.3\n", encoding="utf-8")
    space = load_search_space(write(tmp_path, f"config: {changes}\n" + SPACE))
    assert (space.base["ppo"]["ent_coef"], space.base["ppo"]["clip_coef"]) == (0.007, 0.3)


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ("ppo.learnin_rate: {type: float, low: 0.1, high: 0.2}", "did you mean 'ppo.learning_rate'"),
        ("ppo.learning_rate: {type: float, low: 0.01, high: 0.001}", "low must be below high"),
        ("ppo.learning_rate: {type: float, low: 0, high: 0.1, log: true}", "log: true needs low above 0"),
        ("ppo.learning_rate: {type: float, low: 1.0e-4, high: 2.0}", "ppo.learning_rate must be <= 1, got 2.0"),
        ("ppo.update_epochs: {type: int, low: 1.5, high: 4}", "an int key needs whole numbers"),
        ("ppo.update_epochs: {type: int, low: 1, high: 4, step: 2}", "high must be low plus a whole number of steps"),
        ("ppo.ent_coef: {type: float, low: 0.0, high: 0.05, step: 0.04}", "high must be low plus a whole number"),
        ("ppo.update_epochs: {type: int, low: 0, high: 4}", "ppo.update_epochs must be >= 1, got 0"),
        ("ppo.anneal_lr: {type: categorical}", "a categorical key needs choices"),
        ("ppo.anneal_lr: {type: categorical, choices: [true, true]}", "choices must differ"),
        ("ppo.anneal_lr: {type: categorical, choices: [true], low: 1}", "takes only choices"),
        ("ppo.ent_coef: {type: float, low: 0.0, high: 0.1, scale: log}", "space['ppo.ent_coef'].scale"),
        ("ppo.ent_coef: {type: normal, low: 0.0, high: 0.1}", "space['ppo.ent_coef'].type must be"),
        ("seed: {type: int, low: 0, high: 9}", "'seed' cannot be searched: the sweep sets it"),
        ("total_steps: {type: int, low: 1000, high: 9000}", "'total_steps' cannot be searched"),
        ("env.rules_weights[3]: {type: float, low: 0.1, high: 1}", "env.rules_weights must be a list"),
        # A float range on a whole-number key: its ends pass, every value drawn between them would not.
        (
            "ppo.update_epochs: {type: float, low: 1, high: 6}",
            "'ppo.update_epochs' = 2.90983 (a value inside the range, as the sampler draws) is refused by the config",
        ),
        ("ppo.update_epochs: {type: float, low: 1, high: 16, log: true}", "ppo.update_epochs must be an integer"),
    ],
)
def test_a_bad_space_is_named_before_anything_trains(tmp_path, space, message):
    path = write(tmp_path, SPACE.split("space:")[0] + "space:\n  " + space + "\n")
    with pytest.raises(ConfigError, match="search file") as error:
        load_search_space(path)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: classic\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}", "rules must be a ladder rung"),
        ("seeds: [0, 1]\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}", "seeds must hold at least 3 items"),
        ("seeds: [0, 0, 1]\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}", "seeds must differ"),
        ("set: {seed: 3}\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}", "'seed' is set by the sweep"),
        ("set: {ppo.lr: 3}\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}", "unknown config key"),
        ("space: {}", "space must hold at least 1 item"),
        ("rules: mini6\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}\ntrails: 3", "trails"),
        # A misspelt key of the file itself is named with the key it most likely meant.
        (
            "rules: mini6\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}\nreport_evry: 3",
            "report_evry is not a known key (did you mean 'report_every'?)",
        ),
        (
            "rules: mini6\nspace: {ppo.ent_coef: {type: float, low: 0, hihg: 1}}",
            "space['ppo.ent_coef'].hihg is not a known key (did you mean 'high'?)",
        ),
        # A key both fixed and searched: the fixed value would be ignored without a word.
        (
            "set: {env.rules: mini6, ppo.ent_coef: 0.01}\nrules: mini6\n"
            "space: {ppo.ent_coef: {type: float, low: 0, high: 1}}",
            "'ppo.ent_coef' is both fixed (set: or --set) and searched (space:)",
        ),
        ("space: {ppo.ent_coef: {type: float, low: 0, high: 1}}", "say which rung the objective is measured on"),
        # A 2-player network measured at a 3-player table.
        (
            "set: {env.rules: mini6}\nrules: mini6_3p\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}",
            "rules 'mini6_3p' is played by 3 players, but the trials train at table sizes [2] (env.num_players)",
        ),
        (
            "set: {env.rules: classic, env.num_players: [3, 4]}\nrules: mini6\n"
            "space: {ppo.ent_coef: {type: float, low: 0, high: 1}}",
            "rules 'mini6' is played by 2 players, but the trials train at table sizes [3, 4]",
        ),
        (
            "set: {env.rules: [mini6, mini7]}\nrules: mini7\n"
            "space: {'env.rules_weights[2]': {type: float, low: 1, high: 2}}",
            "env.rules_weights must be a list in the base config",
        ),
        (
            "set: {env.rules: [mini6, mini7], env.rules_weights: [1, 1]}\nrules: mini7\n"
            "space: {'env.rules_weights[2]': {type: float, low: 1, high: 2}}",
            "env.rules_weights has 2 entries in the base config, so no entry [2]",
        ),
    ],
)
def test_a_bad_file_is_named(tmp_path, text, message):
    with pytest.raises(ConfigError, match="search file") as error:
        load_search_space(write(tmp_path, text))
    assert message in str(error.value)


@pytest.mark.parametrize(
    "table",
    [
        "set: {env.rules: classic, env.num_players: [2, 3]}",  # a mix that holds the rung's size
        "set: {env.rules: classic, env.num_players: [2], schedule: [{at_step: 100, set: {env.num_players: [3]}}]}",
        "set: {env.rules: classic}\nspace: {env.num_players: {type: int, low: 2, high: 4}}",
    ],
)
def test_the_rung_may_be_any_table_size_the_trials_train_at(tmp_path, table):
    space = "" if "space:" in table else "\nspace: {ppo.ent_coef: {type: float, low: 0, high: 1}}"
    assert load_search_space(write(tmp_path, f"{table}\nrules: mini6_3p{space}")).rules == "mini6_3p"


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_search_space(tmp_path / "nowhere.yaml")


def test_a_missing_base_config_is_named_with_the_search_file_that_names_it(tmp_path):
    path = write(tmp_path, "config: nowhere.yaml\n" + SPACE)
    with pytest.raises(
        ConfigError, match=r"search file '.*space.yaml': config: config file 'nowhere.yaml' does not exist"
    ):
        load_search_space(path)


def test_enqueued_points_are_read_in_optunas_stored_form(tmp_path):
    path = write(
        tmp_path,
        SPACE
        + textwrap.dedent(
            """
            enqueue:
              - {ppo.learning_rate: 1.0e-3, model.hidden_sizes: [32, 32]}
              - {model.hidden_sizes: [16]}
            """
        ),
    )
    space = load_search_space(path)
    assert space.enqueue == [
        {"ppo.learning_rate": 1e-3, "model.hidden_sizes": "[32, 32]"},
        {"model.hidden_sizes": "[16]"},
    ]
    assert "enqueue" not in space.definition  # a study continues with more known points or fewer
    config = space.trial_config(space.enqueue[0], 0, "r", tmp_path)
    assert config.ppo.learning_rate == 1e-3 and config.model.hidden_sizes == [32, 32]


@pytest.mark.parametrize(
    ("point", "message"),
    [
        ("{ppo.ent_coef: 0.01}", "enqueue[0]: 'ppo.ent_coef' is not a key of the space"),
        ("{ppo.learning_rate: 0.01}", "enqueue[0]: ppo.learning_rate: 0.01 is outside the range 0.0001 to 0.001"),
        ("{ppo.learning_rate: fast}", "enqueue[0]: ppo.learning_rate: 'fast' is not a number"),
        ("{model.hidden_sizes: [64]}", "enqueue[0]: model.hidden_sizes: [64] is none of the choices"),
        ("{}", "enqueue[0] must hold at least 1 item"),
    ],
)
def test_a_bad_enqueued_point_is_named(tmp_path, point, message):
    with pytest.raises(ConfigError, match="search file") as error:
        load_search_space(write(tmp_path, SPACE + "enqueue:\n  - " + point + "\n"))
    assert message in str(error.value)


def test_an_enqueued_int_must_be_on_the_spaces_steps(tmp_path):
    text = SPACE.split("space:")[0] + "space:\n  ppo.update_epochs: {type: int, low: 1, high: 7, step: 2}\n"
    assert load_search_space(write(tmp_path, text + "enqueue: [{ppo.update_epochs: 5}]\n")).enqueue == [
        {"ppo.update_epochs": 5}
    ]
    with pytest.raises(ConfigError, match="4 is not low plus a whole number of steps of 2"):
        load_search_space(write(tmp_path, text + "enqueue: [{ppo.update_epochs: 4}]\n"))
    with pytest.raises(ConfigError, match="2.5 is not a whole number"):
        load_search_space(write(tmp_path, text + "enqueue: [{ppo.update_epochs: 2.5}]\n"))
