"""The web app's routes: each one checks its request and translates it into calls on
:mod:`.games`, :mod:`.views` and :mod:`loveletter_env.replay`; the game logic lives there.

Every bad request gets a 4xx answer ``{"error": "<what is wrong>"}`` and changes nothing. A
bot that fails while answering a move stops its game: 500, with the error and the stopped
game's view (``"game"``); later moves of that game get 409.
The server reads files only from its own static folder, the replay folder and the league
folder chosen at start-up, and loads checkpoints and solved policies only from the paths it
was started with.

Other web pages must not drive it: a request must name the server by one of its own host
names (no DNS rebinding), a browser's ``Origin`` must be the server itself, and every POST
with a body must say it is JSON (which a plain HTML form or a cross-site ``text/plain`` fetch
cannot).
"""

from __future__ import annotations

import csv
import ipaddress
import math
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from loveletter_env.replay import MAX_REPLAY_BYTES, Replay, ReplayError, parse_replay, read_replay_text
from loveletter_env.rules import PRESETS
from loveletter_env.strict_json import read_json
from training.apps.live_game import SEEN_GUESS_REASON, BotFailed
from training.apps.web.games import (
    GameStore,
    HumanGame,
    OfferedPolicy,
    OpponentCatalog,
    RequestError,
    check_new_game,
    log_agent_failure,
    replay_saver,
)
from training.apps.web.views import card_reference, replay_view

STATIC_DIR = Path(__file__).parent / "static"
#: Uploaded replays kept in memory (oldest dropped first).
MAX_UPLOADS = 50
MAX_LISTED_REPLAYS = 1000
MAX_JSON_BODY = 10_000
#: Characters of a replay name (a path in the replay folder) and of an agent's name in a
#: replay (every frame of a replay view repeats the names).
MAX_REPLAY_NAME_CHARS = 255
MAX_AGENT_NAME_CHARS = 64
#: Characters of an error message (the rest is cut: a message may quote what it refuses).
MAX_ERROR_CHARS = 1000
#: Games in play at once (a new game past it takes a finished or idle one's place, or is refused).
MAX_GAMES = 64
#: League table rows shown.
MAX_LEAGUE_ROWS = 200
#: Columns a league table may have (it writes 5): a file of thousands is no league table.
MAX_LEAGUE_COLUMNS = 20
#: The names this machine answers to, which the server accepts in a ``Host`` header by default.
LOCAL_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")


@dataclass
class ServerConfig:
    """What the server may read: the replay folder (also where finished games are saved;
    ``None``: replays off), the league folder (``None``: no leaderboard), the checkpoints
    offered as opponents (display name -> path), the host names requests may address it
    by (``"*"``: any; see :class:`RequestGuard`), how many games may be in play at once, and
    the solved policies offered as opponents (display name -> policy)."""

    replay_dir: Path | None = None
    league_dir: Path | None = None
    checkpoints: dict[str, Path] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS
    max_games: int = MAX_GAMES
    policies: dict[str, OfferedPolicy] = field(default_factory=dict)


def _error(message: str, status: int, **extra: Any) -> JSONResponse:
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 20] + " ... (message cut)"
    return JSONResponse({"error": message, **extra}, status_code=status)


def _one_spelling(name: str) -> str:
    """A host name as the allowed names and a request's are compared: lower case, without
    brackets, an IPv6 address in its short form (``0:0:0:0:0:0:0:1`` gives ``::1``)."""
    bare = name.lower().strip("[]")
    try:
        return str(ipaddress.IPv6Address(bare))
    except ValueError:
        return bare


def _host_name(netloc: str) -> str:
    """The host name of ``host[:port]`` (``[::1]:8000`` gives ``::1``), in :func:`_one_spelling`."""
    try:
        return _one_spelling(urlsplit(f"//{netloc}").hostname or "")
    except ValueError:
        return ""


def allowed_host_name(value: str) -> str:
    """``value`` (an ``--allow-host``) as the host name a request's ``Host`` header must name
    (``*``: any), in :func:`_one_spelling`. Raises ``ValueError`` for a value with a scheme, a
    port or a path (``myhost:8000``, ``http://myhost``), which no request's host name would
    ever equal."""
    if value == "*":
        return value
    name = _one_spelling(value)
    # Read back as a Host header would give it (an IPv6 address in brackets): anything else is lost.
    if name != _host_name(f"[{name}]" if ":" in name else name) or not name:
        raise ValueError(f"--allow-host takes a host name alone (no scheme, port or path), got {value!r}")
    return name


class RequestGuard:
    """ASGI middleware that refuses what a web page elsewhere could send a browser to do.

    * ``Host`` must be one of ``allowed_hosts`` (DNS rebinding: a hostile name that
      resolves to this machine);
    * an ``Origin`` header, which browsers send with cross-site requests and every POST,
      must be the address the request was sent to (another site's page);
    * a POST with a body must be ``application/json`` (an HTML form or a ``text/plain``
      fetch cannot send that without the browser asking the server first, and it never agrees).
    """

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...]):
        self.app = app
        self.any_host = "*" in allowed_hosts
        self.allowed_hosts = {_one_spelling(h) for h in allowed_hosts}

    def refusal(self, scope: Scope) -> tuple[str, int] | None:
        """Why the request is refused and the status to answer, or ``None``."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.any_host and _host_name(host) not in self.allowed_hosts:
            return (
                f"this server answers to {sorted(self.allowed_hosts)}, not to host {host[:100]!r}; "
                "start it with --allow-host NAME to accept another name",
                403,
            )
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
            return f"requests from other web pages are refused (origin {origin[:100]!r})", 403
        if scope["method"] == "POST":
            length = headers.get("content-length")
            has_body = "transfer-encoding" in headers or (length is not None and length != "0")
            media_type = headers.get("content-type", "").split(";")[0].strip().lower()
            if has_body and media_type != "application/json":
                return f"a request body must be JSON (Content-Type: application/json), got {media_type[:100]!r}", 415
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.refusal(scope)
            if refused is not None:
                await _error(*refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def parse_replay_upload(raw: bytes) -> Replay:
    """A replay from JSON text (:func:`loveletter_env.replay.parse_replay`: strict JSON, the
    size limit) with agent names short enough to repeat in every frame. Raises :class:`ReplayError`."""
    replay = parse_replay(raw)
    for seat, agent in enumerate(replay.agents):
        if len(agent.name) > MAX_AGENT_NAME_CHARS:
            raise ReplayError(
                f"agents[{seat}].name is {len(agent.name)} characters; the limit is {MAX_AGENT_NAME_CHARS}"
            )
    return replay


def read_replay_file(path: Path) -> Replay:
    """:func:`parse_replay_upload` of a file, reading no more than the size limit allows."""
    try:
        raw = read_replay_text(path)
    except ReplayError as exc:
        raise ReplayError(f"cannot read it: {exc}") from None
    return parse_replay_upload(raw)


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
        return read_json(raw or b"{}")
    except ValueError as exc:
        raise RequestError(f"the request body is not valid JSON: {exc}") from None


#: Headings of the columns ``training.evaluate --league`` writes into ``league.csv``.
LEAGUE_HEADINGS = {"rank": "Rank", "agent": "Agent", "rating": "Rating", "win_rate": "Win rate", "episodes": "Episodes"}


def _number(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_league(path: Path) -> dict[str, Any]:
    """A ``league.csv`` for the Leaderboard page: ``rows`` as the file has them, the table with
    readable headings and figures (``columns``, ``cells``: a win rate as a percentage, a
    rating as a whole number), and ``ratings`` (agent, rating) for the chart."""
    # utf-8-sig: a table saved again by a spreadsheet starts with a byte-order mark.
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        keys = [str(k) for k in reader.fieldnames or []]
        if len(keys) > MAX_LEAGUE_COLUMNS or "agent" not in keys:  # older tables have no rating column
            raise csv.Error(
                f"it is no league table of python -m training.evaluate --league: its first line names "
                f"{len(keys)} columns, {'among them' if 'agent' in keys else 'not'} 'agent'"
            )
        rows = [dict(row) for _, row in zip(range(MAX_LEAGUE_ROWS), reader)]
        if any(None in row for row in rows):  # DictReader files a row's extra cells under None
            raise csv.Error("a row has more cells than the first line has columns")

    def cell(key: str, text: str | None) -> str:
        value = _number(text)
        if key == "win_rate" and value is not None:
            return f"{100 * value:.1f}%"
        if key == "rating" and value is not None:
            return f"{value:.0f}"
        return text or ""

    ratings = [
        {"agent": row.get("agent") or "", "rating": _number(row.get("rating"))}
        for row in rows
        if _number(row.get("rating")) is not None
    ]
    return {
        "rows": rows,
        "columns": [LEAGUE_HEADINGS.get(k, k.replace("_", " ").capitalize()) for k in keys],
        "cells": [[cell(k, row.get(k)) for k in keys] for row in rows],
        "ratings": ratings,
    }


def _viewer(request: Request, num_players: int) -> int | None:
    """The ``seat`` query parameter: a seat number, or ``open`` (every card shown)."""
    text = request.query_params.get("seat", "open")
    if text == "open":
        return None
    if not re.fullmatch("[0-9]", text) or not 0 <= int(text) < num_players:
        raise RequestError(f"seat must be 'open' or a seat in 0..{num_players - 1}, got {text[:20]!r}")
    return int(text)


def _game_routes(catalog: OpponentCatalog, games: GameStore, save: Any) -> list[Route]:
    """``/api/games``: start a game, see it, move, let the bots play on, deal the next round."""

    async def new_game(request: Request) -> Response:
        args = check_new_game(await _json_body(request), catalog)
        games.check_room()
        # Agents think (and checkpoints load) in a worker thread, so other requests are not held up.
        try:
            game = await run_in_threadpool(lambda: HumanGame(**args, on_finish=save))
        except BotFailed as exc:  # before the person's first move: nothing to keep
            log_agent_failure(exc)
            raise RequestError(str(exc), 500) from None
        games.add(game)
        return JSONResponse(game.view(), status_code=201)

    def get_game(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        with game.lock:
            return JSONResponse(game.view())

    async def answer(game: HumanGame, change: Callable[[], object]) -> Response:
        # Agents think in a worker thread, so other requests are not held up; one at a time per game.
        def locked() -> dict[str, Any]:
            with game.lock:
                change()
                return game.view()

        return JSONResponse(await run_in_threadpool(locked))

    async def move(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        body = await _json_body(request)
        if not isinstance(body, dict) or set(body) != {"action"}:
            raise RequestError('a move is {"action": <action index>}')
        return await answer(game, lambda: game.move(body["action"]))

    async def play_on(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        return await answer(game, game.play_on)

    async def next_round(request: Request) -> Response:
        game = games.get(request.path_params["game_id"])
        return await answer(game, game.next_round)

    return [
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", get_game),
        Route("/api/games/{game_id}/move", move, methods=["POST"]),
        Route("/api/games/{game_id}/play-on", play_on, methods=["POST"]),
        Route("/api/games/{game_id}/next-round", next_round, methods=["POST"]),
    ]


def _replay_path(replay_dir: Path | None, name: str) -> Path:
    """The file a replay name stands for, in the replay folder and nowhere else."""
    if replay_dir is None:
        raise RequestError("the server was started without a replay folder", 404)
    root = replay_dir.resolve()
    if len(name) > MAX_REPLAY_NAME_CHARS:
        raise RequestError(f"a replay name has at most {MAX_REPLAY_NAME_CHARS} characters, got {len(name)}")
    if not name.endswith(".json") or "\\" in name or "\x00" in name:
        raise RequestError(f"replay names end in .json, got {name!r}")
    try:
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            raise RequestError(f"{name!r} is outside the replay folder")
        found = path.is_file()
    except (OSError, RuntimeError):  # a name the file system refuses, a link loop
        found = False
    if not found:
        raise RequestError(f"no replay named {name!r}", 404)
    return path


def _list_replays(replay_dir: Path | None) -> list[dict[str, Any]]:
    """The replay files in the folder, newest first; files of the same time by name, so that the
    list, and which files the cap leaves out, do not follow the file system's order."""
    found = []
    if replay_dir is not None and replay_dir.is_dir():
        root = replay_dir.resolve()
        for path in root.rglob("*.json"):
            # Skip what is not a replay file inside the folder: a dangling link (an
            # editor's lock file), a folder, a link out of the folder, a link loop.
            try:
                if path.is_file() and path.resolve().is_relative_to(root):
                    stat = path.stat()
                    found.append((stat.st_mtime, path.relative_to(root).as_posix(), stat.st_size))
            except (OSError, RuntimeError):
                continue
    found.sort(key=lambda entry: (-entry[0], entry[1]))
    return [{"name": name, "size": size} for _, name, size in found[:MAX_LISTED_REPLAYS]]


def _replay_routes(replay_dir: Path | None) -> list[Route]:
    """``/api/replays`` and ``/api/uploads``: the replay folder's files and uploaded replays
    (kept in memory), as views for a seat."""
    # An upload is kept as its checked text and parsed again for each view (milliseconds for a
    # played game): a parsed replay may take 25 times its text (2 MB of ``[{}, ...]`` metadata
    # is 50 MB of objects), so that the uploads kept would reach gigabytes rather than
    # MAX_UPLOADS * MAX_REPLAY_BYTES.
    uploads: OrderedDict[str, bytes] = OrderedDict()
    uploads_lock = threading.Lock()

    def list_replays(request: Request) -> Response:
        return JSONResponse({"files": _list_replays(replay_dir), "folder": str(replay_dir) if replay_dir else None})

    def get_replay(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            replay = read_replay_file(_replay_path(replay_dir, name))
        except ReplayError as exc:
            raise RequestError(f"{name!r}: {exc}", 422) from None
        return JSONResponse(replay_view(replay, _viewer(request, replay.num_players)))

    async def upload_replay(request: Request) -> Response:
        raw = await _read_body(request, MAX_REPLAY_BYTES)
        try:
            replay = await run_in_threadpool(parse_replay_upload, raw)
        except ReplayError as exc:
            raise RequestError(f"the upload is not a valid replay: {exc}", 422) from None
        upload_id = secrets.token_hex(8)
        with uploads_lock:
            uploads[upload_id] = raw
            while len(uploads) > MAX_UPLOADS:
                uploads.popitem(last=False)
        return JSONResponse({"id": upload_id, "num_players": replay.num_players}, status_code=201)

    def get_upload(request: Request) -> Response:
        with uploads_lock:
            raw = uploads.get(request.path_params["upload_id"])
        if raw is None:
            raise RequestError(f"no uploaded replay with id {request.path_params['upload_id']!r}", 404)
        replay = parse_replay_upload(raw)  # parsed when it was uploaded: it parses again
        return JSONResponse(replay_view(replay, _viewer(request, replay.num_players)))

    return [
        Route("/api/replays", list_replays),
        Route("/api/replays", upload_replay, methods=["POST"]),
        Route("/api/replays/file/{name:path}", get_replay),
        Route("/api/uploads/{upload_id}", get_upload),
    ]


def _league_routes(league_dir: Path | None) -> list[Route]:
    """``/api/leaderboard`` and its chart: the league folder's ``league.csv`` and ``league.png``."""

    def leaderboard(request: Request) -> Response:
        if league_dir is None:
            return JSONResponse({"available": False, "reason": "start the server with --league DIR to show one"})
        table = league_dir / "league.csv"
        if not table.is_file():
            return JSONResponse({"available": False, "reason": f"{league_dir} holds no league.csv"})
        try:
            board = read_league(table)
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            return JSONResponse({"available": False, "reason": f"{table} cannot be read: {exc}"})
        return JSONResponse(
            {"available": True, "folder": str(league_dir), **board, "chart": (league_dir / "league.png").is_file()}
        )

    def league_chart(request: Request) -> Response:
        if league_dir is None or not (league_dir / "league.png").is_file():
            raise RequestError("no league chart", 404)
        return FileResponse(league_dir / "league.png", media_type="image/png")

    return [Route("/api/leaderboard", leaderboard), Route("/leaderboard/league.png", league_chart)]


def _page_routes(config: ServerConfig, catalog: OpponentCatalog) -> list[BaseRoute]:
    """The page, its static files and ``/api/meta``: what the page offers (fixed at start-up)."""
    meta = {
        "opponents": catalog.describe(),
        "rules": sorted(PRESETS),
        "cards": card_reference(),
        "cards_by_rules": {name: card_reference(rules) for name, rules in sorted(PRESETS.items())},
        "replays": config.replay_dir is not None,
        "leaderboard": config.league_dir is not None,
        "seen_guess_reason": SEEN_GUESS_REASON,
    }

    def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    def get_meta(request: Request) -> Response:
        return JSONResponse(meta)

    return [
        Route("/", index),
        Route("/api/meta", get_meta),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]


async def _request_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return _error(str(exc), exc.status) if exc.game is None else _error(str(exc), exc.status, game=exc.game)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(str(exc.detail), exc.status_code)


def _load_checkpoint_agent(path: Path, seed: int) -> Any:
    from training.learn.checkpoint import load_agent

    return load_agent(path, seed=seed)


def create_app(config: ServerConfig, checkpoint_loader: Any = None) -> Starlette:
    """The Starlette app. ``checkpoint_loader(path, seed)`` builds a checkpoint agent
    (default: :func:`training.learn.checkpoint.load_agent`)."""
    catalog = OpponentCatalog(config.checkpoints, checkpoint_loader or _load_checkpoint_agent, config.policies)
    routes = [
        *_page_routes(config, catalog),
        *_game_routes(catalog, GameStore(config.max_games), replay_saver(config.replay_dir)),
        *_replay_routes(config.replay_dir),
        *_league_routes(config.league_dir),
    ]
    app = Starlette(routes=routes, exception_handlers={RequestError: _request_error, HTTPException: _http_error})
    app.add_middleware(RequestGuard, allowed_hosts=tuple(config.allowed_hosts))
    return app
