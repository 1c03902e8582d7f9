"""A search best response's score against an agent: ``python -m training.exploit AGENT --search``.

The search (:class:`~loveletter_env.agents.search_br.SearchBestResponse`, IS-MCTS-BR) models
the agent by its own policy and plays it on duplicate deals (every deal once from each seat,
:func:`training.evaluate.evaluate`). Its mean score (1 for a win alone, ½ for a shared win, 0
for a loss) is a lower bound on the agent's exploitability plus ½: exploitability is the mean
over both seats of an exact best response's expected score, minus ½, and no strategy scores
more than the exact best response. The interval is over deals (:func:`training.stats.per_deal_interval`).
"""

from __future__ import annotations

import time
from typing import Any

from loveletter_env.agents.search_br import AgentPolicy, SearchBestResponse
from loveletter_env.agents.specs import AgentSpec, agent_label, is_checkpoint_path, resolve_agent

from .matches import MatchSetup, play_matches
from .runtime import derive_seed
from .stats import EpisodeRecord, deal_groups, per_deal_interval


def score_of_slot(record: EpisodeRecord, slot: int = 0) -> float:
    """Slot ``slot``'s score in one round: 1 for a win alone, ½ for a shared win, 0 for a loss."""
    return 1.0 / len(record.winners) if slot in record.winners else 0.0


def search_exploitability(
    agent: AgentSpec,
    iterations: int = 1000,
    rounds: int = 200,
    seed: int = 0,
    rules: str = "classic",
    probability_samples: int | None = None,
    model: AgentSpec | None = None,
    sampled: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Play a search best response against ``agent`` over ``rounds`` rounds (``rounds / 2``
    duplicate deals) and report its score and the exploitability bound it implies.

    Args:
        agent: any agent spec (or agent object) that can give its action probabilities.
        iterations: the search's walks per decision.
        rounds: rounds played, an even number (each deal from both seats).
        seed: the run's seed (deals, the agent's and the search's generators).
        rules: a 2-player rule preset (the printed game or a ladder rung).
        probability_samples: for a search agent, the searches per decision that estimate its
            probabilities inside the best response's search (``None``: the agent's own default).
        model: the agent the search samples at the agent's decisions (default: ``agent`` itself),
            such as a search agent with fewer iterations, to make the best response affordable.
        sampled: ``agent`` (and ``model``) is a checkpoint that plays by sampling from its policy
            instead of greedily, and is modelled so.
        progress: show a progress bar.

    Returns:
        A dict with ``score`` and ``ci95`` (the best response's mean score and its 95% interval
        over deals), ``exploitability_lower_bound`` and its ``ci95``, and the settings.
    """
    modelled = agent if model is None else model
    target: Any
    model_agent: Any
    if sampled:
        from .checkpoint import load_agent

        for spec in {str(agent), str(modelled)}:
            if not is_checkpoint_path(spec):
                raise ValueError(f"--sampled is for checkpoints; {spec!r} is not one")
        target = load_agent(str(agent), greedy=False, seed=derive_seed(seed, 1))
        model_agent = load_agent(str(modelled), greedy=False, seed=derive_seed(seed, 2))
    else:
        target = resolve_agent(agent, seed=derive_seed(seed, 1))
        model_agent = resolve_agent(modelled, seed=derive_seed(seed, 2))
    policy = AgentPolicy(model_agent, probability_samples)
    searcher = SearchBestResponse(policy, seed=derive_seed(seed, 3), iterations=iterations)
    started = time.perf_counter()
    setup = MatchSetup.of([searcher, target], 2, "round", rules, seed, duplicate=True)
    _, records = play_matches(setup, rounds, progress=progress)
    deals = deal_groups(records, 2)
    score = sum(score_of_slot(r) for r in records) / len(records)
    low, high = per_deal_interval(deals, score_of_slot)
    report: dict[str, Any] = {
        "agent": agent_label(agent) + (" (sampling)" if sampled else ""),
        "rules": rules,
        "iterations": iterations,
        "rounds": len(records),
        "deals": len(deals),
        "seed": seed,
        "score": score,
        "ci95": [low, high],
        "exploitability_lower_bound": score - 0.5,
        "exploitability_lower_bound_ci95": [low - 0.5, high - 0.5],
        "model": agent_label(modelled) + (" (sampling)" if sampled else ""),
        "exact_probabilities": policy.exact,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if not policy.exact:
        report["samples_per_decision"] = int(getattr(policy.agent, "probability_samples", 0))
    return report


def describe(report: dict[str, Any]) -> str:
    """One line for the terminal."""
    low, high = report["ci95"]
    bound_low, bound_high = report["exploitability_lower_bound_ci95"]
    modelled = "" if report["model"] == report["agent"] else f", modelled as {report['model']}"
    estimated = (
        ""
        if report["exact_probabilities"]
        else f"; its probabilities estimated by {report['samples_per_decision']} searches per decision"
    )
    return (
        f"search best response ({report['iterations']} iterations) vs {report['agent']}{modelled} "
        f"on {report['rules']}: "
        f"score {report['score']:.4f} (95% CI {low:.4f}-{high:.4f}) over {report['rounds']} rounds "
        f"({report['deals']} duplicate deals, {report['seconds']} s); "
        f"exploitability >= {report['exploitability_lower_bound']:.4f} (95% CI {bound_low:.4f}-{bound_high:.4f})"
        f"{estimated}"
    )


def search_main(parser: Any, args: Any) -> dict[str, Any]:
    """The ``--search`` branch of ``python -m training.exploit``."""
    import json

    rounds = 200 if args.rounds is None else args.rounds
    if rounds < 2 or rounds % 2:
        parser.error(f"--rounds must be a positive even number with --search (each deal from both seats); got {rounds}")
    iterations = 1000 if args.iterations is None else args.iterations
    if iterations < 1:
        parser.error(f"--iterations must be positive; got {iterations}")
    if args.players != 2:
        parser.error("--search plays 2-player rounds only")
    try:
        report = search_exploitability(
            args.checkpoint,
            iterations=iterations,
            rounds=rounds,
            seed=args.seed,
            rules=args.rules or "classic",
            probability_samples=args.samples,
            model=args.model,
            sampled=args.sampled,
            progress=not args.no_progress,
        )
    except (ValueError, TypeError, FileNotFoundError) as err:
        parser.error(str(err))
    print(json.dumps(report) if args.json else describe(report))
    return report
