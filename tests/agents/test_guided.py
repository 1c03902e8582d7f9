"""The network-guided search (``guided``): it finds what the search can see and the
network cannot, follows the network where it is asked to, is reproducible for a seed,
refuses bad options by name, and works wherever an agent spec does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, act, deal_deck, make_env, play_legal_episode, start
from torch import nn

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents import GuidedSearchAgent, make_agent
from loveletter_env.agents.guided import encode_view
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.cards import BARON, COUNTESS, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from loveletter_env.observation import decode_observation, encode_observation
from training.measure.evaluation import evaluate

SHIPPED = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"


class FixedNetwork(nn.Module):
    """The same logits for every observation and a value of ``value`` (+1 win, -1 loss)."""

    def __init__(self, preferred: int | None = None, value: float = 0.0):
        super().__init__()
        logits = torch.zeros(NUM_ACTIONS)
        if preferred is not None:
            logits[preferred] = 5.0
        self.register_buffer("logits", logits)
        self.value = value

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.logits.expand(obs.shape[0], -1), torch.full((obs.shape[0],), self.value)


def observation(state, seat: int) -> dict:
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[list(engine.legal_actions(state))] = 1
    return {"observation": encode_observation(state, seat), "action_mask": mask}


def known_baron_state():
    """Player 0 saw player 1's Baron with a Priest; player 1 kept it (played a Countess);
    player 0 now holds two Guards and may name any value on player 1."""
    state = start(2, hands={0: PRIEST, 1: BARON}, draws=[GUARD, COUNTESS, GUARD])
    engine.step(state, act(PRIEST, 1))
    engine.step(state, act(COUNTESS))
    assert state.current == 0 and state.known[0][1] == BARON
    return state


def test_the_search_finds_a_sure_win_the_network_does_not_prefer():
    state = known_baron_state()
    network = FixedNetwork(preferred=act(GUARD, 1, PRINCESS))
    agent = GuidedSearchAgent(network, seed=0, iterations=40, width=0)
    assert agent.act(observation(state, 0)) == act(GUARD, 1, BARON)


def test_width_limits_the_search_to_the_networks_favourites():
    state = known_baron_state()
    network = FixedNetwork(preferred=act(GUARD, 1, PRINCESS))
    assert GuidedSearchAgent(network, seed=0, iterations=40, width=1).act(observation(state, 0)) == act(
        GUARD, 1, PRINCESS
    )


def test_a_margin_keeps_a_sure_win():
    state = known_baron_state()
    network = FixedNetwork(preferred=act(GUARD, 1, PRINCESS))
    agent = GuidedSearchAgent(network, seed=0, iterations=40, width=0, margin=3.0)
    assert agent.act(observation(state, 0)) == act(GUARD, 1, BARON)


def test_a_margin_overrides_the_network_only_beyond_the_noise():
    weights = np.full(4, 0.25)
    noisy = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.5, 1.0]])  # candidate 1 ahead by 0.375, SE 0.41
    steady = np.array([[0.2, 0.5], [0.4, 0.7], [0.1, 0.4], [0.3, 0.6]])  # ahead by 0.3 on every deal, SE 0
    plain = GuidedSearchAgent(FixedNetwork(), seed=0)
    careful = GuidedSearchAgent(FixedNetwork(), seed=0, margin=2.0)
    assert plain.pick_candidate(noisy, weights) == 1 and careful.pick_candidate(noisy, weights) == 0
    assert plain.pick_candidate(steady, weights) == 1 and careful.pick_candidate(steady, weights) == 1
    behind = steady[:, ::-1]
    assert plain.pick_candidate(behind, weights) == 0 and careful.pick_candidate(behind, weights) == 0
    tied = np.array([[0.5, 0.5], [0.2, 0.2]])
    assert plain.pick_candidate(tied, np.full(2, 0.5)) == 0


@pytest.mark.parametrize(
    "options", [{}, {"margin": 1.0}, {"opponents": "network", "depth": 2}, {"opponents": "belief", "reading": "belief"}]
)
def test_same_seed_same_play_and_only_legal_moves(options: dict):
    def play(seed: int) -> list[int]:
        agent = GuidedSearchAgent(SHIPPED, seed=seed, iterations=24, **options)
        env = loveletter_env.env(num_players=3, episode="round")
        actions = []
        for episode in range(3):
            env.reset(seed=episode)
            agent.reset(seed=seed + episode)
            actions += play_legal_episode(env, agent.act)
        return actions

    first = play(5)
    assert play(5) == first
    assert len(first) > 10


def test_observation_views_encode_back_to_the_same_vector():
    rng = np.random.default_rng(0)
    checked = 0
    for num_players in (2, 3, 4):
        for seed in range(10):
            env = loveletter_env.env(num_players=num_players, episode="round")
            env.reset(seed=seed)
            for _ in env.agent_iter():
                obs, _, terminated, truncated, _ = env.last()
                np.testing.assert_array_equal(encode_view(decode_observation(obs["observation"])), obs["observation"])
                checked += 1
                legal = np.flatnonzero(obs["action_mask"])
                env.step(None if terminated or truncated else int(rng.choice(legal)))
    assert checked > 100


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs a network: policy=PATH"),
        ({"policy": 42}, "policy must be a checkpoint path or a network module"),
        # A class, a network that does not fit and one with NaN outputs were taken, and failed (or
        # ranked moves by NaN) only at the first decision.
        ({"policy": FixedNetwork}, r"network module \(an instance\), got <class"),
        ({"policy": nn.Linear(3, 3)}, r"the policy network Linear cannot be run on observations \[B, 1382\]"),
        ({"policy": FixedNetwork(value=float("nan"))}, "FixedNetwork gives value estimates that are not finite"),
        ({"policy": SHIPPED, "iterations": 0}, r"iterations must be an integer in 1\.\.10000000"),
        ({"policy": SHIPPED, "iterations": 2**64}, r"iterations must be an integer in 1\.\.10000000"),
        ({"policy": SHIPPED, "width": -1}, "width must be a non-negative integer"),
        ({"policy": SHIPPED, "depth": 1.5}, "depth must be a positive integer"),
        ({"policy": SHIPPED, "opponents": "oracle"}, "opponents must be one of"),
        ({"policy": SHIPPED, "reading": "minds"}, "reading must be one of"),
        ({"policy": SHIPPED, "model_noise": 2.0}, "model_noise must be a number between 0 and 1"),
        ({"policy": SHIPPED, "model_noise": True}, "model_noise must be a number between 0 and 1"),
        ({"policy": SHIPPED, "margin": -1}, "margin must be a number between 0 and 10"),
    ],
)
def test_bad_options_are_named(options: dict, message: str):
    with pytest.raises(ValueError, match=message):
        make_agent("guided", seed=0, **options)


def test_a_missing_checkpoint_is_named(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        make_agent("guided", policy=tmp_path / "none.pt")
    with pytest.raises(ValueError, match="no option 'iteration'"):
        resolve_agent(f"guided:policy={SHIPPED},iteration=5")


def test_a_spec_string_works_in_evaluation(monkeypatch):
    spec = f"guided:policy={SHIPPED},iterations=16"
    agent = resolve_agent(spec, seed=1)
    assert isinstance(agent, GuidedSearchAgent) and agent.iterations == 16
    # Every move the guided agent plays with a choice to make is its search's choice.
    searched, moves = [], []
    search, act = GuidedSearchAgent.search, GuidedSearchAgent.act

    def spied_search(self, view, vector, legal):
        searched.append(search(self, view, vector, legal))
        return searched[-1]

    def spied_act(self, observation):
        before = len(searched)
        action = act(self, observation)
        choices = int(np.count_nonzero(observation["action_mask"]))
        moves.append((choices, searched[before:], action))
        return action

    monkeypatch.setattr(GuidedSearchAgent, "search", spied_search)
    monkeypatch.setattr(GuidedSearchAgent, "act", spied_act)
    result = evaluate([spec, "random"], num_players=2, rounds=6, seed=0, workers=1)
    assert result.agents[0] == spec and result.episodes == 6
    assert sum(result.win_rate) == pytest.approx(1.0, abs=0.2)
    assert sum(choices > 1 for choices, _, _ in moves) >= 6
    for choices, searches, action in moves:
        assert searches == ([action] if choices > 1 else [])


class CountingNetwork(nn.Module):
    """The shipped network, counting its forward passes."""

    def __init__(self, network: nn.Module):
        super().__init__()
        self.network = network
        self.batch_sizes: list[int] = []

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.batch_sizes.append(obs.shape[0])
        return self.network(obs)


@pytest.mark.parametrize("num_players", [2, 4])
def test_reading_a_play_through_the_network_is_one_batched_pass(num_players):
    """Each opponent's last play is read from every card they may have kept in one network pass,
    with the likelihoods that reading each rebuilt view on its own gives."""
    from loveletter_env.agents.guided import load_policy_network
    from loveletter_env.agents.opponent_model import one_view_at_a_time, play_likelihoods

    network = CountingNetwork(load_policy_network(SHIPPED))
    agent = GuidedSearchAgent(network, seed=0, iterations=8)
    # Seat 0 hides behind a Handmaid; every other seat then plays a card that shows nothing of its hand.
    if num_players == 2:
        deck = deal_deck(2, hands={0: HANDMAID, 1: BARON}, draws=[GUARD, PRIEST, GUARD])
        plays = [act(HANDMAID), act(PRIEST)]
    else:
        deck = deal_deck(
            4, hands={0: HANDMAID, 1: BARON, 2: KING, 3: PRINCE}, draws=[GUARD, GUARD, PRIEST, COUNTESS, GUARD]
        )
        plays = [act(HANDMAID), act(GUARD, 1, PRINCESS), act(PRIEST, 1), act(COUNTESS)]
    env = make_env(num_players, deck)
    for action in plays:
        env.step(action)
    view = decode_observation(env.last()[0]["observation"])
    network.batch_sizes.clear()
    batched = agent.read_plays(view, held=0)
    assert [k for k in range(1, num_players) if batched[k]] == list(range(1, num_players))
    assert len(network.batch_sizes) == num_players - 1  # one pass per opponent
    assert min(network.batch_sizes) > 1
    one_at_a_time = one_view_at_a_time(lambda view, card: agent._network_play_probabilities([view], card)[0])
    for k in range(1, num_players):
        single = play_likelihoods(view, k, 0, agent.model_noise, one_at_a_time)
        assert batched[k].keys() == single.keys()
        np.testing.assert_allclose(list(batched[k].values()), list(single.values()), rtol=1e-5)


def test_the_card_kept_last_round_is_not_read_as_kept_this_round():
    """At a seat's first turn of a new round its memory has no card kept "at its last turn of this
    round" (``KeptCardMemory.last_kept``), even when the deck is now smaller than at its last turn
    of the round before: there it held a Baron it had to play, and lost to a Princess."""
    agent = GuidedSearchAgent(FixedNetwork(), seed=0, iterations=8)
    deck = deal_deck(2, hands={0: BARON, 1: PRINCESS}, draws=[BARON])
    env = make_env(2, deck, episode="game")
    assert agent.act(env.last()[0]) == act(BARON, 1)  # forced: the only target, and both cards are Barons
    env.step(act(BARON, 1))
    while env.agent_selection != "player_0":  # the winner starts round 2: play its first turn
        env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))
    view = decode_observation(env.last()[0]["observation"])
    assert view.tokens == (0, 1) and not view.discards[0] and view.deck_size < 9  # the other seat won round 1
    assert agent.memory.last_kept(view) == 0
    assert agent.memory.old_card(view) == 0


def mismatched_observations() -> dict[str, dict]:
    """Observation dicts no search can act on though their masks allow something: the waiting
    seat's observation with the acting seat's mask, and the acting seat's with a mask of moves
    its hand does not allow (each a mask paired with another position's observation)."""
    env = loveletter_env.env(num_players=2, episode="round")
    env.reset(seed=0)
    acting = env.observe(env.agent_selection)
    waiting = env.observe(next(a for a in env.agents if a != env.agent_selection))
    foreign = np.zeros(NUM_ACTIONS, dtype=np.int8)
    foreign[[a for a in range(NUM_ACTIONS) if not acting["action_mask"][a]][:2]] = 1
    return {
        "out of turn": {"observation": waiting["observation"], "action_mask": acting["action_mask"]},
        "another mask": {"observation": acting["observation"], "action_mask": foreign},
    }


@pytest.mark.parametrize("case", ["out of turn", "another mask"])
def test_an_observation_the_search_cannot_act_on_is_refused_by_name(case):
    # Were taken: the waiting seat's failed inside determinize, and a foreign mask's moves
    # reached the engine, which called the searched move illegal.
    agent = GuidedSearchAgent(FixedNetwork(), seed=0, iterations=8)
    message = "not of the seat to act" if case == "out of turn" else "is not this observation's"
    with pytest.raises(ValueError, match=message):
        agent.act(mismatched_observations()[case])


def test_a_card_kept_last_round_is_not_taken_for_the_one_the_others_saw(monkeypatch):
    """At a seat's first turn of a new round, after a Prince made it discard and a Priest then
    saw its new card, the card it kept at its last turn of the round before may be the one it
    just drew: the search's deals must give the Priest's player the card it saw (a Baron),
    not last round's (a Handmaid, drawn now). ``KeptCardMemory.old_card`` named the Handmaid."""
    from loveletter_env.agents import guided

    agent = GuidedSearchAgent(FixedNetwork(), seed=0, iterations=8)
    state = start(3, hands={0: GUARD, 1: KING, 2: BARON}, draws=[HANDMAID, GUARD, PRIEST])
    agent.replay_action(observation(state, 0), act(GUARD, 1, PRINCESS))  # as if it had played it
    engine.step(state, act(GUARD, 1, PRINCESS))  # keeps the Handmaid; the Guard misses
    engine.step(state, act(GUARD, 2, HANDMAID))  # seat 1 knocks seat 0 out
    engine.step(state, act(BARON, 2))  # seat 2's Priest loses to seat 1's King: seat 1 wins round 1
    assert state.tokens == [0, 1, 0]
    deck = deal_deck(
        3, first_player=1, hands={0: GUARD, 1: PRINCE, 2: PRIEST}, draws=[GUARD, BARON, COUNTESS, HANDMAID]
    )
    engine.start_round(state, deck)
    engine.step(state, act(PRINCE, 2))  # seat 1: seat 0 discards its Guard and draws the Baron
    engine.step(state, act(PRIEST, 1))  # seat 2 sees the Baron
    view = decode_observation(encode_observation(state, 0))
    assert state.current == 0 and sorted(view.hand) == [BARON, HANDMAID] and view.drawn == HANDMAID
    assert view.seen_by[2] and view.deck_size < 11  # smaller than at seat 0's turn of round 1
    assert agent.memory.old_card(view) == 0
    deals = []

    def spied(*args, **kwargs):
        deals.append(guided_determinize(*args, **kwargs))
        return deals[-1]

    guided_determinize = guided.determinize
    monkeypatch.setattr(guided, "determinize", spied)
    agent.act(observation(state, 0))
    assert deals and all(deal.known[2][0] == BARON for deal in deals)
