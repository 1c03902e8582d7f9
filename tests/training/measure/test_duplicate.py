"""Duplicate deals (``evaluate(duplicate=True)``, ``--duplicate``): every deal is played once in
each seat rotation, the intervals come from per-deal scores, the run does not depend on the
worker count, and runs without the mode keep their figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from loveletter_env.replay import load_replay
from training.evaluate import build_parser, main
from training.learn.interrupt import EXIT_INTERRUPTED
from training.measure import evaluate_command
from training.measure import evaluation as evaluation_module
from training.measure.evaluation import evaluate
from training.measure.league import group_seed, league
from training.measure.matches import MatchSetup, PlayInterrupted, play_matches
from training.measure.stats import Z_95, EpisodeRecord, summarize, wilson_interval


def _dealt(folder: Path, episodes: int) -> list[tuple[tuple[int, ...], int, list[str], list[int | None]]]:
    """Each saved episode's first deck, first player, agent name by seat and agent seed by seat."""
    replays = [load_replay(folder / f"episode_{index:06d}.json") for index in range(episodes)]
    return [
        (r.rounds[0].deck, r.rounds[0].first_player, [a.name for a in r.agents], [a.seed for a in r.agents])
        for r in replays
    ]


@pytest.mark.parametrize("num_players", [2, 3])
def test_each_deal_is_played_once_in_every_seat_rotation(tmp_path: Path, num_players: int):
    lineup = ["rule", "random", "belief"][:num_players]
    rounds = 2 * num_players
    evaluate(lineup, num_players, rounds, seed=9, save_replays=tmp_path / "dup", duplicate=True)
    evaluate(lineup, num_players, rounds, seed=9, save_replays=tmp_path / "plain")
    duplicate = _dealt(tmp_path / "dup", rounds)
    plain = _dealt(tmp_path / "plain", rounds)
    deals = [duplicate[start : start + num_players] for start in (0, num_players)]
    for deal in deals:
        # One deck and one starting seat for the whole deal...
        assert len({(deck, first_player) for deck, first_player, _, _ in deal}) == 1
        # ... with every slot in every seat once.
        seatings = [tuple(names) for _, _, names, _ in deal]
        assert len(set(seatings)) == num_players
        assert all(len({seating[seat] for seating in seatings}) == num_players for seat in range(num_players))
    assert deals[0][0][0] != deals[1][0][0]  # the next deal is another one
    # Without the mode every episode has its own deal.
    assert len({deck for deck, _, _, _ in plain}) == rounds
    # The seating and the agents' seeds stay those of the plain run: only the deal is shared.
    assert [(names, seeds) for _, _, names, seeds in duplicate] == [(names, seeds) for _, _, names, seeds in plain]


def test_rounds_must_make_whole_deals():
    with pytest.raises(ValueError, match=r"rounds must be a multiple of 4 \(the table size\); got 10"):
        evaluate(["rule", "random"], num_players=4, rounds=10, duplicate=True)
    with pytest.raises(ValueError, match="multiple of 3"):
        play_matches(MatchSetup.of(["rule"], num_players=3, duplicate=True), rounds=4)
    assert evaluate(["rule", "random"], num_players=4, rounds=10).episodes == 10  # fine without the mode


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--players", "4", "--rounds", "1001"],
            "--duplicate plays each deal once per seat rotation, so --rounds must be a multiple of 4 "
            "(the table size); got 1001",
        ),
        (["--players", "3", "--games", "4"], "so --games must be a multiple of 3 (the table size); got 4"),
    ],
)
def test_the_command_line_names_a_count_that_makes_no_whole_deals(capsys, args: list[str], message: str):
    with pytest.raises(SystemExit) as exit_info:
        main(["rule", "random", *args, "--duplicate", "--no-progress"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_league_plays_every_group_on_duplicate_deals(tmp_path, capsys):
    agents = ["random", "rule", "belief"]
    table = {e.agent: e for e in league(agents, num_players=2, rounds=20, seed=4, duplicate=True)}
    # The group of belief and rule (seated in their labels' order) plays its own seed, on duplicate deals.
    setup = MatchSetup.of(["belief", "rule"], seed=group_seed(4, ["belief", "rule"]), duplicate=True)
    _, records = play_matches(setup, rounds=20)
    rule_share = sum(1 / len(r.winners) for r in records if 1 in r.winners) / 20
    assert table["rule"].head_to_head["belief"] == pytest.approx(rule_share)
    plain = {e.agent: e for e in league(agents, num_players=2, rounds=20, seed=4)}
    assert any(plain[a].head_to_head != table[a].head_to_head for a in agents)

    with pytest.raises(SystemExit) as exit_info:
        main(["--league", "random", "rule", "--rounds", "5", "--duplicate", "--no-progress"])
    assert exit_info.value.code == 2
    assert "--rounds must be a multiple of 2" in capsys.readouterr().err
    main(["--league", "random", "rule", "--rounds", "4", "--duplicate", "--no-progress", "--out", str(tmp_path)])
    assert (tmp_path / "league.md").is_file()


def test_the_default_count_is_rounded_up_to_whole_deals(monkeypatch, capsys):
    played = {}

    def fake_evaluate(agents, **kwargs):
        played["rounds"], played["duplicate"] = kwargs["rounds"], kwargs["duplicate"]
        return evaluate(agents, kwargs["num_players"], 3, duplicate=True)

    monkeypatch.setattr(evaluate_command, "evaluate", fake_evaluate)
    assert main(["rule", "random", "--players", "3", "--duplicate", "--no-progress"]) == 0
    assert played == {"rounds": 1002, "duplicate": True}
    assert "--duplicate" in build_parser().format_help()


def _records(*episodes: tuple[tuple[int, ...], int]) -> list[EpisodeRecord]:
    return [EpisodeRecord(winners, first_slot, turns=5, rounds=1) for winners, first_slot in episodes]


def test_intervals_over_deals_and_deals_decided_by_the_seat():
    # 2 players, 3 deals; episode j of a deal puts slot i at seat (i + j) % 2.
    records = _records(
        ((0,), 0),  # deal 1: seat 0 wins (slot 0 there), seat 0 starts
        ((1,), 1),  #         seat 0 wins again (slot 1 there now): the seat decided the deal
        ((0,), 1),  # deal 2: slot 0 wins from seat 0, seat 1 starts
        ((0,), 0),  #         and again from seat 1: the agent decided it
        ((0, 1), 0),  # deal 3: a shared win, so not decided by the seat
        ((1,), 1),
    )
    result = summarize(records, ["a", "b"], 2, "round", 0, duplicate=True)
    assert result.duplicate and result.decided_by_seat == pytest.approx(1 / 3)
    assert result.wins == [4, 3] and result.win_rate == pytest.approx([4 / 6, 3 / 6])
    # Slot 0 scores 1/2, 1, 1/2 over the deals: mean 2/3, sample sd sqrt(1/12).
    half = Z_95 * math.sqrt(1 / 12) / math.sqrt(3)
    assert result.ci95[0] == pytest.approx((2 / 3 - half, 2 / 3 + half))
    # Slot 1 scores 1/2, 0, 1: mean 1/2, sd 1/2; the interval overruns both ends and is clipped.
    assert result.ci95[1] == (0.0, 1.0)
    # The first player (same seat in every rotation of a deal) scores 1, 1/2, 1: mean 5/6.
    assert result.first_seat_win_rate == pytest.approx(5 / 6)
    assert result.first_seat_ci95 == pytest.approx((5 / 6 - half, 1.0))
    assert "duplicate deals: 3 deals, each played 2 times with seats rotated; 33.3% won by the same seat" in (
        result.summary()
    )
    assert result.to_dict()["decided_by_seat"] == pytest.approx(1 / 3) and result.to_dict()["duplicate"] is True


def test_three_player_deals_and_the_fallbacks():
    records = _records(
        ((0,), 0),  # deal 1: seat 0 wins in every rotation (slots 0, 2, 1 there in turn)
        ((2,), 2),
        ((1,), 1),
        ((0,), 0),  # deal 2: slot 0 wins from seats 0 and 1, slot 2 from seat 1 ((2 + 5) % 3)
        ((0,), 2),
        ((2,), 1),
    )
    result = summarize(records, ["a", "b", "c"], 3, "round", 0, duplicate=True)
    assert result.decided_by_seat == 0.5
    # Slot 0 scores 1/3 and 2/3: mean 1/2, sample sd sqrt(1/18).
    half = Z_95 * math.sqrt(1 / 18) / math.sqrt(2)
    assert result.ci95[0] == pytest.approx((0.5 - half, 0.5 + half))
    # One deal has no spread to measure: the Wilson interval over its episodes stands in.
    one_deal = summarize(records[:3], ["a", "b", "c"], 3, "round", 0, duplicate=True)
    assert one_deal.ci95 == [wilson_interval(1, 3)] * 3 and one_deal.decided_by_seat == 1.0
    # Deals that all score alike show no spread, which is no evidence of none: never an interval
    # of zero width, but the Wilson interval over the deals (here 2 deals that the seat decided).
    seat_decided = _records(((0,), 0), ((1,), 1), ((0,), 1), ((1,), 0))
    alike = summarize(seat_decided, ["a", "b"], 2, "round", 0, duplicate=True)
    assert alike.ci95 == [wilson_interval(1, 2)] * 2 and alike.ci95[0][0] < 0.5 < alike.ci95[0][1]
    shared_every_time = _records(((0, 1), 0), ((0, 1), 1), ((0,), 0), ((1,), 1))
    assert summarize(shared_every_time, ["a", "b"], 2, "round", 0, duplicate=True).decided_by_seat == 0.5
    with pytest.raises(ValueError, match="whole deals"):
        summarize(records[:4], ["a", "b", "c"], 3, "round", 0, duplicate=True)
    plain = summarize(records, ["a", "b", "c"], 3, "round", 0)
    assert plain.ci95[0] == wilson_interval(3, 6) and plain.decided_by_seat is None and not plain.duplicate
    assert "duplicate deals" not in plain.summary()


def test_duplicate_results_do_not_depend_on_the_worker_count():
    # Chunks of 3 episodes at 2 players: deals are split between the workers.
    one = evaluate(["rule", "random"], rounds=48, seed=4, duplicate=True)
    two = evaluate(["rule", "random"], rounds=48, seed=4, workers=2, duplicate=True)
    assert one.to_dict() == two.to_dict()
    assert one.duplicate and one.decided_by_seat is not None
    assert one.to_dict() != evaluate(["rule", "random"], rounds=48, seed=4).to_dict()


def test_the_command_line_prints_the_function_figures(capsys):
    assert main(["rule", "random", "--rounds", "24", "--seed", "2", "--duplicate", "--json", "--no-progress"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = evaluate(["rule", "random"], rounds=24, seed=2, duplicate=True).to_dict()
    assert printed == json.loads(json.dumps(expected))


def test_without_the_mode_figures_are_unchanged():
    # Figures measured before duplicate deals existed: the plain run's seeds did not move.
    result = evaluate(["rule", "random"], rounds=40, seed=3)
    assert result.wins == [28, 12] and result.first_seat_win_rate == 0.575
    assert result.mean_round_length == pytest.approx(3.975)
    assert evaluate(["belief", "random"], num_players=3, rounds=30, seed=7).wins == [13, 13, 4]
    explicit = evaluate(["rule", "random"], rounds=40, seed=3, duplicate=False)
    assert explicit.to_dict() == result.to_dict()
    assert not result.duplicate and result.decided_by_seat is None


def test_an_interrupted_duplicate_run_counts_whole_deals_only(monkeypatch, capsys):
    labels, records = play_matches(MatchSetup.of(["rule", "random"], seed=6, duplicate=True), rounds=10)

    def interrupted(*args, **kwargs):
        raise PlayInterrupted(labels, records[:5], 10)

    monkeypatch.setattr(evaluation_module, "play_matches", interrupted)
    assert main(["rule", "random", "--rounds", "10", "--seed", "6", "--duplicate", "--no-progress"]) == EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert "interrupted after 5 of 10 rounds; the figures cover the first 4 rounds of the same run, 2 whole deals" in (
        err
    )
    assert out.strip() == summarize(records[:4], labels, 2, "round", 6, duplicate=True).summary()

    def interrupted_in_the_first_deal(*args, **kwargs):
        raise PlayInterrupted(labels, records[:1], 10)

    monkeypatch.setattr(evaluation_module, "play_matches", interrupted_in_the_first_deal)
    assert main(["rule", "random", "--rounds", "10", "--duplicate", "--no-progress"]) == EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert out == "" and "before the first deal was played in every seat rotation; no figures" in err
