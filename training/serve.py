"""Play and watch Love Letter in the browser: ``python -m training.serve``.

Starts a small local web app (needs the ``web`` extra: ``pip install -e ".[web]"``) with
three pages: **Play** (you against bots or checkpoints), **Replays** (step through saved
games from any seat) and **Leaderboard** (a ``training.evaluate --league`` run). It binds
to 127.0.0.1 unless ``--host`` says otherwise. Finished games are saved as replays in
``--replays``. Checkpoints are offered as opponents only from ``--checkpoints`` (files or
folders, searched for ``.pt`` files when the server starts; each one is loaded once then, so
that a file that is not a checkpoint is named at start-up). Requests must address the server
by a name of this machine (``--allow-host`` adds others) and come from its own pages.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

DEFAULT_CHECKPOINTS = Path("checkpoints")
MAX_CHECKPOINTS = 100
#: Folders of a training run whose checkpoints are its history, not agents to offer.
TRAINING_LEFTOVERS = ("snapshots",)
#: ``--host`` values that mean every address of this machine rather than one name.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def find_checkpoints(paths: Sequence[Path]) -> dict[str, Path]:
    """Display name -> path for every ``.pt`` file among ``paths`` (folders searched).

    A name is the file's path relative to the folder it was found in, without ``.pt``
    (``shipped/ppo_2p``); a file given directly is named by its stem. In folders, a
    training run's ``snapshots/`` are skipped (name such a file directly to offer it).
    Raises ``ValueError`` for a path that does not exist.
    """
    found: dict[str, Path] = {}
    for root in paths:
        if root.is_file():
            found.setdefault(root.stem, root.resolve())
        elif root.is_dir():
            for path in sorted(root.rglob("*.pt")):
                relative = path.relative_to(root)
                if any(part in TRAINING_LEFTOVERS for part in relative.parts[:-1]):
                    continue
                found.setdefault(relative.with_suffix("").as_posix(), path.resolve())
        else:
            raise ValueError(f"checkpoint path {str(root)!r} does not exist")
    return dict(list(found.items())[:MAX_CHECKPOINTS])


def check_checkpoints(
    found: dict[str, Path], named: Sequence[Path], load: Callable[[Path], object]
) -> tuple[dict[str, Path], list[str]]:
    """Load every found checkpoint once with ``load``: those that load, and a line for each
    one found in a folder that does not (it is left out). Raises ``ValueError`` naming a file
    given directly that is not a checkpoint."""
    given = {path.resolve() for path in named if path.is_file()}
    usable: dict[str, Path] = {}
    skipped: list[str] = []
    for name, path in found.items():
        try:
            load(path)
        except (ValueError, OSError) as exc:
            if path in given:
                raise ValueError(f"--checkpoints: {exc}") from None
            skipped.append(f"{name}: {exc}")
            continue
        usable[name] = path
    return usable, skipped


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.serve",
        description="Play Love Letter against bots and trained agents in the browser, watch replays, "
        "and show a league table. Open the printed address in a browser.",
        epilog="Examples:\n  python -m training.serve\n"
        "  python -m training.serve --port 8080 --replays my_replays --league league/\n"
        "  python -m training.serve --checkpoints checkpoints/shipped/ppo_2p.pt checkpoints/run7",
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
        "site's name that resolves here reach the server). 127.0.0.1, localhost, ::1 and --host are always accepted",
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
        help="checkpoint files or folders offered as opponents (default: every .pt under ./checkpoints)",
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
        import uvicorn

        from training.web.app import LOCAL_HOSTS, ServerConfig, create_app
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
    checkpoint_paths = args.checkpoints
    if checkpoint_paths is None:
        checkpoint_paths = [DEFAULT_CHECKPOINTS] if DEFAULT_CHECKPOINTS.is_dir() else []
    try:
        checkpoints = find_checkpoints(checkpoint_paths)
    except ValueError as exc:
        parser.error(str(exc))
    if checkpoints:
        from training.checkpoint import load_agent  # loads torch now, not during the first game's request

        try:
            checkpoints, skipped = check_checkpoints(checkpoints, checkpoint_paths, load_agent)
        except ValueError as exc:
            parser.error(str(exc))
        for line in skipped:
            print(f"  not a usable checkpoint, left out: {line}")
    args.replays.mkdir(parents=True, exist_ok=True)
    hosts = (*LOCAL_HOSTS, *([args.host] if args.host not in WILDCARD_HOSTS else []), *args.allow_host)
    app = create_app(ServerConfig(args.replays, args.league, checkpoints, hosts))
    print(f"Love Letter: open http://{args.host}:{args.port}/ in a browser (Ctrl+C stops the server)")
    print(f"  replays: {args.replays}; checkpoints offered: {', '.join(checkpoints) or 'none'}")
    if args.host not in LOCAL_HOSTS:
        print(f"  note: bound to {args.host}, so other machines can reach it (there is no login)")
        print(f"  requests must address it as one of {', '.join(hosts)} (--allow-host NAME adds a name)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
