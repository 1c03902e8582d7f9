"""The exact solver of the ladder's rungs: the tree, CFR+, the saved policy and its agent."""

from __future__ import annotations

import io
import json
import os
import re

import numpy as np
import pytest

from loveletter_env import raw_env
from loveletter_env.agents.solved import PolicyFileError, SolvedAgent, SolvedPolicy
from loveletter_env.agents.specs import AgentSpecError, resolve_agent
from loveletter_env.tree import TreeError, build_tree, count_tree, key_to_observation, observation_key
from training.exploitability import solver as solve_cli
from training.exploitability.cfr import TreeWorkspace
from training.exploitability.exact_response import exact_exploitability
from training.exploitability.solver import normalized, solve


@pytest.fixture(scope="module")
def tree():
    return build_tree("mini6")


@pytest.fixture(scope="module")
def solved(tree):
    return solve("mini6", iterations=500, tree=tree)


@pytest.fixture(scope="module")
def policy_path(solved, tmp_path_factory):
    return solved.save_policy(tmp_path_factory.mktemp("solved") / "policy.npz")


def test_mini6_has_the_table_s_information_sets():
    # The observation shows every announced move, so the game the env's agents play is the
    # game as played at a table.
    size = count_tree("mini6")
    assert (size.histories, size.infosets, size.infosets_by_seat) == (27374, 1800, (1608, 192))


def test_tree_is_consistent(tree):
    # Every decision node's children lie on the next level, after it.
    levels = np.searchsorted(tree.level_start, np.arange(tree.num_nodes), side="right") - 1
    decisions = np.flatnonzero(tree.node_info >= 0)
    assert (levels[tree.node_child[decisions]] == levels[decisions] + 1).all()
    # Player 0 moves first, then the players alternate.
    players = tree.infoset_player[tree.node_info[decisions]]
    assert (players == levels[decisions] % 2).all()
    # Each information set's first node is one of its nodes, and no two sets share an
    # observation key (the seat can be told from the observation too).
    assert (tree.node_info[tree.infoset_node] == np.arange(tree.num_infosets)).all()
    keys = {tree.key(i).tobytes() for i in range(tree.num_infosets)}
    assert len(keys) == tree.num_infosets
    # Terminal scores are 0, 1/2 or 1 for player 0.
    assert set(np.unique(tree.node_info[tree.node_info < 0]).tolist()) <= {-1, -2, -3}


def test_keys_round_trip_observations(tree):
    for i in range(0, tree.num_infosets, 17):
        key = tree.key(i)
        assert observation_key(key_to_observation(key)) == key.tobytes()


def test_cfr_plus_converges_on_mini6(solved):
    assert solved.rules == "mini6"
    assert solved.exploitability <= 1e-3
    assert solved.iterations < 500  # stopped at the target
    # The curve is measured and ends at the reported value.
    assert solved.curve[-1][0] == solved.iterations
    assert solved.curve[-1][2] == pytest.approx(solved.exploitability)
    assert solved.curve[0][2] > 0.1 > solved.curve[-1][2]
    assert 0.0 < solved.first_player_score < 1.0


def test_a_second_solve_is_identical(tree, solved):
    again = solve("mini6", iterations=solved.iterations, target=0.0, tree=tree)
    assert again.exploitability == solved.exploitability
    np.testing.assert_array_equal(again.policy.probabilities, solved.policy.probabilities)


def test_exploitability_is_the_mean_of_the_two_best_responses(tree, solved):
    # Against the equilibrium, a best response gains no more than the game's value in either seat.
    value = solved.first_player_score
    assert solved.best_response_as_first >= value - 1e-12
    assert solved.best_response_as_second >= 1 - value - 1e-12
    mean = (solved.best_response_as_first + solved.best_response_as_second) / 2 - 0.5
    assert solved.exploitability == pytest.approx(mean)


def test_exact_best_response_to_the_solved_agent_matches(policy_path, solved, tree):
    report = exact_exploitability(f"solved:path={policy_path}", "mini6", tree=tree)
    assert report["exploitability"] == pytest.approx(solved.exploitability, abs=1e-12)
    assert report["exact_probabilities"] is True


def test_policy_file_round_trips(policy_path, solved):
    loaded = SolvedPolicy.load(policy_path)
    np.testing.assert_array_equal(loaded.probabilities, solved.policy.probabilities)
    np.testing.assert_array_equal(loaded.key_entries, solved.policy.key_entries)
    assert loaded.meta["rules"] == "mini6"
    assert loaded.meta["iterations"] == solved.iterations
    # Each information set's probabilities sum to 1 over its legal actions.
    sums = np.add.reduceat(loaded.probabilities, loaded.action_offsets[:-1])
    np.testing.assert_allclose(sums, 1.0)


def _play(env, agents, rounds, seed):
    scores = np.zeros(2)
    for episode in range(rounds):
        env.reset(seed=seed + episode, options={"first_player": 0})
        for agent in agents:
            agent.reset()
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            action = agents[env.agent_name_mapping[env.agent_selection]].act(obs)
            assert obs["action_mask"][action] == 1
            env.step(action)
        winners = [env.agent_name_mapping[a] for a in env.infos[env.possible_agents[0]]["winners"]]
        for w in winners:
            scores[w] += 1 / len(winners)
    return scores / rounds


def test_solved_agent_plays_whole_games_in_the_env(policy_path):
    env = raw_env(num_players=2, rules="mini6", episode="game")
    agents = [resolve_agent(f"solved:path={policy_path}", seed=1), resolve_agent("random", seed=2)]
    _play(env, agents, rounds=5, seed=10)  # several rounds each, tokens carried


def test_the_tree_is_the_env_s_game(policy_path, tree, solved):
    """The solved agent against random in the env scores what the tree says it does."""
    agent = SolvedAgent(policy_path, seed=3)
    random_strategy = tree.uniform_strategy()
    mixed = np.where(tree.action_player == 0, solved.policy.probabilities, random_strategy)
    expected = TreeWorkspace(tree).first_player_score(mixed)
    rounds = 3000
    env = raw_env(num_players=2, rules="mini6", episode="round")
    measured = _play(env, [agent, resolve_agent("random", seed=4)], rounds, seed=500)[0]
    sigma = 0.5 / np.sqrt(rounds)
    assert abs(measured - expected) < 4 * sigma, (measured, expected)


def test_solved_agent_refuses_other_rules(policy_path):
    env = raw_env(num_players=2, rules="mini7", episode="round")
    env.reset(seed=0, options={"first_player": 0})
    with pytest.raises(ValueError, match="no information set"):
        SolvedAgent(policy_path).act(env.observe(env.agent_selection))


def test_solved_spec_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_agent(f"solved:path={tmp_path / 'missing.npz'}")
    with pytest.raises(AgentSpecError, match="solved:path=FILE"):
        resolve_agent("solved")
    bad = tmp_path / "bad.npz"
    np.savez(bad, something=np.zeros(3))
    with pytest.raises(ValueError, match="not a solved policy file"):
        resolve_agent(f"solved:path={bad}")


def test_solver_refuses_rules_off_the_ladder():
    with pytest.raises(TreeError, match="not a ladder rung"):
        build_tree("classic")
    with pytest.raises(ValueError, match="unknown rules preset"):
        build_tree("mini5")
    with pytest.raises(ValueError, match="iterations"):
        solve("mini6", iterations=0)


def test_normalized_is_uniform_where_nothing_was_accumulated(tree):
    strategy = normalized(tree, np.zeros(tree.actions.shape[0]))
    np.testing.assert_allclose(strategy, tree.uniform_strategy())


def test_cli_json_and_outputs(tmp_path, capsys):
    report = solve_cli.main(["mini6", "--out", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["rules"] == "mini6" == report["rules"]
    assert out["exploitability"] <= 1e-3
    assert 0 < out["first_player_score"] < 1
    assert (tmp_path / "policy.npz").exists() and (tmp_path / "convergence.png").exists()
    assert json.loads((tmp_path / "result.json").read_text())["iterations"] == out["iterations"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["classic"], "not a ladder rung"),
        (["mini5"], "unknown rules 'mini5'"),
        (["mini6", "--iterations", "0"], "--iterations must be positive"),
    ],
)
def test_cli_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        solve_cli.main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["mini6", "--information", "full"], ["mini6", "--information"]])
def test_the_retired_information_flag_is_refused(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        solve_cli.main([*argv, "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "error: --information is retired: the observation is the player's information state" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_policy_files_hold_no_information_mode(policy_path):
    entries = _entries(policy_path)
    assert "infoset_heard" not in entries and "information" not in json.loads(str(entries["meta"]))


def test_policy_files_solved_with_every_move_heard_are_refused(policy_path, tmp_path):
    entries = _entries(policy_path)
    meta = {**json.loads(str(entries["meta"])), "information": "full"}
    full = _rewritten(policy_path, tmp_path / "full.npz", meta=np.str_(json.dumps(meta)))
    message = "was solved with information='full', a game the solver no longer has"
    with pytest.raises(PolicyFileError, match=re.escape(message)) as refused:
        SolvedPolicy.load(full)
    assert "`python -m training.solve mini6`" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(PolicyFileError, match=re.escape(message)):
        SolvedAgent(full)


def _cli_error(argv, capsys, code=2):
    with pytest.raises(SystemExit) as stop:
        solve_cli.main(argv)
    assert stop.value.code == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _no_tree(*args, **kwargs):
    raise AssertionError("the tree was built before the arguments were checked")


@pytest.mark.parametrize("target", ["nan", "inf", "-inf", "2", "0.6", "-0.001", "some"])
def test_cli_target_is_a_finite_exploitability_checked_before_anything(target, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(solve_cli, "build_tree", _no_tree)
    err = _cli_error(["mini6", f"--target={target}", "--out", str(tmp_path / "o")], capsys)
    assert f"--target: must be a number between 0 and 0.5 (an exploitability), got {target!r}" in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match="target must be a number between 0 and 0.5"):
        solve("mini6", target=float("nan") if target == "some" else float(target))


def test_cli_checks_out_before_building_the_tree(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(solve_cli, "build_tree", _no_tree)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert "is a file, not a folder" in _cli_error(["mini6", "--out", str(a_file)], capsys)
    assert "is a file, not a folder" in _cli_error(["mini6", "--out", "/dev/null"], capsys)
    assert "cannot be written" in _cli_error(["mini6", "--out", str(a_file / "below")], capsys)
    assert a_file.read_text() == "x"


def test_cli_refuses_to_replace_a_solve_without_force(tmp_path, capsys):
    solve_cli.main(["mini6", "--out", str(tmp_path), "--target", "0.5", "--json"])
    capsys.readouterr()
    first = (tmp_path / "result.json").read_text()
    err = _cli_error(["mini6", "--out", str(tmp_path)], capsys)
    assert "already holds a solve" in err and "--force" in err
    assert (tmp_path / "result.json").read_text() == first
    report = solve_cli.main(["mini6", "--out", str(tmp_path), "--force", "--json"])
    assert json.loads((tmp_path / "result.json").read_text())["iterations"] == report["iterations"] > 1
    # Every file was renamed into place: no temporary file is left.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "convergence.png", "policy.npz", "result.json"]


def test_cli_refuses_a_folder_another_run_holds(tmp_path, capsys, monkeypatch):
    from training.learn.runtime import RunLock

    monkeypatch.setattr(solve_cli, "build_tree", _no_tree)
    with RunLock(tmp_path):
        err = _cli_error(["mini6", "--out", str(tmp_path)], capsys)
    assert "is in use by another run" in err
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]


def test_cli_says_equilibrium_only_when_the_target_is_met(tmp_path, capsys):
    report = solve_cli.main(["mini6", "--out", str(tmp_path / "a"), "--iterations", "1"])
    out = capsys.readouterr().out
    assert report["target_met"] is False and report["exploitability"] > 1e-3
    assert "NOT an equilibrium to the target 0.001" in out and "at the equilibrium" not in out
    assert json.loads((tmp_path / "a" / "result.json").read_text())["target_met"] is False
    report = solve_cli.main(["mini6", "--out", str(tmp_path / "b"), "--iterations", "1", "--target", "0.5"])
    out = capsys.readouterr().out
    assert report["target_met"] is True and "within the target 0.5" in out and "at the equilibrium" in out


def test_an_interrupted_write_keeps_the_previous_files(solved, tmp_path, monkeypatch):
    solve_cli.save_outputs(solved, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def killed_mid_write(self, f):
        f.write(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(SolvedPolicy, "_write", killed_mid_write)
    with pytest.raises(KeyboardInterrupt):
        solve_cli.save_outputs(solved, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_result_that_is_not_a_number_is_refused_before_writing(solved, tmp_path, capsys, monkeypatch):
    from dataclasses import replace

    broken = replace(solved, exploitability=float("nan"))
    with pytest.raises(ValueError, match="not a finite number"):
        solve_cli.save_outputs(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(solve_cli, "solve", lambda *args, **kwargs: broken)
    err = _cli_error(["mini6", "--out", str(tmp_path / "cli")], capsys, code=1)
    assert "not a finite number (NaN or infinity)" in err
    assert [p.name for p in (tmp_path / "cli").iterdir()] == [".lock"]


def test_out_of_memory_is_one_sentence_and_mini9_says_what_it_needs(tmp_path, capsys, monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(solve_cli, "build_tree", no_memory)
    err = _cli_error(["mini9", "--out", str(tmp_path)], capsys, code=1)
    lines = err.strip().splitlines()
    assert lines[0].startswith("mini9 needs about 3.3 GB of memory and about 8 minutes")
    assert lines[-1] == (
        "python -m training.solve: error: out of memory while building the tree of mini9 "
        f"(a mini9 solve needs about 3.3 GB of memory); nothing was written to {tmp_path}"
    )


def _entries(path):
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def _rewritten(path, target, **changes):
    """``path``'s entries with ``changes`` (``None`` drops one), written to ``target``."""
    entries = {**_entries(path), **changes}
    np.savez_compressed(target, **{name: value for name, value in entries.items() if value is not None})
    return target


def _changed(entries, name, index, value):
    array = entries[name].copy()
    array[index] = value
    return array


def _second_set_keyed_as_the_first(entries):
    offsets, keys = entries["key_offsets"].astype(np.int64), entries["key_entries"]
    first = keys[: offsets[1]]
    moved = offsets.copy()
    moved[2:] += 2 * offsets[1] - offsets[2]
    return {"key_entries": np.concatenate([first, first, keys[offsets[2] :]]), "key_offsets": moved}


BAD_POLICIES = {
    "action id 99": (
        lambda e: {"actions": _changed(e, "actions", 3, 99)},
        "has action id 99, and action ids are 0..40",
    ),
    "NaN": (lambda e: {"probabilities": _changed(e, "probabilities", 0, np.nan)}, "negative, NaN or infinite"),
    "negative": (lambda e: {"probabilities": _changed(e, "probabilities", 0, -0.5)}, "negative, NaN or infinite"),
    "not summing to 1": (lambda e: {"probabilities": e["probabilities"] * 1.1}, "sum to 1.1, not 1"),
    "short probabilities": (lambda e: {"probabilities": e["probabilities"][:-3]}, "probabilities for"),
    "2-d probabilities": (lambda e: {"probabilities": e["probabilities"][None]}, "expected a 1-d floating-point"),
    "meta a list": (lambda e: {"meta": np.str_("[1, 2]")}, "meta entry that is not a JSON object"),
    "meta not JSON": (lambda e: {"meta": np.str_("{rules")}, "meta entry that is not a JSON object"),
    "other format": (lambda e: {"format": np.str_("something-else")}, "its format is 'something-else'"),
    "no version": (lambda e: {"version": None}, "has no version number"),
    "future version": (lambda e: {"version": np.int64(7)}, "is format version 7, and this code reads version 3"),
    "missing array": (lambda e: {"infoset_player": None}, "lacks the array infoset_player"),
    "offsets past the end": (
        lambda e: {"action_offsets": _changed(e, "action_offsets", -1, 10**6)},
        "action_offsets that do not cut actions",
    ),
    "two sets with one key": (
        lambda e: _second_set_keyed_as_the_first(e),
        "with one observation key",
    ),
    "actions out of order": (lambda e: {"actions": e["actions"][::-1].copy()}, "not listed once each"),
}


@pytest.mark.parametrize("case", sorted(BAD_POLICIES))
def test_a_broken_policy_file_is_one_sentence_naming_it(policy_path, tmp_path, case):
    change, message = BAD_POLICIES[case]
    bad = _rewritten(policy_path, tmp_path / "bad.npz", **change(_entries(policy_path)))
    with pytest.raises(PolicyFileError, match=re.escape(message)) as refused:
        SolvedPolicy.load(bad)
    assert str(refused.value).startswith(f"solved policy {str(bad)!r} ")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "corrupted member"])
def test_a_damaged_policy_archive_is_refused(policy_path, tmp_path, damage):
    data = policy_path.read_bytes()
    bad = tmp_path / "bad.npz"
    if damage == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        bad.write_bytes(b"not a policy at all" * 20)
    elif damage == "empty":
        bad.write_bytes(b"")
    else:  # the archive's directory is intact, a member's compressed bytes are not
        middle = len(data) // 3
        bad.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 64]) + data[middle + 64 :])
    with pytest.raises(PolicyFileError, match=f"solved policy {re.escape(repr(str(bad)))} is"):
        SolvedPolicy.load(bad)


def test_a_policy_path_that_is_no_regular_file_is_refused_before_reading(tmp_path):
    fifo = tmp_path / "policy.npz"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    with pytest.raises(PolicyFileError, match="is not a regular file"):
        SolvedPolicy.load(fifo)
    with pytest.raises(PolicyFileError, match="is not a regular file"):
        SolvedPolicy.load(tmp_path)


@pytest.mark.parametrize("version", [1, 2])
def test_older_policy_files_are_refused_with_how_to_regenerate_them(policy_path, tmp_path, version):
    # Version 2 chained each information set to the player's previous one.
    assert int(_entries(policy_path)["version"]) == 3
    entries = _entries(policy_path)
    n = entries["infoset_player"].shape[0]
    chain = {"infoset_parent": np.full(n, -1, np.int32), "infoset_parent_action": np.full(n, -1, np.int8)}
    older = _rewritten(policy_path, tmp_path / "older.npz", version=np.int64(version), **chain)
    message = f"is format version {version}, and this code reads version 3 only"
    with pytest.raises(PolicyFileError, match=re.escape(message)):
        SolvedPolicy.load(older)
    with pytest.raises(PolicyFileError, match=re.escape("`python -m training.solve mini6`")):
        SolvedAgent(older)


@pytest.mark.parametrize("tool", ["evaluate", "evaluate --exact", "exploit --exact", "play"])
def test_tools_taking_a_policy_file_exit_2_with_its_sentence(policy_path, tmp_path, tool, capsys, monkeypatch):
    from training import evaluate, exploit, play

    entries = _entries(policy_path)
    bad = _rewritten(policy_path, tmp_path / "bad.npz", actions=_changed(entries, "actions", 3, 99))
    spec = f"solved:path={bad}"
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    run = {
        "evaluate": lambda: evaluate.main([spec, "rule", "--rules", "mini6", "--rounds", "2", "--no-progress"]),
        "evaluate --exact": lambda: evaluate.main([spec, "rule", "--exact", "--rules", "mini6", "--no-progress"]),
        "exploit --exact": lambda: exploit.main([spec, "--exact", "--rules", "mini6", "--no-progress"]),
        "play": lambda: play.main([spec, "--rules", "mini6", "--seed", "0"]),
    }[tool]
    with pytest.raises(SystemExit) as stop:
        run()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"solved policy {str(bad)!r} has action id 99, and action ids are 0..40" in err
    assert "Traceback" not in err
