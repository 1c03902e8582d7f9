"""The web app's API through Starlette's test client: every endpoint, every refusal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
TestClient = pytest.importorskip(
    "starlette.testclient", reason="the web extra is not installed: pip install -e '.[web]'"
).TestClient


from loveletter_env.agents import BOTS  # noqa: E402
from loveletter_env.cards import CARD_COUNTS  # noqa: E402
from loveletter_env.replay import MAX_REPLAY_BYTES, load_replay  # noqa: E402
from training.apps.live_game import SEEN_GUESS_REASON  # noqa: E402
from training.apps.server import MAX_CHECKPOINTS, find_checkpoints  # noqa: E402
from training.apps.web.app import MAX_JSON_BODY, ServerConfig, create_app  # noqa: E402
from training.serve import main as serve_main  # noqa: E402

SHIPPED = ROOT / "checkpoints" / "shipped"
V1 = ROOT / "checkpoints" / "v1"
#: Where a browser on this machine reaches the server: the Host header the server accepts.
LOCAL = "http://127.0.0.1:8000"


def local_client(config, **kwargs):
    """A test client that addresses the app as a browser on this machine does."""
    return TestClient(create_app(config, **kwargs), base_url=LOCAL)


@pytest.fixture
def replay_dir(tmp_path):
    folder = tmp_path / "replays"
    folder.mkdir()
    return folder


@pytest.fixture
def client(replay_dir):
    config = ServerConfig(replay_dir, None, {"ppo_2p": SHIPPED / "ppo_2p.pt"})
    with local_client(config) as c:
        yield c


def new_game(client, **body):
    body = {"players": 2, "opponents": ["rule"], "length": "round", "seed": 1, **body}
    answer = client.post("/api/games", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def finish(client, game):
    """Play the first legal move until the game is over (next rounds included)."""
    while not game["finished"]:
        if game["view"]["round_over"]:
            game = client.post(f"/api/games/{game['id']}/next-round").json()
            continue
        if game["waiting"]:  # the bots still to move, once each per request
            game = client.post(f"/api/games/{game['id']}/play-on").json()
            continue
        answer = client.post(f"/api/games/{game['id']}/move", json={"action": game["legal"][0]["action"]})
        assert answer.status_code == 200, answer.text
        game = answer.json()
    return game


def post_json(client, url, text):
    """POST ``text`` as the body, saying it is JSON (as the pages do)."""
    return client.post(url, content=text, headers={"content-type": "application/json"})


def assert_refused(answer, status, fragment):
    assert answer.status_code == status, answer.text
    assert fragment in answer.json()["error"]


# Pages and static files -------------------------------------------------------------------


def test_pages_and_static_files(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert '<script src="/static/app.js">' in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200
    assert client.get("/static/missing.js").status_code == 404
    assert client.get("/static/%2e%2e/app.py").status_code == 404  # only the static folder is served
    assert client.get("/static/../games.py").status_code == 404


def test_meta_lists_bots_rules_cards_and_only_startup_checkpoints(client):
    meta = client.get("/api/meta").json()
    assert [b["name"] for b in meta["opponents"]["bots"]] == list(BOTS)  # all of them: a checkpoint was given
    assert meta["opponents"]["checkpoints"] == ["ppo_2p"]
    assert "classic" in meta["rules"] and "pegasus" in meta["rules"]
    assert [c["copies"] for c in meta["cards"]] == [5, 2, 2, 2, 2, 1, 1, 1]
    assert meta["replays"] is True and meta["leaderboard"] is False


def test_the_web_app_offers_every_bot_of_the_registry_as_it_describes_it(monkeypatch):
    """A new bot is one entry of ``loveletter_env.agents.BOTS``: the Play page lists it with its
    description, table sizes and options, a request builds it with checked options, and a
    table size it does not play is refused by name (nothing hides it, nothing else to edit)."""
    from loveletter_env.agents import Bot, BotOption, RuleAgent
    from training.apps.web.games import OpponentCatalog, RequestError

    class PatientBot(RuleAgent):
        def __init__(self, seed=None, patience: int = 1):
            super().__init__(seed)
            self.patience = patience

    monkeypatch.setitem(BOTS, "patient", Bot(PatientBot, "waits", {"patience": BotOption(int, 1, 3)}, (2, 3)))
    catalog = OpponentCatalog({}, lambda path, seed: None)
    offered = {bot["name"]: bot for bot in catalog.describe()["bots"]}
    assert list(offered) == [name for name, bot in BOTS.items() if not bot.needs_checkpoint]
    assert offered["patient"] == {
        "name": "patient",
        "description": "waits",
        "table_sizes": [2, 3],
        "options": ["patience"],
        "allowed": {"patience": "a whole number in 1..3"},
    }
    agent = catalog.choose("patient:patience=2", 3).build(5)
    assert isinstance(agent, PatientBot) and agent.patience == 2
    with pytest.raises(RequestError, match=r"patient: option patience must be in 1..3, got 9"):
        catalog.choose("patient:patience=9", 2)
    with pytest.raises(RequestError, match=r"patient plays at tables of \[2, 3\] players, not 4"):
        catalog.choose("patient", 4)


def test_every_search_of_the_registry_has_its_cost_per_iteration():
    """The web app bounds a request's work by the searches' measured cost: a bot whose
    decisions cost by ``iterations`` needs its figures at every table size it plays."""
    from training.apps.web.games import ITERATION_SECONDS

    searches = [name for name, bot in BOTS.items() if "iterations" in bot.options]
    assert searches
    for name in searches:
        assert set(BOTS[name].table_sizes) <= set(ITERATION_SECONDS[name]), name


# Playing ----------------------------------------------------------------------------------


def test_a_round_against_a_checkpoint_is_saved_as_a_replay(client, replay_dir):
    game = new_game(client, opponents=["checkpoint:ppo_2p"], seat=1)
    assert game["seat"] == 1 and not game["finished"]
    opponent = game["view"]["players"][0]
    assert opponent["hand"] is None and opponent["hand_size"] >= 1  # never another player's card
    game = finish(client, game)
    assert game["view"]["round_over"] and game["legal"] == []
    saved = replay_dir / game["replay_file"]
    replay = load_replay(saved)
    assert replay.agents[1].name == "human" and replay.agents[0].spec.endswith("ppo_2p.pt")
    assert replay.result["winners"] == game["view"]["round_winners"]
    decisions = [s for s in replay.rounds[0].steps if s.player == 0]
    assert all("probabilities" in s.details and "value" in s.details for s in decisions)
    assert any("Round 1 won by" in line for line in game["log"])


def test_a_round_won_by_the_last_player_in_keeps_their_hand_hidden(client, replay_dir):
    # Seed 2: the rule bot's Guard puts the person out on its first turn, deck still full.
    # Nobody shows a hand then (only a showdown reveals them), as the terminal game and
    # the person's observation have it; the replay from the person's seat keeps it hidden too.
    game = new_game(client, seed=2)
    game = finish(client, game)
    winner = game["view"]["players"][1]
    assert game["view"]["players"][0]["out"] and not winner["out"] and game["view"]["deck_remaining"] > 0
    assert winner["hand"] is None and winner["hand_size"] == 1
    assert not any(line.startswith("Showdown") for line in game["log"])
    seat_view = client.get(f"/api/replays/file/{game['replay_file']}?seat=0").json()
    assert seat_view["frames"][-1]["view"]["players"][1]["hand"] is None
    open_view = client.get(f"/api/replays/file/{game['replay_file']}?seat=open").json()
    assert open_view["frames"][-1]["view"]["players"][1]["hand"]  # every card open: shown


def test_a_showdown_shows_the_hands_still_in(client):
    for seed in range(60):
        game = finish(client, new_game(client, seed=seed))
        view = game["view"]
        if not any(p["out"] for p in view["players"]):
            assert all(p["hand"] for p in view["players"]), view
            assert any(line.startswith("Showdown") for line in game["log"])
            return
    pytest.fail("no seed of 0..59 ended in a showdown")


def test_a_whole_game_with_three_players(client, replay_dir):
    game = new_game(client, players=3, opponents=["belief", "ismcts:iterations=20"], length="game", seed=5)
    assert [p["name"] for p in game["view"]["players"]] == ["player_0 (you)", "player_1 (belief)", "player_2 (ismcts)"]
    game = finish(client, game)
    assert game["view"]["game_over"]
    replay = load_replay(replay_dir / game["replay_file"])
    assert replay.episode == "game" and len(replay.rounds) == game["view"]["round"]
    assert replay.agents[2].options == {"iterations": 20}
    assert_refused(client.post(f"/api/games/{game['id']}/move", json={"action": 0}), 409, "this game is over")
    assert_refused(client.post(f"/api/games/{game['id']}/next-round"), 409, "this game is over")


def test_the_same_seed_deals_the_same_game(client):
    first, second = new_game(client, seed=9), new_game(client, seed=9)
    assert first["view"] == second["view"] and first["log"] == second["log"]


def test_each_bot_moves_at_most_once_per_request_even_when_the_person_is_out(client):
    # Seed 39 at 4 players against rule bots: the person is put out before their first turn,
    # and the bots play the round on over several requests, each bot at most once in each.
    game = new_game(client, players=4, opponents=["rule"], seed=39)
    assert game["view"]["players"][0]["out"] and game["waiting"] and game["legal"] == []
    assert_refused(client.post(f"/api/games/{game['id']}/move", json={"action": 0}), 409, "not your turn")
    requests = [game]
    while game["waiting"]:
        answer = client.post(f"/api/games/{game['id']}/play-on")
        assert answer.status_code == 200, answer.text
        game = answer.json()
        requests.append(game)
    assert len(requests) == 4 and game["view"]["round_over"] and game["finished"]
    for before, after in zip([{"log": []}, *requests], requests):
        moves = [line for line in after["log"][len(before["log"]) :] if " played " in line]
        assert 1 <= len(moves) <= 3, moves
    assert_refused(client.post(f"/api/games/{game['id']}/play-on"), 409, "this game is over")


def test_no_bot_moves_twice_in_one_request_when_two_bots_are_left():
    """At 4 players with the person and one bot out, the two bots left alternate: a cap on
    moves alone let one of them move twice in a request, twice its cost."""
    from training.apps.web.games import HumanGame, OpponentCatalog

    catalog = OpponentCatalog({}, lambda path, seed: None)
    repeats_checked = 0
    for seed in range(12):
        game = HumanGame([catalog.choose("random", 4)] * 3, 4, 0, "classic", "game", seed, lambda g, r: None)
        rng = np.random.default_rng(seed)
        steps = 0
        while True:  # the new game's request first, then every later one
            played = [step.player for r in game.recorder.rounds for step in r.steps]
            call, steps = [p for p in played[steps:] if p != 0], len(played)
            assert len(call) == len(set(call)), f"seed {seed}: one request moved seats {call}"
            repeats_checked += len(call) >= 2
            if game.finished:
                break
            if game.state.round_over:
                game.next_round()
            elif game.agents_to_move:
                game.play_on()
            else:
                game.move(int(rng.choice([m["action"] for m in game.view()["legal"]])))
    assert repeats_checked, "some requests moved several bots"


@pytest.mark.parametrize(
    "opponents, players, seat, message",
    [
        (1, 2, 2, r"^seat must be .*got 2"),
        (1, 2, -1, r"^seat must be .*got -1"),
        (2, 2, 0, r"^2 opponents given for the 1 other seat of a 2-player table$"),
        (1, 3, 0, r"^1 opponents given for the 2 other seats of a 3-player table$"),
    ],
)
def test_a_human_game_names_a_seat_or_an_opponent_count_that_cannot_be(opponents, players, seat, message):
    """HumanGame zipped its seats with its opponents before LiveGame checked them: a bad seat, or
    one opponent too many or too few, failed as "zip() argument 2 is shorter than argument 1"."""
    from training.apps.web.games import HumanGame, OpponentCatalog

    choice = OpponentCatalog({}, lambda path, seed: None).choose("rule", 2)
    with pytest.raises(ValueError, match=message):
        HumanGame([choice] * opponents, players, seat, "classic", "round", 1, lambda game, replay: None)


def test_play_on_is_refused_while_it_is_the_persons_turn(client):
    game = new_game(client, seed=1)
    assert not game["waiting"] and game["legal"]
    assert_refused(client.post(f"/api/games/{game['id']}/play-on"), 409, "no agent is to move")


def test_next_round_only_after_a_round(client):
    game = new_game(client, length="game")
    assert_refused(client.post(f"/api/games/{game['id']}/next-round"), 409, "still being played")


def test_illegal_and_malformed_moves_change_nothing(client):
    game = new_game(client)
    url = f"/api/games/{game['id']}/move"
    legal = {m["action"] for m in game["legal"]}
    illegal = next(a for a in range(41) if a not in legal)
    for body, fragment in [
        ({"action": illegal}, "is not one of your legal moves"),
        ({"action": 99}, "is not one of your legal moves"),
        ({"action": str(min(legal))}, "is not one of your legal moves"),
        ({"action": float(min(legal))}, "is not one of your legal moves"),
        ({"action": True}, "is not one of your legal moves"),
        ({}, "a move is"),
        ({"action": min(legal), "extra": 1}, "a move is"),
        ([min(legal)], "a move is"),
    ]:
        assert_refused(client.post(url, json=body), 400, fragment)
    assert_refused(
        client.post(url, content=b"{not json", headers={"content-type": "application/json"}), 400, "not valid JSON"
    )
    assert client.get(f"/api/games/{game['id']}").json() == game


class _Broken:
    """A bot whose code fails when asked for a move."""

    def act(self, observation):
        raise RuntimeError("lost its way")


class _WrongMoves:
    """A bot that answers the Handmaid whether or not it holds one, as a policy whose lists
    of legal actions are wrong would."""

    def act(self, observation):
        return 30


def _client_with_bot(replay_dir, bot):
    """A client whose checkpoint ``bot`` is ``bot()``: every game against it seats one."""
    config = ServerConfig(replay_dir, None, {"bot": SHIPPED / "ppo_2p.pt"})
    return local_client(config, checkpoint_loader=lambda path, seed: bot())


def _assert_stopped_for_good(client, game_id, bot_hand_text):
    """Every later move or deal of a stopped game is refused with why, and nothing is played:
    no action, the bot's own moves included, is taken, and no answer lists the bot's moves."""
    log = client.get(f"/api/games/{game_id}").json()["log"]
    for action in range(41):
        answer = client.post(f"/api/games/{game_id}/move", json={"action": action})
        assert_refused(answer, 409, "this game was stopped: agent bot at player_1")
        assert bot_hand_text not in answer.json()["error"]
    assert_refused(client.post(f"/api/games/{game_id}/move", json={"action": 999}), 409, "this game was stopped")
    assert_refused(client.post(f"/api/games/{game_id}/next-round"), 409, "this game was stopped")
    assert client.get(f"/api/games/{game_id}").json()["log"] == log


def test_a_bot_that_fails_stops_its_game_with_a_clear_error(replay_dir):
    """A bot that raised left its game stuck on its own turn: the move answered a bare 500, the
    next illegal move listed the bot's legal moves (its hand), and a move among them was
    played for the bot."""
    with _client_with_bot(replay_dir, _Broken) as c:
        refused_at_start = game = None
        for seed in range(20):  # the bot starts some deals (it fails at once) and the person others
            answer = c.post("/api/games", json={"opponents": ["checkpoint:bot"], "seed": seed, "length": "round"})
            if answer.status_code == 201:
                game = game or answer.json()
            else:
                refused_at_start = refused_at_start or answer
        assert game is not None and refused_at_start is not None
        assert_refused(refused_at_start, 500, "agent bot at player_1 failed: RuntimeError: lost its way")
        answer = c.post(f"/api/games/{game['id']}/move", json={"action": game["legal"][0]["action"]})
        assert_refused(answer, 500, "agent bot at player_1 failed: RuntimeError: lost its way; the game was stopped")
        stopped = answer.json()["game"]  # the page draws the stopped game from the answer
        assert stopped["stopped"] == "agent bot at player_1 failed: RuntimeError: lost its way"
        assert stopped["finished"] and stopped["legal"] == [] and stopped["view"]["players"][1]["hand"] is None
        assert stopped["log"][-1] == "Game stopped: agent bot at player_1 failed: RuntimeError: lost its way."
        assert c.get(f"/api/games/{game['id']}").json() == stopped
        _assert_stopped_for_good(c, game["id"], "legal moves")


def test_a_bot_that_answers_an_illegal_move_stops_its_game_without_showing_its_hand(replay_dir):
    with _client_with_bot(replay_dir, _WrongMoves) as c:
        body = {"opponents": ["checkpoint:bot"], "length": "round"}
        answers = (c.post("/api/games", json={**body, "seed": seed}) for seed in range(20))
        game = next(a.json() for a in answers if a.status_code == 201)  # a deal the person starts
        answer = None
        while not game["finished"]:  # until the bot is dealt no Handmaid
            answer = c.post(f"/api/games/{game['id']}/move", json={"action": game["legal"][0]["action"]})
            game = answer.json().get("game", answer.json())
        assert answer is not None
        assert_refused(answer, 500, "agent bot at player_1 returned action 30, which is not legal here; the game")
        assert "legal:" not in answer.text  # the bot's legal moves would show its hand
        _assert_stopped_for_good(c, game["id"], "legal:")


class _FailsLater:
    """A bot that plays its first legal move six times, then fails."""

    def __init__(self):
        self.moves = 0

    def act(self, observation):
        self.moves += 1
        if self.moves > 6:
            raise RuntimeError("lost its way")
        return int(np.flatnonzero(observation["action_mask"])[0])


def test_a_game_stopped_by_a_bot_keeps_the_rounds_it_finished(replay_dir):
    with _client_with_bot(replay_dir, _FailsLater) as c:
        for seed in range(20):
            game = c.post("/api/games", json={"opponents": ["checkpoint:bot"], "seed": seed}).json()
            while not game["finished"]:
                url = f"/api/games/{game['id']}"
                if game["view"]["round_over"]:
                    answer = c.post(f"{url}/next-round")
                elif game["waiting"]:
                    answer = c.post(f"{url}/play-on")
                else:
                    answer = c.post(f"{url}/move", json={"action": game["legal"][0]["action"]})
                game = answer.json().get("game", answer.json())  # a failing bot's answer carries the game
            if game["stopped"] and game["view"]["round"] > 1:
                break
        assert game["stopped"] and game["view"]["round"] > 1, "a seed whose bot fails after a round"
        replay = load_replay(replay_dir / game["replay_file"])
        assert replay.episode == "rounds" and len(replay.rounds) == game["view"]["round"] - 1


def test_unknown_games(client):
    assert_refused(client.get("/api/games/nope"), 404, "no game with id 'nope'")
    assert_refused(client.post("/api/games/nope/move", json={"action": 0}), 404, "no game with id")
    assert_refused(client.post("/api/games/nope/next-round"), 404, "no game with id")


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"players": 5}, "players must be 2, 3 or 4"),
        ({"players": "2"}, "players must be 2, 3 or 4"),
        ({"players": 2.0}, "players must be 2, 3 or 4"),
        ({"seat": 0.0}, "seat must be a seat in 0..1"),
        ({"seed": 1.5}, "seed must be a non-negative whole number"),
        ({"opponents": []}, "opponents must be a non-empty list"),
        ({"opponents": "belief"}, "opponents must be a non-empty list"),
        ({"opponents": ["rule", "rule"]}, "2 opponents given for 1 other seats"),
        ({"opponents": ["alphazero"]}, "unknown opponent 'alphazero'"),
        ({"opponents": [3]}, "an opponent is a bot name"),
        ({"opponents": ["belief:depth=3"]}, "belief: bad option 'depth=3'"),
        ({"opponents": ["ismcts:iterations=1000000"]}, "option iterations must be in 1..2000"),
        ({"opponents": ["ismcts:iterations=__import__('os')"]}, "option iterations must be a whole number"),
        ({"opponents": ["ismcts:model_noise=2"]}, "option model_noise must be in 0..1"),
        ({"opponents": ["checkpoint:other"]}, "unknown checkpoint 'other'"),
        ({"opponents": ["checkpoint:../../checkpoints/shipped/ppo_2p.pt"]}, "unknown checkpoint"),
        ({"opponents": ["checkpoints/shipped/ppo_2p.pt"]}, "unknown opponent"),
        ({"rules": "house"}, "rules must be one of"),
        ({"length": "forever"}, "length must be 'round' or 'game'"),
        ({"seat": 2}, "seat must be a seat in 0..1"),
        ({"seed": -1}, "seed must be a non-negative whole number"),
        ({"colour": "red"}, "unknown fields ['colour']"),
    ],
)
def test_bad_new_game_requests(client, body, fragment):
    answer = client.post("/api/games", json={"players": 2, "opponents": ["rule"], **body})
    assert_refused(answer, 400, fragment)


def test_bad_bodies(client):
    assert_refused(client.post("/api/games", json=[1, 2]), 400, "must be a JSON object")
    assert_refused(
        client.post("/api/games", content=b"\xff\xfe", headers={"content-type": "application/json"}),
        400,
        "not valid JSON",
    )
    big = json.dumps({"opponents": ["rule"], "seed": 1, "pad": "x" * MAX_JSON_BODY})
    assert_refused(post_json(client, "/api/games", big), 413, "larger than the limit")


def test_checkpoints_only_from_startup(replay_dir):
    with local_client(ServerConfig(replay_dir, None, {})) as c:
        assert c.get("/api/meta").json()["opponents"]["checkpoints"] == []
        assert_refused(
            c.post("/api/games", json={"opponents": ["checkpoint:ppo_2p"]}), 400, "none were given at start-up"
        )


# Replays ----------------------------------------------------------------------------------


@pytest.fixture
def saved_game(client, replay_dir):
    game = finish(client, new_game(client, opponents=["belief"], seed=3))
    return game["replay_file"]


def test_replay_list_and_views(client, saved_game):
    files = client.get("/api/replays").json()["files"]
    assert [f["name"] for f in files] == [saved_game]
    open_view = client.get(f"/api/replays/file/{saved_game}").json()
    seat_view = client.get(f"/api/replays/file/{saved_game}?seat=0").json()
    assert open_view["viewer"] is None and seat_view["viewer"] == 0
    assert len(open_view["frames"]) == len(seat_view["frames"]) >= 3
    deal = seat_view["frames"][0]["view"]
    assert deal["set_aside"] is None and deal["players"][1]["hand"] is None
    assert open_view["frames"][0]["view"]["set_aside"] and open_view["frames"][0]["view"]["players"][1]["hand"]
    # The belief bot's reasoning: every seat in the open view, never in the human seat's view.
    assert any(f["details"] and f["details"]["hand_beliefs"] for f in open_view["frames"])
    assert not any(f["details"] for f in seat_view["frames"])
    assert seat_view["frames"][-1]["view"]["round_over"]


def test_replays_of_the_same_time_are_listed_by_name_under_the_cap(client, replay_dir, saved_game, monkeypatch):
    import os

    import training.apps.web.app as web_app

    monkeypatch.setattr(web_app, "MAX_LISTED_REPLAYS", 3)
    data = (replay_dir / saved_game).read_bytes()
    names = ["d.json", "b.json", "e.json", "a.json", "c.json"]  # created in no sorted order
    for name in names:
        (replay_dir / name).write_bytes(data)
        os.utime(replay_dir / name, (1_000_000_000, 1_000_000_000))
    os.utime(replay_dir / saved_game, (2_000_000_000, 2_000_000_000))
    files = client.get("/api/replays").json()["files"]
    assert [f["name"] for f in files] == [saved_game, "a.json", "b.json"]


def test_bad_replay_requests(client, replay_dir, saved_game):
    (replay_dir.parent / "secret.json").write_text("{}")
    (replay_dir / "notes.txt").write_text("hello")
    assert_refused(client.get(f"/api/replays/file/{saved_game}?seat=7"), 400, "seat must be 'open' or a seat in 0..1")
    assert_refused(client.get(f"/api/replays/file/{saved_game}?seat=-1"), 400, "seat must be")
    assert_refused(client.get("/api/replays/file/%2e%2e/secret.json"), 400, "outside the replay folder")
    assert_refused(client.get("/api/replays/file/sub/%2e%2e/%2e%2e/secret.json"), 400, "outside the replay folder")
    assert_refused(client.get("/api/replays/file/notes.txt"), 400, "replay names end in .json")
    assert_refused(client.get("/api/replays/file/missing.json"), 404, "no replay named 'missing.json'")
    data = json.loads((replay_dir / saved_game).read_text())
    data["rounds"][0]["steps"][0]["player"] = 1 - data["rounds"][0]["steps"][0]["player"]
    (replay_dir / "tampered.json").write_text(json.dumps(data))
    assert_refused(client.get("/api/replays/file/tampered.json"), 422, "round 1, step 1: the step is by player_")


def test_uploads(client, replay_dir, saved_game):
    text = (replay_dir / saved_game).read_text()
    answer = post_json(client, "/api/replays", text)
    assert answer.status_code == 201
    upload = answer.json()["id"]
    view = client.get(f"/api/uploads/{upload}?seat=1").json()
    assert view["viewer"] == 1 and view["frames"]
    assert len(client.get("/api/replays").json()["files"]) == 1  # uploads are not written to the folder
    assert_refused(post_json(client, "/api/replays", b"{broken"), 422, "not valid JSON")
    assert_refused(
        post_json(client, "/api/replays", text.replace('"loveletter-replay"', '"other"')),
        422,
        "not a Love Letter replay",
    )
    data = json.loads(text)
    data["result"]["tokens"] = [5, 5]
    assert_refused(post_json(client, "/api/replays", json.dumps(data)), 422, "result.tokens is [5, 5]")
    assert_refused(post_json(client, "/api/replays", b" " * (MAX_REPLAY_BYTES + 1)), 413, "larger than the limit")
    assert_refused(client.get("/api/uploads/nope"), 404, "no uploaded replay with id 'nope'")


# Leaderboard ------------------------------------------------------------------------------


def test_leaderboard(tmp_path, replay_dir):
    with local_client(ServerConfig(replay_dir)) as c:
        assert c.get("/api/leaderboard").json()["available"] is False
        assert_refused(c.get("/leaderboard/league.png"), 404, "no league chart")
    league = tmp_path / "league"
    league.mkdir()
    with local_client(ServerConfig(replay_dir, league)) as c:
        assert "no league.csv" in c.get("/api/leaderboard").json()["reason"]
    (league / "league.csv").write_text("rank,agent,ordinal\n1,belief,20.5\n2,random,12.0\n")
    (league / "league.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    with local_client(ServerConfig(replay_dir, league)) as c:
        board = c.get("/api/leaderboard").json()
        assert board["available"] and board["chart"]
        assert [r["agent"] for r in board["rows"]] == ["belief", "random"]
        chart = c.get("/leaderboard/league.png")
        assert chart.status_code == 200 and chart.headers["content-type"] == "image/png"


# Command line -----------------------------------------------------------------------------


def test_find_checkpoints(tmp_path):
    (tmp_path / "run" / "snapshots").mkdir(parents=True)
    for name in ("run/best.pt", "run/snapshots/update_5.pt", "run/notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    found = find_checkpoints([tmp_path])
    assert sorted(found) == ["run/best"]  # a run's snapshots are its history, not agents to offer
    assert find_checkpoints([tmp_path / "run" / "best.pt"]) == {"best": (tmp_path / "run" / "best.pt").resolve()}
    snapshot = tmp_path / "run" / "snapshots" / "update_5.pt"
    assert find_checkpoints([snapshot]) == {"update_5": snapshot.resolve()}  # unless named directly
    with pytest.raises(ValueError, match="does not exist"):
        find_checkpoints([tmp_path / "nowhere"])


def test_no_checkpoint_named_or_found_is_left_out_unsaid(tmp_path):
    for name in ("a/run1/best.pt", "b/run2/best.pt", "a/ckpts/net.pt", "b/ckpts/net.pt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    one, two = tmp_path / "a" / "run1" / "best.pt", tmp_path / "b" / "run2" / "best.pt"
    # Two files of one name: the second is offered by more of its path, not dropped.
    assert find_checkpoints([one, two, one]) == {"best": one.resolve(), "run2/best": two.resolve()}
    found = find_checkpoints([tmp_path / "a" / "ckpts", tmp_path / "b" / "ckpts"])
    assert sorted(found.values()) == sorted((tmp_path / f / "ckpts" / "net.pt").resolve() for f in "ab")
    for i in range(MAX_CHECKPOINTS + 1):
        (tmp_path / "many" / f"net{i}.pt").parent.mkdir(exist_ok=True)
        (tmp_path / "many" / f"net{i}.pt").write_bytes(b"x")
    with pytest.raises(ValueError, match=rf"{MAX_CHECKPOINTS + 1} checkpoints found, .* at most {MAX_CHECKPOINTS}"):
        find_checkpoints([tmp_path / "many"])


def test_serve_warms_the_compiled_search_before_it_answers(tmp_path, monkeypatch, served_apps):
    from training.apps import server

    monkeypatch.setattr(server, "warm_compiled_bots", lambda: served_apps.append("warm"))
    assert serve_main(["--checkpoints", "--replays", str(tmp_path / "r")]) == 0
    assert served_apps[0] == "warm" and len(served_apps) == 2


def test_serve_on_a_port_in_use_says_so_before_it_prints_an_address(tmp_path, capsys):
    """The address was printed, then uvicorn's own error: a browser sent there found the
    other server."""
    import socket

    from training.apps import server

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exit_info:
            serve_main(["--port", str(port), "--checkpoints", "--replays", str(tmp_path / "r")])
    assert exit_info.value.code == 1
    out, err = capsys.readouterr()
    assert "open http" not in out
    assert f"cannot listen on 127.0.0.1 port {port}: " in err and "in use" in err
    with server.listen_on("127.0.0.1", port) as free:  # once let go, the same port is served
        assert free.getsockname()[1] == port


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::", "::1", "localhost"])
def test_serve_prints_an_address_the_server_answers(host, tmp_path, monkeypatch, capsys, served_apps):
    """The printed address is one a browser can open (an IPv6 address in brackets, this
    machine's for a wildcard) and the server answers it (not 403 for its Host)."""
    import re
    from urllib.parse import urlsplit

    from training.apps import server

    apps = served_apps
    monkeypatch.setattr(server, "warm_compiled_bots", lambda: None)
    assert serve_main(["--host", host, "--port", "8123", "--checkpoints", "--replays", str(tmp_path / "r")]) == 0
    address = re.search(r"open (\S+) in a browser", capsys.readouterr().out).group(1)
    parts = urlsplit(address)
    assert parts.scheme == "http" and parts.port == 8123 and parts.path == "/", address
    with TestClient(apps[0], base_url=address.rstrip("/")) as c:
        assert c.get("/api/meta").status_code == 200, address


def test_serve_cli_errors(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        serve_main(["--help"])
    assert exit_info.value.code == 0 and "--replays" in capsys.readouterr().out
    (tmp_path / "notes.txt").write_text("x")
    for argv, fragment in [
        (["--port", "0"], "--port must be in 1..65535"),
        (["--checkpoints", str(tmp_path / "nowhere.pt")], "does not exist"),
        (["--league", str(tmp_path / "none")], "--league folder"),
        (["--replays", str(tmp_path / "notes.txt" / "sub")], "is a file, not a folder"),
        (["--allow-host", "myhost:8000"], "--allow-host takes a host name alone (no scheme, port or path)"),
        (["--allow-host", "http://myhost"], "got 'http://myhost'"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            serve_main(argv)
        assert exit_info.value.code == 2
        assert fragment in capsys.readouterr().err


def test_timings_cli_refuses_bad_counts(capsys):
    from training.apps.web.timings import main as timings_main

    with pytest.raises(SystemExit) as exit_info:
        timings_main(["--repeats", "0"])
    assert exit_info.value.code == 2 and "must be positive" in capsys.readouterr().err


# Ladder rungs, solved policies and what the server offers -----------------------------------

MINI6_IN_PLAY = [2, 1, 1, 0, 1, 0, 0, 1]  # Guard x2, Priest, Baron, Prince, Princess
MINI6_FACE_UP = [3, 1, 1, 2, 1, 1, 1, 0]


def test_the_card_reference_follows_the_rules(client):
    meta = client.get("/api/meta").json()
    mini6 = meta["cards_by_rules"]["mini6"]
    assert [c["copies"] for c in mini6] == MINI6_IN_PLAY and [c["face_up"] for c in mini6] == MINI6_FACE_UP
    assert [c["copies"] for c in meta["cards_by_rules"]["classic"]] == [5, 2, 2, 2, 2, 1, 1, 1]
    assert set(meta["cards_by_rules"]) == set(meta["rules"])


def test_the_card_reference_says_what_the_handmaid_and_king_do_when_the_king_passes_a_handmaid(client):
    """The page and the terminal make their references from one set of rows; under this
    preset the Handmaid's line still said no card could choose her player."""
    from loveletter_env.render import card_reference as terminal_reference
    from loveletter_env.rules import PRESETS

    cards = {c["name"]: c["effect"] for c in client.get("/api/meta").json()["cards_by_rules"]["king_ignores_handmaid"]}
    assert cards["King"].endswith("(a Handmaid does not protect from the King in these rules).")
    assert cards["Handmaid"].endswith("until your next turn (except the King's, in these rules).")
    terminal = terminal_reference(PRESETS["king_ignores_handmaid"])
    assert "(except the King's, in these rules)" in terminal and "does not protect from the King" in terminal
    classic = {c["name"]: c["effect"] for c in client.get("/api/meta").json()["cards_by_rules"]["classic"]}
    assert "King" not in classic["Handmaid"] and "Handmaid" not in classic["King"]


def test_a_guard_on_a_rung_is_not_offered_cards_that_are_all_face_up(client):
    """Naming a card whose every copy lies face up is legal but a sure miss: the page is told."""
    for seed in range(40):
        game = new_game(client, opponents=["random"], rules="mini6", seed=seed)
        guard_moves = [m for m in game["legal"] if m["card"] == 1 and m["guess"]]
        if guard_moves and game["view"]["players"][0]["hand"] == [1, 1]:
            break
    else:
        pytest.fail("no seed of 0..39 deals the person two Guards to play first on mini6")
    possible = {m["guess"]: m["possible"] for m in guard_moves}
    assert possible == {2: True, 3: True, 4: False, 5: True, 6: False, 7: False, 8: True}
    assert all(m["possible"] for m in game["legal"] if not m["guess"])
    # Still a legal move: the server plays it if asked.
    sure_miss = next(m for m in guard_moves if m["guess"] == 4)
    assert client.post(f"/api/games/{game['id']}/move", json={"action": sure_miss["action"]}).status_code == 200


def test_a_guard_is_not_offered_the_princess_the_person_holds(client):
    """The Guard picker offered the Princess to the person holding the only one."""
    from training.apps.web.games import HumanGame, OpponentCatalog

    random_bot = OpponentCatalog({}, lambda path, seed: None).choose("random", 2)
    for seed in range(500):
        view = HumanGame([random_bot], 2, 0, "classic", "round", seed, lambda game, replay: None).view()["view"]
        # A deal where only the Princess is ruled out: no name has every copy face up, nothing discarded yet.
        face_up_rules_out = any(view["face_up"].count(v) == CARD_COUNTS[v] for v in range(2, 9))
        nothing_played = not view["players"][1]["discards"]
        if sorted(view["players"][0]["hand"]) == [1, 8] and nothing_played and not face_up_rules_out:
            break
    else:
        pytest.fail("no seed of 0..499 deals the person the Guard and the Princess to play first")
    game = new_game(client, opponents=["random"], seed=seed)
    possible = {m["guess"]: m["possible"] for m in game["legal"] if m["card"] == 1}
    assert possible == {2: True, 3: True, 4: True, 5: True, 6: True, 7: True, 8: False}
    # The page says why it leaves a name out.
    assert client.get("/api/meta").json()["seen_guess_reason"] == SEEN_GUESS_REASON


def test_counts_in_the_page_script_are_pluralized():
    """'Deck: 1 cards' read wrong: a count in the page's words goes through plural()."""
    import re

    script = (ROOT / "training" / "apps" / "web" / "static" / "app.js").read_text()
    assert not re.findall(r"\$\{[^}]*\} (?:cards|rounds|moves|turns|tokens|players)\b", script)
    assert "plural(view.deck_remaining" in script


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    from training.exploitability.solver import solve

    return solve("mini6", iterations=20).save_policy(tmp_path_factory.mktemp("solved") / "policy.npz")


def test_a_solved_policy_is_offered_and_played_on_its_rung(replay_dir, policy_file):
    from training.apps.server import load_policies

    policies = load_policies([policy_file])
    assert list(policies) == ["mini6"] and policies["mini6"].rules == "mini6"
    with local_client(ServerConfig(replay_dir, None, {}, policies=policies)) as c:
        assert c.get("/api/meta").json()["opponents"]["policies"] == [{"name": "mini6", "rules": "mini6"}]
        game = finish(c, new_game(c, opponents=["solved:mini6"], rules="mini6", length="game", seed=4))
        assert game["view"]["game_over"]
        replay = load_replay(replay_dir / game["replay_file"])
        assert replay.agents[1].name == "solved" and replay.agents[1].spec == f"solved:path={policy_file.resolve()}"
        assert_refused(
            c.post("/api/games", json={"opponents": ["solved:mini6"], "rules": "classic"}),
            400,
            "solved:mini6 plays only rules 'mini6'",
        )
        assert_refused(c.post("/api/games", json={"opponents": ["solved:mini7"]}), 400, "unknown solved policy")


def test_serve_names_a_policy_given_as_a_checkpoint_and_the_reverse(capsys, policy_file):
    with pytest.raises(SystemExit) as exit_info:
        serve_main(["--checkpoints", str(policy_file)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "is a solved policy" in err and f"--policies {policy_file}" in err and "corrupt" not in err
    with pytest.raises(SystemExit) as exit_info:
        serve_main(["--policies", str(SHIPPED / "ppo_2p.pt")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "not a solved policy file" in err and "--checkpoints" in err


def test_find_runs_offers_one_checkpoint_per_run(tmp_path):
    from training.apps.server import find_runs

    runs = tmp_path / "runs"
    for name in ("a/best.pt", "a/latest.pt", "a/snapshots/update_5.pt", "b/result.pt", "b/best.pt", "c/notes.txt"):
        (runs / name).parent.mkdir(parents=True, exist_ok=True)
        (runs / name).write_bytes(b"x")
    assert find_runs([runs]) == {"runs/a": (runs / "a/best.pt").resolve(), "runs/b": (runs / "b/result.pt").resolve()}
    with pytest.raises(ValueError, match="--runs folder .* does not exist"):
        find_runs([tmp_path / "nowhere"])
    # A run's checkpoint named instead of the folder holding runs: it exists, and is no folder.
    with pytest.raises(ValueError, match=r"--runs .*best\.pt' is a file, not a folder of runs; .*--checkpoints"):
        find_runs([runs / "a" / "best.pt"])


def test_serve_offers_the_shipped_and_version_1_networks_and_only_the_runs_asked_for(
    tmp_path, monkeypatch, capsys, served_apps
):
    import shutil

    for folder in ("shipped", "v1", "scratch"):
        (tmp_path / "checkpoints" / folder).mkdir(parents=True)
    shutil.copy(SHIPPED / "ppo_2p.pt", tmp_path / "checkpoints" / "shipped" / "ppo_2p.pt")
    shutil.copy(V1 / "ppo_2to4p.pt", tmp_path / "checkpoints" / "v1" / "ppo_2to4p.pt")
    shutil.copy(SHIPPED / "ppo_2p.pt", tmp_path / "checkpoints" / "scratch" / "latest.pt")
    monkeypatch.chdir(tmp_path)
    assert serve_main([]) == 0
    assert "checkpoints offered: shipped/ppo_2p, v1/ppo_2to4p\n" in capsys.readouterr().out
    assert serve_main(["--runs", "checkpoints"]) == 0
    assert "checkpoints offered: checkpoints/scratch, shipped/ppo_2p, v1/ppo_2to4p\n" in capsys.readouterr().out
    shutil.rmtree(tmp_path / "checkpoints" / "v1")
    assert serve_main([]) == 0
    assert "checkpoints offered: shipped/ppo_2p\n" in capsys.readouterr().out


def test_guided_searches_with_the_network_for_the_table_size_by_default():
    from training.apps.web.games import DEFAULT_NETWORKS, OpponentCatalog

    offered = {"shipped/ppo_2p": SHIPPED / "ppo_2p.pt", "v1/ppo_2to4p": V1 / "ppo_2to4p.pt"}
    catalog = OpponentCatalog(offered, lambda path, seed: None)
    assert [catalog.default_policy(n) for n in (2, 3, 4)] == ["shipped/ppo_2p", "v1/ppo_2to4p", "v1/ppo_2to4p"]
    assert OpponentCatalog({"run": V1 / "ppo_2p.pt"}, lambda path, seed: None).default_policy(4) == "run"
    # The Play page preselects the same networks.
    page = (ROOT / "training" / "apps" / "web" / "static" / "app.js").read_text()
    assert f'players === 2 ? "{DEFAULT_NETWORKS[2]}" : "{DEFAULT_NETWORKS[4]}"' in page


def test_the_view_says_who_has_seen_the_persons_card():
    # player_1 looks at player_0's Handmaid with a Priest: player_0's view says so, as player_0's
    # observation does; no one else's view, nor a spectator's, says it of anyone.
    from conftest import act, start

    from loveletter_env import engine
    from loveletter_env.cards import BARON, GUARD, HANDMAID, PRIEST
    from loveletter_env.observation import decode_observation, encode_observation
    from training.apps.web.views import state_view

    state = start(3, hands={0: GUARD, 1: PRIEST, 2: PRIEST}, draws=[HANDMAID, GUARD])
    engine.step(state, act(GUARD, 2, BARON))  # a miss
    engine.step(state, act(PRIEST, 2))  # player_1's Priest on offset 2 from it: player_0
    names = ["you", "bot 1", "bot 2"]
    for viewer in (0, 1, 2, None):
        view = state_view(state, viewer, names)
        says = [p["seat"] for p in view["players"] if p["knows_your_card"]]
        if viewer is None:
            assert says == []
            continue
        observed = decode_observation(encode_observation(state, viewer))
        assert says == [(viewer + offset) % 3 for offset in range(1, 3) if observed.seen_by[offset]], viewer
    assert [p["seat"] for p in state_view(state, 0, names)["players"] if p["knows_your_card"]] == [1]
