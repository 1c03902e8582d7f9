"""training.evaluate: reproducible figures, independent of the worker count, clear
errors for bad specs, and the CLI (plain, --json, league) end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from loveletter_env.agents import RandomAgent, make_agent
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.replay import load_replay
from training.measure.evaluation import EvaluationResult, evaluate
from training.measure.matches import MAX_EPISODES, episode_seeds
from training.measure.stats import wilson_interval


def test_same_seed_same_result_and_worker_count_does_not_matter():
    one = evaluate(["belief", "rule"], rounds=60, seed=5)
    again = evaluate(["belief", "rule"], rounds=60, seed=5)
    two_workers = evaluate(["belief", "rule"], rounds=60, seed=5, workers=2)
    assert one.to_dict() == again.to_dict() == two_workers.to_dict()
    other_seed = evaluate(["belief", "rule"], rounds=60, seed=6)
    assert other_seed.to_dict() != one.to_dict()


def test_result_figures_are_consistent():
    result = evaluate(["rule", "random"], rounds=200, seed=1)
    assert isinstance(result, EvaluationResult)
    assert result.episodes == 200 and result.agents == ["rule", "random"]
    assert sum(result.wins) >= 200  # every round has a winner (shared wins count for each)
    for rate, (lo, hi) in zip(result.win_rate, result.ci95):
        assert lo <= rate <= hi
    assert result.win_rate[0] > 0.6  # the rule bot clearly beats random play
    assert result.mean_round_length > 2
    json.dumps(result.to_dict())


def test_lineup_is_filled_with_the_last_agent_and_seats_rotate(tmp_path: Path):
    result = evaluate(["rule", "random"], num_players=4, rounds=40, seed=2, save_replays=tmp_path)
    assert result.agents == ["rule", "random", "random", "random"]
    assert len(result.win_rate) == 4
    # Identical random players in rotating seats: every slot wins sometimes.
    assert all(w > 0 for w in result.wins)
    # The seating the replays record: episode k puts slot i at seat (i + k) % 4, each slot's
    # agent seeded with the slot's seed for the episode (the first of episode_seeds is the deal's).
    wins = [0] * 4
    for k in range(40):
        replay = load_replay(tmp_path / f"episode_{k:06d}.json")
        slot_at = [(seat - k) % 4 for seat in range(4)]
        assert [a.name for a in replay.agents] == [result.agents[slot] for slot in slot_at]
        assert [a.name for a in replay.agents].index("rule") == k % 4
        seeds = episode_seeds(2, k, 5)
        assert [a.seed for a in replay.agents] == [seeds[slot + 1] for slot in slot_at]
        for seat in replay.result["winners"]:
            wins[slot_at[seat]] += 1
    assert wins == result.wins  # and each win is counted for the slot that sat there


def test_an_agent_object_filling_several_seats_is_copied_per_seat():
    from training.measure.matches import _lineup

    bot = make_agent("rule", seed=0)
    lineup = _lineup([make_agent("random", seed=1), bot], 4)
    assert lineup[1] is bot
    assert lineup[2] is not bot and lineup[3] is not bot and lineup[2] is not lineup[3]
    assert all(type(agent) is type(bot) for agent in lineup[1:])


def test_whole_games():
    result = evaluate(["belief", "random"], rounds=4, episode="game", seed=0)
    assert result.mean_rounds_per_episode >= 7  # a 2-player game needs 7 tokens
    assert sum(result.wins) >= 4


def test_agent_specs():
    agent = RandomAgent(seed=1)
    assert resolve_agent(agent) is agent
    assert resolve_agent("ismcts:iterations=5").iterations == 5
    assert isinstance(resolve_agent("loveletter_env.agents.random_agent:RandomAgent", seed=1), RandomAgent)
    result = evaluate([make_agent("rule", seed=0), "loveletter_env.agents.random_agent:RandomAgent"], rounds=10)
    assert len(result.agents) == 2


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"agents": ["nobody"]}, ValueError, "unknown agent 'nobody'"),
        ({"agents": ["missing/model.pt"]}, FileNotFoundError, "does not exist"),
        ({"agents": ["rule"], "num_players": 5}, ValueError, "num_players"),
        ({"agents": ["rule"], "episode": "match"}, ValueError, "episode"),
        ({"agents": ["rule"], "rounds": 0}, ValueError, "rounds"),
        ({"agents": ["rule"], "workers": 0}, ValueError, "workers"),
        ({"agents": ["rule", "rule", "rule"]}, ValueError, "3 agents given for a 2-player table"),
        ({"agents": [object()]}, ValueError, "act"),
        ({"agents": ["ismcts:iterations"]}, ValueError, "key=value"),
        # No seed would draw fresh entropy for every episode: not reproducible, and no deal shared
        # by its rotations with duplicate deals; numpy's own refusal of -1 names no argument.
        ({"agents": ["rule"], "seed": None, "duplicate": True}, ValueError, "seed must be a non-negative integer"),
        ({"agents": ["rule"], "seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"agents": ["rule"], "duplicate": "yes"}, ValueError, "duplicate must be True or False"),
        ({"agents": ["rule"], "rounds": MAX_EPISODES + 1}, ValueError, "rounds must be an integer in 1..100000000"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    kwargs.setdefault("rounds", 2)
    with pytest.raises(error, match=match):
        evaluate(**kwargs)


# Run in a child of its own: before the fix the pool replaced its failing workers for ever, and
# the test must end (killing the child's whole group) rather than hang with them.
_POOL_SETUP_FAILS = """
from training.measure.matches import MatchSetup, play_matches
setup = MatchSetup(("rule", "random"), 2, "round", "no-such-rules", 0)  # unchecked: a worker's env fails
try:
    play_matches(setup, rounds=8, workers=2)
except ValueError as err:
    print("refused:", err)
"""


def _run_unless_it_hangs(script: str, *args: str, hang: str) -> str:
    """``script``'s output, run in a child process of its own session, which is killed (and the
    test failed, saying ``hang``) if it has not ended in 60 s."""
    import os
    import signal

    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail(f"the run hung: {hang}")
    assert child.returncode == 0, err
    return out


def test_a_worker_that_cannot_set_up_ends_the_run_with_its_error():
    out = _run_unless_it_hangs(_POOL_SETUP_FAILS, hang="the pool kept starting workers that could not set up")
    assert "refused: unknown rules preset 'no-such-rules'" in out


# A worker that dies mid-chunk (the out-of-memory killer, a crash in compiled code, an agent calling
# os._exit or raising SystemExit): multiprocessing's Pool replaces it and loses its chunk, so the
# run waited for that chunk for ever. Run in a child of its own, which the test kills if it hangs.
_POOL_WORKER_DIES = """
import multiprocessing, os, sys
from loveletter_env.agents import RandomAgent
from training.measure.evaluation import evaluate

class Dies(RandomAgent):
    def act(self, observation):
        if multiprocessing.parent_process() is not None:  # in a pool worker only
            if sys.argv[1] == "exit":
                os._exit(3)
            raise SystemExit(3)
        return super().act(observation)

try:
    evaluate(["rule", Dies()], rounds=8, workers=2, rules="mini6")
except RuntimeError as err:
    print("refused:", err)
"""


@pytest.mark.parametrize("how", ["exit", "system-exit"])
def test_a_worker_that_dies_ends_the_run_with_an_error(how):
    out = _run_unless_it_hangs(_POOL_WORKER_DIES, how, hang="a worker died and the pool lost its chunk")
    assert "refused: a worker process died (exit code 3)" in out


def test_rules_the_table_cannot_play_are_named_before_workers_start(monkeypatch):
    # Checked by the setup itself, so the pool never starts (its workers would fail to build an env,
    # and now end the run with the same error: only a pool that is never made tells the two apart).
    from training.measure import matches

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool of workers was started for rules the table cannot play")

    monkeypatch.setattr(matches, "ProcessPoolRunner", no_pool)
    with pytest.raises(ValueError, match="ladder rung, played by 2 players only"):
        evaluate(["rule"], num_players=4, rounds=4, rules="mini6", workers=2)


def test_wilson_interval():
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.evaluate", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_cli_json_matches_function_api():
    run = _cli("rule", "random", "--rounds", "40", "--seed", "3", "--json", "--no-progress")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data == json.loads(json.dumps(evaluate(["rule", "random"], rounds=40, seed=3).to_dict()))


def test_an_evaluation_names_the_rules_it_was_played_under():
    """A rung's figures are no full-game figures: the text and the JSON say which preset."""
    rung = _cli("rule", "random", "--rounds", "20", "--seed", "0", "--rules", "mini6", "--no-progress")
    assert rung.returncode == 0, rung.stderr
    assert rung.stdout.splitlines()[0] == "20 rounds, 2 players, rules mini6, seed 0"
    data = json.loads(_cli("rule", "random", "--rounds", "20", "--rules", "mini6", "--json", "--no-progress").stdout)
    assert data["rules"] == "mini6"
    assert evaluate(["rule", "random"], rounds=4, seed=0).rules == "classic"


def test_cli_text_and_errors():
    run = _cli("belief", "random", "--players", "3", "--rounds", "20", "--no-progress")
    assert run.returncode == 0, run.stderr
    assert "win rate" in run.stdout and "95% CI" in run.stdout and "first player wins" in run.stdout
    bad = _cli("wizard", "--rounds", "5")
    assert bad.returncode == 2 and "unknown agent 'wizard'" in bad.stderr
    neither = _cli("--rounds", "5")
    assert neither.returncode == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rule", "random", "--save-replays-every", "5"], "--save-replays-every goes with --save-replays DIR"),
        (["rule", "random", "--out", "somewhere"], "--out goes with --league or --exact"),
    ],
)
def test_flags_that_would_change_nothing_are_refused(tmp_path: Path, argv, message, capsys):
    from training.evaluate import main

    with pytest.raises(SystemExit) as stop:
        main([*argv, "--rounds", "4", "--no-progress"])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
    assert not Path("somewhere").exists()


def test_where_results_go_is_checked_before_anything_is_played(tmp_path: Path, capsys):
    from training.evaluate import main

    (tmp_path / "notes").write_text("x")
    held = tmp_path / "held"
    held.mkdir()
    blocked = tmp_path / "blocked"
    (blocked / "league.csv").mkdir(parents=True)
    (held / "episode_000000.json").write_text("{}")
    for argv, message in [
        (["--league", "random", "rule", "--out", str(tmp_path / "notes")], "is a file, not a folder"),
        (["--league", "random", "rule", "ismcts:iterations=0"], "iterations"),  # named before the first group
        (["rule", "random", "--save-replays", str(tmp_path / "notes" / "r")], "is a file, not a folder"),
        (["rule", "random", "--save-replays", str(held)], "already holds replays"),
        (["rule", "random", "--save-replays", ""], "--save-replays: needs a folder, got ''"),
        (["rule", "random", "--force"], "--force goes with --save-replays DIR"),
        (["rule", "random", "--seed", str(2**63)], "--seed must be in 0..2**63 - 1, got 9223372036854775808"),
        # A folder where a league file goes used to fail only once the whole league was played.
        (["--league", "random", "rule", "--out", str(blocked)], "league.csv' cannot be written: it is a folder"),
        (["rule", "random", "--rounds", str(10**12)], "--rounds must be at most 100,000,000"),
    ]:
        with pytest.raises(SystemExit) as stop:
            main(["--rounds", "4", *argv, "--no-progress"])  # a --rounds in argv comes last and counts
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (blocked / "league.md").exists()
    assert (held / "episode_000000.json").read_text() == "{}"
    (held / "episode_000009.json").write_text("{}")  # an earlier, longer run's: it must not stay beside this run's
    (held / "notes.txt").write_text("mine")
    main(["rule", "random", "--rounds", "4", "--no-progress", "--save-replays", str(held), "--force"])
    assert (held / "episode_000000.json").read_text() != "{}"
    assert sorted(p.name for p in held.glob("episode_*.json")) == [f"episode_00000{i}.json" for i in range(4)]
    assert (held / "notes.txt").read_text() == "mine"  # only replays go
    assert "--force: removed 2 replays of an earlier run" in capsys.readouterr().err


def test_cli_league_writes_table_csv_and_chart(tmp_path: Path):
    run = _cli("--league", "random", "rule", "belief", "--rounds", "20", "--out", str(tmp_path), "--no-progress")
    assert run.returncode == 0, run.stderr
    table = (tmp_path / "league.md").read_text()
    for name in ("random", "rule", "belief"):
        assert f"| {name} |" in table
    rows = (tmp_path / "league.csv").read_text().splitlines()
    assert rows[0].startswith("rank,agent") and len(rows) == 4
    assert (tmp_path / "league.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_checkpoint_paths_are_loaded_with_training_checkpoint(tmp_path: Path):
    torch = pytest.importorskip("torch")
    from training.learn.checkpoint import model_payload, save_checkpoint
    from training.learn.ppo import ActorCritic

    model = ActorCritic(hidden_sizes=(16,), generator=torch.Generator().manual_seed(0))
    path = save_checkpoint(tmp_path / "net.pt", {"model": model_payload(model), "update": 1, "global_step": 1})
    one = evaluate([str(path), "random"], rounds=20, seed=1)
    assert one.agents == [str(path), "random"] and one.episodes == 20
    assert evaluate([path, "random"], rounds=20, seed=1, workers=2).to_dict() == one.to_dict()


class _EvaluatesWhilePlaying:
    """Plays like ``rule``, but runs a small evaluation of its own before its first move."""

    name = "nested"

    def __init__(self) -> None:
        self.inner = None
        self.bot = make_agent("rule", seed=0)

    def reset(self, seed=None) -> None:
        self.bot.reset(seed=seed)

    def act(self, observation):
        if self.inner is None:
            self.inner = evaluate(["random", "random"], rounds=3, seed=1)
        return self.bot.act(observation)


def test_an_evaluation_can_run_inside_another():
    nested = _EvaluatesWhilePlaying()
    result = evaluate([nested, "rule"], rounds=6, seed=2)
    assert result.episodes == 6 and nested.inner is not None and nested.inner.episodes == 3
    plain = evaluate([make_agent("rule", seed=0), "rule"], rounds=6, seed=2)
    assert result.wins == plain.wins  # the inner evaluation changed nothing in the outer one


class _StoppedRunner:
    """A runner that plays two chunks, is stopped by a Ctrl-C, and is stopped again while it closes."""

    workers = 2

    def __init__(self, second_ctrl_c: bool):
        self.second_ctrl_c = second_ctrl_c
        self.closed = 0

    def map(self, chunks):
        yield [f"record {i}" for i in chunks[0]]
        yield [f"record {i}" for i in chunks[1]]
        raise KeyboardInterrupt

    def close(self):
        self.closed += 1
        if self.second_ctrl_c:
            raise KeyboardInterrupt


@pytest.mark.parametrize("second_ctrl_c", [False, True])
def test_a_second_ctrl_c_while_the_workers_stop_keeps_the_played_records(second_ctrl_c):
    from training.measure.matches import PlayInterrupted, episode_chunks, run_episodes

    runner = _StoppedRunner(second_ctrl_c)
    chunks = episode_chunks(100, runner.workers)
    with pytest.raises(PlayInterrupted) as stop:
        run_episodes(runner, 100, ["a", "b"])
    assert len(stop.value.records) == len(chunks[0]) + len(chunks[1]) > 0
    assert runner.closed == 1


def test_a_pool_whose_terminate_hangs_still_lets_the_run_end(monkeypatch):
    """CPython's Pool.terminate can wait for ever on a lock a killed worker held (seen under
    load, 3 runs in 35 of the test above); the runner waits a bounded time and goes on."""
    import threading
    import time

    from training.measure import matches

    runner = matches.ProcessPoolRunner(matches.MatchSetup(("rule", "random"), 2, "round", "classic", 0), workers=1)
    real_pool = runner._pool
    released = threading.Event()

    class HangingPool:
        def terminate(self) -> None:
            released.wait()  # as the blocked task thread would, for ever

        def join(self) -> None:
            pass

    monkeypatch.setattr(matches, "TERMINATE_WAIT_S", 0.2)
    runner._pool = HangingPool()
    began = time.perf_counter()
    runner.close()
    assert time.perf_counter() - began < 5
    released.set()
    real_pool.terminate()
    real_pool.join()


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        (["random", "wizard"], "unknown agent 'wizard'"),
        (["random", "ismcts:iterations=0"], "iterations"),
        (["random", "rule", "belief"], "3 agents given for a 2-player table"),
    ],
)
def test_force_keeps_the_earlier_replays_of_a_run_refused_before_play(tmp_path: Path, agents, message, capsys):
    from training.evaluate import main

    held = tmp_path / "held"
    held.mkdir()
    (held / "episode_000000.json").write_text("{}")
    with pytest.raises(SystemExit) as stop:
        main([*agents, "--rounds", "4", "--rules", "mini6", "--save-replays", str(held), "--force", "--no-progress"])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    # A typo in an agent is no reason to lose them: --force replaces them with this run's, which never began.
    assert (held / "episode_000000.json").read_text() == "{}"


def test_force_loads_every_agent_once_and_removes_the_earlier_replays_only_then(tmp_path: Path, monkeypatch, capsys):
    # The checks before play are one function (matches.check_play): --force no longer checks the run
    # apart, which loaded every agent (a checkpoint: seconds) a second time.
    from loveletter_env.agents import random_agent
    from training.evaluate import main

    held = tmp_path / "held"
    held.mkdir()
    (held / "episode_000009.json").write_text("{}")  # a longer earlier run's: this one plays 0..3
    loads = []

    def counted(**kwargs):
        loads.append(sorted(held.iterdir()))  # what the folder holds when the agent is loaded
        return RandomAgent(**kwargs)

    monkeypatch.setattr(random_agent, "counted", counted, raising=False)
    spec = "loveletter_env.agents.random_agent:counted"
    argv = ["rule", spec, "--rounds", "4", "--rules", "mini6", "--save-replays", str(held), "--force", "--no-progress"]
    assert main(argv) == 0
    assert loads == [[held / "episode_000009.json"]]  # once, before the earlier replays went
    assert sorted(p.name for p in held.iterdir()) == [f"episode_{k:06d}.json" for k in range(4)]
    assert "--force: removed 1 replays of an earlier run" in capsys.readouterr().err
