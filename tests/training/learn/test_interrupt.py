"""Ctrl-C in the long-running tools: no traceback, what was saved, how to resume, exit 130.

Each test starts the command in its own session, waits until it is working, and sends
SIGINT to the whole process group, as a terminal does on Ctrl-C.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT, TINY_TRAINING, subprocess_env

from training.learn.checkpoint import load_checkpoint
from training.learn.interrupt import EXIT_INTERRUPTED, RunInterrupted, StopRequest, sigterm_interrupts, stop_signal

TRAIN = [
    *TINY_TRAINING,
    "total_steps=100000000",
    "eval.every=1",
    "eval.rounds=4",
    "eval.opponents=[random]",
    "eval.best_by=random",
    "save_every=1000",
    "opponents.bots=0",
]


def start(args: list[str], ignore_ctrl_c: bool = False) -> subprocess.Popen:
    """``python -m ARGS`` in a session of its own; ``ignore_ctrl_c`` starts it with SIGINT
    ignored, as a shell starts a job in the background (``cmd &``)."""
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_ctrl_c else None,
    )


def wait_for_lines(stream, pattern: str, count: int, timeout: float = 120) -> list[str]:
    """Read ``stream`` until ``count`` lines matched ``pattern``; return every line read."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    matched = 0
    while matched < count:
        assert time.monotonic() < deadline, f"no {count} lines matching {pattern!r} in time: {lines}"
        line = stream.readline()
        assert line, f"the command ended early: {lines}"
        lines.append(line)
        matched += bool(re.search(pattern, line))
    return lines


def ctrl_c(process: subprocess.Popen, times: int = 1, gap: float = 0.05) -> tuple[str, str]:
    """SIGINT to the process group ``times`` times, ``gap`` seconds apart; the output."""
    for _ in range(times):
        os.killpg(process.pid, signal.SIGINT)
        time.sleep(gap)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return out, err


def stop(process: subprocess.Popen, signum: int) -> tuple[str, str]:
    """``signum`` to the command alone (a scheduler's SIGTERM, ``kill PID``), or Ctrl-C to its group."""
    if signum == signal.SIGINT:
        return ctrl_c(process)
    process.send_signal(signum)
    try:
        return process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def no_process_left(process: subprocess.Popen) -> bool:
    for _ in range(50):
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def metric_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def selfplay_args(out_dir: Path) -> list[str]:
    args = ["training.selfplay", "--no-progress", "--set", f"out_dir={out_dir}", "--set", "run_name=r"]
    for item in TRAIN:
        args += ["--set", item]
    return args


def test_ctrl_c_in_selfplay_saves_the_update_and_says_how_to_resume(tmp_path):
    run_dir = tmp_path / "r"
    process = start(selfplay_args(tmp_path))
    wait_for_lines(process.stdout, r"^update \d+ \(.* turns\): win rate vs random", count=2)
    out, err = ctrl_c(process)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err
    saved = load_checkpoint(run_dir / "latest.pt")
    assert f"interrupted: saved update {saved['update']} " in err
    resume = f"python -m training.selfplay --resume {shlex.quote(str(run_dir))} --no-progress"
    assert f"Resume with: {resume}" in err
    # The saved update is the last one logged: a resumed run neither loses nor repeats rows.
    assert int(metric_rows(run_dir)[-1]["update"]) == saved["update"]

    # The printed command resumes the run (stopped again after one more evaluation).
    resumed = start(shlex.split(resume)[2:])  # start() runs python -m itself
    lines = wait_for_lines(resumed.stdout, r"^update \d+ ", count=1)
    assert lines[-1].startswith(f"update {saved['update'] + 1} ")
    _, err = ctrl_c(resumed)
    assert resumed.returncode == EXIT_INTERRUPTED and "Traceback" not in err
    assert load_checkpoint(run_dir / "latest.pt")["update"] > saved["update"]
    updates = [int(row["update"]) for row in metric_rows(run_dir)]
    assert updates == list(range(1, updates[-1] + 1))


def test_second_ctrl_c_in_selfplay_stops_at_once_without_a_traceback(tmp_path):
    # Updates of seconds (an evaluation of 1000 rounds each), and both presses a moment into
    # update 2: the first asks to stop after it, the second must stop at once, not let it end.
    process = start([*selfplay_args(tmp_path), "--set", "eval.rounds=1000"])
    wait_for_lines(process.stdout, r"^update 1 ", count=1)
    time.sleep(0.5)  # past update 1's last steps (its line is printed before its metrics row)
    out, err = ctrl_c(process, times=2)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err
    assert "Ctrl-C: stopping after this update" in err  # the first press
    # The second: update 2 is dropped rather than finished and saved, and as nothing had been
    # saved yet (save_every=1000) there is nothing to resume.
    assert "stopped at once, before the first save: nothing to resume" in err
    assert "interrupted: saved update" not in err
    assert not (tmp_path / "r" / "latest.pt").exists()


def test_a_run_has_imported_its_plotting_before_it_takes_over_ctrl_c(tmp_path):
    """A second Ctrl-C inside matplotlib's first import (the end-of-run plot) breaks the
    import and crashes the interpreter's shutdown, so the run imports it before the window."""
    script = textwrap.dedent(
        f"""
        import sys
        from training.learn import interrupt, selfplay_command
        installed = interrupt.StopRequest.install
        def install(self):
            print("plotting loaded:", "matplotlib.pyplot" in sys.modules, flush=True)
            return installed(self)
        interrupt.StopRequest.install = install
        assert "matplotlib.pyplot" not in sys.modules
        sets = sum((["--set", item] for item in {TRAIN!r}), [])
        selfplay_command.main(["--no-progress", "--set", "out_dir={tmp_path}", *sets, "--set", "total_steps=256"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(), cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "plotting loaded: True" in done.stdout


def test_sigterm_saves_like_ctrl_c_even_where_ctrl_c_is_ignored(tmp_path):
    # As a shell starts a job in the background (`cmd &`): SIGINT ignored, SIGTERM the way to stop it.
    run_dir = tmp_path / "r"
    process = start(selfplay_args(tmp_path), ignore_ctrl_c=True)
    wait_for_lines(process.stdout, r"^update \d+ \(.* turns\): win rate vs random", count=2)
    os.killpg(process.pid, signal.SIGINT)  # ignored, as it would be in the background
    os.killpg(process.pid, signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM: stopping after this update" in err and "Traceback" not in err
    saved = load_checkpoint(run_dir / "latest.pt")
    assert f"interrupted: saved update {saved['update']} " in err
    assert int(metric_rows(run_dir)[-1]["update"]) == saved["update"]


def test_ctrl_c_in_exploit_saves_the_best_response_and_measures_nothing(tmp_path):
    command = ["training.exploit", "--checkpoint", str(ROOT / "checkpoints/shipped/ppo_2p.pt"), "--no-progress"]
    command += ["--steps", "100000000", "--run-name", "br", "--set", f"out_dir={tmp_path}", "--set", "save_every=1"]
    command += ["--set", "env.num_games=16", "--set", "env.rollout_steps=8"]
    process = start(command)
    wait_for_lines(process.stdout, r"^update \d+ \(.* turns\): saved", count=2)
    _, err = ctrl_c(process)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err
    saved = load_checkpoint(tmp_path / "br" / "latest.pt")
    assert f"training stopped after {saved['global_step']:,} of 100,000,000 turns" in err
    assert "nothing was measured" in err and not (tmp_path / "br" / "exploit.json").exists()


@pytest.mark.parametrize(
    ("workers", "signum"), [(1, signal.SIGINT), (2, signal.SIGINT), (2, signal.SIGTERM)], ids=["1", "2", "2-sigterm"]
)
def test_ctrl_c_in_evaluate_reports_the_rounds_played(workers, signum):
    # SIGTERM (a scheduler, `kill`, `timeout`) used to end the evaluation by the signal (-15):
    # no figures, and its pool workers left running, each printing a BrokenPipeError.
    process = start(
        ["training.evaluate", "rule", "random", "--rounds", "1000000", "--workers", str(workers), "--seed", "3"]
    )
    # The progress bar (stderr) shows the evaluation is under way.
    deadline = time.monotonic() + 120
    seen = ""
    while not re.search(r"[1-9]\d*/1000000", seen):
        assert time.monotonic() < deadline, seen
        char = process.stderr.read(1)
        assert char, seen
        seen += char
    out, err = stop(process, signum)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "Error" not in err
    played = int(re.search(r"interrupted after (\d+) of 1000000 rounds", err).group(1))
    assert played > 0
    assert f"{played} rounds, 2 players, seed 3" in out and "slot 0  rule" in out
    assert no_process_left(process), "worker processes outlived the command"


def test_sigterm_interrupts_raises_a_run_interrupted_and_yields_to_a_stop_request():
    with sigterm_interrupts():
        with pytest.raises(RunInterrupted) as raised:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        assert stop_signal(raised.value) == signal.SIGTERM
        # Inside, a safe point's StopRequest takes SIGTERM over (the solve writing its files).
        with StopRequest("finishing first") as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
        assert stop.requested and stop.signal == signal.SIGTERM
        with pytest.raises(RunInterrupted):  # given back once the safe point ends
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_process_forked_inside_sigterm_interrupts_still_dies_by_sigterm():
    # An evaluation's pool workers are forked inside the block and stopped with SIGTERM by
    # their parent (Pool.terminate): raised in them, the stop would print a traceback each.
    with sigterm_interrupts():
        child = os.fork()
        if child == 0:  # pragma: no cover - the child
            try:
                time.sleep(30)
            finally:
                os._exit(3)
        time.sleep(0.2)
        os.kill(child, signal.SIGTERM)
        _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_stop_signal_finds_the_signal_behind_a_report_of_the_stop():
    try:
        try:
            raise RunInterrupted("SIGTERM", signal.SIGTERM)
        except KeyboardInterrupt:
            raise KeyboardInterrupt("what was played") from None  # as PlayInterrupted is raised
    except KeyboardInterrupt as report:
        assert stop_signal(report) == signal.SIGTERM
    assert stop_signal(KeyboardInterrupt()) == signal.SIGINT


def solve_files(folder: Path) -> list[str]:
    """The files a solve writes (its lock file aside), temporary ones included."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".lock") if folder.exists() else []


@pytest.fixture(scope="module")
def compiled_tree_kernels(tmp_path_factory):
    """The tree and solver kernels compiled into numba's disk cache, so that the signal lands in
    the tree walk the tests mean to interrupt, not in a first-use compilation (in a fresh clone
    no earlier test may have compiled them)."""
    out = tmp_path_factory.mktemp("warm") / "solved"
    for command in (
        ["training.solve", "mini6", "--iterations", "1", "--out", str(out)],
        ["training.exploit", "rule", "--exact", "--rules", "mini6", "--no-progress"],
    ):
        subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, check=True, timeout=600)


@pytest.mark.usefixtures("compiled_tree_kernels")
@pytest.mark.parametrize(
    ("command", "presses"),
    [
        (["training.solve", "mini8", "--target", "0"], 1),
        (["training.exploit", "rule", "--exact", "--rules", "mini8", "--no-progress"], 1),
        (["training.exploit", "rule", "--exact", "--rules", "mini8", "--no-progress"], 2),
    ],
    ids=["solve", "exploit-exact", "exploit-exact-twice"],
)
def test_ctrl_c_while_building_a_tree_stops_at_once(tmp_path, command, presses):
    # A signal used to arrive while compiled code ran and be raised inside numba's packing
    # of the returned arrays: a segmentation fault (exit 139) instead of exit 130. Two
    # presses a millisecond apart (a terminal's Ctrl-C and a group's SIGINT) used to land the
    # second in the command's own handler of the first: a traceback and death by SIGINT.
    out = tmp_path / "solved"
    process = start([*command, "--out", str(out)] if command[0] == "training.solve" else command)
    wait_for_lines(process.stderr, r"^building the tree of mini8", count=1)
    time.sleep(0.5)  # starting numba or inside the walk of mini8's tree (several seconds)
    sent = time.monotonic()
    out_text, err = ctrl_c(process, times=presses, gap=0.001)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert time.monotonic() - sent < 10
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1].startswith("interrupted")
    assert out_text == "" or "exploitability" not in out_text
    assert solve_files(out) == []


@pytest.mark.usefixtures("compiled_tree_kernels")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_during_cfr_plus_writes_nothing_and_keeps_the_previous_solve(tmp_path, signum):
    # SIGTERM used to end the solve by the signal (-15), without a word of what was kept.
    out = tmp_path / "solved"
    out.mkdir()
    (out / "result.json").write_text('{"kept": true}')
    process = start(
        ["training.solve", "mini8", "--target", "0", "--iterations", "100000", "--out", str(out), "--force"]
    )
    wait_for_lines(process.stdout, r"^\s+\d+\s+[\d.]+(\s+[\d.]+e[-+]\d+)+$", count=2)  # two measurements
    _, err = stop(process, signum)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert re.search(r"interrupted after [\d,]+ CFR\+ iterations; nothing was written", err), err
    assert solve_files(out) == ["result.json"] and (out / "result.json").read_text() == '{"kept": true}'


def run_module(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """``python -m`` a module of ``source`` (the repository importable), as the commands run."""
    (tmp_path / "command_under_test.py").write_text(textwrap.dedent(source))
    env = subprocess_env()
    return subprocess.run(
        [sys.executable, "-m", "command_under_test"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def test_ctrl_c_inside_code_run_from_a_string_still_exits_130(tmp_path):
    # Python marks a KeyboardInterrupt that leaves a string exec as unhandled though it is
    # caught, and `python -m` then ended the process by SIGINT (-2) instead of exit 130.
    # Numba's start-up imports run such code, so a Ctrl-C there did this (see interrupt.py).
    result = run_module(
        tmp_path,
        """
        import sys
        from training.learn.interrupt import exit_interrupted

        try:
            exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nwhile True: pass", {})
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            exit_interrupted()
        """,
    )
    assert result.returncode == EXIT_INTERRUPTED, result.stderr
    assert result.stderr == "interrupted\n"


def test_a_second_ctrl_c_inside_the_commands_handler_still_exits_130(tmp_path):
    result = run_module(
        tmp_path,
        """
        import os, signal, sys, time
        from training.learn.interrupt import exit_interrupted, run_command

        def main(argv):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
            except KeyboardInterrupt:
                os.kill(os.getpid(), signal.SIGINT)  # a second press, while this handler runs
                time.sleep(5)
                print("interrupted; nothing was measured", file=sys.stderr)
                exit_interrupted()

        run_command(main, sys.argv[1:])
        """,
    )
    assert result.returncode == EXIT_INTERRUPTED, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == "interrupted"


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_stop_that_python_drops_is_sent_again_as_the_same_signal(tmp_path, stop):
    # A Ctrl-C raised in a __del__ or a ctypes callback (numba runs many while it loads its
    # compiled functions) is printed and dropped by Python: the command used to run on. A
    # SIGTERM stop dropped so (an evaluation on a Ray cluster of its own, whose finalizers run
    # while it stops) was sent again as a Ctrl-C, and the run ended with 130, not 143.
    result = run_module(
        tmp_path,
        f"""
        import os, signal, sys, time
        from training.learn.interrupt import exit_interrupted, run_command, sigterm_interrupts

        class Finalized:
            def __del__(self):
                os.kill(os.getpid(), signal.{stop})
                time.sleep(5)

        def main(argv):
            with sigterm_interrupts():
                try:
                    Finalized()
                    time.sleep(30)
                    print("ran on", file=sys.stderr)
                except KeyboardInterrupt:
                    print("interrupted", file=sys.stderr)
                    exit_interrupted()

        run_command(main, sys.argv[1:])
        """,
    )
    assert result.returncode == 128 + getattr(signal, stop), result.stderr
    assert result.stderr == "interrupted\n"


@pytest.mark.parametrize(
    ("returned", "status"), [("2", 2), ("0", 0), ("{'report': 1}", 0), ("None", 0), ("130", 130), ("143", 143)]
)
def test_run_command_exits_with_the_status_main_returns(tmp_path, returned, status):
    result = run_module(
        tmp_path,
        f"""
        import sys
        from training.learn.interrupt import run_command

        run_command(lambda argv: {returned}, sys.argv[1:])
        """,
    )
    assert result.returncode == status, result.stderr


def test_a_reader_that_leaves_ends_a_command_quietly(tmp_path):
    """``python -m training.evaluate ... | head``: no BrokenPipeError traceback, status 1."""
    (tmp_path / "command_under_test.py").write_text(
        "import sys\nfrom training.learn.interrupt import run_command\n\n"
        "def main(argv):\n    for i in range(200_000):\n        print('line', i)\n\n"
        "run_command(main, sys.argv[1:])\n"
    )
    command = subprocess.Popen(
        [sys.executable, "-m", "command_under_test"],
        cwd=tmp_path,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert command.stdout.readline() == "line 0\n"
    command.stdout.close()  # as head does once it has its line
    assert command.wait(timeout=60) == 1
    assert command.stderr.read() == ""


COMMANDS = sorted(p.stem for p in (ROOT / "training").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_line_runs_through_run_command(command):
    # A command whose `python -m` line calls main() itself loses run_command's Ctrl-C
    # handling: a second Ctrl-C, or one numba's start-up drops, ends it by the signal.
    source = (ROOT / "training" / f"{command}.py").read_text()
    main_block = source.split('if __name__ == "__main__":', 1)[1]
    assert main_block.strip() == "run_command(main, sys.argv[1:])"


@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_while_a_command_loads_exits_130_without_a_traceback(command):
    # A command module imports its main (torch, numba, optuna: seconds) before run_command
    # runs; a Ctrl-C in those seconds used to end it with a traceback and by SIGINT (-2).
    # The signal is sent as the module's first import of the project's code begins.
    script = textwrap.dedent(
        """
        import importlib.abc, os, runpy, signal, sys, time
        import training.learn.interrupt  # as the command's first import of the project's code

        command = sys.argv.pop()

        class CtrlC(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.startswith("training.") and name != command:
                    sys.meta_path.remove(self)
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(5)  # the KeyboardInterrupt is raised here, in the import
                return None

        sys.meta_path.insert(0, CtrlC())
        runpy.run_module(command, run_name="__main__", alter_sys=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, f"training.{command}"],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_INTERRUPTED, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("interrupted")


CTRL_C_AT_FIRST_PROJECT_IMPORT = """
import importlib.abc, os, signal, sys, time

class CtrlC(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "loveletter_env":  # the training package's first import of the project's code
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the KeyboardInterrupt is raised here, in the import
        return None

sys.meta_path.insert(0, CtrlC())
"""


def run_with_ctrl_c_at_first_project_import(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess:
    """``python ARGS`` with a Ctrl-C sent as the first import of the project's code begins (a
    ``sitecustomize`` installs the trigger before ``python -m`` imports anything of the project)."""
    (tmp_path / "sitecustomize.py").write_text(CTRL_C_AT_FIRST_PROJECT_IMPORT)
    env = subprocess_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["selfplay", "evaluate"])
def test_ctrl_c_while_the_training_package_loads_exits_130_without_a_traceback(tmp_path, command):
    # `python -m training.NAME` imports the package `training` (numba and numpy through the
    # agent specs: most of a second) before NAME's own `with loading_command` line runs; a
    # Ctrl-C then used to end the command with a traceback and by SIGINT (-2).
    done = run_with_ctrl_c_at_first_project_import(tmp_path, ["-m", f"training.{command}", "--help"])
    assert done.returncode == EXIT_INTERRUPTED, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert done.stderr.strip().splitlines() == ["interrupted while the command started; nothing was done"]


def test_ctrl_c_while_training_is_imported_as_a_library_is_the_importers(tmp_path):
    # The package's guard is for its commands alone: a program that imports it gets its Ctrl-C.
    done = run_with_ctrl_c_at_first_project_import(tmp_path, ["-c", "import training"])
    assert done.returncode == -signal.SIGINT, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "KeyboardInterrupt"


def test_ctrl_c_while_a_finished_command_shuts_down_does_not_kill_it(tmp_path):
    # A finished command's work is done, but Python's shutdown takes moments (seconds once
    # torch is loaded), and late in it SIGINT has its default action again: a Ctrl-C then
    # ended the process by the signal (-2, a failure to a shell or CI) instead of status 0.
    result = run_module(
        tmp_path,
        """
        import os, signal, sys
        from training.learn.interrupt import run_command

        class Finalized:
            def __del__(self):  # runs late in the shutdown, after SIGINT's default action is back
                os.kill(os.getpid(), signal.SIGINT)

        def main(argv):
            global late
            late = Finalized()
            print("done")
            return 0

        run_command(main, sys.argv[1:])
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n" and result.stderr == ""


def test_a_ctrl_c_that_a_library_turned_into_another_error_still_exits_130(tmp_path):
    # torch's ONNX exporter imports torch._dynamo on first use; a Ctrl-C inside that import
    # made an `except torch._dynamo.exc...` clause fail on the half-imported module, and the
    # exporter raised its own error from that: `training.export` ended with sixty lines of
    # traceback and status 1, as if the export had failed.
    result = run_module(
        tmp_path,
        """
        import sys
        from training.learn.interrupt import run_command

        def main(argv):
            try:
                try:
                    raise KeyboardInterrupt  # the Ctrl-C, inside the library's import
                except KeyboardInterrupt:
                    half_imported.exc  # the library's except clause fails on it
            except NameError as err:
                raise RuntimeError("Failed to export the model with torch.export") from err

        run_command(main, sys.argv[1:])
        """,
    )
    assert result.returncode == EXIT_INTERRUPTED, result.stderr
    assert result.stderr == "\ninterrupted\n"


def test_an_error_with_no_ctrl_c_behind_it_still_shows_its_traceback(tmp_path):
    result = run_module(
        tmp_path,
        """
        import sys
        from training.learn.interrupt import run_command

        def main(argv):
            try:
                {}["missing"]
            except KeyError as err:
                raise RuntimeError("a real failure") from err

        run_command(main, sys.argv[1:])
        """,
    )
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "RuntimeError: a real failure" in result.stderr
