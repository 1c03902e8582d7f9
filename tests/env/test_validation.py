"""loveletter_env.validation: one message format for every argument check, values normalised."""

from __future__ import annotations

import math
import os
import re
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TINY_TRAINING

import loveletter_env
from loveletter_env.agents import make_agent
from loveletter_env.batched.mixed import MixedRulesBatched
from loveletter_env.validation import (
    EPISODE_KINDS,
    MAX_SEED,
    PLAYER_COUNTS,
    check_choice,
    check_episode,
    check_int,
    check_num_players,
    check_number,
    check_seat,
    check_seed,
    check_writable,
    shown,
)
from training.learn.checkpoint import CheckpointError, load_checkpoint, model_payload, save_checkpoint
from training.learn.config import load_config
from training.learn.ppo import ActorCritic
from training.learn.runtime import derive_seed
from training.learn.trainer import SelfPlayTrainer
from training.measure.evaluation import evaluate


def test_valid_values_come_back_as_plain_python_types():
    value = check_int("rounds", np.int64(3), low=1)
    assert value == 3 and type(value) is int
    assert type(check_number("noise", np.float32(0.5), 0, 1)) is float
    assert check_num_players(np.int8(4)) == 4 and PLAYER_COUNTS == (2, 3, 4)
    assert check_seat("first_player", 2, 3) == 2
    assert check_episode("game") == "game" and EPISODE_KINDS == ("round", "game")


@pytest.mark.parametrize(
    "check, message",
    [
        (lambda: check_int("rounds", 0, low=1), "rounds must be a positive integer, got 0"),
        (lambda: check_int("width", -1, low=0), "width must be a non-negative integer, got -1"),
        (lambda: check_int("depth", 9, 1, 4), "depth must be an integer in 1..4, got 9"),
        (lambda: check_int("rounds", True, low=1), "rounds must be a positive integer, got True"),
        (lambda: check_int("rounds", 2.0, low=1), "rounds must be a positive integer, got 2.0"),
        (lambda: check_number("noise", math.nan, 0, 1), "noise must be a number between 0 and 1, got nan"),
        (lambda: check_number("noise", "high", 0, 1), "noise must be a number between 0 and 1, got 'high'"),
        (lambda: check_number("exploration", -0.5, low=0), "exploration must be a number >= 0, got -0.5"),
        (lambda: check_number("lr", math.inf), "lr must be a finite number, got inf"),
        (lambda: check_num_players(5), "num_players must be 2, 3 or 4, got 5"),
        (lambda: check_seat("first_player", 3, 3), "first_player must be a seat in 0..2, got 3"),
        (lambda: check_episode("match"), "episode must be one of \\('round', 'game'\\), got 'match'"),
        (lambda: check_choice("mode", [1], ("a", "b")), "mode must be one of \\('a', 'b'\\), got \\[1\\]"),
    ],
)
def test_bad_values_name_the_argument_the_rule_and_the_value(check, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        check()


#: Values too large to echo back whole: a 5 MB string, a million-item list, a number past
#: Python's limit on converting integers to text, a value nested past any reader's patience.
HUGE_VALUES = ["7" * 5_000_000, [2] * 1_000_000, -(10**5000), [[[[[[1]]]]]]]


@pytest.mark.parametrize("value", HUGE_VALUES, ids=["5 MB string", "long list", "5000 digits", "deep list"])
def test_a_huge_bad_value_is_echoed_cut_short(value):
    with pytest.raises(ValueError, match="^rounds must be a positive integer, got ") as refused:
        check_int("rounds", value, low=1)
    assert str(refused.value) == f"rounds must be a positive integer, got {shown(value)}"
    assert len(shown(value)) <= 100
    assert shown("x" * 70) == repr("x" * 70) and shown([1, 2]) == "[1, 2]" and shown(2**64) == str(2**64)


@pytest.mark.parametrize("value", [10**400, -(10**400), Fraction(10**400, 3)], ids=["1e400", "-1e400", "fraction"])
def test_a_number_past_any_float_is_refused_by_name_not_overflow(value):
    # float() of such a value raises OverflowError; an agent spec reads "exploration=1000...0" as one.
    with pytest.raises(ValueError, match=r"^exploration must be a number >= 0, got "):
        check_number("exploration", value, low=0)
    with pytest.raises(ValueError, match=r"^lr must be a finite number, got "):
        check_number("lr", value)


@pytest.mark.parametrize("key", ["observation_version", "observation_size", "num_actions"])
def test_a_checkpoint_echoes_a_huge_layout_value_cut_short(tmp_path, key):
    value = "7" * 5_000_000
    model = ActorCritic(hidden_sizes=(8,), generator=torch.Generator().manual_seed(0))
    path = save_checkpoint(tmp_path / "huge.pt", {"model": model_payload(model), key: value})
    with pytest.raises(CheckpointError, match=key.split("_")[0]) as refused:
        load_checkpoint(path)
    assert shown(value) in str(refused.value) and len(str(refused.value)) < 500


# Seeds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 7, np.int64(7), np.uint64(MAX_SEED), np.int8(3), MAX_SEED], ids=repr)
def test_seeds_are_integers_up_to_max_seed_and_come_back_as_int(seed):
    value = check_seed(seed)
    assert value == int(seed) and type(value) is int
    assert check_seed(seed, allow_none=True) == value


@pytest.mark.parametrize(
    "seed", [1.9, 1.0, np.float64(2.0), "1", True, np.True_, None, -1, MAX_SEED + 1, 2**64], ids=repr
)
def test_seeds_that_are_not_integers_in_range_are_refused_by_name(seed):
    message = f"run seed must be a non-negative integer below 2**63, got {seed!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_seed(seed, "run seed")


def test_none_is_a_seed_only_where_it_means_fresh_entropy():
    assert check_seed(None, allow_none=True) is None
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got 1.5$"):
        check_seed(1.5, allow_none=True)


def test_the_envs_deal_with_the_largest_seed():
    env = loveletter_env.env(num_players=3)
    env.reset(seed=MAX_SEED)
    first = env.observe(env.agent_selection)["observation"]
    env.reset(seed=MAX_SEED)
    assert np.array_equal(env.observe(env.agent_selection)["observation"], first)
    mixed = MixedRulesBatched(num_games=4, rules=("classic", "pegasus"), seed=MAX_SEED)
    obs, mask = mixed.reset()
    mixed.step(torch.multinomial(mask.float(), 1).squeeze(-1))


@pytest.mark.parametrize("name", ["random", "rule", "belief", "ismcts"])
def test_every_bot_plays_with_the_largest_seed(name):
    env = loveletter_env.env(num_players=2)
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    agent = make_agent(name, seed=MAX_SEED, **({"iterations": 4} if name == "ismcts" else {}))
    assert observation["action_mask"][agent.act(observation)]
    agent.reset(seed=MAX_SEED)


def test_an_evaluation_and_a_training_run_take_the_largest_seed(tmp_path):
    result = evaluate(["random", "rule"], num_players=2, rounds=4, seed=MAX_SEED, duplicate=True)
    assert result.episodes == 4 and result.seed == MAX_SEED
    # Every stream a run seeds: deals, actions, updates, bot opponents, evaluations, the result's pick.
    settings = ["total_steps=256", "eval.every=1", "eval.rounds=2", "eval.final_rounds=2", "opponents.bots=0.5"]
    config = load_config(None, [*TINY_TRAINING, f"seed={MAX_SEED}", *settings])
    summary = SelfPlayTrainer(config, tmp_path / "run", progress=False).train()
    assert summary["global_step"] >= 256 and (tmp_path / "run" / "result.pt").is_file()
    assert 0 <= derive_seed(MAX_SEED, MAX_SEED) <= MAX_SEED


# Writable paths ------------------------------------------------------------------------------


def test_a_writable_path_is_returned_and_nothing_is_left_behind(tmp_path):
    assert check_writable("replay file", tmp_path / "deeper" / "game.json") == tmp_path / "deeper" / "game.json"
    assert check_writable("run folder", str(tmp_path / "run"), folder=True) == tmp_path / "run"
    assert list(tmp_path.iterdir()) == []  # no probe file, no folders made


def test_a_path_under_a_file_is_refused_naming_the_file(tmp_path):
    (tmp_path / "notes").write_text("x")
    with pytest.raises(ValueError, match=r"^replay file '.*notes/game.json' cannot be written: '.*notes' is a file"):
        check_writable("replay file", tmp_path / "notes" / "game.json")
    with pytest.raises(ValueError, match=r"^run folder '.*notes/a/b' cannot be written: '.*notes' is a file"):
        check_writable("run folder", tmp_path / "notes" / "a" / "b", folder=True)


def test_a_nul_character_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"cannot be written: it contains a NUL character$"):
        check_writable("run folder", tmp_path / "a\0b", folder=True)


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(ValueError, match="cannot be written: it is a folder"):
        check_writable("replay file", tmp_path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_folder_that_takes_no_new_files_is_refused():
    # /proc accepts no new files, even from root (for whom permission bits say yes to everything).
    with pytest.raises(ValueError, match=r"cannot be written: creating a file in '/proc' fails \(No such file"):
        check_writable("replay file", "/proc/x.json")
    assert not os.path.exists("/proc/x.json") and not Path("/proc/nested").exists()


@pytest.mark.parametrize("folder", [False, True])
def test_a_name_too_long_for_the_system_is_refused_by_name(tmp_path, folder):
    # The system refuses it (ENAMETOOLONG) when pathlib asks whether it exists: the tools catch
    # ValueError, so an OSError here would end them with a traceback.
    for path in (tmp_path / ("a" * 300), tmp_path / ("a" * 300) / "game.json"):
        with pytest.raises(ValueError, match=r"cannot be written: .*File name too long"):
            check_writable("--out", path, folder=folder)


@pytest.mark.parametrize("path", [3, None, b"x.json", ["x.json"]])
def test_check_writable_names_what_is_no_path(path):
    with pytest.raises(TypeError, match=r"^replay file must be a path \(text or os\.PathLike\), got "):
        check_writable("replay file", path)
