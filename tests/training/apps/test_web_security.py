"""The web app against hostile or careless input: other web pages, costly bots, malformed
JSON, odd files in the replay folder, checkpoints that change on disk, oversized strings.
Every refusal is a clear 4xx answer (or a clear start-up error), never a bare 500."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
TestClient = pytest.importorskip(
    "starlette.testclient", reason="the web extra is not installed: pip install -e '.[web]'"
).TestClient


from loveletter_env.replay import MAX_REPLAY_BYTES, ReplayError, load_replay, parse_replay  # noqa: E402
from training.apps.server import check_checkpoints  # noqa: E402
from training.apps.web.app import (  # noqa: E402
    MAX_AGENT_NAME_CHARS,
    MAX_GAMES,
    MAX_REPLAY_NAME_CHARS,
    ServerConfig,
    create_app,
)
from training.apps.web.games import MAX_REQUEST_SECONDS, GameStore, RequestError  # noqa: E402
from training.serve import main as serve_main  # noqa: E402

SHIPPED = ROOT / "checkpoints" / "shipped"
LOCAL = "http://127.0.0.1:8000"
NESTED = b"[" * 4000 + b"]" * 4000


def local_client(config: ServerConfig, **kwargs) -> TestClient:
    return TestClient(create_app(config, **kwargs), base_url=LOCAL)


@pytest.fixture
def replay_dir(tmp_path):
    folder = tmp_path / "replays"
    folder.mkdir()
    return folder


@pytest.fixture
def client(replay_dir):
    with local_client(ServerConfig(replay_dir, None, {"ppo_2p": SHIPPED / "ppo_2p.pt"})) as c:
        yield c


def post_json(client, url: str, body: bytes | str, **headers):
    return client.post(url, content=body, headers={"content-type": "application/json", **headers})


def new_game(client, **body):
    answer = client.post("/api/games", json={"players": 2, "opponents": ["rule"], "length": "round", "seed": 1, **body})
    assert answer.status_code == 201, answer.text
    return answer.json()


def finish(client, game):
    while not game["finished"]:
        answer = client.post(f"/api/games/{game['id']}/move", json={"action": game["legal"][0]["action"]})
        assert answer.status_code == 200, answer.text
        game = answer.json()
    return game


def assert_refused(answer, status, fragment):
    assert answer.status_code == status, answer.text
    assert fragment in answer.json()["error"]


@pytest.fixture
def saved_replay(client, replay_dir):
    """A finished game's replay file (in the folder) and its JSON."""
    name = finish(client, new_game(client, opponents=["belief"], seed=3))["replay_file"]
    return name, json.loads((replay_dir / name).read_text())


# Other web pages ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", ""])
def test_a_foreign_host_header_is_refused(client, host):
    """DNS rebinding: a hostile name that resolves to this machine must not reach the app."""
    answer = client.get("/api/meta", headers={"host": host})
    assert_refused(answer, 403, "start it with --allow-host NAME")
    assert_refused(client.post("/api/games", json={}, headers={"host": host}), 403, "--allow-host")


@pytest.mark.parametrize(
    ("given", "name"), [("MyHost", "myhost"), ("::1", "::1"), ("[fe80::1]", "fe80::1"), ("*", "*")]
)
def test_an_allowed_host_is_the_name_a_request_gives(given, name):
    from training.apps.web.app import allowed_host_name

    assert allowed_host_name(given) == name


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST", "[::1]:8000", "[0:0:0:0:0:0:0:1]:8000", "127.0.0.1"]
)
def test_this_machines_names_are_accepted(client, host):
    assert client.get("/api/meta", headers={"host": host}).status_code == 200


def test_allowed_hosts_widen_the_names(replay_dir):
    with TestClient(create_app(ServerConfig(replay_dir, allowed_hosts=("lan-box",))), base_url="http://lan-box") as c:
        assert c.get("/api/meta").status_code == 200
        assert c.get("/api/meta", headers={"host": "127.0.0.1"}).status_code == 403
    with TestClient(create_app(ServerConfig(replay_dir, allowed_hosts=("*",))), base_url="http://any.name") as c:
        assert c.get("/api/meta").status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:9999", "http://localhost:8000"])
def test_requests_from_other_pages_are_refused(client, origin):
    body = {"players": 2, "opponents": ["rule"]}
    assert_refused(client.post("/api/games", json=body, headers={"origin": origin}), 403, "other web pages")
    assert client.post("/api/games", json=body, headers={"origin": LOCAL}).status_code == 201


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None]
)
def test_a_post_body_must_be_json(client, replay_dir, saved_replay, content_type):
    """What an HTML form or a cross-site text/plain fetch can send is refused before it is read."""
    game = new_game(client, length="game")
    headers = {"content-type": content_type} if content_type else {}
    body = json.dumps({"action": game["legal"][0]["action"]})
    assert_refused(client.post(f"/api/games/{game['id']}/move", content=body, headers=headers), 415, "must be JSON")
    assert client.get(f"/api/games/{game['id']}").json() == game  # nothing changed
    assert_refused(client.post("/api/games", content="{}", headers=headers), 415, "must be JSON")
    upload = json.dumps(saved_replay[1])
    assert_refused(client.post("/api/replays", content=upload, headers=headers), 415, "must be JSON")
    # A POST without a body needs no type (the page's "next round" button sends none).
    assert client.post(f"/api/games/{game['id']}/next-round").status_code == 409  # the round is still on


def test_a_flood_of_new_games_never_drops_a_game_in_play(replay_dir):
    """200 new games used to push out the oldest game, a player's included."""
    with local_client(ServerConfig(replay_dir, max_games=3)) as c:
        games = [new_game(c, seed=seed, length="game") for seed in range(3)]
        for _ in range(5):
            assert_refused(c.post("/api/games", json={"opponents": ["rule"]}), 429, "3 games in play")
        assert all(c.get(f"/api/games/{g['id']}").json() == g for g in games)
    assert MAX_GAMES == 64  # the limit docs/web.md gives


def test_finished_and_idle_games_make_room():
    class Game:
        def __init__(self, name, finished=False):
            self.id, self.finished = name, finished

    now = [0.0]
    store = GameStore(capacity=2, idle_seconds=60, clock=lambda: now[0])
    store.add(Game("done", finished=True))
    store.add(Game("playing"))
    store.add(Game("new"))  # takes the finished game's place
    with pytest.raises(RequestError, match="no game with id 'done'"):
        store.get("done")
    with pytest.raises(RequestError, match="2 games in play") as refused:
        store.add(Game("one more"))
    assert refused.value.status == 429
    now[0] = 30.0
    store.get("new")  # touched: not idle
    now[0] = 70.0  # "playing" untouched for 70 s
    store.add(Game("later"))
    assert store.get("new").id == "new" and store.get("later").id == "later"
    with pytest.raises(RequestError, match="no game with id 'playing'"):
        store.get("playing")


# The work one request may cost ----------------------------------------------------------


@pytest.mark.parametrize(
    "players, opponent",
    [
        (4, "ismcts:iterations=2000,width=16,tree_depth=4"),
        (3, "ismcts:iterations=1000,tree_depth=2"),
        (4, "guided:iterations=2000,opponents=belief"),
    ],
)
def test_bots_that_would_think_too_long_are_refused(client, players, opponent):
    answer = client.post("/api/games", json={"players": players, "opponents": [opponent]})
    assert_refused(answer, 400, f"the server allows {MAX_REQUEST_SECONDS:g} s")
    assert "lower iterations" in answer.json()["error"]


def test_the_refusal_of_costly_bots_names_a_remedy_that_works(client):
    # Three guided bots at 4 players think too long at their default 300 iterations; the
    # refusal names the iterations that fit, and no option guided does not have.
    answer = client.post("/api/games", json={"players": 4, "opponents": ["guided"], "length": "round", "seed": 0})
    assert_refused(answer, 400, "guided: iterations<=256")
    assert "tree_depth" not in answer.json()["error"]
    fitted = {"players": 4, "opponents": ["guided:iterations=256"], "length": "round", "seed": 0}
    assert client.post("/api/games", json=fitted).status_code == 201
    deep = client.post("/api/games", json={"players": 4, "opponents": ["ismcts:iterations=2000,tree_depth=4"]})
    assert_refused(deep, 400, "use tree_depth=1")
    # A cheap search beside costly ones is never told to go below one iteration.
    mixed = [
        "ismcts:iterations=1500,tree_depth=3",
        "ismcts:iterations=2,tree_depth=3",
        "ismcts:iterations=2000,tree_depth=3",
    ]
    answer = client.post("/api/games", json={"players": 4, "opponents": mixed})
    assert_refused(answer, 400, "ismcts:iterations=2,tree_depth=3: iterations<=1")
    assert "iterations<=0" not in answer.json()["error"]


@pytest.mark.parametrize(
    "players, opponents",
    [
        (4, ["ismcts:iterations=2000"]),  # the compiled search at its cap
        (2, ["ismcts:iterations=300,tree_depth=2"]),
        (2, ["guided"]),
        (4, ["guided", "belief", "rule"]),
    ],
)
def test_bots_within_the_bound_play(client, players, opponents):
    answer = client.post("/api/games", json={"players": players, "opponents": opponents, "length": "round", "seed": 0})
    assert answer.status_code == 201, answer.text


# Malformed JSON: clear 4xx answers, never a 500 -----------------------------------------


def test_deeply_nested_json_is_refused(client, replay_dir):
    assert_refused(post_json(client, "/api/games", NESTED), 400, "nested 4000 levels deep")
    assert_refused(post_json(client, "/api/replays", NESTED), 422, "nested 4000 levels deep")
    (replay_dir / "deep.json").write_bytes(NESTED)
    assert_refused(client.get("/api/replays/file/deep.json"), 422, "nested 4000 levels deep")
    assert client.get("/api/replays").status_code == 200
    # Brackets inside strings (quotes escaped or not) are text, not nesting.
    text = json.dumps({"colour": '\\"' + "[" * 3000 + '"{'})
    assert_refused(post_json(client, "/api/games", text), 400, "unknown fields ['colour']")


def test_a_huge_number_is_refused(client):
    body = b'{"players": 2, "seed": ' + b"9" * 5000 + b"}"
    assert_refused(post_json(client, "/api/games", body), 400, "a number of 5000 digits")


@pytest.mark.parametrize("rules", [[], {}, ["classic"]])
def test_unhashable_rules_are_refused(client, rules):
    assert_refused(client.post("/api/games", json={"rules": rules}), 400, "rules must be one of")


@pytest.mark.parametrize("length", [[], {}])
def test_unhashable_length_is_refused(client, length):
    assert_refused(client.post("/api/games", json={"length": length}), 400, "length must be")


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_nan_and_infinity_are_refused_in_requests(client, constant):
    assert_refused(post_json(client, "/api/games", b'{"seed": ' + constant + b"}"), 400, "not valid JSON")


def test_a_key_given_twice_in_a_request_is_refused(client):
    answer = post_json(client, "/api/games", b'{"seed": 1, "seed": 2}')
    assert_refused(answer, 400, "not valid JSON: the key 'seed' is given twice in one object")


# Replays: odd files and names, NaN, oversized names --------------------------------------


def test_a_dangling_link_in_the_replay_folder_is_skipped(client, replay_dir, saved_replay):
    (replay_dir / ".#lock.json").symlink_to(replay_dir / "gone.json")  # an editor's lock file
    (replay_dir / "loop.json").symlink_to(replay_dir / "loop.json")
    (replay_dir / "folder.json").mkdir()
    answer = client.get("/api/replays")
    assert answer.status_code == 200
    assert [f["name"] for f in answer.json()["files"]] == [saved_replay[0]]
    assert_refused(client.get("/api/replays/file/.%23lock.json"), 404, "no replay named")
    assert_refused(client.get("/api/replays/file/loop.json"), 404, "no replay named")


@pytest.mark.parametrize("seat", ["\u00b2", "\u0661", "9" * 5000, "01"])
def test_odd_seat_numbers_are_refused(client, saved_replay, seat):
    """A superscript digit and a 5,000-digit number passed str.isdigit, then int() failed."""
    answer = client.get(f"/api/replays/file/{saved_replay[0]}", params={"seat": seat})
    assert_refused(answer, 400, "seat must be 'open' or a seat in 0..1")


def test_a_very_long_replay_name_is_refused(client):
    name = "x" * 5000 + ".json"
    assert_refused(client.get(f"/api/replays/file/{name}"), 400, f"at most {MAX_REPLAY_NAME_CHARS} characters")
    # Within the limit, but longer than the file system allows a name: not there.
    assert_refused(client.get(f"/api/replays/file/{'x' * 249}.json"), 404, "no replay named")


#: Text a replay's JSON may not hold, as a value in its metadata (the part after "x": ),
#: and what the refusal says. One reader serves the web app and the library alike.
STRICT_JSON_CASES = {
    "NaN": ("NaN", "NaN is not a number"),
    "Infinity": ("Infinity", "Infinity is not a number"),
    "minus infinity": ("-Infinity", "-Infinity is not a number"),
    "1e999": ("1e999", "1e999 is out of range for a number"),
    "5000 digits": ("9" * 5000, "a number of 5000 digits; at most 40 are read"),
    "deep": ("[" * 40 + "]" * 40, "nested 42 levels deep; at most 32 are read"),
    "key twice": ('1, "x": 2', "the key 'x' is given twice in one object"),
    "lone surrogate": ('"\\ud800"', "a string holds a lone UTF-16 surrogate"),
}


@pytest.mark.parametrize("caller", ["upload", "folder", "parse_replay", "load_replay"])
@pytest.mark.parametrize("value, message", STRICT_JSON_CASES.values(), ids=STRICT_JSON_CASES.keys())
def test_replays_are_read_as_strict_json_by_the_app_and_the_library(
    client, replay_dir, saved_replay, caller, value, message
):
    """The app and the library read replays with one reader (they had two: both took a key
    given twice, the app a lone surrogate, which no UTF-8 answer can hold)."""
    data = saved_replay[1]
    data["metadata"]["x"] = "__value__"
    text = json.dumps(data).replace('"__value__"', value)
    (replay_dir / "strict.json").write_text(text)
    if caller == "upload":
        assert_refused(post_json(client, "/api/replays", text), 422, f"not valid JSON: {message}")
    elif caller == "folder":
        assert_refused(client.get("/api/replays/file/strict.json"), 422, f"not valid JSON: {message}")
    else:
        with pytest.raises(ReplayError, match=re.escape(f"not valid JSON: {message}")):
            parse_replay(text) if caller == "parse_replay" else load_replay(replay_dir / "strict.json")


def test_an_oversized_replay_in_the_folder_is_refused(client, replay_dir, saved_replay):
    (replay_dir / "big.json").write_bytes(json.dumps(saved_replay[1]).encode() + b" " * MAX_REPLAY_BYTES)
    assert_refused(client.get("/api/replays/file/big.json"), 422, f"the limit is {MAX_REPLAY_BYTES:,} bytes")


def test_long_agent_names_are_refused(client, replay_dir, saved_replay):
    """Every frame repeats the names: a 1 MB name made a 62 MB answer."""
    data = saved_replay[1]
    data["agents"][1]["name"] = "x" * (MAX_AGENT_NAME_CHARS + 1)
    text = json.dumps(data)
    assert_refused(post_json(client, "/api/replays", text), 422, f"the limit is {MAX_AGENT_NAME_CHARS}")
    (replay_dir / "long.json").write_text(text)
    assert_refused(client.get("/api/replays/file/long.json"), 422, "agents[1].name")
    data["agents"][1]["name"] = "x" * MAX_AGENT_NAME_CHARS
    assert post_json(client, "/api/replays", json.dumps(data)).status_code == 201


def test_kept_uploads_take_about_the_memory_of_their_text(client, saved_replay):
    """A replay of 2 MB of ``[{}, {}, ...]`` metadata parses into about 50 MB of objects: the
    50 uploads kept took 2.5 GB when the parsed replays were kept rather than their text."""
    import gc
    import tracemalloc

    data = saved_replay[1]
    data["metadata"]["padding"] = [{}] * 70_000
    text = json.dumps(data, separators=(",", ":")).encode()
    assert post_json(client, "/api/replays", text).status_code == 201  # warms what a first upload loads
    uploads = 4
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        ids = [post_json(client, "/api/replays", text).json()["id"] for _ in range(uploads)]
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 2 * uploads * len(text), f"{uploads} uploads of {len(text):,} bytes keep {kept:,} bytes"
    view = client.get(f"/api/uploads/{ids[-1]}?seat=0").json()  # still viewable, as uploaded
    assert view["viewer"] == 0 and view["metadata"]["padding"] == [{}] * 70_000


def test_error_messages_are_cut_short(client, saved_replay):
    data = saved_replay[1]
    data["rounds"][0]["steps"][0]["details"] = {"probabilities": {"x" * 500_000: 0.5}}
    answer = post_json(client, "/api/replays", json.dumps(data))
    # The replay schema shows a long value cut short; the web layer cuts whatever else comes through.
    assert answer.status_code == 422 and len(answer.text) < 2000 and "details.probabilities" in answer.text


# Checkpoints ----------------------------------------------------------------------------


def test_a_file_that_is_not_a_checkpoint_is_refused_at_start_up(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        serve_main(["--checkpoints", "/etc/passwd", "--replays", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    assert "--checkpoints: '/etc/passwd' is not a checkpoint" in capsys.readouterr().err


def test_a_bad_file_in_a_checkpoint_folder_is_left_out(tmp_path):
    from training.learn.checkpoint import load_agent

    shutil.copy(SHIPPED / "ppo_2p.pt", tmp_path / "good.pt")
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    found = {"good": tmp_path / "good.pt", "junk": tmp_path / "junk.pt"}
    usable, skipped = check_checkpoints(found, [tmp_path], load_agent)
    assert list(usable) == ["good"]
    assert len(skipped) == 1 and skipped[0].startswith("junk: ") and "is not a checkpoint" in skipped[0]
    with pytest.raises(ValueError, match="--checkpoints: .*junk.pt' is not a checkpoint"):
        check_checkpoints(found, [tmp_path / "junk.pt"], load_agent)


def _sparse_version_1_checkpoint(path: Path) -> Path:
    """A format-version 1 checkpoint (no digest) whose first weight is a sparse tensor."""
    import torch

    data = torch.load(SHIPPED / "ppo_2p.pt", weights_only=True)
    data["format_version"] = 1
    data.pop("sha256")
    weights = data["model"]["state_dict"]
    first = next(iter(weights))
    weights[first] = weights[first].to_sparse()
    torch.save(data, path)
    return path


def test_a_checkpoint_that_fails_to_load_in_a_folder_is_left_out_with_why(tmp_path, capsys, served_apps):
    """A sparse tensor in a version 1 file crashed start-up with torch's NotImplementedError."""
    from training.learn.checkpoint import CheckpointError

    shutil.copy(SHIPPED / "ppo_2p.pt", tmp_path / "good.pt")
    sparse = _sparse_version_1_checkpoint(tmp_path / "sparse.pt")
    assert serve_main(["--checkpoints", str(tmp_path), "--replays", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    left_out = [line for line in out.splitlines() if "left out" in line]
    assert len(left_out) == 1 and left_out[0].startswith("  not a usable checkpoint, left out: sparse: ")
    assert "checkpoints offered: good\n" in out
    # Named directly, it stops the server with the same reason, not a traceback.
    with pytest.raises(SystemExit) as exit_info:
        serve_main(["--checkpoints", str(sparse), "--replays", str(tmp_path / "r")])
    assert exit_info.value.code == 2 and f"--checkpoints: {str(sparse)!r}" in capsys.readouterr().err

    # The loader's own error, and any other failure, are lines too.
    def refuse(path):
        if path.name == "sparse.pt":
            raise CheckpointError(f"{str(path)!r} holds a sparse tensor")
        raise RuntimeError("torch ran out of ideas\nand more lines")

    found = {"sparse": sparse, "good": (tmp_path / "good.pt").resolve()}
    usable, skipped = check_checkpoints(found, [tmp_path], refuse)
    assert usable == {}
    assert skipped == [
        f"sparse: {str(sparse)!r} holds a sparse tensor",
        f"good: {str(found['good'])!r} could not be loaded (RuntimeError: torch ran out of ideas)",
    ]


def test_a_damaged_solved_policy_stops_start_up_with_why(tmp_path, capsys):
    from training.exploitability.solver import solve

    policy = solve("mini6", iterations=2).save_policy(tmp_path / "policy.npz")
    policy.write_bytes(policy.read_bytes()[:200])
    with pytest.raises(SystemExit) as exit_info:
        serve_main(["--policies", str(policy), "--replays", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"--policies: solved policy {str(policy)!r} is not a .npz archive" in err


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1000])


@pytest.mark.parametrize("damage", [_flip, _truncate, Path.unlink], ids=["flipped", "truncated", "deleted"])
@pytest.mark.parametrize("opponent", ["checkpoint:mine", "guided:policy=mine,iterations=20"])
def test_a_checkpoint_damaged_after_start_up_gets_a_clear_error(replay_dir, tmp_path, damage, opponent):
    path = tmp_path / "mine.pt"
    shutil.copy(SHIPPED / "ppo_2p.pt", path)
    with local_client(ServerConfig(replay_dir, None, {"mine": path})) as c:
        assert c.post("/api/games", json={"opponents": [opponent], "seed": 0}).status_code == 201
        damage(path)
        answer = c.post("/api/games", json={"opponents": [opponent], "seed": 0})
        assert_refused(answer, 503, "checkpoint 'mine' no longer loads (changed or removed since the server started)")


# Friction -------------------------------------------------------------------------------


def test_a_checkpoint_may_be_named_without_its_prefix(replay_dir):
    checkpoints = {"ppo_2p": SHIPPED / "ppo_2p.pt", "rule": SHIPPED / "ppo_2p.pt"}
    with local_client(ServerConfig(replay_dir, None, checkpoints)) as c:
        game = new_game(c, opponents=["ppo_2p"])
        assert game["view"]["players"][1]["name"] == "player_1 (ppo_2p)"
        # A name that is also a bot's means the bot; the prefix names the checkpoint.
        assert new_game(c, opponents=["rule"])["view"]["players"][1]["name"] == "player_1 (rule)"
        replay = finish(c, new_game(c, opponents=["checkpoint:rule"]))["replay_file"]
        assert c.get(f"/api/replays/file/{replay}").json()["agents"][1]["spec"].endswith("ppo_2p.pt")
        assert_refused(c.post("/api/games", json={"opponents": ["ppo_3p"]}), 400, "unknown opponent 'ppo_3p'")


def test_guided_is_offered_with_a_checkpoint(client, replay_dir):
    bots = {b["name"]: b for b in client.get("/api/meta").json()["opponents"]["bots"]}
    assert "policy" in bots["guided"]["options"]
    game = finish(client, new_game(client, opponents=["guided:iterations=20"]))
    replay = client.get(f"/api/replays/file/{game['replay_file']}").json()
    assert replay["agents"][1]["name"] == "guided"
    assert replay["agents"][1]["options"] == {"iterations": 20, "policy": "ppo_2p"}
    assert_refused(
        client.post("/api/games", json={"opponents": ["guided:policy=/etc/passwd"]}), 400, "option policy must be"
    )
    assert_refused(client.post("/api/games", json={"opponents": ["guided:opponents=x"]}), 400, "must be one of")


def test_guided_needs_a_checkpoint(replay_dir):
    with local_client(ServerConfig(replay_dir)) as c:
        assert "guided" not in [b["name"] for b in c.get("/api/meta").json()["opponents"]["bots"]]
        assert_refused(c.post("/api/games", json={"opponents": ["guided"]}), 400, "unknown opponent 'guided'")


def test_replay_seats_are_named_as_the_log_names_them(client, saved_replay):
    view = client.get(f"/api/replays/file/{saved_replay[0]}").json()
    names = [p["name"] for p in view["frames"][0]["view"]["players"]]
    assert names == ["player_0 (human)", "player_1 (belief)"]
    assert any("player_1" in line for frame in view["frames"] for line in frame["log"])


def test_the_leaderboard_has_readable_headings_and_ratings(tmp_path, replay_dir):
    league = tmp_path / "league"
    league.mkdir()
    (league / "league.csv").write_text(
        "rank,agent,rating,win_rate,episodes\n1,belief,1552.3,0.6075,400\n2,random,1414.0,0.3925,400\n"
    )
    with local_client(ServerConfig(replay_dir, league)) as c:
        board = c.get("/api/leaderboard").json()
    assert board["columns"] == ["Rank", "Agent", "Rating", "Win rate", "Episodes"]
    assert board["cells"][0] == ["1", "belief", "1552", "60.8%", "400"]
    assert board["ratings"] == [{"agent": "belief", "rating": 1552.3}, {"agent": "random", "rating": 1414.0}]
    # A spreadsheet's byte-order mark is no part of the first heading.
    (league / "league.csv").write_text("\ufeffrank,agent,rating,win_rate,episodes\n1,belief,1552.3,0.6075,400\n")
    with local_client(ServerConfig(replay_dir, league)) as c:
        assert c.get("/api/leaderboard").json()["columns"][0] == "Rank"
    for damaged, fault in [
        (b"\xff\xfe\x00bad", "cannot be read"),
        (b"const x = 1;\nalert(x)\n", "is no league table"),  # another file under the name
        (",".join(f"c{i}" for i in range(200_000)).encode() + b"\n", "is no league table"),
        (b"rank,agent,rating\n1,belief,1552,extra,more\n", "a row has more cells than the first line has columns"),
    ]:
        (league / "league.csv").write_bytes(damaged)
        with local_client(ServerConfig(replay_dir, league)) as c:
            board = c.get("/api/leaderboard").json()
        assert board["available"] is False and "cannot be read" in board["reason"] and fault in board["reason"]


def test_the_replay_folder_is_ignored_by_git():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", "replays/web-game.json"], cwd=ROOT)
    assert ignored.returncode == 0, "replays/ (the web app's default replay folder) must be in .gitignore"
