"""Play and watch Love Letter in the browser: ``python -m training.serve``.

Starts a small local web app (needs the ``web`` extra: ``pip install -e ".[web]"``) with
three pages: **Play** (you against bots or checkpoints), **Replays** (step through saved
games from any seat) and **Leaderboard** (a ``training.evaluate --league`` run). It binds
to 127.0.0.1 unless ``--host`` says otherwise. Finished games are saved as replays in
``--replays``. Networks are offered as opponents only from ``--checkpoints`` (files or
folders, searched for ``.pt`` files when the server starts; by default the shipped networks
in ``checkpoints/shipped`` and the version 1 networks in ``checkpoints/v1``) and ``--runs``
(each training run directly inside the folders named), and equilibria of the ladder only
from ``--policies`` (files of ``python -m training.solve``). Each one is loaded once at
start-up, so that a file that is not what it should be is named then. Requests must
address the server by a name of this machine (``--allow-host`` adds others) and come from
its own pages.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from loveletter_env.agents.checkpoint_loading import checkpoint_file
from loveletter_env.validation import check_writable
from training.apps.web.games import OfferedPolicy

#: Offered when ``--checkpoints`` is not given, each file named by its folder and stem
#: (``shipped/ppo_2p``, ``shipped/ppo_2to4p``, ``v1/ppo_2to4p``, ...).
DEFAULT_CHECKPOINTS = (Path("checkpoints") / "shipped", Path("checkpoints") / "v1")
MAX_CHECKPOINTS = 100
#: Characters of an unexpected loading error's first line quoted when a checkpoint is left out.
MAX_FAILURE_CHARS = 200
#: Folders of a training run whose checkpoints are its history, not agents to offer.
TRAINING_LEFTOVERS = ("snapshots",)
#: ``--host`` values that mean every address of this machine rather than one name.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def offered(named: Iterable[tuple[str, Path]]) -> dict[str, Path]:
    """Display name -> path for ``(name, absolute path)`` pairs: each file once, under its
    first name, or, when another file already has that name, under the shortest longer name
    its own path gives (``run2/best`` beside ``best``), so that no file named or found is left
    out. Raises ``ValueError`` for more than :data:`MAX_CHECKPOINTS` files."""
    first_names: dict[Path, str] = {}
    for name, path in named:
        first_names.setdefault(path, name)  # a file named twice keeps its first name
    if len(first_names) > MAX_CHECKPOINTS:
        raise ValueError(
            f"{len(first_names)} checkpoints found, and the server offers at most {MAX_CHECKPOINTS}: "
            "name fewer files or folders"
        )
    found: dict[str, Path] = {}
    for path, name in first_names.items():
        parts = path.with_suffix("").relative_to(path.anchor).parts
        longer = ("/".join(parts[-k:]) for k in range(len(name.split("/")) + 1, len(parts) + 1))
        found[next((c for c in (name, *longer) if c not in found), path.as_posix())] = path
    return found


def find_checkpoints(paths: Sequence[Path]) -> dict[str, Path]:
    """Display name -> path for every ``.pt`` file among ``paths`` (folders searched).

    A name is the file's path relative to the folder it was found in, without ``.pt``
    (``shipped/ppo_2p``); a file given directly is named by its stem; a name taken already
    gets more of the file's folders (:func:`offer`). In folders, a training run's
    ``snapshots/`` are skipped (name such a file directly to offer it). Raises ``ValueError``
    for a path that does not exist, and for more than :data:`MAX_CHECKPOINTS` files.
    """
    named: list[tuple[str, Path]] = []
    for root in paths:
        if root.is_file():
            named.append((root.stem, root.resolve()))
        elif root.is_dir():
            for path in sorted(root.rglob("*.pt")):
                relative = path.relative_to(root)
                if any(part in TRAINING_LEFTOVERS for part in relative.parts[:-1]):
                    continue
                named.append((relative.with_suffix("").as_posix(), path.resolve()))
        else:
            raise ValueError(f"checkpoint path {str(root)!r} does not exist")
    return offered(named)


def default_checkpoints() -> dict[str, Path]:
    """Display name -> path for the checkpoints offered when ``--checkpoints`` is not given,
    named as the docs and the Play page's default opponents name them (``shipped/ppo_2p``,
    ``v1/ppo_2to4p``); relative to the working directory, so empty elsewhere than the
    repository root."""
    return {
        f"{folder.name}/{name}": path
        for folder in DEFAULT_CHECKPOINTS
        if folder.is_dir()
        for name, path in find_checkpoints([folder]).items()
    }


def find_runs(folders: Sequence[Path]) -> dict[str, Path]:
    """Display name -> checkpoint for each training run directly inside ``folders`` (a folder
    holding one of :data:`~loveletter_env.agents.checkpoint_loading.RUN_DIR_FILES`; the first
    it holds, as an agent spec naming the run plays), named ``FOLDER/RUN``. Nothing
    deeper is searched, so a run's snapshots and other leftovers are never offered. Raises
    ``ValueError`` for a folder that does not exist, and for a file (a run's checkpoint named
    instead of the folder holding the runs)."""
    named: list[tuple[str, Path]] = []
    for folder in folders:
        if folder.is_file():
            raise ValueError(
                f"--runs {str(folder)!r} is a file, not a folder of runs; offer a checkpoint file with --checkpoints"
            )
        if not folder.is_dir():
            raise ValueError(f"--runs folder {str(folder)!r} does not exist")
        for run in sorted(path for path in folder.iterdir() if path.is_dir()):
            try:
                file = checkpoint_file(run)
            except FileNotFoundError:  # a folder that is no run
                continue
            named.append((f"{folder.resolve().name}/{run.name}", file.resolve()))
    return offered(named)


def is_solved_policy(path: Path) -> bool:
    """Whether ``path`` is a policy file of ``python -m training.solve``."""
    from loveletter_env.agents.solved import SolvedPolicy

    try:
        SolvedPolicy.load(path)
    except Exception:  # PolicyFileError for any other file, whatever the reader met on the way
        return False
    return True


def load_policies(paths: Sequence[Path]) -> dict[str, OfferedPolicy]:
    """Display name -> policy for each solved policy file in ``paths``, each loaded once as an
    agent. A policy is named by the rung it plays (``mini6``; ``mini6-2`` for a second one).
    Raises ``ValueError`` naming a file that is not a playable solved policy (the loader's
    :class:`~loveletter_env.agents.solved.PolicyFileError`, or however else it fails)."""
    from loveletter_env.agents.solved import SolvedAgent
    from loveletter_env.agents.specs import CHECKPOINT_SUFFIXES
    from loveletter_env.rules import PRESETS

    found: dict[str, OfferedPolicy] = {}
    for path in paths:
        try:
            rules = SolvedAgent(path).rules
        except Exception as exc:  # PolicyFileError names what is wrong; nothing else may crash start-up
            hint = " (a network checkpoint is offered with --checkpoints)" if path.suffix in CHECKPOINT_SUFFIXES else ""
            raise ValueError(f"--policies: {_load_failure(exc, path)}{hint}") from None
        if rules not in PRESETS:
            raise ValueError(f"--policies: {str(path)!r} was solved for rules {rules!r}, which no preset names")
        name, copy = rules, 1
        while name in found:
            copy += 1
            name = f"{rules}-{copy}"
        found[name] = OfferedPolicy(path.resolve(), rules)
    return found


def _load_failure(exc: Exception, path: Path) -> str:
    """Why ``path`` did not load: the message of a loader's own error (a
    :class:`~training.learn.checkpoint.CheckpointError`, a ``ValueError`` or ``OSError``),
    else the exception's type and the first line of its message, naming the file."""
    if isinstance(exc, (ValueError, OSError)):
        return str(exc)
    first_line = (str(exc).splitlines() or [""])[0][:MAX_FAILURE_CHARS]
    return f"{str(path)!r} could not be loaded ({type(exc).__name__}: {first_line})"


def check_checkpoints(
    found: dict[str, Path], named: Sequence[Path], load: Callable[[Path], object]
) -> tuple[dict[str, Path], list[str]]:
    """Load every found checkpoint once with ``load``: those that load, and a line for each
    one found in a folder that does not, however it fails (it is left out). Raises
    ``ValueError`` naming a file given directly that does not load."""
    given = {path.resolve() for path in named if path.is_file()}
    usable: dict[str, Path] = {}
    skipped: list[str] = []
    for name, path in found.items():
        try:
            load(path)
        # CheckpointError (a ValueError) is the loader's word for a file it refuses; anything
        # else (torch failing on an odd tensor) must not stop the server from starting either.
        except Exception as exc:
            if path in given and is_solved_policy(path):
                raise ValueError(
                    f"--checkpoints: {str(path)!r} is a solved policy of python -m training.solve, not a "
                    f"network checkpoint; offer it with --policies {path}"
                ) from None
            if path in given:
                raise ValueError(f"--checkpoints: {_load_failure(exc, path)}") from None
            skipped.append(f"{name}: {_load_failure(exc, path)}")
            continue
        usable[name] = path
    return usable, skipped


def warm_compiled_bots() -> None:
    """One decision of the compiled search before the first request. Its kernels are compiled
    on first use (about 20 s after an install, or whenever numba's cache cannot be written),
    which would otherwise fall inside a player's first request, far past the bound on the
    work of one request; from numba's cache they load in under a second."""
    import numpy as np

    from loveletter_env import engine
    from loveletter_env.agents import make_agent
    from loveletter_env.rules import PRESETS
    from training.apps.live_game import observation_of
    from training.learn.compile_notice import announce_kernel_compilation

    announce_kernel_compilation()
    state = engine.new_game(2, list(PRESETS["classic"].shuffled_deck(np.random.default_rng(0))), 0)
    make_agent("ismcts", seed=0, iterations=1).act(observation_of(state, 0))


def browser_address(host: str, port: int) -> str:
    """The address to open in a browser for a server bound to ``host``: this machine's own
    (``127.0.0.1``, ``[::1]``) for a wildcard, which no browser's ``Host`` header may name
    (the server answers it 403), and an IPv6 address in brackets, as a URL must write it."""
    if host in WILDCARD_HOSTS:
        host = "::1" if ":" in host else "127.0.0.1"
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def listen_on(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port``, as uvicorn binds one (``SO_REUSEADDR``, IPv6 for
    an address with a colon); ``OSError`` when the port is taken or the address is not this
    machine's."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
    except OSError:
        listener.close()
        raise
    return listener


def serve(app: Any, listener: socket.socket) -> None:
    """Answer ``app``'s requests on the bound ``listener`` until Ctrl+C."""
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.serve",
        description="Play Love Letter against bots and trained agents in the browser, watch replays, "
        "and show a league table. Open the printed address in a browser.",
        epilog="Examples:\n  python -m training.serve\n"
        "  python -m training.serve --port 8080 --replays my_replays --league league/\n"
        "  python -m training.serve --runs checkpoints\n"
        "  python -m training.serve --checkpoints checkpoints/shipped/ppo_2p.pt checkpoints/run7/best.pt\n"
        "  python -m training.serve --policies checkpoints/solved/mini6/policy.npz",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests addressed to host NAME (repeatable; '*': any name, which lets any web "
        "site's name that resolves here reach the server). 127.0.0.1, localhost, ::1 and --host are always accepted, "
        "but a --host of 0.0.0.0 or ::, which names no address: other machines then need --allow-host",
    )
    parser.add_argument(
        "--replays",
        type=Path,
        default=Path("replays"),
        metavar="DIR",
        help="replay folder: listed, and finished games saved there",
    )
    parser.add_argument(
        "--checkpoints",
        type=Path,
        nargs="*",
        default=None,
        metavar="PATH",
        help="checkpoint files or folders (searched for .pt files) offered as opponents "
        "(default: the shipped networks, checkpoints/shipped, and the version 1 ones, checkpoints/v1; "
        "--checkpoints with no PATH: no networks, the bots alone)",
    )
    parser.add_argument(
        "--runs",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="also offer each training run directly inside DIR (its result.pt, else best.pt, else latest.pt; "
        "repeatable), e.g. --runs checkpoints",
    )
    parser.add_argument(
        "--policies",
        type=Path,
        nargs="+",
        default=[],
        metavar="FILE",
        help="solved policies of python -m training.solve (policy.npz) offered as opponents on their rung's rules",
    )
    parser.add_argument(
        "--league", type=Path, default=None, metavar="DIR", help="a training.evaluate --league --out folder"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port must be in 1..65535, got {args.port}")
    try:
        import uvicorn  # noqa: F401  (the 'web' extra is checked before any work; serve uses it)

        from training.apps.web.app import LOCAL_HOSTS, ServerConfig, allowed_host_name, create_app
    except ImportError as exc:
        parser.exit(
            2,
            f"{parser.prog}: error: the web app needs the 'web' extra ({exc}); "
            'install it with: pip install -e ".[web]"\n',
        )
    if args.league is not None and not args.league.is_dir():
        parser.error(f"--league folder {str(args.league)!r} does not exist")
    if args.replays.exists() and not args.replays.is_dir():
        parser.error(f"--replays {str(args.replays)!r} is not a folder")
    try:
        check_writable("--replays", args.replays, folder=True)  # before the first game, whose replay it keeps
    except ValueError as exc:
        parser.error(str(exc))
    checkpoint_paths = args.checkpoints
    if checkpoint_paths is None:
        checkpoint_paths = [folder for folder in DEFAULT_CHECKPOINTS if folder.is_dir()]
    try:
        named = default_checkpoints() if args.checkpoints is None else find_checkpoints(checkpoint_paths)
        checkpoints = offered([*find_runs(args.runs).items(), *named.items()])
        policies = load_policies(args.policies)
        allowed_hosts = [allowed_host_name(value) for value in args.allow_host]
    except ValueError as exc:
        parser.error(str(exc))
    if checkpoints:
        from training.learn.checkpoint import load_agent  # loads torch now, not during the first game's request

        try:
            checkpoints, skipped = check_checkpoints(checkpoints, checkpoint_paths, load_agent)
        except ValueError as exc:
            parser.error(str(exc))
        for line in skipped:
            print(f"  not a usable checkpoint, left out: {line}")
    warm_compiled_bots()
    args.replays.mkdir(parents=True, exist_ok=True)
    hosts = (*LOCAL_HOSTS, *([args.host] if args.host not in WILDCARD_HOSTS else []), *allowed_hosts)
    app = create_app(ServerConfig(args.replays, args.league, checkpoints, hosts, policies=policies))
    try:
        listener = listen_on(args.host, args.port)
    except OSError as exc:  # before the address is printed: a browser sent there would find another server
        parser.exit(1, f"{parser.prog}: error: cannot listen on {args.host} port {args.port}: {exc.strerror or exc}\n")
    print(f"Love Letter: open {browser_address(args.host, args.port)} in a browser (Ctrl+C stops the server)")
    print(f"  replays: {args.replays}; checkpoints offered: {', '.join(checkpoints) or 'none'}")
    if policies:
        print(f"  solved policies offered: {', '.join(f'{name} ({p.rules})' for name, p in policies.items())}")
    if args.host not in LOCAL_HOSTS:
        print(f"  note: bound to {args.host}, so other machines can reach it (there is no login)")
        print(f"  requests must address it as one of {', '.join(hosts)} (--allow-host NAME adds a name)")
    with listener:
        serve(app, listener)
    return 0


if __name__ == "__main__":
    sys.exit(main())
