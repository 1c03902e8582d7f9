"""The compiled search (``loveletter_env.agents.compiled_belief``) against its Python reference:
the same generator seeding, the same scores to the last bit, the same playouts and the
same ISMCTS moves. The speed itself is measured by ``python -m loveletter_env.agents.ismcts_bench``."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from loveletter_env import engine
from loveletter_env.aec import raw_env
from loveletter_env.agents import ISMCTSAgent, ismcts_bench
from loveletter_env.agents.belief import action_scores
from loveletter_env.agents.compiled_belief import (
    model_weights,
    playout,
    record_scores,
    search_deals,
    seed_generator,
)
from loveletter_env.agents.ismcts import (
    deal_constraints,
    deal_state,
    kept_and_drawn,
    model_action,
    sample_deal,
    seat_view,
)
from loveletter_env.agents.opponent_model import play_likelihoods
from loveletter_env.cards import FULL_DECK
from loveletter_env.core import layout, record_from_state
from loveletter_env.core.mt19937 import MT_WORDS
from loveletter_env.rules import PRESETS

# Every preset at every table it can be played at (a ladder rung: its own table size only).
TABLES = [
    (n, rules)
    for n in (2, 3, 4)
    for rules in sorted(PRESETS)
    if not PRESETS[rules].is_rung or n == PRESETS[rules].rung_players
]


def rounds_for(rules: str, games: int) -> int:
    """``games``, twice over on a ladder rung, whose rounds are a few turns long."""
    return 2 * games if PRESETS[rules].is_rung else games


def positions(num_players: int, rules: str, games: int, seed: int):
    """Engine states at every turn of ``games`` rounds where each move is random or the
    belief bot's (so knowledge, ruled-out values, protection and eliminations all occur)."""
    rng = random.Random(seed)
    preset = PRESETS[rules]
    for _ in range(games):
        deck = list(preset.in_play or FULL_DECK)  # a rung shuffles only its cards in play
        rng.shuffle(deck)
        if preset.is_rung:
            deck = list(preset.deck_from_in_play(deck))
        state = engine.new_game(num_players, deck, rng.randrange(num_players), rules)
        while not state.round_over:
            yield state
            legal = engine.legal_actions(state)
            action = rng.choice(legal) if rng.random() < 0.5 else model_action(state, legal, rng)
            engine.step(state, action)


@pytest.mark.parametrize("seed", [0, 1, 2**31, 2**32 - 1, 2**32, 2**63 + 12345, 2**64 - 1])
def test_seeding_matches_random_random(seed: int):
    mt = np.zeros(MT_WORDS + 1, dtype=np.uint32)
    seed_generator(np.uint64(seed), mt)
    assert tuple(int(word) for word in mt) == random.Random(seed).getstate()[1]


@pytest.mark.parametrize("num_players,rules", TABLES)
def test_scores_equal_the_python_belief_bot_bit_for_bit(num_players: int, rules: str):
    """Every legal action of every position scores exactly what ``belief.action_scores``
    gives on ``seat_view`` (same operations in the same order: == on floats)."""
    weights = model_weights()
    checked = 0
    for state in positions(num_players, rules, games=rounds_for(rules, 40), seed=num_players):
        legal = engine.legal_actions(state)
        expected = action_scores(seat_view(state, state.current), legal)
        scores = np.zeros(len(legal))
        record_scores(record_from_state(state), np.array(legal, dtype=np.int64), len(legal), 0, weights, scores)
        assert scores.tolist() == [expected[a] for a in legal], (state, legal)
        checked += len(legal)
    assert checked > 500


@pytest.mark.parametrize("num_players,rules", TABLES)
def test_playouts_play_the_python_playout_move_for_move(num_players: int, rules: str):
    """From a position, a first action and a playout seed, the compiled playout ends in
    exactly the game the Python playout (``model_action`` with ``random.Random(seed)``)
    reaches, with the same draws from the generator, and gives seat 0 its share of the win."""
    weights = model_weights()
    rng = random.Random(100 + num_players)
    compared = 0
    for state in positions(num_players, rules, games=rounds_for(rules, 15), seed=10 + num_players):
        first = rng.choice(engine.legal_actions(state))
        seed = rng.getrandbits(64)
        reference = state.clone()
        python_rng = random.Random(seed)
        engine.step(reference, first)
        while not reference.round_over:
            engine.step(reference, model_action(reference, engine.legal_actions(reference), python_rng))
        record = record_from_state(state)
        mt = np.zeros(MT_WORDS + 1, dtype=np.uint32)
        seed_generator(np.uint64(seed), mt)
        reward = playout(record, first, mt, weights)
        assert np.array_equal(record, record_from_state(reference))
        assert tuple(int(w) for w in mt) == python_rng.getstate()[1]  # the same draws, too
        winners = reference.round_winners
        assert reward == (1.0 / len(winners) if 0 in winners else 0.0)
        compared += 1
    assert compared > 50


def test_every_candidate_plays_the_same_deal_with_the_same_seed():
    """In the deal loop, each candidate is played on its own copy of the deal with a generator
    seeded by the agent's next ``getrandbits(64)``: the totals are those single playouts'
    rewards, added to what was there, and the deal itself is left as sampled."""
    deck = list(FULL_DECK)
    random.Random(2).shuffle(deck)
    state = engine.new_game(3, deck, 0)
    view = seat_view(state, 0)
    reference = random.Random(11)
    _, dealt = sample_deal(view, reference)
    playout_seed = reference.getrandbits(64)
    record = record_from_state(deal_state(view, [kept_and_drawn(view)[0], 0, 0], FULL_DECK))
    legal = np.array(engine.legal_actions(state), dtype=np.int64)
    weights = model_weights()
    totals = np.full(len(legal), 0.5)
    mt = np.array(random.Random(11).getstate()[1], dtype=np.uint32)
    pool = np.array([v for v in sorted(view.unseen) for _ in range(view.unseen[v])], dtype=np.int64)
    none = np.zeros(4, dtype=np.int64)
    search_deals(
        record, 1, pool, np.array([1, 2]), none, none > 0, np.zeros((4, 9)), none[:0], mt, legal, weights, totals
    )
    assert tuple(int(c) for c in record[layout.DECK : layout.DECK + 16]) == dealt
    for i, action in enumerate(legal):
        playout_mt = np.zeros(MT_WORDS + 1, dtype=np.uint32)
        seed_generator(np.uint64(playout_seed), playout_mt)
        assert totals[i] == 0.5 + playout(record.copy(), action, playout_mt, weights)
    assert len(set(totals)) > 1  # the candidates' playouts do differ


@pytest.mark.parametrize("num_players,rules", TABLES)
def test_ismcts_moves_equal_the_python_reference(num_players: int, rules: str):
    """Whole rounds with ``ismcts`` in every seat, each decision taken by the compiled search
    and by the Python reference loop (``use_core=False``) from agents in the same state:
    the same move every time (kept-card memory and generators go on across the round)."""
    decisions = 0
    for game in range(3):
        env = raw_env(num_players=num_players, episode="round", rules=rules)
        env.reset(seed=game)
        core = [ISMCTSAgent(seed=10 * game + s, iterations=40) for s in range(num_players)]
        reference = [ISMCTSAgent(seed=10 * game + s, iterations=40) for s in range(num_players)]
        for agent in reference:
            agent.use_core = False
        while not all(env.terminations.values()):
            seat = int(env.agent_selection.rsplit("_", 1)[1])
            observation = env.observe(env.agent_selection)
            action = core[seat].act(observation)
            assert action == reference[seat].act(observation)
            assert core[seat].rng.getstate() == reference[seat].rng.getstate()
            env.step(action)
            decisions += 1
    # At least two moves a round, one on a 4-player rung, whose Prince can take the last card.
    assert decisions >= (3 if PRESETS[rules].rung_players == 4 else 6)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_compiled_deals_equal_sample_deal(num_players: int):
    """The compiled deal loop samples the hidden cards exactly as ``sample_deal`` (weighted by
    play likelihoods, avoiding ruled-out values) and leaves the agent's generator where the
    reference leaves it after the deal and the playout seed."""
    rng = random.Random(7)
    compared = 0
    for state in positions(num_players, "classic", games=12, seed=20 + num_players):
        view = seat_view(state, state.current)
        likelihoods = {k: play_likelihoods(view, k) for k in range(1, num_players)}
        seed = rng.getrandbits(32)
        reference = random.Random(seed)
        hands, deck = sample_deal(view, reference, likelihoods)
        reference.getrandbits(64)
        hidden = [k for k in range(1, num_players) if view.in_round(k) and not view.known_cards[k]]
        record = record_from_state(deal_state(view, [view.hand[0]] + [0] * (num_players - 1), FULL_DECK))
        pool, banned, weighted, table = deal_constraints(view, hidden, likelihoods)
        mt = np.array(random.Random(seed).getstate()[1], dtype=np.uint32)
        none = np.zeros(0, dtype=np.int64)
        args = (
            pool,
            np.array(hidden, dtype=np.int64),
            banned,
            weighted,
            table,
            np.array(view.face_up, dtype=np.int64),
            mt,
            none,
        )
        assert search_deals(record, 1, *args, model_weights(), np.zeros(0)) == -1
        assert [int(record[layout.HANDS + k]) for k in hidden] == [hands[k] for k in hidden]
        assert tuple(int(c) for c in record[layout.DECK : layout.DECK + 16]) == deck
        assert tuple(int(w) for w in mt) == reference.getstate()[1]
        compared += 1
    assert compared > 30


def test_bench_command_compares_both_paths(capsys):
    """The timing command runs both paths on the same positions and reports no differing move."""
    assert ismcts_bench.main(["--players", "3", "--positions", "3", "--iterations", "12", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "3 players: compiled" in out and "moves differ at 0 of 3 positions" in out


def test_bench_command_alternates_the_two_paths_position_by_position(monkeypatch, capsys):
    """The speed-up is a ratio of two timings: each position is decided by both paths one
    after the other (which goes first alternating), so a change of load on the machine hits
    both alike; timing every compiled decision and then every Python one put a load change
    between the two blocks into the ratio."""
    order = []
    act = ISMCTSAgent.act
    monkeypatch.setattr(ISMCTSAgent, "act", lambda self, obs: order.append(self.use_core) or act(self, obs))
    assert ismcts_bench.main(["--players", "2", "--positions", "4", "--iterations", "5", "--no-progress"]) == 0
    timed = order[1:]  # the first is the process's first decision, timed apart
    assert timed == [True, False, False, True, True, False, False, True], order
    assert "moves differ at 0 of 4 positions" in capsys.readouterr().out


def test_bench_command_reports_the_machine_load_of_its_run(monkeypatch, capsys):
    """Wall-clock figures depend on what else the machine runs: the command says the load."""
    loads = iter([(0.5, 0.0, 0.0), (2.0, 0.0, 0.0)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    assert ismcts_bench.main(["--players", "2", "--positions", "2", "--iterations", "5", "--no-progress"]) == 0
    assert "machine load (1-minute average): 0.50 at the start, 2.00 at the end" in capsys.readouterr().out


def test_bench_command_ends_a_ctrl_c_with_a_sentence_and_status_130(monkeypatch, capsys):
    """A Ctrl-C while positions are played or decided: a sentence on standard error and status
    130 (128 + SIGINT, what a shell reports), not a traceback from inside the search."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ismcts_bench, "time_decisions", interrupted)
    with pytest.raises(SystemExit) as stop:
        ismcts_bench.main(["--players", "2", "--positions", "2", "--iterations", "5", "--no-progress"])
    assert stop.value.code == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err


@pytest.mark.parametrize("seed", [2**63 - 1, 2**64])
def test_bench_command_names_a_seed_its_bots_and_rounds_cannot_take(seed, capsys):
    """The positions' bots and rounds are seeded ``seed``, ``seed + 1``, ...: a ``--seed`` whose
    followers pass 2**63 - 1 is named as the command's error, not a traceback from a bot."""
    with pytest.raises(SystemExit) as stop:
        ismcts_bench.main(["--players", "2", "--positions", "2", "--iterations", "5", "--seed", str(seed)])
    assert stop.value.code == 2
    assert f"--seed {seed}" in capsys.readouterr().err
