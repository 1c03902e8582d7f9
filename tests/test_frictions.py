"""Small frictions of the command-line tools: narration that says whose card is whose,
the card reference and confirmations of ``training.play``, league tables that tell one
story, progress lines without a progress bar, percentages that add up, run folders that
one run owns at a time and paths named before the work that would be lost on them."""

from __future__ import annotations

import csv
import errno
import io
import itertools
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, TINY_TRAINING, act, start

from loveletter_env.actions import PRINCESS_ACTION
from loveletter_env.agents.base import AgentError
from loveletter_env.cards import BARON, CARD_COUNTS, CARD_VALUES, GUARD, KING, PRINCE, PRINCESS, card_name
from loveletter_env.engine import TurnEvent
from loveletter_env.render import CARD_EFFECTS, card_reference, narrate
from loveletter_env.rules import PRESETS
from training.apps.terminal import QuitGame, ask_move, discards_princess, play
from training.evaluate import build_parser as build_evaluate_parser
from training.learn.checkpoint import load_checkpoint
from training.learn.runtime import LOCK_FILE, RunFolderError, RunLock, claim_run_folder
from training.measure.league import league, write_league
from training.measure.ratings import fit_ratings
from training.measure.stats import EpisodeRecord, percentages, summarize
from training.selfplay import main as selfplay_main


@pytest.mark.parametrize(
    "viewer, expected",
    [
        (0, "You played Baron on player_1: your King against player_1's Princess. You are out."),
        (1, "player_0 played Baron on you: your Princess against player_0's King. player_0 is out."),
        (2, "player_0 played Baron on player_1. player_0 is out."),
    ],
    ids=["actor", "target", "onlooker"],
)
def test_baron_narration_says_whose_card_is_whose(viewer, expected):
    event = TurnEvent(round=1, player=0, card=BARON, target=1, actor_card=KING, target_card=PRINCESS, eliminated=(0,))
    assert narrate(event, viewer) == expected


def test_card_reference_lists_every_card_with_value_copies_and_effect():
    text = card_reference()
    for value in CARD_VALUES:
        line = next(line for line in text.splitlines()[1:] if line.split()[1] == card_name(value))
        assert line.split()[0] == str(value) and line.split()[2] == str(CARD_COUNTS[value])
        assert CARD_EFFECTS[value] in line
    assert "Handmaid does not protect from the King" in card_reference(PRESETS["king_ignores_handmaid"])
    assert "Handmaid does not protect" not in text


def _episodes(strength: dict[str, float], rounds: int, seed: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    rng = random.Random(seed)
    episodes = []
    for group in itertools.combinations(sorted(strength), 2):
        for _ in range(rounds):
            odds = strength[group[0]] / (strength[group[0]] + strength[group[1]])
            episodes.append((group, (group[0],) if rng.random() < odds else (group[1],)))
    return episodes


def test_ratings_do_not_depend_on_the_order_of_play_and_follow_the_win_share():
    strength = {"a": 1.0, "b": 1.05, "c": 1.1, "d": 0.4}  # close agents: online ratings could order them any way
    episodes = _episodes(strength, 200, seed=3)
    ratings = fit_ratings(list(strength), episodes)
    assert fit_ratings(list(strength), episodes[::-1]) == pytest.approx(ratings, abs=1e-6)
    share = {n: sum(n in winners for _, winners in episodes) for n in strength}
    assert sorted(strength, key=ratings.get) == sorted(strength, key=share.get)


def test_ratings_recover_the_odds_on_the_elo_scale():
    ratings = fit_ratings(["strong", "weak"], _episodes({"strong": 10.0, "weak": 1.0}, 20_000, seed=1))
    assert ratings["strong"] - ratings["weak"] == pytest.approx(400, abs=15)  # 10-to-1 odds are 400 points


def test_ratings_stay_finite_for_an_agent_that_never_wins_and_split_shared_wins():
    episodes = [(("a", "b"), ("a",))] * 50 + [(("a", "b"), ("a", "b"))] * 10
    ratings = fit_ratings(["a", "b"], episodes)
    assert all(math.isfinite(r) for r in ratings.values()) and ratings["a"] > ratings["b"]
    with pytest.raises(ValueError, match="known agents"):
        fit_ratings(["a", "b"], [(("a", "c"), ("a",))])


# training.play ------------------------------------------------------------------------


def princess_and_prince_state():
    """Seat 0 to act, holding the Princess and a Prince."""
    return start(2, hands={0: PRINCESS, 1: GUARD}, draws=[PRINCE])


def test_play_help_shows_the_card_reference():
    out = io.StringIO()
    with pytest.raises(QuitGame):
        play(["rule"], seed=0, stdin=io.StringIO("help\nquit\n"), out=out)
    assert card_reference() in out.getvalue()


def test_discarding_the_princess_needs_a_yes_at_a_terminal():
    state = princess_and_prince_state()
    assert discards_princess(state, 0, PRINCESS_ACTION) and discards_princess(state, 0, act(PRINCE, 0))
    assert not discards_princess(state, 0, act(PRINCE, 1))
    out = io.StringIO()
    answers = io.StringIO("princess\nn\n31\n\nprincess\ny\n")
    assert ask_move(state, 0, answers, out, confirm_princess=True) == PRINCESS_ACTION
    assert out.getvalue().count("This discards your Princess") == 3
    assert out.getvalue().count("Not played") == 2
    # Declining leaves every other move open.
    assert ask_move(state, 0, io.StringIO("40\nno\n32\n"), io.StringIO(), confirm_princess=True) == act(PRINCE, 1)


def test_scripted_moves_discard_the_princess_without_a_question():
    state = princess_and_prince_state()
    out = io.StringIO()
    assert ask_move(state, 0, io.StringIO("40\n"), out) == PRINCESS_ACTION  # a StringIO is no terminal
    assert "Sure?" not in out.getvalue()


def test_play_names_an_opponent_whose_act_returns_none():
    with pytest.raises(AgentError, match=r"at player_1 returned None \(NoneType\) from act\(\)"):
        play([NoneAgent()], seed=0, stdin=io.StringIO("0\n" * 200), out=io.StringIO(), seat=0)


class NoneAgent:
    """An opponent whose act forgets to return."""

    name = "forgetful"

    def act(self, observation):
        return None


AGENT_MODULE = """
class NoneAgent:
    name = "forgetful"

    def act(self, observation):
        return None


def make(seed=None):
    return NoneAgent()
"""


@pytest.mark.parametrize("tool", ["play", "evaluate"])
def test_cli_names_an_agent_whose_act_returns_none(tmp_path, tool):
    (tmp_path / "forgetful_agent.py").write_text(AGENT_MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    args = ["forgetful_agent:make", "--seed", "0", "--rounds", "3"]
    if tool == "evaluate":
        args = ["rule", *args, "--no-progress"]
    run = subprocess.run(
        [sys.executable, "-m", f"training.{tool}", *args],
        cwd=ROOT,
        input="0\n" * 300,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "forgetful" in run.stderr and "returned None (NoneType) from act()" in run.stderr


# League mode ----------------------------------------------------------------------------


def test_league_ranking_rating_and_win_rate_tell_one_story(tmp_path):
    # With these rounds an online rating (openskill, in order of play) put belief above a
    # rule bot that had the higher win rate.
    table = league(["random", "rule", "belief"], rounds=60, seed=0)
    assert [e.win_rate for e in table] == sorted((e.win_rate for e in table), reverse=True)
    assert [e.rating for e in table] == sorted((e.rating for e in table), reverse=True)
    for entry in table:
        assert entry.win_rate == pytest.approx(entry.wins / entry.episodes)
        for other, rate in entry.head_to_head.items():
            mirror = next(e for e in table if e.agent == other).head_to_head[entry.agent]
            assert rate + mirror == pytest.approx(1.0)  # shared wins split, so every pair adds up
    paths = write_league(table, tmp_path)
    rows = list(csv.DictReader(paths[1].open()))
    assert [row["agent"] for row in rows] == [e.agent for e in table]
    assert [int(row["rank"]) for row in rows] == [1, 2, 3]
    assert "Head to head" in paths[0].read_text()


def test_league_output_goes_to_an_ignored_folder_by_default():
    from training.evaluate import DEFAULT_LEAGUE_DIR

    # Not given, --out stays None (a plain evaluation refuses it), and a league writes to the default.
    assert build_evaluate_parser().parse_args(["--league", "random", "rule"]).out is None
    out = DEFAULT_LEAGUE_DIR
    assert out == Path("runs") / "league" and out.parts[0] != "."
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", str(out / "league.md")], cwd=ROOT)
    assert ignored.returncode == 0, f"{out} is not ignored by git"


# Figures that add up, progress without a bar -------------------------------------------


def shown_rates(result) -> list[float]:
    return [float(line.split("win rate")[1].split("%")[0]) for line in result.summary().splitlines() if "slot" in line]


@pytest.mark.parametrize("slots", [2, 3])
def test_one_matchups_percentages_add_up_to_100(slots):
    episodes = 2000
    for wins in range(0, episodes + 1, 7):  # 7 of 2000 is 0.35%: rounded alone, 0.4% + 99.7%
        records = [EpisodeRecord((0,), 0, 5, 1)] * wins + [
            EpisodeRecord((1 + i % (slots - 1),), 0, 5, 1) for i in range(episodes - wins)
        ]
        result = summarize(records, [f"agent{i}" for i in range(slots)], slots, "round", 0)
        assert sum(shown_rates(result)) == pytest.approx(100.0), result.summary()
        assert all(abs(s - 100 * r) < 0.1 for s, r in zip(shown_rates(result), result.win_rate, strict=True))


def test_percentages_keep_shared_wins_and_stay_within_a_digit():
    assert percentages([0.0035, 0.9965]) == ["0.4%", "99.6%"]
    assert percentages([1 / 3] * 3) == ["33.4%", "33.3%", "33.3%"]
    shared = [0.5505, 0.5005]  # 5.1% of episodes shared: the figures add up to 105.1%
    assert sum(float(p[:-1]) for p in percentages(shared)) == pytest.approx(105.1)


def test_no_progress_prints_one_line_per_evaluation(tmp_path, capsys):
    overrides = [*TINY_TRAINING, "total_steps=384"]
    overrides += ["eval.every=1", "eval.rounds=4", "eval.opponents=[random]", "eval.best_by=random"]
    args = ["--no-progress", "--set", f"out_dir={tmp_path}"]
    for item in overrides:
        args += ["--set", item]
    summary = selfplay_main(args)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("update ")]
    assert len(lines) == summary["update"] == 3
    for update, line in enumerate(lines, 1):
        assert re.match(rf"update {update} \([\d,]+ turns\): win rate vs random \d+\.\d%", line), line


# Run folders: one owner at a time, never overwritten, named when unusable ---------------------

TINY_RUN = [*TINY_TRAINING, "total_steps=256", "save_every=1", "eval.every=0"]


def tiny_run_args(out_dir: Path, run_name: str) -> list[str]:
    args = ["--no-progress", "--run-name", run_name, "--set", f"out_dir={out_dir}"]
    for item in TINY_RUN:
        args += ["--set", item]
    return args


def test_a_run_folder_in_use_is_refused_naming_the_owner(tmp_path, capsys):
    # Two runs started together with one run name used to write into one folder, both "successfully".
    run = tmp_path / "same"
    run.mkdir()
    with RunLock(run):
        with pytest.raises(SystemExit) as exit_info:
            selfplay_main(tiny_run_args(tmp_path, "same"))
        assert exit_info.value.code == 2
        assert f"run folder '{run}' is in use by another run (pid {os.getpid()})" in capsys.readouterr().err
        assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE]  # nothing of the refused run was written
    summary = selfplay_main(tiny_run_args(tmp_path, "same"))  # free again once released
    assert summary["global_step"] == 256
    assert RunLock(run).acquire().held  # and free again once the run is over


LOCK_HOLDER = """
import sys, time
from training.learn.runtime import RunLock
lock = RunLock(sys.argv[1]).acquire()  # held while referenced
print("held", flush=True)
time.sleep(120)
"""


def test_another_processs_lock_names_its_pid_and_dies_with_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(run)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderError, match=rf"is in use by another run \(pid {holder.pid}\)"):
            claim_run_folder(run)
    finally:
        holder.kill()  # as a crash would: the process ends without releasing anything
        holder.wait()
    lock = claim_run_folder(run)  # a dead owner's lock does not hold the folder
    assert (run / LOCK_FILE).read_text().strip() == str(os.getpid())
    lock.release()


def test_exploit_refuses_a_folder_that_holds_a_run(tmp_path, capsys):
    from training.exploit import main as exploit_main

    run = tmp_path / "victim"
    run.mkdir()
    (run / "latest.pt").write_bytes(b"update 27")
    (run / "metrics.csv").write_text("update\n1\n2\n")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    args = ["--checkpoint", str(ROOT / "checkpoints/shipped/ppo_2p.pt"), "--run-name", "victim", "--steps", "64"]
    with pytest.raises(SystemExit) as exit_info:
        exploit_main([*args, "--no-progress", "--set", f"out_dir={tmp_path}"])
    assert exit_info.value.code == 2
    assert f"run folder '{run}' already holds a run (its latest.pt)" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name != LOCK_FILE} == before


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_an_unwritable_out_dir_is_named_before_the_run(tmp_path, capsys, where):
    if where == "under a file":
        (tmp_path / "notes").write_text("x")
        out_dir, why = tmp_path / "notes" / "runs", f"'{tmp_path / 'notes'}' is a file, not a folder"
    else:
        if not sys.platform.startswith("linux"):
            pytest.skip("/proc is Linux's")
        out_dir, why = Path("/proc/runs"), "creating a file in '/proc' fails"
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(out_dir, "r"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"run folder '{out_dir / 'r'}' cannot be written: {why}" in err and "Traceback" not in err


def test_a_full_disk_stops_training_with_a_sentence_and_keeps_the_last_save(tmp_path, capsys, monkeypatch):
    import training.learn.checkpoint as checkpoint_module

    real_open, opened = open, []

    def open_on_a_disk_that_fills(path, *args, **kwargs):
        opened.append(Path(path).name)
        if opened.count(Path(path).name) == 2 and Path(path).name.startswith(".latest.pt"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # the second save of latest.pt
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(checkpoint_module, "open", open_on_a_disk_that_fills, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(tmp_path, "full"))
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    run = tmp_path / "full"
    assert f"cannot save '{run / 'latest.pt'}': the disk is full; the latest.pt already there is unchanged" in err
    assert f"resume with: python -m training.selfplay --resume {run}" in err
    assert load_checkpoint(run / "latest.pt")["update"] == 1
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]
    assert RunLock(run).acquire().held  # the stopped run let go of its folder


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_play_checks_the_replay_path_before_the_game(tmp_path, where):
    if where == "under a file":
        (tmp_path / "notes").write_text("x")
        path = tmp_path / "notes" / "game.json"
    else:
        if not sys.platform.startswith("linux"):
            pytest.skip("/proc is Linux's")
        path = Path("/proc/x.json")
    out = io.StringIO()
    with pytest.raises(ValueError, match=rf"^replay file '{re.escape(str(path))}' cannot be written"):
        play(["rule"], seed=3, stdin=io.StringIO("0\n" * 200), out=out, replay_path=path)
    assert out.getvalue() == ""  # refused before the first deal: no game was played and lost


def test_play_refuses_a_seed_that_is_not_an_integer():
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got 1.5$"):
        play(["rule"], seed=1.5, stdin=io.StringIO(""), out=io.StringIO())


def test_two_runs_started_together_with_one_name_leave_one_consistent_run(tmp_path):
    # They used to both exit 0, metrics.csv interleaved and config.yaml from one with the weights of the other.
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "training.selfplay", *tiny_run_args(tmp_path, "twin"), "--set", f"seed={seed}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    results = [(run.returncode, out, err) for run, (out, err) in zip(runs, outputs)]
    assert sorted(code for code, _, _ in results) == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    folder = f"'{tmp_path / 'twin'}'"
    assert f"{folder} is in use by another run (pid " in refused or f"{folder} already holds a run" in refused
    assert "Traceback" not in refused
    run = tmp_path / "twin"
    saved = load_checkpoint(run / "latest.pt")
    assert yaml.safe_load((run / "config.yaml").read_text())["seed"] == saved["config"]["seed"]
    with (run / "metrics.csv").open(newline="") as f:
        assert [int(row["update"]) for row in csv.DictReader(f)] == [1, 2]


def test_a_disk_that_fills_under_metrics_csv_is_named_too(tmp_path, capsys, monkeypatch):
    from training.learn.metrics import MetricsLog

    write, rows = MetricsLog.write, []

    def write_until_full(self, row):
        rows.append(row)
        if len(rows) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(self, row)

    monkeypatch.setattr(MetricsLog, "write", write_until_full)
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(tiny_run_args(tmp_path, "full"))
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert f"error: cannot write in '{tmp_path / 'full'}': the disk is full." in err and "Traceback" not in err
    assert load_checkpoint(tmp_path / "full" / "latest.pt")["update"] == 1


def test_exploit_names_a_full_disk_and_measures_nothing(tmp_path, capsys, monkeypatch):
    import training.learn.checkpoint as checkpoint_module
    from training.exploit import main as exploit_main

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(checkpoint_module, "open", full, raising=False)
    args = ["--checkpoint", str(ROOT / "checkpoints/shipped/ppo_2p.pt"), "--steps", "128", "--rounds", "2"]
    for item in ["env.num_games=16", "env.rollout_steps=8", f"out_dir={tmp_path}"]:
        args += ["--set", item]
    with pytest.raises(SystemExit) as exit_info:
        exploit_main([*args, "--no-progress"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "latest.pt': the disk is full; nothing was measured" in err and "Traceback" not in err
