"""Replays: recording, the JSON round trip, re-simulation, refusal of tampered files, narration."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import loveletter_env
from loveletter_env import engine
from loveletter_env.agents import make_agent
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.cards import FULL_DECK, card_name
from loveletter_env.replay import (
    MAX_REPLAY_BYTES,
    AgentInfo,
    ReplayError,
    ReplayRecorder,
    decision_details,
    load_replay,
    parse_replay,
    replay_frames,
    replay_from_dict,
    replay_json,
    save_replay,
)
from loveletter_env.rules import PRESETS
from loveletter_env.wrappers import RecordReplay
from training.apps.narration import narrate_replay
from training.replay import main as replay_main


def play_recorded(num_players=3, seed=0, episode="game", agent_names=("belief", "rule", "random", "belief")):
    """A whole game between bots on the engine, recorded with every bot's details."""
    rng = np.random.default_rng(seed)
    agents = [make_agent(agent_names[p], seed=seed + p) for p in range(num_players)]
    infos = [AgentInfo(agent_names[p], agent_names[p], {}, seed + p) for p in range(num_players)]
    recorder = ReplayRecorder(num_players, "classic", episode, infos, {"seed": seed})
    state = engine.new_game(num_players, [int(c) for c in rng.permutation(FULL_DECK)], 0)
    recorder.start_round(state)
    while True:
        while not state.round_over:
            obs = _obs(state)
            agent = agents[state.current]
            details = decision_details(agent, obs, state.current, num_players)
            action = agent.act(obs)
            recorder.record(state, action, details)
            engine.step(state, action)
        if episode == "round" or state.game_over:
            return recorder.finish(state), state
        engine.start_round(state, [int(c) for c in rng.permutation(FULL_DECK)])
        recorder.start_round(state)


def _obs(state):
    from loveletter_env.observation import encode_observation

    mask = np.zeros(41, dtype=np.int8)
    mask[list(engine.legal_actions(state))] = 1
    return {"observation": encode_observation(state, state.current), "action_mask": mask}


@pytest.fixture(scope="module")
def game_replay():
    return play_recorded()


def test_round_trip_gives_the_same_game(tmp_path, game_replay):
    replay, final = game_replay
    path = save_replay(replay, tmp_path / "sub" / "game.json")
    loaded = load_replay(path)
    assert loaded.to_dict() == replay.to_dict()
    assert loaded.result["tokens"] == final.tokens
    assert loaded.result["winners"] == list(final.game_winners)
    assert len(loaded.rounds) == final.round
    # The re-simulation ends in the same state as the game that was recorded.
    last = list(replay_frames(loaded))[-1].state
    assert last.tokens == final.tokens and last.discards == final.discards and last.hands == final.hands


def test_belief_details_are_recorded_per_seat(game_replay):
    replay, _ = game_replay
    belief_steps = [s for r in replay.rounds for s in r.steps if replay.agents[s.player].name == "belief"]
    rule_steps = [s for r in replay.rounds for s in r.steps if replay.agents[s.player].name == "rule"]
    assert belief_steps and all(s.details and "hand_beliefs" in s.details for s in belief_steps)
    assert all(s.details is None for s in rule_steps)
    for s in belief_steps:
        for seat, dist in s.details["hand_beliefs"].items():
            assert int(seat) != s.player and len(dist) == 8
            assert sum(dist) == pytest.approx(1.0, abs=1e-3)


def test_checkpoint_details_hold_legal_probabilities_and_a_value():
    from training import load_agent

    agent = load_agent("checkpoints/shipped/ppo_2p.pt")
    env = loveletter_env.env(num_players=2, episode="round")
    env.reset(seed=3)
    obs = env.observe(env.agent_selection)
    details = decision_details(agent, obs, 0, 2)
    legal = {str(a) for a in np.flatnonzero(obs["action_mask"])}
    assert set(details["probabilities"]) == legal
    assert sum(details["probabilities"].values()) == pytest.approx(1.0, abs=1e-3)
    assert isinstance(details["value"], float)
    assert max(details["probabilities"], key=details["probabilities"].get) == str(agent.act(obs))


def test_aec_recorder_saves_every_episode(tmp_path):
    env = RecordReplay(loveletter_env.env(num_players=2, episode="game"), directory=tmp_path, agents=["a", "b"])
    infos = []
    for episode in range(2):
        env.reset(seed=episode)
        rng = np.random.default_rng(episode)
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, info = env.last()
            env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        infos.append(info)
    files = sorted(tmp_path.glob("episode_*.json"))
    assert [f.name for f in files] == ["episode_00000.json", "episode_00001.json"]
    for f, info in zip(files, infos, strict=True):
        replay = load_replay(f)
        assert replay.result["tokens"] == info["tokens"]
        assert [f"player_{w}" for w in replay.result["winners"]] == info["winners"]
        assert [a.name for a in replay.agents] == ["a", "b"]
        assert replay.metadata["seed"] in (0, 1)


def test_aec_recorder_drops_a_refused_move():
    env = RecordReplay(loveletter_env.env(num_players=2, episode="round"))
    env.reset(seed=0, options={"deck": [1, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8], "first_player": 0})
    obs = env.observe(env.agent_selection)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(ValueError):
        env.step(illegal)
    while not all(env.terminations.values()):
        obs = env.observe(env.agent_selection)
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert env.last_replay.rounds[0].steps[0].action != illegal
    assert parse_replay(env.last_replay.to_json()).num_steps == env.last_replay.num_steps


def test_aec_recorder_refuses_no_action_as_the_env_does_and_a_step_past_the_end_records_nothing(tmp_path):
    from loveletter_env import IllegalActionError

    env = RecordReplay(loveletter_env.env(num_players=2, episode="round"), directory=tmp_path)
    env.reset(seed=0)
    for nothing in (None, "0"):
        with pytest.raises(IllegalActionError):
            env.step(nothing)
    while env.agents:
        obs, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0]))
    env.step(0)  # PettingZoo's own wrapper logs a warning; the episode is not finished a second time
    assert env.episodes_saved == 1 and len(list(tmp_path.glob("episode_*.json"))) == 1


def test_aec_recorder_refuses_one_name_for_every_seat():
    with pytest.raises(ValueError, match=r"^agents is one name per seat, such as \['rule', 'me'\], got 'ab'"):
        RecordReplay(loveletter_env.env(num_players=2), agents="ab")


def test_aec_recorder_checks_its_folder_before_the_first_move(tmp_path):
    (tmp_path / "notes").write_text("x")
    with pytest.raises(
        ValueError, match=r"^RecordReplay directory '.*notes' cannot be written: .* is a file, not a folder"
    ):
        RecordReplay(loveletter_env.env(num_players=2), directory=tmp_path / "notes")


# Writing: never a NaN ---------------------------------------------------------------


def test_the_json_text_round_trips(game_replay):
    replay, _ = game_replay
    assert parse_replay(replay.to_json()).to_dict() == replay.to_dict()
    assert parse_replay(replay_json(replay, indent=1)).to_dict() == replay.to_dict()


def _with_first_step_details(replay, details):
    spoiled = copy.deepcopy(replay)
    step = spoiled.rounds[0].steps[0]
    step.details = {key: value(step.action) if callable(value) else value for key, value in details.items()}
    return spoiled


@pytest.mark.parametrize(
    ("edit", "place"),
    [
        (lambda r: _with_first_step_details(r, {"value": float("nan")}), r"round 1, step 1: details\.value is nan"),
        (
            lambda r: _with_first_step_details(r, {"probabilities": lambda a: {str(a): float("inf")}}),
            r"round 1, step 1: details\.probabilities\.\d+ is inf",
        ),
        (lambda r: dataclasses.replace(r, metadata={"seeds": [1, float("-inf")]}), r"metadata\.seeds\[1\] is -inf"),
    ],
    ids=["value", "probability", "metadata"],
)
def test_a_non_finite_number_is_refused_before_any_file_is_touched(tmp_path, game_replay, edit, place):
    replay, _ = game_replay
    spoiled = edit(replay)
    message = rf"^cannot write the replay: {place}, and a replay holds finite numbers only$"
    kept = save_replay(replay, tmp_path / "game.json")
    before = kept.read_bytes()
    with pytest.raises(ReplayError, match=message):
        save_replay(spoiled, kept)
    assert kept.read_bytes() == before and load_replay(kept).to_dict() == replay.to_dict()
    with pytest.raises(ReplayError, match=message):
        save_replay(spoiled, tmp_path / "new" / "game.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.json"]  # no temporary file, no folder
    with pytest.raises(ReplayError, match=message):
        spoiled.to_json()


NAN_EXPLAINER = """
import numpy as np

from loveletter_env.agents import make_agent
from loveletter_env.agents.specs import resolve_agent


class NanExplainer:
    \"\"\"The rule bot, explaining its moves with NaN (as a network that overflows would).\"\"\"

    def __init__(self, seed=0):
        self.rule = make_agent("rule", seed=seed)

    def act(self, observation):
        return self.rule.act(observation)

    def explain(self, observation):
        legal = np.flatnonzero(observation["action_mask"])
        return {"probabilities": {int(a): float("nan") for a in legal}, "value": 0.25, "hand_beliefs": {}}
"""


@pytest.fixture
def nan_explainer(tmp_path, monkeypatch) -> str:
    """The spec of an agent whose explanations hold NaN (a module the agent specs can import)."""
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "nan_explainer.py").write_text(NAN_EXPLAINER)
    monkeypatch.syspath_prepend(str(folder))
    return "nan_explainer:NanExplainer"


def test_an_explanation_with_a_nan_is_recorded_without_it(nan_explainer):
    state = engine.new_game(2, list(FULL_DECK), 0)
    agent = resolve_agent(nan_explainer)
    with pytest.warns(
        RuntimeWarning, match=r"NanExplainer explained a move with numbers that are not finite .* probabilities"
    ):
        details = decision_details(agent, _obs(state), 0, 2)
    assert details == {"value": 0.25}


def test_a_game_against_an_agent_explaining_with_nan_saves_a_replay_that_loads(tmp_path, nan_explainer):
    from training.apps.terminal import play

    out = io.StringIO()
    with pytest.warns(RuntimeWarning, match="not finite"):
        final = play(
            [nan_explainer], seed=1, rounds=1, stdin=FirstLegalMove(out), out=out, replay_path=tmp_path / "game.json"
        )
    replay = load_replay(tmp_path / "game.json")  # the file the tool just wrote
    assert replay.result["tokens"] == final.tokens
    bot_steps = [step for rnd in replay.rounds for step in rnd.steps if step.player == 1]
    assert bot_steps and all(step.details == {"value": 0.25} for step in bot_steps)


def _tampered(replay, edit):
    data = copy.deepcopy(replay.to_dict())
    edit(data)
    return data


def _first_decision_with_choice(replay):
    state = engine.new_game(replay.num_players, replay.rounds[0].deck, replay.rounds[0].first_player, replay.rules)
    for i, step in enumerate(replay.rounds[0].steps):
        legal = engine.legal_actions(state)
        if len(legal) < 41:
            illegal = next(a for a in range(41) if a not in legal)
            return i, illegal
        engine.step(state, step.action)
    raise AssertionError("no step")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(format="something-else"), "not a Love Letter replay"),
        (lambda d: d.update(version=99), "version 99 is not supported"),
        (lambda d: d.update(num_players=5), "num_players must be <= 4, got 5"),
        (lambda d: d["rounds"][0]["deck"].__setitem__(0, 9), "round 1: deck holds values that are not cards"),
        (
            lambda d: d["rounds"][0]["steps"][0].update(player=(d["rounds"][0]["steps"][0]["player"] + 1) % 3),
            "round 1, step 1: the step is by player_",
        ),
        (
            lambda d: d["rounds"][1].update(first_player=(d["rounds"][1]["first_player"] + 1) % 3),
            "round 2: first_player is player_",
        ),
        (lambda d: d["rounds"][0]["steps"].pop(), "round 1: the steps end after step"),
        (lambda d: d["rounds"][0]["steps"].append(d["rounds"][0]["steps"][-1]), "the file has extra steps"),
        (lambda d: d["result"]["tokens"].__setitem__(0, 99), "result.tokens is"),
        (lambda d: d["result"].update(winners=[]), "result.winners is"),
        (lambda d: d["rounds"].pop(), "the game is not over after round"),
        (lambda d: d.update(episode="round"), "exactly one round"),
        (
            lambda d: d["rounds"][0]["steps"][0].update(action="12"),
            "round 1, step 1: action must be an integer, got '12'",
        ),
        (lambda d: d["agents"].pop(), "agents lists 2 seats for a 3-player table"),
        (lambda d: d["rules"].update(king_ignores_handmaid="yes"), "rules.king_ignores_handmaid must be true or false"),
    ],
)
def test_tampered_files_are_refused_naming_the_problem(game_replay, edit, message):
    replay, _ = game_replay
    with pytest.raises(ReplayError, match=message.replace("(", r"\(").replace(")", r"\)")):
        replay_from_dict(_tampered(replay, edit))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(version=True), "replay version True is not supported"),  # True == 1 in Python
        (lambda d: d.update(version=1.0), "replay version 1.0 is not supported"),
        (lambda d: d.update(comment="hi"), "comment is not a known key"),
        (lambda d: d["agents"][0].update(colour="red"), "agents[0].colour is not a known key"),
        (lambda d: d["rounds"][0]["steps"][0].update(note=1), "round 1, step 1: note is not a known key"),
        (lambda d: d["rounds"][0]["steps"][0].update(details={"mood": 1}), "round 1, step 1: details.mood is not"),
        (lambda d: d["rules"].update(colour=1), "rules.colour is not a known key"),
        (lambda d: d["result"].update(colour=1), "result.colour is not a known key"),
        (lambda d: d["metadata"].update(x=[float("nan")]), "metadata.x[0] must be a finite number, got nan"),
        (lambda d: d["agents"][0]["options"].update(x=float("inf")), "agents[0].options.x must be a finite number"),
        (lambda d: d["agents"][0].update(seed=True), "agents[0].seed must be an integer, got True"),
        (lambda d: d["agents"][0].update(name="x" * 5000), "agents[0].name must be at most 4096 characters long"),
        (lambda d: d.update(rules="chess"), "rules: unknown preset 'chess'; presets are"),
        (lambda d: d["rounds"][0].update(first_player=7), "round 1: first_player must be a seat in 0..2, got 7"),
    ],
)
def test_loose_values_and_unknown_keys_are_refused(game_replay, edit, message):
    replay, _ = game_replay
    with pytest.raises(ReplayError, match=re.escape(message)):
        replay_from_dict(_tampered(replay, edit))


@pytest.mark.parametrize(
    "value, message",
    [
        ("NaN", r"not valid JSON: NaN is not a number"),
        ("-Infinity", r"not valid JSON: -Infinity is not a number"),
        ("1e400", r"not valid JSON: 1e400 is out of range for a number"),  # a number too large for a float
        ("[" * 4000 + "]" * 4000, r"not valid JSON: nested 4002 levels deep; at most 32 are read"),
        ("9" * 5000, r"not valid JSON: a number of 5000 digits; at most 40 are read"),
        ('1,"x":2', r"not valid JSON: the key 'x' is given twice in one object"),
    ],
    ids=["NaN", "infinity", "1e400", "deep", "5000 digits", "key twice"],
)
def test_json_beyond_what_a_replay_holds_is_refused(game_replay, value, message):
    text = game_replay[0].to_json()
    assert '"metadata":{"seed"' in text
    with pytest.raises(ReplayError, match=message):
        parse_replay(text.replace('"metadata":{', f'"metadata":{{"x":{value},', 1))


def test_paths_that_are_not_regular_files_are_refused_before_opening(tmp_path, capsys):
    fifo = tmp_path / "episode.json"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    paths = [fifo, tmp_path] + [Path("/dev/zero")] * Path("/dev/zero").exists()  # endless, size 0
    for path in paths:
        with pytest.raises(ReplayError, match=f"cannot read replay {re.escape(repr(str(path)))}: it is not a regular"):
            load_replay(path)
        with pytest.raises(SystemExit) as exit_info:
            replay_main([str(path)])
        assert exit_info.value.code == 2 and "is not a regular file" in capsys.readouterr().err


def test_an_illegal_move_names_the_first_bad_step(game_replay):
    replay, _ = game_replay
    index, illegal = _first_decision_with_choice(replay)
    data = _tampered(replay, lambda d: d["rounds"][0]["steps"][index].update(action=illegal))
    with pytest.raises(ReplayError, match=rf"round 1, step {index + 1}: action {illegal} .* is not legal"):
        replay_from_dict(data)


def test_details_are_checked(game_replay):
    replay, _ = game_replay
    data = replay.to_dict()
    step = next(s for s in data["rounds"][0]["steps"] if s.get("details"))
    step["details"]["hand_beliefs"] = {str(step["player"]): [0.125] * 8}
    with pytest.raises(ReplayError, match="hand_beliefs must map other seats"):
        replay_from_dict(data)
    step["details"] = {"probabilities": {"41": 1.0}}
    with pytest.raises(ReplayError, match="probabilities must map legal actions"):
        replay_from_dict(data)
    step["details"] = {"value": "high"}
    with pytest.raises(ReplayError, match="value must be a finite number"):
        replay_from_dict(data)


def test_unreadable_files_are_refused(tmp_path):
    with pytest.raises(ReplayError, match="cannot read replay"):
        load_replay(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ReplayError, match="bad.json.*not valid JSON"):
        load_replay(tmp_path / "bad.json")
    (tmp_path / "big.json").write_bytes(b" " * (MAX_REPLAY_BYTES + 1))
    with pytest.raises(ReplayError, match="the limit is"):
        load_replay(tmp_path / "big.json")
    with pytest.raises(ReplayError, match="a replay is a JSON object"):
        parse_replay("[1, 2]")


def test_a_round_replay_and_a_stopped_game():
    replay, state = play_recorded(num_players=2, seed=4, episode="round")
    assert replay.episode == "round" and len(replay.rounds) == 1
    assert replay.result["winners"] == list(state.round_winners) == replay.result["round_winners"][0]
    data = replay.to_dict()
    data["episode"] = "rounds"  # one round of a game that was stopped: winners are then the game's (none)
    data["result"]["winners"] = []
    assert parse_replay(json.dumps(data)).episode == "rounds"


def _narration(replay, seat):
    out = io.StringIO()
    narrate_replay(replay, seat, out)
    return out.getvalue()


def test_narration_from_a_seat_shows_only_what_it_saw():
    # Seed 5: each player plays a Priest on the other, and each sees a Prince.
    replay, _ = play_recorded(num_players=2, seed=5, episode="round", agent_names=("belief", "belief"))
    open_text = _narration(replay, None)
    seat_text = _narration(replay, 0)
    assert "set aside" in open_text and "hands: player_0" in open_text
    assert "set aside" not in seat_text and "hands: player_0" not in seat_text
    assert "your hand:" in seat_text
    # Seat 0's view shows its own reasoning, never seat 1's.
    assert "thinks player_1 holds" in seat_text and "thinks player_0 holds" not in seat_text
    assert "thinks player_0 holds" in open_text

    # A Priest look is narrated with the card to its player only: seat 0 reads its own look
    # with the card, player_1's look at it without, and the open narration names neither.
    def priest_lines(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if "played Priest on" in line]

    assert priest_lines(seat_text) == [
        "You played Priest on player_1 and saw Prince.",
        "player_1 played Priest on you.",
    ]
    assert priest_lines(_narration(replay, 1)) == [
        "player_0 played Priest on you.",
        "You played Priest on player_0 and saw Prince.",
    ]
    assert priest_lines(open_text) == ["player_0 played Priest on player_1.", "player_1 played Priest on player_0."]


def test_narration_shows_the_face_up_cards_at_every_table_size_that_has_them():
    state = engine.new_game(3, list(PRESETS["mini7_3p"].shuffled_deck(np.random.default_rng(0))), 0, "mini7_3p")
    face_up = f"face up: {', '.join(card_name(c) for c in state.face_up)}"
    assert state.face_up, "the 3-player rungs lay cards face up"
    recorder = ReplayRecorder(3, "mini7_3p", "round")
    recorder.start_round(state)
    while not state.round_over:
        action = engine.legal_actions(state)[0]
        recorder.record(state, action)
        engine.step(state, action)
    replay = recorder.finish(state)
    assert face_up in _narration(replay, None) and face_up in _narration(replay, 0)
    classic, _ = play_recorded(num_players=3, seed=1, episode="round")
    assert "face up:" not in _narration(classic, None)  # the full game lays none at 3 players


def test_narration_prints_names_from_a_file_as_text_never_as_lines_or_terminal_codes(game_replay):
    data = game_replay[0].to_dict()
    forged = "rule\n\n=== Round 1: player_0 starts ===\n  player_0 played Guard: a hit.\x1b[2J"
    data["agents"][1]["name"] = data["agents"][1]["spec"] = forged
    text = _narration(parse_replay(json.dumps(data)), None)
    assert "\x1b" not in text
    assert [line for line in text.splitlines() if line.startswith("=== Round 1")] == [
        "=== Round 1: player_0 starts ==="
    ]
    assert repr(forged) in text


def test_narration_prints_the_rules_name_from_a_file_as_text_too(game_replay):
    # The rules name is anyone's text as well (any string up to 64 characters, fields given in full).
    data = game_replay[0].to_dict()
    forged = "x\n=== Round 1: player_1 starts ===\x1b[2J"
    data["rules"]["name"] = forged
    text = _narration(parse_replay(json.dumps(data)), None)
    assert "\x1b" not in text
    assert [line for line in text.splitlines() if line.startswith("=== Round 1")] == [
        "=== Round 1: player_0 starts ==="
    ]
    assert repr(forged) in text


def test_cli(tmp_path, capsys, game_replay):
    replay, _ = game_replay
    path = save_replay(replay, tmp_path / "g.json")
    assert replay_main([str(path), "--seat", "1"]) == 0
    text = capsys.readouterr().out
    assert "player_1 (you)" in text and "Game over:" in text
    bad = _tampered(replay, lambda d: d["result"]["tokens"].__setitem__(0, 99))
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(SystemExit) as exit_info:
        replay_main([str(tmp_path / "bad.json")])
    assert exit_info.value.code == 2
    assert "result.tokens is" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        replay_main([str(path), "--seat", "3"])
    assert "--seat must be a seat in 0..2" in capsys.readouterr().err


class FirstLegalMove(io.StringIO):
    """Standard input for ``training.play`` that answers each prompt with the first legal move listed."""

    def __init__(self, out: io.StringIO):
        super().__init__()
        self.out = out

    def readline(self, *args) -> str:
        listing = self.out.getvalue().rsplit("Legal moves:", 1)[1]
        return listing.split("\n")[1].split(":")[0].strip() + "\n"


def test_terminal_play_saves_a_replay(tmp_path):
    from training.apps.terminal import play

    out = io.StringIO()
    final = play(["belief"], num_players=3, seed=2, stdin=FirstLegalMove(out), out=out, replay_path=tmp_path / "p.json")
    replay = load_replay(tmp_path / "p.json")
    assert replay.episode == "game" and final.game_over
    assert replay.result["tokens"] == final.tokens and len(replay.rounds) == final.round
    assert [a.name for a in replay.agents] == ["human", "belief", "belief"]
    assert "Replay saved" in out.getvalue()
    # Stopped after one round: the replay says the game was not finished.
    out = io.StringIO()
    play(["rule"], seed=2, rounds=1, stdin=FirstLegalMove(out), out=out, replay_path=tmp_path / "one.json")
    stopped = load_replay(tmp_path / "one.json")
    assert stopped.episode == "rounds" and len(stopped.rounds) == 1 and stopped.result["winners"] == []


@pytest.mark.parametrize("workers", [1, 2])
def test_evaluate_saves_replays_that_replay_the_same_results(tmp_path, workers):
    from loveletter_env.agents.specs import resolve_agent
    from training.measure.evaluation import evaluate

    folder = tmp_path / f"w{workers}"
    result = evaluate(["belief", "rule"], num_players=3, rounds=12, seed=4, workers=workers, save_replays=folder)
    files = sorted(folder.glob("episode_*.json"))
    assert [f.name for f in files] == [f"episode_{i:06d}.json" for i in range(12)]
    wins = [0, 0, 0]
    for f in files:
        replay = load_replay(f)
        index = replay.metadata["episode_index"]
        for seat in replay.result["winners"]:
            wins[(seat - index) % 3] += 1  # slot i sits at seat (i + index) % n
        # The recorded agents, rebuilt from their spec and seed, choose every recorded move again.
        agents = [resolve_agent(a.spec, seed=a.seed) for a in replay.agents]
        state = engine.new_game(3, replay.rounds[0].deck, replay.rounds[0].first_player, replay.rules)
        for step in replay.rounds[0].steps:
            assert agents[step.player].act(_obs(state)) == step.action
            engine.step(state, step.action)
    assert wins == result.wins


def test_evaluate_saves_every_kth_episode(tmp_path):
    from training.evaluate import main as evaluate_main

    args = ["random", "--rounds", "7", "--no-progress", "--save-replays", str(tmp_path), "--save-replays-every", "3"]
    assert evaluate_main(args) == 0
    assert sorted(f.name for f in tmp_path.glob("*.json")) == [f"episode_{i:06d}.json" for i in (0, 3, 6)]
    with pytest.raises(SystemExit):
        evaluate_main(["random", "--save-replays", str(tmp_path), "--save-replays-every", "0"])


def test_decisions_carry_the_observation_the_env_gave():
    from loveletter_env.replay import iter_decisions

    env = RecordReplay(loveletter_env.env(num_players=4, episode="game"))
    env.reset(seed=8)
    rng = np.random.default_rng(8)
    seen = []
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        seen.append((env.agent_name_mapping[agent], obs, action))
        env.step(action)
    decisions = list(iter_decisions(env.last_replay))
    assert len(decisions) == len(seen)
    for decision, (seat, obs, action) in zip(decisions, seen, strict=True):
        assert decision.player == seat and decision.action == action
        np.testing.assert_array_equal(decision.observation["observation"], obs["observation"])
        np.testing.assert_array_equal(decision.observation["action_mask"], obs["action_mask"])


def test_the_size_limit_counts_the_bytes_of_text():
    """A text replay is measured in the UTF-8 bytes it holds, as a file or upload of it is,
    not in characters: one of 2 bytes each over half the limit is too large both ways."""
    text = "é" * (MAX_REPLAY_BYTES // 2 + 1)
    with pytest.raises(ReplayError, match="the limit is"):
        parse_replay(text.encode())
    with pytest.raises(ReplayError, match="the limit is"):
        parse_replay(text)


@pytest.mark.parametrize("metadata", [[1], "run", 3])
def test_metadata_that_is_no_mapping_is_named(metadata):
    from loveletter_env.replay import checked_metadata

    with pytest.raises(ReplayError, match="^metadata must be a dict of JSON values, got "):
        checked_metadata(metadata)
    assert checked_metadata(None) == {} and checked_metadata({"run": 3}) == {"run": 3}


def test_a_path_the_system_cannot_look_at_is_refused_by_name(tmp_path, capsys):
    """Looking at a path can fail as reading it can (a name too long, a folder without access):
    the reason is a ReplayError naming the file, and the command's error, never a traceback."""
    path = tmp_path / ("x" * 300 + ".json")  # longer than a file name may be (255 bytes)
    with pytest.raises(ReplayError, match=f"^cannot read replay {re.escape(repr(str(path)))}: File name too long$"):
        load_replay(path)
    with pytest.raises(SystemExit) as exit_info:
        replay_main([str(path)])
    assert exit_info.value.code == 2 and "cannot read replay" in capsys.readouterr().err


@pytest.mark.parametrize(
    "details, message",
    [
        ({"mood": 1}, "details.mood is not a known key"),  # saved, but load_replay refused the file
        ({"value": float("nan")}, "details.value must be a finite number, got nan"),  # the save failed: game lost
        ({"probabilities": {"40": 1.0}}, "round 1, step 1: details.probabilities must map legal actions"),
    ],
    ids=["unknown key", "nan", "illegal move"],
)
def test_the_recorder_refuses_details_a_file_cannot_hold_at_the_move(tmp_path, details, message):
    """Details are checked when recorded, as metadata is when given: found only at the save (or at
    the next load) they cost the whole game. The refused step is not recorded; play goes on."""
    state = engine.new_game(2, [int(c) for c in np.random.default_rng(1).permutation(FULL_DECK)], 0)
    recorder = ReplayRecorder(2, "classic", "round")
    recorder.start_round(state)
    action = engine.legal_actions(state)[0]
    with pytest.raises(ReplayError, match=re.escape(message)):
        recorder.record(state, action, details)
    assert recorder.rounds[0].steps == []
    while not state.round_over:
        recorder.record(state, engine.legal_actions(state)[0], {"value": 0.5})
        engine.step(state, engine.legal_actions(state)[0])
    replay = recorder.finish(state)
    assert load_replay(save_replay(replay, tmp_path / "r.json")).to_dict() == replay.to_dict()


def test_the_recorder_keeps_numpy_numbers_in_details_as_plain_ones(tmp_path):
    """A network's float32 value is recorded as the float the file holds (the save failed on it)."""
    state = engine.new_game(2, [int(c) for c in np.random.default_rng(1).permutation(FULL_DECK)], 0)
    recorder = ReplayRecorder(2, "classic", "round")
    recorder.start_round(state)
    while not state.round_over:
        action = engine.legal_actions(state)[0]
        recorder.record(state, action, {"value": np.float32(0.5), "probabilities": {str(action): np.float32(1)}})
        engine.step(state, action)
    replay = load_replay(save_replay(recorder.finish(state), tmp_path / "r.json"))
    assert all(type(step.details["value"]) is float for step in replay.rounds[0].steps)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda r: _with_first_step_details(r, {"mood": 1}), "round 1, step 1: details.mood is not a known key"),
        (
            lambda r: dataclasses.replace(r, agents=[AgentInfo("x" * 5000), *r.agents[1:]]),
            "agents[0].name must be at most 4096 characters long",
        ),
    ],
    ids=["details key", "long name"],
)
def test_save_refuses_a_replay_that_load_would_refuse(tmp_path, game_replay, edit, message):
    """A replay built in code is written only in the form load_replay reads back: a file every
    tool writes loads again."""
    spoiled = edit(game_replay[0])
    with pytest.raises(ReplayError, match=f"^cannot write the replay: {re.escape(message)}"):
        save_replay(spoiled, tmp_path / "new" / "game.json")
    assert list(tmp_path.iterdir()) == []  # no folder, no temporary file
