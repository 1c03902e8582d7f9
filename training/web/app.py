"""The web app's routes: each one checks its request and translates it into calls on
:mod:`.games`, :mod:`.views` and :mod:`loveletter_env.replay`; the game logic lives there.

Every bad request gets a 4xx answer ``{"error": "<what is wrong>"}`` and changes nothing.
The server reads files only from its own static folder, the replay folder and the league
folder chosen at start-up, and loads checkpoints only from the paths it was started with.
"""

from __future__ import annotations

import csv
import json
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from loveletter_env.replay import MAX_REPLAY_BYTES, Replay, ReplayError, load_replay, parse_replay
from loveletter_env.rules import PRESETS

from .games import GameStore, HumanGame, OpponentCatalog, RequestError, check_new_game, replay_saver
from .views import card_reference, replay_view

STATIC_DIR = Path(__file__).parent / "static"
#: Uploaded replays kept in memory (oldest dropped first).
MAX_UPLOADS = 50
MAX_LISTED_REPLAYS = 1000
MAX_JSON_BODY = 10_000


@dataclass
class ServerConfig:
    """What the server may read: the replay folder (also where finished games are saved;
    ``None``: replays off), the league folder (``None``: no leaderboard), and the checkpoints
    offered as opponents (display name -> path)."""

    replay_dir: Path | None = None
    league_dir: Path | None = None
    checkpoints: dict[str, Path] = field(default_factory=dict)


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, refused past ``limit`` bytes without reading the rest."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise RequestError(f"the request body is larger than the limit of {limit} bytes", 413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise RequestError(f"the request body is larger than the limit of {limit} bytes", 413)
    return bytes(body)


async def _json_body(request: Request) -> Any:
    raw = await _read_body(request, MAX_JSON_BODY)
    try:
        return json.loads(raw or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError("the request body is not valid JSON") from None


def _viewer(request: Request, num_players: int) -> int | None:
    """The ``seat`` query parameter: a seat number, or ``open`` (every card shown)."""
    text = request.query_params.get("seat", "open")
    if text == "open":
        return None
    if not text.isdigit() or not 0 <= int(text) < num_players:
        raise RequestError(f"seat must be 'open' or a seat in 0..{num_players - 1}, got {text!r}")
    return int(text)


def create_app(config: ServerConfig, checkpoint_loader: Any = None) -> Starlette:
    """The Starlette app. ``checkpoint_loader(path, seed)`` builds a checkpoint agent
    (default: :func:`training.checkpoint.load_agent`)."""
    if checkpoint_loader is None:

        def checkpoint_loader(path: Path, seed: int) -> Any:
            from training.checkpoint import load_agent

            return load_agent(path, seed=seed)

    catalog = OpponentCatalog(config.checkpoints, checkpoint_loader)
    games = GameStore()
    uploads: OrderedDict[str, Replay] = OrderedDict()
    uploads_lock = threading.Lock()
    save = replay_saver(config.replay_dir)

    def replay_path(name: str) -> Path:
        if config.replay_dir is None:
            raise RequestError("the server was started without a replay folder", 404)
        root = config.replay_dir.resolve()
        if not name.endswith(".json") or "\\" in name or "\x00" in name:
            raise RequestError(f"replay names end in .json, got {name!r}")
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            raise RequestError(f"{name!r} is outside the replay folder")
        if not path.is_file():
            raise RequestError(f"no replay named {name!r}", 404)
        return path

    async def meta(request: Request) -> Response:
        return JSONResponse(
            {
                "opponents": catalog.describe(),
                "rules": sorted(PRESETS),
                "cards": card_reference(),
                "replays": config.replay_dir is not None,
                "leaderboard": config.league_dir is not None,
            }
        )

    async def new_game(request: Request) -> Response:
        args = check_new_game(await _json_body(request), catalog)
        # Agents think (and checkpoints load) in a worker thread, so other requests are not held up.
        game = await run_in_threadpool(lambda: HumanGame(**args, on_finish=save))
        games.add(game)
        return JSONResponse(game.view(), status_code=201)

    def get_game(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        with game.lock:
            return JSONResponse(game.view())

    async def move(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        body = await _json_body(request)
        if not isinstance(body, dict) or set(body) != {"action"}:
            raise RequestError('a move is {"action": <action index>}')

        def play() -> dict[str, Any]:
            with game.lock:
                game.move(body["action"])
                return game.view()

        return JSONResponse(await run_in_threadpool(play))

    def next_round(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        with game.lock:
            game.next_round()
            return JSONResponse(game.view())

    def list_replays(request: Request) -> Response:
        files = []
        if config.replay_dir is not None and config.replay_dir.is_dir():
            root = config.replay_dir.resolve()
            paths = sorted(root.rglob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for path in paths[:MAX_LISTED_REPLAYS]:
                if path.is_file() and path.resolve().is_relative_to(root):
                    files.append({"name": path.relative_to(root).as_posix(), "size": path.stat().st_size})
        return JSONResponse({"files": files, "folder": str(config.replay_dir) if config.replay_dir else None})

    def get_replay(request: Request) -> Response:
        path = replay_path(request.path_params["name"])
        try:
            replay = load_replay(path)
        except ReplayError as exc:
            raise RequestError(str(exc).replace(str(path), request.path_params["name"]), 422) from None
        return JSONResponse(replay_view(replay, _viewer(request, replay.num_players)))

    async def upload_replay(request: Request) -> Response:
        raw = await _read_body(request, MAX_REPLAY_BYTES)
        try:
            replay = await run_in_threadpool(parse_replay, raw)
        except ReplayError as exc:
            raise RequestError(f"the upload is not a valid replay: {exc}", 422) from None
        upload_id = secrets.token_hex(8)
        with uploads_lock:
            uploads[upload_id] = replay
            while len(uploads) > MAX_UPLOADS:
                uploads.popitem(last=False)
        return JSONResponse({"id": upload_id, "num_players": replay.num_players}, status_code=201)

    def get_upload(request: Request) -> Response:
        with uploads_lock:
            replay = uploads.get(request.path_params["upload_id"])
        if replay is None:
            raise RequestError(f"no uploaded replay with id {request.path_params['upload_id']!r}", 404)
        return JSONResponse(replay_view(replay, _viewer(request, replay.num_players)))

    def leaderboard(request: Request) -> Response:
        folder = config.league_dir
        if folder is None:
            return JSONResponse({"available": False, "reason": "start the server with --league DIR to show one"})
        table = folder / "league.csv"
        if not table.is_file():
            return JSONResponse({"available": False, "reason": f"{folder} holds no league.csv"})
        with table.open(newline="") as f:
            rows = list(csv.DictReader(f))
        return JSONResponse(
            {"available": True, "folder": str(folder), "rows": rows, "chart": (folder / "league.png").is_file()}
        )

    def league_chart(request: Request) -> Response:
        if config.league_dir is None or not (config.league_dir / "league.png").is_file():
            raise RequestError("no league chart", 404)
        return FileResponse(config.league_dir / "league.png", media_type="image/png")

    def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    async def request_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestError)
        return _error(str(exc), exc.status)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _error(str(exc.detail), exc.status_code)

    routes = [
        Route("/", index),
        Route("/api/meta", meta),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", get_game),
        Route("/api/games/{game_id}/move", move, methods=["POST"]),
        Route("/api/games/{game_id}/next-round", next_round, methods=["POST"]),
        Route("/api/replays", list_replays),
        Route("/api/replays", upload_replay, methods=["POST"]),
        Route("/api/replays/file/{name:path}", get_replay),
        Route("/api/uploads/{upload_id}", get_upload),
        Route("/api/leaderboard", leaderboard),
        Route("/leaderboard/league.png", league_chart),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={RequestError: request_error, HTTPException: http_error})
