"""How a trained network plays: every config samples its policy, greedy play is an explicit
choice, and the networks already shipped keep playing greedily, as their files record, with
their bytes unchanged."""

from __future__ import annotations

import hashlib

import numpy as np
import torch
from conftest import ROOT

from loveletter_env.agents import GuidedSearchAgent
from loveletter_env.agents.specs import resolve_agent
from training.learn.checkpoint import load_agent, model_payload, save_checkpoint
from training.learn.config import TrainConfig, load_config, read_config, to_dict
from training.learn.policy_agent import PolicyAgent
from training.learn.ppo import ActorCritic

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))

#: The networks shipped before every config sampled: their sha256 and how they were trained to
#: play (greedily). Found by content, wherever under checkpoints/ they are kept.
SHIPPED = {
    "919c5350d00034d02d5d1dfb8cf6676cb85d8fe3e16d18f50c5754e365a76cac": "version 1 ppo_2p.pt",
    "5be05e2b1bb7aa482d8489f498a5ab44a02476238f678379801c4a76d0414726": "version 1 ppo_2to4p.pt",
    "63dc75086a7dadc106e86a8c322a39981802d040708846e041b38c02cb855d24": "version 2 ppo_2p.pt",
    "6bc8f79dad5b65cabfe7b3b6e4014a9e1d97467789eae380f5889f3ab0a3dfdf": "version 2 ppo_2to4p.pt",
}


def _shipped_files() -> dict[str, list]:
    found: dict[str, list] = {digest: [] for digest in SHIPPED}
    for path in sorted((ROOT / "checkpoints").rglob("*.pt")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in found:
            found[digest].append(path)
    return found


def test_every_config_records_sampling():
    assert CONFIGS
    for path in CONFIGS:
        section = read_config(path).get("eval") or {}  # the file's own keys, or those of the file it extends
        assert section.get("greedy") is False, f"{path.name} does not record eval.greedy: false"
        assert load_config(path).eval.greedy is False


def test_a_config_that_gives_no_way_of_playing_samples(tmp_path):
    bare = tmp_path / "bare.yaml"
    bare.write_text("run_name: bare\neval:\n  every: 0\n")
    assert load_config(bare).eval.greedy is False
    assert TrainConfig().eval.greedy is False
    # What a run of it records is what its checkpoints play by default.
    model = ActorCritic(hidden_sizes=(8,), generator=torch.Generator().manual_seed(0))
    data = {"model": model_payload(model), "config": to_dict(load_config(bare))}
    path = save_checkpoint(tmp_path / "run.pt", data)
    assert load_agent(path).greedy is False
    assert resolve_agent(str(path)).greedy is False
    assert load_agent(path, greedy=True).greedy is True
    assert resolve_agent(f"checkpoint:path={path},greedy=True").greedy is True


def test_a_policy_agent_samples_unless_told_to_play_greedily():
    from loveletter_env import env as make_env

    model = ActorCritic(hidden_sizes=(8,), generator=torch.Generator().manual_seed(0))
    sampling, greedy = PolicyAgent(model), PolicyAgent(model, greedy=True)
    assert sampling.greedy is False
    assert greedy.greedy is True
    # What each plays, many times over one decision (a fresh network's policy is near flat).
    game = make_env(num_players=2, episode="round")
    game.reset(seed=0)
    obs = game.observe(game.agent_selection)
    legal = np.flatnonzero(obs["action_mask"])
    assert len(legal) > 1
    logits, _ = model(torch.as_tensor(obs["observation"], dtype=torch.float32).unsqueeze(0))
    best = int(legal[logits[0, legal].argmax()])
    assert {greedy.act(obs) for _ in range(20)} == {best}
    picks = [sampling.act(obs) for _ in range(800)]
    assert set(picks) == set(legal.tolist())  # every legal action, none other
    probabilities = sampling.action_probabilities(obs)
    for action in legal:
        assert abs(picks.count(action) / len(picks) - probabilities[action]) < 0.06, action


def test_the_shipped_networks_keep_their_bytes_and_play_greedily_as_recorded():
    for digest, files in _shipped_files().items():
        assert files, f"no file under checkpoints/ has the sha256 of the {SHIPPED[digest]} ({digest})"
        for path in files:
            assert load_agent(path).greedy is True, f"{path} ({SHIPPED[digest]}) no longer plays greedily"
            assert resolve_agent(str(path)).greedy is True
            assert load_agent(path, greedy=False).greedy is False  # sampling is the explicit choice here


def test_guided_search_plays_the_same_whatever_way_the_checkpoint_records(tmp_path):
    """The guided agent takes the network's weights: the checkpoint's way of playing on its own
    does not change a move."""
    from loveletter_env import env as make_env

    model = ActorCritic(hidden_sizes=(16,), generator=torch.Generator().manual_seed(2))
    paths = [
        save_checkpoint(tmp_path / f"{g}.pt", {"model": model_payload(model), "config": {"eval": {"greedy": g}}})
        for g in (True, False)
    ]
    played = []
    for path in paths:
        agent = GuidedSearchAgent(path, seed=4, iterations=12)
        game = make_env(num_players=2, episode="round")
        game.reset(seed=6)
        moves = []
        for name in game.agent_iter():
            _, _, terminated, truncated, _ = game.last()
            move = None if terminated or truncated else agent.act(game.observe(name))
            moves.append(move)
            game.step(move)
        played.append(moves)
    assert played[0] == played[1] and any(m is not None for m in played[0])
