"""Playing episodes on a Ray cluster: ``python -m training.evaluate ... --ray [ADDRESS]``.

- :class:`RayCluster`: where to play (a new local cluster, or the address of a running one)
  and with how many workers;
- :func:`ray_connection`: connected for the length of a ``with`` block, with a clear error,
  bounded in time, when Ray is not installed or nothing answers at the address;
- :class:`RayRunner`: the :class:`training.measure.matches.EpisodeRunner` that plays chunks of
  episodes as Ray tasks, driven by the same scheduler as the process pool
  (:func:`training.measure.matches.run_episodes`), so the records are the same for the same seed.

What travels to the workers: the agent specs (strings), agent objects (pickled) and the
bytes of every checkpoint in the lineup, so a checkpoint needs to exist only on the machine
that starts the evaluation. Each worker process builds the agents of a run once and keeps
them for the run's later chunks. The project itself (and any ``package.module:factory``
module) must be installed on every node, and replays (``save_replays``) are written on the
disk of the node that played them.

Ray is imported only when it is used: it is an optional extra (``pip install -e '.[ray]'``).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from loveletter_env.agents import AGENT_NAMES
from loveletter_env.agents.checkpoint_loading import checkpoint_file, is_checkpoint_path
from loveletter_env.agents.specs import AgentSpec, resolve_agent
from loveletter_env.validation import check_int
from training.measure.matches import EpisodePlayer, MatchSetup, portable_error
from training.measure.stats import EpisodeRecord

#: What to do when the ``ray`` package is missing.
INSTALL_HINT = "install the ray extra: pip install -e '.[ray]'"
#: What a worker that cannot run what it is sent lacks, most likely.
NODE_HINT = "every node of the cluster needs this project installed (the same version) and its Python packages"
#: Seconds to wait for a cluster (or a new local one) to answer, unless told otherwise.
DEFAULT_CONNECT_TIMEOUT = 60.0
#: Seconds to wait for a TCP answer at a cluster's address before calling it unreachable.
PROBE_TIMEOUT = 5.0


class RayUnavailableError(RuntimeError):
    """The ``ray`` package is not installed."""


class RayConnectionError(RuntimeError):
    """No Ray cluster could be reached at the address (or a local one could not start)."""


@dataclass(frozen=True)
class RayCluster:
    """Where to play: ``address`` ``None`` starts a local cluster for the run (or uses the
    ``RAY_ADDRESS`` environment variable where it is set), otherwise any address ``ray.init``
    takes: ``"auto"`` (the cluster started on this machine by ``ray start``), ``"host:port"``
    (a head node's port, 6379 by default) or ``"ray://host:10001"`` (Ray Client).

    ``workers``: how many chunks are played at once (default: one per CPU of the cluster; a
    local cluster is started with that many CPUs). ``timeout``: seconds to wait for the
    cluster at an address to answer (starting a local cluster is not bounded). Where this
    process is already connected (``ray.init`` called by the caller), that connection is used
    as it is.
    """

    address: str | None = None
    workers: int | None = None
    timeout: float = DEFAULT_CONNECT_TIMEOUT

    def __post_init__(self) -> None:
        if self.workers is not None:
            check_int("workers", self.workers, low=1)
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")

    def target(self) -> str | None:
        """The address to connect to: ``address``, else ``RAY_ADDRESS``, else ``None`` (a new local cluster)."""
        return self.address or os.environ.get("RAY_ADDRESS") or None

    @contextmanager
    def runner(self, setup: MatchSetup, progress: bool = False) -> Iterator[RayRunner]:
        """Connected to the cluster inside the block (:func:`ray_connection`), yielding a
        :class:`RayRunner` of ``setup``'s chunks (what :func:`~training.measure.matches.play_matches` drives)."""
        with ray_connection(self):
            remote = RayRunner(setup, self)
            if progress:
                print(f"playing on {remote.describe()}", file=sys.stderr)
            yield remote


def import_ray() -> ModuleType:
    """The ``ray`` module, or :class:`RayUnavailableError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            f"playing on Ray needs the ray package, which is not installed: {INSTALL_HINT}"
        ) from None
    return ray


def _host_and_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``host:port`` or ``ray://host:port`` address; ``None`` for others (``auto``)."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _probe(address: str) -> None:
    """Fail at once, naming the address, when nothing listens there (``ray.init`` would retry for minutes)."""
    endpoint = _host_and_port(address)
    if endpoint is None:
        return
    try:
        socket.create_connection(endpoint, timeout=PROBE_TIMEOUT).close()
    except OSError as exc:
        raise RayConnectionError(
            f"no Ray cluster answers at {address!r} ({exc.strerror or exc}): start one there with "
            f"'ray start --head', or check the address"
        ) from None


def _init_options() -> dict[str, Any]:
    # Ray's own INFO/WARNING lines (token notices, start-up chatter) would drown the tool's output;
    # its errors still show, and failures to connect get this module's own message.
    return {"logging_level": logging.ERROR}


def _start_local(ray: ModuleType, cluster: RayCluster) -> None:
    # In the calling thread, not a bounded helper thread: a local cluster started from a helper
    # thread stops when that thread ends (seen with Ray 2.60), so this start is not time-bounded.
    try:
        ray.init(address="local", num_cpus=cluster.workers, include_dashboard=False, **_init_options())
    except Exception as exc:
        raise RayConnectionError(f"could not start a local Ray cluster: {exc}") from None


def _connect(ray: ModuleType, address: str, timeout: float) -> None:
    _probe(address)
    outcome: dict[str, BaseException | None] = {}

    def connect() -> None:
        try:
            ray.init(address=address, **_init_options())
            outcome["error"] = None
        except BaseException as exc:  # handed to the waiting thread, which reports it
            outcome["error"] = exc

    # ray.init retries for minutes against a port that answers but is no Ray head (or refuses
    # this process's token): wait in a helper thread, for `timeout` seconds at most.
    thread = threading.Thread(target=connect, name="ray-connect", daemon=True)
    thread.start()
    thread.join(timeout)
    if "error" not in outcome:
        raise RayConnectionError(
            f"the Ray cluster at {address!r} did not answer within {timeout:g} s: is a Ray head running there? "
            "(a cluster with token authentication also needs RAY_AUTH_MODE=token and its token, "
            "from 'ray get-auth-token' on the head, on this machine)"
        )
    error = outcome["error"]
    if error is not None:
        raise RayConnectionError(f"cannot connect to the Ray cluster at {address!r}: {error}") from None


@contextmanager
def _keeping_sigterm_handler() -> Iterator[None]:
    """Put back, at the end of the block, a SIGTERM handler the caller installed (the command's,
    which stops a run as Ctrl-C does: figures printed, status 143). ``ray.init`` replaces it with
    its own, ``sys.exit(15)`` (no figures, status 15), and Ray's core installs a C handler that
    prints a crash dump first, even when connecting from a helper thread. A process that left
    SIGTERM's default action keeps Ray's handlers, which disconnect before it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if callable(previous):  # not SIG_DFL, SIG_IGN, or None (a handler set outside Python)
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def ray_connection(cluster: RayCluster) -> Iterator[ModuleType]:
    """Connected to ``cluster`` inside the block (yields the ``ray`` module).

    Reuses a connection this process already has, and then leaves it open; otherwise connects
    (or starts a local cluster) and disconnects (or stops it) at the end.

    Raises:
        RayUnavailableError: ray is not installed.
        RayConnectionError: nothing answered at the address within ``cluster.timeout``.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    target = cluster.target()
    with _keeping_sigterm_handler():
        if target is None or target == "local":
            _start_local(ray, cluster)
        else:
            _connect(ray, target, cluster.timeout)
    try:
        yield ray
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class CheckpointBytes:
    """A checkpoint file's content, sent to the workers in place of its path."""

    name: str
    data: bytes

    @classmethod
    def read(cls, spec: AgentSpec) -> CheckpointBytes | None:
        """The checkpoint a spec names (a file, or a run folder's best.pt/latest.pt); ``None`` for other specs."""
        if not isinstance(spec, (str, os.PathLike)):
            return None
        text = os.fspath(spec)
        if (text.partition(":")[0] in AGENT_NAMES and not isinstance(spec, os.PathLike)) or not is_checkpoint_path(
            spec
        ):
            return None
        path = checkpoint_file(text)
        return cls(path.name, path.read_bytes())

    def load(self) -> Any:
        """The agent it holds, loaded as the spec of its path would be (the copy on disk is removed)."""
        with tempfile.TemporaryDirectory(prefix="loveletter-checkpoint-") as folder:
            path = Path(folder) / self.name
            path.write_bytes(self.data)
            return resolve_agent(str(path))


#: This worker process's player for the run it last played: (run key, player).
_RAY_PLAYER: dict[str, EpisodePlayer] = {}


def _pickled_setup(setup: MatchSetup) -> bytes:
    """``setup`` pickled here, as Ray would (cloudpickle), so that an agent object that cannot
    travel is named in one line before any task starts, rather than in Ray's page-long report."""
    from ray import cloudpickle

    try:
        return cloudpickle.dumps(setup)
    except Exception:
        for spec in setup.lineup:  # only on failure: a checkpoint's bytes are pickled once
            try:
                cloudpickle.dumps(spec)
            except Exception as exc:
                raise ValueError(f"agent {spec!r} cannot be sent to the Ray workers: {exc}") from None
        raise


def _unpickled_setup(data: bytes) -> MatchSetup:
    """The setup :func:`_pickled_setup` sent, unpickled inside the task: where Ray unpickles a
    task's argument itself, a failure prints the worker's traceback on the driver's terminal."""
    from ray import cloudpickle

    try:
        setup: MatchSetup = cloudpickle.loads(data)
    except Exception as exc:
        raise RuntimeError(
            f"a Ray worker cannot load the agents it was sent ({type(exc).__name__}: {exc}); {NODE_HINT}"
        ) from None
    return setup


def _play_on_ray_worker(key: str, pickled_setup: bytes, chunk: range) -> list[EpisodeRecord]:
    """A Ray task: play ``chunk`` of run ``key``, building its agents on this worker's first chunk of it."""
    try:
        player = _RAY_PLAYER.get(key)
        if player is None:
            _RAY_PLAYER.clear()  # one run's agents at a time
            setup = _unpickled_setup(pickled_setup)
            agents = [s.load() if isinstance(s, CheckpointBytes) else resolve_agent(s) for s in setup.lineup]
            if setup.replays is not None:
                setup.replays.directory.mkdir(parents=True, exist_ok=True)
            player = _RAY_PLAYER[key] = EpisodePlayer(setup, agents)
        return player.play(chunk)
    except Exception as exc:
        raise portable_error(exc) from None


def _worker_failure(exc: Exception) -> RuntimeError:
    """A Ray worker's own failure (not the agents'), named in one line: Ray's text runs to a
    page of its internals. A node without this project cannot import it, the usual cause."""
    # Ray's text ends with the worker's own error ("ModuleNotFoundError: No module named ...").
    last_line = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()
    return RuntimeError(f"a Ray worker failed: {last_line[:300]}; {NODE_HINT}")


class RayRunner:
    """Plays chunks of episodes as Ray tasks (one CPU each) on the cluster this process is
    connected to (see :func:`ray_connection`), at most ``workers`` at a time."""

    def __init__(self, setup: MatchSetup, cluster: RayCluster):
        self._ray = ray = import_ray()
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if cpus < 1:
            raise RayConnectionError("the Ray cluster has no CPU to play on")
        self.workers = cluster.workers or cpus
        shipped = tuple(CheckpointBytes.read(s) or s for s in setup.lineup)
        self._setup = ray.put(_pickled_setup(replace(setup, lineup=shipped)))
        self._key = uuid.uuid4().hex
        self._task = ray.remote(num_cpus=1)(_play_on_ray_worker)
        self._pending: dict[Any, int] = {}

    def describe(self) -> str:
        """How many workers play, on how many CPUs and nodes."""
        nodes = sum(1 for node in self._ray.nodes() if node.get("Alive"))
        cpus = int(self._ray.cluster_resources().get("CPU", 0))
        return f"{self.workers} Ray workers ({cpus} CPUs on {nodes} node{'s' * (nodes != 1)})"

    def map(self, chunks: Sequence[range]) -> Iterator[list[EpisodeRecord]]:
        ray = self._ray
        finished: dict[int, list[EpisodeRecord]] = {}
        submitted = 0
        for index in range(len(chunks)):
            while index not in finished:
                while submitted < len(chunks) and len(self._pending) < self.workers:
                    self._pending[self._task.remote(self._key, self._setup, chunks[submitted])] = submitted
                    submitted += 1
                # Short waits keep Ctrl-C responsive.
                done, _ = ray.wait(list(self._pending), num_returns=1, timeout=0.5)
                for ref in done:
                    finished[self._pending.pop(ref)] = self._result(ref)
            yield finished.pop(index)

    def _result(self, ref: Any) -> list[EpisodeRecord]:
        ray = self._ray
        try:
            records: list[EpisodeRecord] = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
                raise cause from None  # the agents' own error, as without Ray
            raise _worker_failure(cause if isinstance(cause, Exception) else exc) from None
        except ray.exceptions.RayError as exc:
            raise _worker_failure(exc) from None
        return records

    def close(self) -> None:
        """Forget the chunks still under way. They are not cancelled: Ray stops them with the
        job when this process disconnects (:func:`ray_connection` does at the end), and in Ray
        2.60 a cancel that crosses a finishing chunk can abort this process."""
        self._pending.clear()


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "INSTALL_HINT",
    "CheckpointBytes",
    "RayCluster",
    "RayConnectionError",
    "RayRunner",
    "RayUnavailableError",
    "import_ray",
    "ray_connection",
]
