"""training.evaluate --ray: the same records as --workers for the same seed (duplicate deals too), on a local Ray
cluster (started once for the module, 2 CPUs), through the function, main() and a separate
process; checkpoints travel as bytes; Ctrl-C keeps the finished rounds; clear errors when ray
is missing or nothing answers at the address."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")


from loveletter_env.agents import make_agent  # noqa: E402
from training.evaluate import main  # noqa: E402
from training.learn.checkpoint import load_agent  # noqa: E402
from training.learn.interrupt import EXIT_INTERRUPTED  # noqa: E402
from training.measure.evaluation import evaluate  # noqa: E402
from training.measure.league import league  # noqa: E402
from training.measure.ray_cluster import CheckpointBytes, RayCluster  # noqa: E402

CHECKPOINT = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"


@pytest.fixture(scope="module")
def cluster_address():
    """A local 2-CPU cluster for the module; its address, for commands run in other processes."""
    environment = dict(os.environ)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        # ray.init leaves variables of its own (RAY_AUTH_MODE, PYTHONBREAKPOINT) for later tests' commands.
        os.environ.clear()
        os.environ.update(environment)


def _run(*args: str, code: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "training.evaluate", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_ray_gives_the_records_of_one_and_two_worker_processes(cluster_address):
    # A checkpoint, a bot spec and an agent object, on a 3-player table.
    lineup = [str(CHECKPOINT), "belief", make_agent("rule", seed=0)]
    one = evaluate(lineup, num_players=3, rounds=48, seed=11)
    two = evaluate(lineup, num_players=3, rounds=48, seed=11, workers=2)
    on_ray = evaluate(lineup, num_players=3, rounds=48, seed=11, ray=RayCluster())
    assert on_ray.to_dict() == one.to_dict() == two.to_dict()
    assert on_ray.episodes == 48 and on_ray.agents[0] == str(CHECKPOINT)
    # One Ray worker at a time (other chunk sizes, one worker process) changes nothing either.
    assert evaluate(lineup, num_players=3, rounds=48, seed=11, ray=RayCluster(workers=1)).to_dict() == one.to_dict()


def test_duplicate_deals_on_ray_are_those_of_one_process(cluster_address):
    one = evaluate(["rule", "random"], rounds=24, seed=3, duplicate=True)
    on_ray = evaluate(["rule", "random"], rounds=24, seed=3, duplicate=True, ray=RayCluster())
    assert on_ray.to_dict() == one.to_dict() and on_ray.duplicate


def test_a_league_on_ray_is_the_league_in_one_process(cluster_address):
    agents = ["random", "rule", "belief"]
    assert league(agents, rounds=20, seed=4, ray=RayCluster()) == league(agents, rounds=20, seed=4)


def test_main_with_ray_prints_the_figures_of_one_process(cluster_address, capsys):
    args = [str(CHECKPOINT), "rule", "--rounds", "40", "--seed", "2", "--json", "--no-progress"]
    assert main([*args, "--workers", "1"]) == 0
    expected = json.loads(capsys.readouterr().out)
    assert main([*args, "--ray"]) == 0
    assert json.loads(capsys.readouterr().out) == expected


def test_a_checkpoint_travels_as_bytes_and_needs_no_file_on_the_worker(tmp_path):
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    shutil.copy(CHECKPOINT, run_folder / "latest.pt")
    shipped = CheckpointBytes.read(str(run_folder))  # a run folder: its latest.pt
    assert shipped is not None and shipped.name == "latest.pt" and shipped.data == CHECKPOINT.read_bytes()
    shutil.rmtree(run_folder)
    agent, reference = shipped.load(), load_agent(CHECKPOINT)
    observation = make_observation()
    assert agent.act(observation) == reference.act(observation)
    assert CheckpointBytes.read("belief") is None and CheckpointBytes.read("ismcts:iterations=5") is None


def make_observation() -> dict:
    from loveletter_env.aec import raw_env

    env = raw_env(num_players=2)
    env.reset(seed=3)
    return env.observe(env.agent_selection)


def _stop_a_run_on_ray(address: str | None, signum: int) -> tuple[int, str, str, str]:
    """Start a long run on Ray (a new local cluster where ``address`` is None), send ``signum``
    once the progress bar has moved; (exit status, stdout, stderr, the stderr seen before the signal)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "training.evaluate", "rule", "random", "--rounds", "1000000", "--seed", "3"]
        + ["--json", "--ray", *([address] if address else [])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        seen, deadline = "", time.monotonic() + 120
        while not re.search(r"[1-9]\d*/1000000", seen):  # the progress bar has moved
            assert time.monotonic() < deadline, seen
            char = process.stderr.read(1)
            assert char, seen
            seen += char
        os.killpg(process.pid, signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, out, err, seen


def test_ctrl_c_on_ray_prints_the_finished_rounds_which_match_one_process(cluster_address):
    code, out, err, seen = _stop_a_run_on_ray(cluster_address, signal.SIGINT)
    assert code == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    played = int(re.search(r"interrupted after (\d+) of 1000000 rounds", err).group(1))
    assert "Ray workers" in seen and played > 0
    assert json.loads(out) == evaluate(["rule", "random"], rounds=played, seed=3).to_dict()


@pytest.mark.parametrize("where", ["a running cluster", "a local cluster of the run's own"])
def test_sigterm_on_ray_stops_as_ctrl_c_does(cluster_address, where):
    """ray.init puts its own SIGTERM handler (sys.exit(15)) and Ray's crash dump in place of the
    command's: the run must still stop with status 143 and the figures of the finished rounds."""
    address = cluster_address if where == "a running cluster" else None
    code, out, err, _ = _stop_a_run_on_ray(address, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err
    assert "SIGTERM received" not in err and "Traceback" not in err  # no crash dump of Ray's
    played = int(re.search(r"interrupted after (\d+) of 1000000 rounds", err).group(1))
    assert json.loads(out) == evaluate(["rule", "random"], rounds=played, seed=3).to_dict()


def test_missing_ray_says_how_to_install_it():
    hide_ray = "import sys; sys.modules['ray'] = None; from training.evaluate import main; sys.exit(main(sys.argv[1:]))"
    run = _run("rule", "random", "--rounds", "5", "--ray", code=hide_ray)
    assert run.returncode == 2
    assert "pip install -e '.[ray]'" in run.stderr and "Traceback" not in run.stderr


def test_an_address_where_nothing_listens_fails_at_once_naming_it():
    with socket.socket() as probe:  # a port nobody listens on: bound, then released
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    run = _run("rule", "random", "--rounds", "5", "--ray", f"127.0.0.1:{port}")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"no Ray cluster answers at '127.0.0.1:{port}'" in run.stderr
    assert time.monotonic() - started < 30  # the probe, not ray.init's minutes of retries


def test_an_address_that_answers_but_is_no_ray_head_fails_within_the_timeout():
    with socket.socket() as server:  # accepts TCP connections and never speaks
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        started = time.monotonic()
        run = _run("rule", "random", "--rounds", "5", "--ray", address, "--ray-timeout", "2")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"the Ray cluster at {address!r} did not answer within 2 s" in run.stderr
    assert time.monotonic() - started < 30


def test_a_worker_that_cannot_import_what_it_is_sent_is_named_in_a_line(cluster_address, tmp_path, monkeypatch):
    """A node without the project cannot unpickle its tasks: one line that says so, not Ray's page."""
    from types import SimpleNamespace

    from training.measure.ray_cluster import RayRunner

    (tmp_path / "driver_only_module.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver's path only: Ray's workers never see it
    import driver_only_module

    @ray.remote
    def touch(thing):
        return []

    with pytest.raises(RuntimeError) as failure:
        RayRunner._result(SimpleNamespace(_ray=ray), touch.remote(driver_only_module.Thing()))
    message = str(failure.value)
    assert message.startswith("a Ray worker failed: ") and "No module named 'driver_only_module'" in message
    assert "every node of the cluster needs this project installed" in message and "\n" not in message


def test_an_agent_object_a_worker_cannot_import_is_named_in_a_line_without_rays_traceback(cluster_address, tmp_path):
    """The setup is unpickled by the task itself: Ray would otherwise print the worker's traceback
    of the failed unpickling (a page) before the command's own message."""
    (tmp_path / "driver_only_agents.py").write_text(
        "class Agent:\n"
        "    def reset(self, seed=None):\n"
        "        pass\n"
        "    def act(self, observation):\n"
        "        return int(observation['action_mask'].nonzero()[0][0])\n"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import driver_only_agents\n"
        "from training.measure.evaluation import evaluate\n"
        "from training.measure.ray_cluster import RayCluster\n"
        "try:\n"
        f"    evaluate([driver_only_agents.Agent(), 'random'], rounds=20, ray=RayCluster({cluster_address!r}))\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    message = run.stdout.strip()
    assert "No module named 'driver_only_agents'" in message and "\n" not in message
    assert "every node of the cluster needs this project installed" in message
    assert "Traceback" not in run.stderr and "driver_only_agents" not in run.stderr


def test_an_agent_object_that_cannot_be_pickled_is_named_before_any_task(cluster_address):
    class Locked:
        def __init__(self):
            self.lock = threading.Lock()

        def act(self, observation):
            return 0

    with pytest.raises(ValueError) as failure:
        evaluate([Locked(), "random"], rounds=4, ray=RayCluster())
    message = str(failure.value)
    assert "cannot be sent to the Ray workers" in message and "Locked" in message
    assert "cannot pickle '_thread.lock' object" in message and "\n" not in message


def test_bad_ray_arguments_are_refused_clearly():
    swallowed = _run("--ray", str(CHECKPOINT), "rule")
    assert swallowed.returncode == 2 and "put --ray after the agents" in swallowed.stderr
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        RayCluster(workers=0)
    for timeout in (0, float("inf")):
        with pytest.raises(ValueError, match="timeout must be a positive, finite number"):
            RayCluster(timeout=timeout)
    endless = _run("rule", "--ray", "--ray-timeout", "inf")
    assert endless.returncode == 2 and "--ray-timeout must be a positive, finite number" in endless.stderr
    alone = _run("rule", "random", "--rounds", "5", "--ray-timeout", "5")
    assert alone.returncode == 2 and "--ray-timeout goes with --ray" in alone.stderr
