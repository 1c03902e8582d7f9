"""Play and watch Love Letter in the browser: ``python -m training.serve``.

Starts a small local web app (needs the ``web`` extra: ``pip install -e ".[web]"``) with
three pages: **Play** (you against bots or checkpoints), **Replays** (step through saved
games from any seat) and **Leaderboard** (a ``training.evaluate --league`` run). It binds
to 127.0.0.1 unless ``--host`` says otherwise. Finished games are saved as replays in
``--replays``. Checkpoints are offered as opponents only from ``--checkpoints`` (files or
folders, searched for ``.pt`` files when the server starts).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_CHECKPOINTS = Path("checkpoints")
MAX_CHECKPOINTS = 100


def find_checkpoints(paths: Sequence[Path]) -> dict[str, Path]:
    """Display name -> path for every ``.pt`` file among ``paths`` (folders searched).

    A name is the file's path relative to the folder it was found in, without ``.pt``
    (``shipped/ppo_2p``); a file given directly is named by its stem. Raises
    ``ValueError`` for a path that does not exist.
    """
    found: dict[str, Path] = {}
    for root in paths:
        if root.is_file():
            found.setdefault(root.stem, root.resolve())
        elif root.is_dir():
            for path in sorted(root.rglob("*.pt"))[:MAX_CHECKPOINTS]:
                found.setdefault(path.relative_to(root).with_suffix("").as_posix(), path.resolve())
        else:
            raise ValueError(f"checkpoint path {str(root)!r} does not exist")
    return dict(list(found.items())[:MAX_CHECKPOINTS])


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

        from training.web.app import ServerConfig, create_app
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
    args.replays.mkdir(parents=True, exist_ok=True)
    if checkpoints:
        import training.checkpoint  # noqa: F401  (loads torch now, not during the first game's request)
    app = create_app(ServerConfig(args.replays, args.league, checkpoints))
    print(f"Love Letter: open http://{args.host}:{args.port}/ in a browser (Ctrl+C stops the server)")
    print(f"  replays: {args.replays}; checkpoints offered: {', '.join(checkpoints) or 'none'}")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"  note: bound to {args.host}, so other machines can reach it (there is no login)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
