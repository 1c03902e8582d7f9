"""How fast the web app answers: ``python -m training.apps.web.timings``.

Measures, on a server started in this process: the page and its files over HTTP, the page
load in headless Chromium (when ``chromium`` and ``chromedriver`` are installed), each
opponent's decision time inside the game driver at 2 and 4 players (observation, the
agent's explanation for the replay, its move), and the round trip of a move request (the
person's move, then every bot until the person's turn). Wall-clock times: run it on a
quiet machine.

``--costs`` measures instead the CPU time of one search iteration of each costly bot at
each table size, the figures behind the server's bound on the work of one request
(:data:`training.apps.web.games.ITERATION_SECONDS`).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.apps.server import default_checkpoints
from training.apps.web.app import ServerConfig, create_app
from training.apps.web.games import ITERATION_SECONDS, HumanGame, OpponentCatalog

OPPONENTS = ("random", "rule", "belief", "ismcts", "checkpoint:v1/ppo_2to4p")


def _line(what: str, seconds: Sequence[float]) -> str:
    ms = np.asarray(seconds) * 1000
    spread = f"median {np.median(ms):8.2f} ms  p95 {np.percentile(ms, 95):8.2f} ms  max {ms.max():8.2f} ms"
    return f"  {what:<44} n={len(ms):4d}  {spread}"


def _start_server(config: ServerConfig) -> tuple[str, object]:
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}", server


def http_timings(base: str, repeats: int) -> None:
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx  # type: ignore[no-redef]

    print("HTTP (server in this process):")
    with httpx.Client(base_url=base, timeout=120) as client:
        for path in ("/", "/static/app.js", "/static/style.css", "/api/meta"):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                client.get(path).raise_for_status()
                times.append(time.perf_counter() - start)
            print(_line(f"GET {path}", times))
        for players, opponent in ((2, "ismcts"), (4, "ismcts"), (4, "checkpoint:v1/ppo_2to4p")):
            times = []
            for seed in range(repeats // 5 or 1):
                body = {"players": players, "opponents": [opponent], "length": "round", "seed": seed}
                game = client.post("/api/games", json=body).json()
                rng = np.random.default_rng(seed)
                while not game["finished"]:
                    start = time.perf_counter()
                    if game["waiting"]:  # the person is out: the bots play on, once each per request
                        game = client.post(f"/api/games/{game['id']}/play-on").json()
                    else:
                        action = int(rng.choice([m["action"] for m in game["legal"]]))
                        game = client.post(f"/api/games/{game['id']}/move", json={"action": action}).json()
                    times.append(time.perf_counter() - start)
            print(_line(f"POST move, {players}p against {players - 1}x {opponent}", times))


def browser_timings(base: str, repeats: int) -> None:
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        chromium = None
    if not chromium or not driver_path:
        print("Browser: skipped (needs chromium, chromedriver and selenium)")
        return
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    print("Browser (headless Chromium; load event, and until the page has drawn the server's data):")
    try:
        for page in ("play", "replays", "leaderboard"):
            loads, ready = [], []
            for i in range(repeats + 1):
                start = time.perf_counter()
                driver.get(f"{base}/?visit={i}#/{page}")
                while not driver.execute_script("return document.querySelectorAll('#reference .ref-card').length > 0"):
                    time.sleep(0.002)
                if i:  # the first visit warms the browser's caches
                    ready.append(time.perf_counter() - start)
                    nav = "const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime"
                    loads.append(driver.execute_script(nav) / 1000)
            print(_line(f"{page}: load event", loads))
            print(_line(f"{page}: drawn", ready))
    finally:
        driver.quit()


def play_randomly(game: HumanGame, rng: np.random.Generator) -> None:
    """Play ``game`` to its end with random moves for the person, the bots playing on as the
    page asks them to."""
    while not game.finished:
        if game.agents_to_move:
            game.play_on()
        else:
            game.move(int(rng.choice([m["action"] for m in game.view()["legal"]])))


def decision_timings(checkpoints: dict[str, Path], seeds: int) -> None:
    from training.learn.checkpoint import load_agent

    catalog = OpponentCatalog(checkpoints, lambda path, seed: load_agent(path, seed=seed))
    print("Bot decisions inside the game driver:")
    for players in (2, 4):
        for opponent in OPPONENTS:
            times: list[float] = []
            for seed in range(seeds):
                choices = [catalog.choose(opponent, players)] * (players - 1)
                game = HumanGame(choices, players, 0, "classic", "round", seed, lambda game, replay: None)
                play_randomly(game, np.random.default_rng(seed))
                times += game.bot_seconds
            print(_line(f"{players}p {opponent}", times))


#: The opponents measured for each kind of search in :data:`ITERATION_SECONDS`, and their iterations.
COST_PROBES: list[tuple[str, str, int]] = [
    ("ismcts", "ismcts:iterations=2000,width=0", 2000),
    ("ismcts-tree", "ismcts:iterations=100,tree_depth=4,width=16", 100),
    ("guided", "guided:iterations=300,width=0,depth=4", 300),
    ("guided", "guided:iterations=300,width=0,depth=4,opponents=belief", 300),
]


def cost_timings(checkpoints: dict[str, Path], seeds: int) -> None:
    """CPU seconds per iteration of each search (95th percentile and largest over the decisions
    of ``seeds`` rounds against random moves), next to the figures the server uses."""
    from training.learn.checkpoint import load_agent

    catalog = OpponentCatalog(checkpoints, lambda path, seed: load_agent(path, seed=seed))

    def play(opponent: str, players: int, seed: int) -> list[float]:
        choices = [catalog.choose(opponent, players)] * (players - 1)
        game = HumanGame(choices, players, 0, "classic", "round", seed, lambda game, replay: None)
        play_randomly(game, np.random.default_rng(seed))
        return game.bot_cpu_seconds

    print("CPU time of one search iteration (each decision's CPU time over its iterations):")
    for kind, opponent, iterations in COST_PROBES:
        play(opponent, 2, seeds)  # not measured: loads the compiled kernels and the network
        for players in (2, 3, 4):
            per_iteration = [t / iterations for seed in range(seeds) for t in play(opponent, players, seed)]
            ms = np.asarray(per_iteration) * 1000
            print(
                f"  {opponent:<55} {players}p n={len(ms):4d}  p95 {np.percentile(ms, 95):.4f} ms  max {ms.max():.4f} ms"
                f"  (the server assumes {ITERATION_SECONDS[kind][players] * 1000:.4f} ms)"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.apps.web.timings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20, help="requests and page loads per measurement (default 20)")
    parser.add_argument("--seeds", type=int, default=10, help="rounds per opponent for decision times (default 10)")
    parser.add_argument("--costs", action="store_true", help="measure only the CPU cost of a search iteration")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.seeds < 1:
        parser.error("--repeats and --seeds must be positive")
    checkpoints = default_checkpoints()  # as python -m training.serve offers them by default
    if "v1/ppo_2to4p" not in checkpoints:
        parser.error("run it from the repository root: it plays checkpoints/v1/ppo_2to4p.pt")
    import training.learn.checkpoint  # noqa: F401  (torch loads now, as python -m training.serve does at start-up)

    if args.costs:
        cost_timings(checkpoints, args.seeds)
        return 0
    with tempfile.TemporaryDirectory() as replays:
        base, server = _start_server(ServerConfig(Path(replays), None, checkpoints))
        print(f"Server at {base}")
        http_timings(base, args.repeats)
        browser_timings(base, max(1, args.repeats // 4))
        decision_timings(checkpoints, args.seeds)
        server.should_exit = True  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
