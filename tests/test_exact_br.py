"""Exact best responses: agents' action probabilities and the exploitability they give."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from loveletter_env import raw_env
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents import make_agent
from loveletter_env.agents.base import choice_distribution
from loveletter_env.agents.solved import SolvedAgent
from loveletter_env.tree import build_tree
from training import evaluate, exploit
from training.exploitability.cfr import TreeWorkspace
from training.exploitability.exact_response import agent_strategy, exact_exploitability, exact_head_to_head
from training.exploitability.solver import solve
from training.measure import evaluation


@pytest.fixture(scope="module")
def tree():
    return build_tree("mini6")


@pytest.fixture(scope="module")
def policy_path(tree, tmp_path_factory):
    return solve("mini6", tree=tree).save_policy(tmp_path_factory.mktemp("solved") / "policy.npz")


def _score_as(tree, seat, own, other):
    """Seat ``seat``'s expected score playing ``own`` against ``other`` (per-action strategies)."""
    work = TreeWorkspace(tree)
    return work.head_to_head(own, other) if seat == 0 else 1.0 - work.head_to_head(other, own)


def _clairvoyant_score(tree, seat, other):
    """The score of a player who sees every card: an upper bound on any best response."""
    values = np.zeros(tree.num_nodes)
    for n in range(tree.num_nodes - 1, -1, -1):
        i = tree.node_info[n]
        if i < 0:
            s0 = (-1 - i) / 2
            values[n] = s0 if seat == 0 else 1 - s0
            continue
        lo, hi = tree.action_offsets[i], tree.action_offsets[i + 1]
        children = values[tree.node_child[n] : tree.node_child[n] + hi - lo]
        values[n] = children.max() if tree.infoset_player[i] == seat else children @ other[lo:hi]
    return values[: tree.num_deals].mean()


def _pure_strategies(tree, count, seed):
    rng = np.random.default_rng(seed)
    counts = np.diff(tree.action_offsets)
    for k in range(count):
        if k == 0:
            picks = np.zeros_like(counts)  # the lowest legal action everywhere
        elif k == 1:
            picks = counts - 1  # the highest
        else:
            picks = rng.integers(0, counts)
        strategy = np.zeros(tree.actions.shape[0])
        strategy[tree.action_offsets[:-1] + picks] = 1.0
        yield strategy


@pytest.mark.parametrize("agent", ["random", "rule"])
def test_best_response_beats_every_pure_strategy(tree, agent):
    strategy = agent_strategy(make_agent(agent, seed=0), tree)
    result = TreeWorkspace(tree).exploitability(strategy)
    best = {0: result.best_response_as_first, 1: result.best_response_as_second}
    for seat in (0, 1):
        scores = [_score_as(tree, seat, pure, strategy) for pure in _pure_strategies(tree, 8, seed=seat)]
        assert best[seat] >= max(scores) - 1e-12
        # ... and sees no more than a player who sees every card.
        assert best[seat] <= _clairvoyant_score(tree, seat, strategy) + 1e-12


def test_random_is_exploitable_by_about_a_quarter(tree):
    """Bounds derived from the tree, not copied from a run: from below, what the rule bot
    and the equilibrium score against random; from above, a player who sees every card."""
    uniform = tree.uniform_strategy()
    report = exact_exploitability("random", "mini6", tree=tree)
    lower = max(
        np.mean([_score_as(tree, seat, agent_strategy(make_agent(name, seed=0), tree), uniform) for seat in (0, 1)])
        for name in ("rule", "belief")
    )
    upper = np.mean([_clairvoyant_score(tree, seat, uniform) for seat in (0, 1)])
    assert lower - 0.5 <= report["exploitability"] <= upper - 0.5
    assert lower - 0.5 > 0.1  # random gives plenty away
    assert abs(report["exploitability"] - 0.25) < 0.05  # docs/solving.md's table: 0.247 to 0.273 on the rungs


def test_equilibrium_is_far_less_exploitable_than_the_bots(tree, policy_path):
    solved = exact_exploitability(f"solved:path={policy_path}", "mini6", tree=tree)["exploitability"]
    for name in ("random", "rule", "belief"):
        assert exact_exploitability(name, "mini6", tree=tree)["exploitability"] > 10 * solved


@pytest.mark.parametrize("name", ["random", "rule", "belief"])
def test_probabilities_match_what_the_agent_plays(name):
    """Exact probabilities against the frequencies of act() over many seeds, at decisions of real games."""
    env = raw_env(num_players=2, rules="mini7", episode="round")
    checked = 0
    for episode in range(30):
        env.reset(seed=episode)
        agent = make_agent(name, seed=episode)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            twin = copy.deepcopy(agent)
            probs = agent.action_probabilities(obs)
            assert probs.shape == (NUM_ACTIONS,)
            assert probs.sum() == pytest.approx(1.0)
            assert (probs[obs["action_mask"] == 0] == 0).all()
            if (probs > 0).sum() > 1 and checked < 3:
                checked += 1
                counts = np.zeros(NUM_ACTIONS)
                for s in range(400):
                    counts[make_agent(name, seed=10_000 + s).act(obs)] += 1
                assert np.abs(counts / 400 - probs).max() < 0.1
            # The query changes nothing: the agent plays on as its untouched twin does.
            action = agent.act(obs)
            assert action == twin.act(obs)
            assert agent.rng.getstate() == twin.rng.getstate()
            env.step(action)


def test_choice_distribution_enumerates_every_pick():
    def decide(rng):
        first = rng.choice([0, 1])
        return rng.choice([2, 3, 4]) if first else 5

    probs = choice_distribution(decide)
    np.testing.assert_allclose(probs[[2, 3, 4, 5]], [1 / 6, 1 / 6, 1 / 6, 1 / 2])
    assert probs.sum() == pytest.approx(1.0)


def test_replayed_memory_matches_live_play(tree, policy_path):
    """An agent that remembers the round (rule) is queried at each information set after a
    replay of its round: that must give what it plays live at the same point."""
    strategy = agent_strategy(make_agent("rule", seed=0), tree)
    env = raw_env(num_players=2, rules="mini6", episode="round")
    compared = 0
    for episode in range(40):
        env.reset(seed=episode, options={"first_player": 0})
        agents = [make_agent("rule", seed=s) for s in (2 * episode, 2 * episode + 1)]
        trackers = [SolvedAgent(policy_path), SolvedAgent(policy_path)]  # the same information sets as the tree
        while not all(env.terminations.values()):
            seat = env.agent_name_mapping[env.agent_selection]
            obs = env.observe(env.agent_selection)
            infoset = trackers[seat].infoset(obs)
            lo, hi = tree.action_offsets[infoset], tree.action_offsets[infoset + 1]
            live = agents[seat].action_probabilities(obs)[tree.actions[lo:hi]]
            np.testing.assert_allclose(live, strategy[lo:hi])
            action = agents[seat].act(obs)
            trackers[seat].replay_action(obs, action)
            env.step(action)
            compared += 1
    assert compared > 80


def test_search_agent_probabilities_are_estimates(tree):
    agent = make_agent("ismcts", seed=0, iterations=20)
    agent.probability_samples = 4
    env = raw_env(num_players=2, rules="mini6", episode="round")
    env.reset(seed=3, options={"first_player": 0})
    obs = env.observe(env.agent_selection)
    probs = agent.action_probabilities(obs)
    assert probs.sum() == pytest.approx(1.0)
    assert set(np.round(probs * 4, 9)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    np.testing.assert_array_equal(probs, agent.action_probabilities(obs))  # seeded: the same estimate
    assert agent.exact_probabilities is False


def test_cli_json(capsys):
    exploit.main(["random", "--exact", "--rules", "mini6", "--json", "--no-progress"])
    report = json.loads(capsys.readouterr().out)
    assert report["rules"] == "mini6"
    assert 0.2 < report["exploitability"] < 0.3
    assert report["exact_probabilities"] is True
    assert "information" not in report  # one game: nothing to say which


def test_cli_search_agent_says_estimated(capsys):
    exploit.main(["ismcts:iterations=5", "--exact", "--rules", "mini6", "--samples", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert "ESTIMATED" in out and "2 searches" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["random", "--exact", "--rules", "mini5"], "unknown rules preset 'mini5'"),
        (["random", "--exact", "--rules", "classic"], "not a ladder rung"),
        (["random", "--exact"], "--exact needs --rules"),
        (["random", "--exact", "--rules", "mini6", "--players", "3"], "2-player"),
        (["solved:path=/nonexistent/policy.npz", "--exact", "--rules", "mini6"], "does not exist"),
        (["nobody", "--exact", "--rules", "mini6"], "unknown agent 'nobody'"),
        ([], "the agent to exploit is required"),
        (["random", "--rules", "mini6"], "go with --exact"),
        (["rule", "--exact", "--rules", "mini6", "--sampled"], "--sampled is for checkpoints"),
        (
            ["os:system", "--exact", "--rules", "mini6"],
            "agent spec 'os:system': os.system is not an agent factory, it cannot be called with no arguments",
        ),
        (["os:getcwd", "--exact", "--rules", "mini6"], "agent spec 'os:getcwd': the factory returned"),
        (["random", "--exact", "--rules", "mini6", "--steps", "10"], "--exact trains and plays nothing: drop --steps"),
        (
            ["random", "--exact", "--rules", "mini6", "--rounds", "10", "--run-name", "x", "--config", "c.yaml"],
            "--exact trains and plays nothing: drop --rounds, --run-name, --config",
        ),
        (["random", "--exact", "--rules", "mini6", "--set", "seed=3"], "drop --set"),
        (["random", "--search", "--steps", "10"], "--search trains nothing: drop --steps"),
        (["random", "--exact", "--rules", "mini6", "--information", "full"], "--information is retired: the"),
        (["random", "--information"], "--information is retired: the"),
    ],
)
def test_cli_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        exploit.main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_rng_of_enumeration_refuses_other_draws():
    from loveletter_env.agents.base import _ChoiceEnumerator

    with pytest.raises(TypeError, match="rng.choice only"):
        _ChoiceEnumerator([]).random()


def test_network_probabilities_are_those_it_plays_with():
    from training.learn.checkpoint import load_agent

    greedy = load_agent("checkpoints/shipped/ppo_2p.pt")
    sampling = load_agent("checkpoints/shipped/ppo_2p.pt", greedy=False)
    env = raw_env(num_players=2, rules="mini7", episode="round")
    for episode in range(5):
        env.reset(seed=episode)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            probs = greedy.action_probabilities(obs)
            assert probs[greedy.act(obs)] == 1.0
            soft = sampling.action_probabilities(obs)
            explained = sampling.explain(obs)["probabilities"]
            np.testing.assert_allclose([soft[a] for a in explained], list(explained.values()), rtol=1e-5)
            assert soft.sum() == pytest.approx(1.0)
            env.step(greedy.act(obs))


def test_cli_measures_a_checkpoint_in_the_mode_asked(capsys):
    reports = {}
    for mode in ([], ["--sampled"]):
        exploit.main(["checkpoints/shipped/ppo_2p.pt", "--exact", "--rules", "mini6", "--json", "--no-progress", *mode])
        reports[bool(mode)] = json.loads(capsys.readouterr().out)
    assert reports[True]["agent"].endswith("(sampling)")
    assert reports[True]["exploitability"] != reports[False]["exploitability"]


def test_head_to_head_of_a_strategy_with_itself_is_its_first_player_score(tree, policy_path):
    strategy = agent_strategy(SolvedAgent(policy_path), tree)
    work = TreeWorkspace(tree)
    assert work.head_to_head(strategy, strategy) == pytest.approx(work.first_player_score(strategy), abs=1e-12)
    mirror = exact_head_to_head(("rule", "rule"), "mini6", tree=tree)
    assert mirror["score"] == pytest.approx(0.5, abs=1e-12)


def test_exact_head_to_head_is_what_a_long_match_converges_to(tree):
    """The exact figure lies inside the interval of 8,000 played duplicate rounds, and the
    match's figure moves with the agents: rule beats random by about 0.7 on mini6."""
    exact = exact_head_to_head(("rule", "random"), "mini6", tree=tree)
    played = evaluation.evaluate(["rule", "random"], rules="mini6", rounds=8000, duplicate=True, seed=3, progress=False)
    data = played.to_dict()
    score = data["win_rate"][0] - data["shared_rate"] / 2
    low, high = data["ci95"][0]
    assert low - 0.002 <= exact["score"] <= high + 0.002, (exact, score, (low, high))
    assert exact["score"] == pytest.approx(score, abs=0.02)
    assert 0.6 < exact["score"] < 0.8
    assert exact["score_as_first"] != exact["score_as_second"]


def test_the_equilibrium_wins_against_every_bot_and_loses_to_no_one(tree, policy_path):
    """An equilibrium of a symmetric round scores at least 0.5 minus its exploitability
    against anything; against the bots it wins outright."""
    solved = f"solved:path={policy_path}"
    for bot in ("random", "rule", "belief"):
        report = exact_head_to_head((solved, bot), "mini6", tree=tree)
        assert report["score"] > 0.5, (bot, report)
        assert report["exact_probabilities"]


def test_evaluate_exact_cli(capsys, policy_path):
    assert evaluate.main(["rule", "random", "--exact", "--rules", "mini6", "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["agents"] == ["rule", "random"] and report["rules"] == "mini6"
    assert 0.6 < report["score"] < 0.8
    assert evaluate.main(["rule", "random", "--exact", "--rules", "mini6", "--no-progress"]) == 0
    assert "rule against random on mini6: expected score 0.7" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rule", "--exact", "--rules", "mini6"], "--exact compares two agents, got 1"),
        (["rule", "random", "--exact"], "rules 'classic' are not a ladder rung"),
        (["rule", "random", "--exact", "--rules", "mini6", "--players", "3"], "got --players 3"),
        (["rule", "random", "--exact", "--rules", "mini6", "--rounds", "10"], "drop --rounds"),
        (["rule", "random", "--exact", "--rules", "mini6", "--duplicate"], "drop --duplicate"),
        (["rule", "random", "--exact", "--rules", "mini6", "--ray"], "drop --ray"),
        (
            ["rule", "random", "--exact", "--rules", "mini6", "--workers", "2", "--games", "3"],
            "drop --games, --workers",
        ),
        (["rule", "random", "--rules", "mini6", "--samples", "4"], "--samples goes with --exact"),
        (["rule", "nobody", "--exact", "--rules", "mini6"], "nobody"),
    ],
)
def test_evaluate_exact_cli_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        evaluate.main([*argv, "--no-progress"])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_evaluate_exact_out_writes_the_result(tmp_path, capsys):
    out = tmp_path / "result"
    assert evaluate.main(["rule", "random", "--exact", "--rules", "mini6", "--out", str(out), "--no-progress"]) == 0
    written = json.loads((out / "exact.json").read_text())
    assert written["agents"] == ["rule", "random"] and 0.6 < written["score"] < 0.8
    assert f"written: {out / 'exact.json'}" in capsys.readouterr().out


def test_evaluate_exact_out_that_cannot_be_written_is_refused_before_the_walk(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(
        "training.exploitability.exact_response.exact_head_to_head", lambda *a, **k: pytest.fail("walked")
    )
    with pytest.raises(SystemExit) as stop:
        evaluate.main(["rule", "random", "--exact", "--rules", "mini6", "--out", str(blocker / "sub"), "--no-progress"])
    assert stop.value.code == 2 and "--out" in capsys.readouterr().err


@pytest.mark.parametrize("json_flag", [["--json"], []])
@pytest.mark.parametrize("tool", ["evaluate", "exploit"])
def test_a_nan_result_is_an_error_never_output(tool, json_flag, tmp_path, capsys, monkeypatch):
    if tool == "evaluate":
        report = {"agents": ["rule", "random"], "rules": "mini6", "score": float("nan"), "score_as_first": 0.5}
        report |= {"score_as_second": 0.5, "exact_probabilities": True, "num_infosets": 1, "seconds": 0.0}
        monkeypatch.setattr("training.exploitability.exact_response.exact_head_to_head", lambda *a, **k: report)
        argv = ["rule", "random", "--exact", "--rules", "mini6", "--out", str(tmp_path), *json_flag]
        run = evaluate.main
    else:
        report = {"agent": "rule", "rules": "mini6", "information": "observations", "exploitability": float("nan")}
        report |= {"best_response_as_first": 0.5, "best_response_as_second": 0.5, "exact_probabilities": True}
        monkeypatch.setattr("training.exploitability.exact_response.exact_exploitability", lambda *a, **k: report)
        argv = ["rule", "--exact", "--rules", "mini6", *json_flag]
        run = exploit.main
    with pytest.raises(SystemExit) as stop:
        run([*argv, "--no-progress"])
    assert stop.value.code == 1
    out, err = capsys.readouterr()
    assert "NaN" not in out and "nan" not in out
    field = "score" if tool == "evaluate" else "exploitability"
    assert f"the result's {field} is nan, which JSON cannot hold: nothing was written" in err
    assert not (tmp_path / "exact.json").exists()


def test_an_agent_giving_nan_probabilities_is_refused(tree):
    class NaNAgent:
        remembers_round = False

        def act(self, observation):
            return int(np.flatnonzero(observation["action_mask"])[0])

        def action_probabilities(self, observation):
            probs = observation["action_mask"].astype(np.float64)
            probs[np.flatnonzero(probs)[0]] = np.nan
            return probs / np.nansum(probs)

    with pytest.raises(ValueError, match="not a distribution over the legal actions"):
        exact_exploitability(NaNAgent(), "mini6", tree=tree)
