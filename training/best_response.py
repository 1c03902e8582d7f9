"""Exact best responses to any agent on a ladder rung, and so its exact exploitability.

The rung's whole tree is built once (:func:`loveletter_env.tree.build_tree`). The agent is asked for
its action probabilities at every information set of the round (both seats: it plays
each in turn), through ``action_probabilities`` (see
:class:`~loveletter_env.agents.base.ProbabilisticAgent`); an agent that remembers the round
is first replayed along the set's history (its observations and its own plays). Then a
best response is computed exactly in each seat on the same tree.

``exploitability`` is the mean, over the two seats, of the best response's expected score
against the agent, minus 0.5 (scores 1 / ½ / 0; player 0 moves first). The search agents'
probabilities are estimates (``probability_samples`` searches per decision), so their
figure is an estimate too; the result says which.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents.specs import AgentSpec, agent_label, resolve_agent
from loveletter_env.rules import Rules
from loveletter_env.tree import GameTree, build_tree, key_to_observation

from .cfr import TreeWorkspace

#: Observations per network call for agents that take a batch.
BATCH = 4096


class AgentProbabilityError(ValueError):
    """An agent cannot give action probabilities, or gave ones that are not a distribution over legal actions."""


def _observation(tree: GameTree, infoset: int) -> dict[str, np.ndarray]:
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[tree.actions[tree.action_offsets[infoset] : tree.action_offsets[infoset + 1]]] = 1
    return {"observation": key_to_observation(tree.key(infoset)), "action_mask": mask}


def _checked(agent: Any, tree: GameTree, infoset: int, probs: np.ndarray) -> np.ndarray:
    lo, hi = tree.action_offsets[infoset], tree.action_offsets[infoset + 1]
    probs = np.asarray(probs, dtype=np.float64).reshape(-1)
    legal = probs[tree.actions[lo:hi]]
    if (
        probs.shape[0] != NUM_ACTIONS
        or not np.isfinite(probs).all()
        or abs(legal.sum() - 1.0) > 1e-6
        or (legal < 0).any()
    ):
        raise AgentProbabilityError(
            f"agent {agent!r} gave action probabilities that are not a distribution over the legal actions "
            f"{tree.actions[lo:hi].tolist()}: {probs.tolist()}"
        )
    return legal


def agent_strategy(agent: Any, tree: GameTree, progress: bool = False) -> np.ndarray:
    """float64 per action of ``tree``: the agent's probability of each action at every
    information set (see the module docstring)."""
    if not callable(getattr(agent, "action_probabilities", None)):
        raise AgentProbabilityError(
            f"agent {agent!r} has no action_probabilities(observation): an exact best response needs the "
            "probability of each of its actions (see loveletter_env.agents.base.ProbabilisticAgent)"
        )
    strategy = np.zeros(tree.actions.shape[0], dtype=np.float64)
    counts = np.diff(tree.action_offsets)
    forced = np.flatnonzero(counts == 1)
    strategy[tree.action_offsets[forced]] = 1.0
    ask = np.flatnonzero(counts > 1)
    from tqdm import tqdm

    bar = tqdm(total=len(ask), unit="set", desc="agent probabilities", disable=not progress, dynamic_ncols=True)
    remembers = bool(getattr(agent, "remembers_round", True))
    batched = getattr(agent, "action_probabilities_batch", None)
    if not remembers and callable(batched):
        for start in range(0, len(ask), BATCH):
            chunk = ask[start : start + BATCH]
            observations = [_observation(tree, int(i)) for i in chunk]
            probs = batched(
                np.stack([o["observation"] for o in observations]), np.stack([o["action_mask"] for o in observations])
            )
            for i, p in zip(chunk, probs):
                lo, hi = tree.action_offsets[i], tree.action_offsets[i + 1]
                strategy[lo:hi] = _checked(agent, tree, int(i), p)
            bar.update(len(chunk))
    else:
        parents = tree.parents() if remembers else np.empty(0, np.int64)
        for i in ask:
            i = int(i)
            if remembers:
                _replay(agent, tree, i, parents)
            lo, hi = tree.action_offsets[i], tree.action_offsets[i + 1]
            strategy[lo:hi] = _checked(agent, tree, i, agent.action_probabilities(_observation(tree, i)))
            bar.update()
    bar.close()
    return strategy


def _replay(agent: Any, tree: GameTree, infoset: int, parents: np.ndarray) -> None:
    """Reset ``agent`` and feed it the decisions of its round before ``infoset`` (those on
    the path to the set's first node; every node of the set has the same, as the
    observation recalls them)."""
    chain = []
    seat = tree.infoset_player[infoset]
    node = int(tree.infoset_node[infoset])
    while parents[node] >= 0:
        up = int(parents[node])
        i = int(tree.node_info[up])
        if tree.infoset_player[i] == seat:
            chain.append((i, int(tree.actions[tree.action_offsets[i] + node - tree.node_child[up]])))
        node = up
    if callable(getattr(agent, "reset", None)):
        agent.reset()
    replay = getattr(agent, "replay_action", None)
    for parent, action in reversed(chain):
        if not callable(replay):
            raise AgentProbabilityError(f"agent {agent!r} remembers the round but has no replay_action()")
        replay(_observation(tree, parent), action)


def _resolved_strategy(
    spec: AgentSpec, tree: GameTree, seed: int, samples: int | None, progress: bool
) -> tuple[Any, np.ndarray]:
    """The agent ``spec`` names and its strategy over ``tree``; ``samples`` searches per decision
    for an agent whose probabilities are estimated."""
    player = resolve_agent(spec, seed=seed)
    if samples is not None and not getattr(player, "exact_probabilities", True):
        player.probability_samples = samples  # type: ignore[attr-defined]
    return player, agent_strategy(player, tree, progress=progress)


def exact_exploitability(
    agent: AgentSpec,
    rules: str | Rules,
    seed: int = 0,
    samples: int | None = None,
    progress: bool = False,
    tree: GameTree | None = None,
) -> dict[str, Any]:
    """The agent's exact exploitability on one round of a ladder rung.

    Args:
        agent: any agent spec (``"rule"``, ``"solved:path=FILE"``, a checkpoint path...) or agent object.
        rules: a rung: ``mini6`` .. ``mini9``.
        seed: the agent's seed (its probabilities do not depend on it, except a search's estimates).
        samples: searches per decision for agents whose probabilities are estimated (default: the agent's own).
        progress: show a progress bar while the agent is queried.
        tree: the rung's tree, when the caller built it already.

    Returns:
        A dict with ``exploitability``, ``best_response_as_first`` / ``_as_second`` (the best
        response's expected score in seat 0, moving first, and in seat 1), ``agent_as_first_score``
        (the agent's score against a best response from seat 0), ``exact_probabilities`` and more.
    """
    started = time.perf_counter()
    tree = tree or build_tree(rules)
    player, strategy = _resolved_strategy(agent, tree, seed, samples, progress)
    exact = bool(getattr(player, "exact_probabilities", True))
    result = TreeWorkspace(tree).exploitability(strategy)
    report: dict[str, Any] = {
        "agent": agent_label(agent),
        "rules": tree.rules.name,
        "exploitability": result.exploitability,
        "best_response_as_first": result.best_response_as_first,
        "best_response_as_second": result.best_response_as_second,
        "agent_as_first_score": 1.0 - result.best_response_as_second,
        "agent_as_second_score": 1.0 - result.best_response_as_first,
        "exact_probabilities": exact,
        "num_infosets": tree.num_infosets,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if not exact:
        report["samples_per_decision"] = int(getattr(player, "probability_samples", 0))
    return report


def exact_head_to_head(
    agents: tuple[AgentSpec, AgentSpec],
    rules: str | Rules,
    seed: int = 0,
    samples: int | None = None,
    progress: bool = False,
    tree: GameTree | None = None,
) -> dict[str, Any]:
    """Two agents' exact expected scores against each other on one round of a ladder rung.

    Both agents are asked for their action probabilities at every information set (as
    :func:`exact_exploitability` asks one), and the expected score is summed over every
    deal and every branch of their play: the figure a match of infinitely many rounds
    would give, with no interval. Each agent plays each seat once.

    Returns:
        A dict with ``score`` (the first agent's mean score over the two seats),
        ``score_as_first`` / ``score_as_second`` (its score moving first / second),
        ``exact_probabilities`` (false when a search agent's probabilities were sampled) and more.
    """
    started = time.perf_counter()
    tree = tree or build_tree(rules)
    (first_agent, first), (second_agent, second) = (
        _resolved_strategy(spec, tree, seed, samples, progress) for spec in agents
    )
    exact = all(bool(getattr(p, "exact_probabilities", True)) for p in (first_agent, second_agent))
    work = TreeWorkspace(tree)
    as_first = work.head_to_head(first, second)
    as_second = 1.0 - work.head_to_head(second, first)
    return {
        "agents": [agent_label(spec) for spec in agents],
        "rules": tree.rules.name,
        "score": (as_first + as_second) / 2,
        "score_as_first": as_first,
        "score_as_second": as_second,
        "exact_probabilities": exact,
        "num_infosets": tree.num_infosets,
        "seconds": round(time.perf_counter() - started, 3),
    }


def describe(report: Mapping[str, Any]) -> str:
    """One paragraph for the terminal."""
    how = (
        "the agent's probabilities are exact"
        if report["exact_probabilities"]
        else f"ESTIMATED: the agent's probabilities are sampled from {report['samples_per_decision']} searches "
        "per decision, so this figure is an estimate"
    )
    return (
        f"exploitability of {report['agent']} on {report['rules']}: {report['exploitability']:.4f} "
        f"(an exact best response scores {report['best_response_as_first']:.4f} moving first and "
        f"{report['best_response_as_second']:.4f} moving second; 0 at an equilibrium; {how})"
    )


def refuse_unused_flags(parser: Any, mode: str, given: Mapping[str, bool]) -> None:
    """Stop through ``parser.error`` when any flag of ``given`` was set: ``mode`` does not use it,
    and a flag that changes nothing would let the reader think it did."""
    unused = [flag for flag, on in given.items() if on]
    if unused:
        parser.error(f"{mode}: drop {', '.join(unused)}")


def report_json(report: Mapping[str, Any]) -> str:
    """``report`` as strict JSON; a ``ValueError`` naming the field where a NaN or an infinity
    would make the output something JSON readers refuse."""
    for key, value in report.items():
        if isinstance(value, float) and not np.isfinite(value):
            raise ValueError(f"the result's {key} is {value}, which JSON cannot hold: nothing was written")
    try:
        return json.dumps(report, allow_nan=False)
    except ValueError:  # deeper in a list or dict
        raise ValueError("the result holds NaN or an infinity, which JSON cannot hold: nothing was written") from None


def exact_main(parser: Any, args: Any) -> dict[str, Any]:
    """The ``--exact`` branch of ``python -m training.exploit`` (``args`` parsed there)."""
    import sys

    from loveletter_env.agents.specs import is_checkpoint_path

    from .interrupt import exit_interrupted

    if not args.rules:
        parser.error("--exact needs --rules: a ladder rung (mini6, mini7, mini8, mini9)")
    if args.players != 2:
        parser.error(f"--exact solves 2-player rounds (the ladder's rungs); got --players {args.players}")
    if args.samples is not None and args.samples < 1:
        parser.error("--samples must be positive")
    agent: Any = args.checkpoint
    try:
        if args.sampled:
            # A checkpoint plays greedily unless told to sample: measure the mode asked for.
            if not is_checkpoint_path(agent):
                parser.error(f"--sampled is for checkpoints; {agent!r} is not one")
            from .checkpoint import load_agent

            agent = load_agent(agent, greedy=False, seed=args.seed)
        print(f"building the tree of {args.rules} ...", file=sys.stderr)
        report = exact_exploitability(
            agent,
            args.rules,
            seed=args.seed,
            samples=args.samples,
            progress=not args.no_progress,
        )
    except (ValueError, FileNotFoundError) as err:  # bad rules or agents, unreadable checkpoints or policies
        parser.error(str(err))
    except KeyboardInterrupt:
        print("\ninterrupted; nothing was measured", file=sys.stderr)
        exit_interrupted()
    except MemoryError:
        parser.exit(1, f"{parser.prog}: error: out of memory for the tree of {args.rules}; nothing was measured\n")
    report["agent"] = f"{args.checkpoint} (sampling)" if args.sampled else args.checkpoint
    try:
        text = report_json(report)  # also when printing words: a NaN is a failure either way
    except ValueError as err:
        parser.exit(1, f"{parser.prog}: error: {err}\n")
    print(text if args.json else describe(report))
    sys.stdout.flush()
    return report
