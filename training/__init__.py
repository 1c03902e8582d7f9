"""Everything that learns or measures Love Letter agents. One module, one job:

Self-play training (``python -m training.selfplay``):

- :mod:`training.learn.selfplay_command`: the command line;
- :mod:`training.learn.trainer`: :class:`~training.learn.trainer.SelfPlayTrainer`, the run (rollouts, updates,
  evaluations, checkpoints, resume);
- :mod:`training.learn.ppo`: masked PPO, readable top to bottom (the network, losses, GAE over each
  player's decisions, the update, :class:`~training.learn.ppo.PolicyAgent`);
- :mod:`training.learn.rollout`: rollout storage, the learner's decisions linked per (game, seat);
- :mod:`training.learn.seating`: opponent kinds, the pool of past weights, who sits in which seat;
- :mod:`training.learn.metrics`: ``metrics.csv``, TensorBoard and the learning-curve plot;
- :mod:`training.learn.runtime`: the device and the derived seeds of a run;
- :mod:`training.learn.interrupt`: Ctrl-C stops a run at the next safe point (or at once on a second press);
- :mod:`training.learn.config`: the run configuration (dataclasses, YAML, ``--set`` overrides);
- :mod:`training.learn.checkpoint`: safe checkpoint files and :func:`load_agent`.

Measuring agents (``python -m training.evaluate``, ``python -m training.exploit``):

- :mod:`training.evaluate`: :func:`~training.evaluate.evaluate` and the command line;
- :mod:`training.measure.matches`: playing seeded episodes with rotating seats, in one or several processes;
- :mod:`training.measure.stats`: :class:`~training.measure.stats.EvaluationResult` (the one result type) and intervals;
- :mod:`training.measure.league`: leagues (ratings fitted by :mod:`training.measure.ratings`) and their Markdown/CSV/PNG tables;
- :mod:`training.exploitability.learned_response`: a best response to a frozen checkpoint.

Solving the ladder's rungs exactly (``python -m training.solve``, ``python -m training.exploit AGENT --exact``):

- :mod:`training.exploitability.cfr`: the compiled CFR+, best-response and expected-value passes over the
  whole tree of one round (:class:`loveletter_env.tree.GameTree`);
- :mod:`training.exploitability.solver`: :func:`~training.exploitability.solver.solve` and the command line;
- :mod:`training.exploitability.exact_response`: an agent's exact exploitability.

:mod:`training.apps.terminal` plays in the terminal, :mod:`training.apps.narration` narrates a saved game,
:mod:`training.apps.server` (with :mod:`training.apps.web`) plays and replays in the browser and
:mod:`training.apps.onnx` exports to ONNX. Agent specs
(bot names, checkpoint paths, factories) are resolved by :mod:`loveletter_env.agents.specs`; this
package registers the checkpoint loader it uses.

The names below load on first use, so ``import training.evaluate`` does not pull in torch.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loveletter_env.agents.specs import register_checkpoint_loader

if TYPE_CHECKING:
    from training.learn.checkpoint import CheckpointError, load_agent, load_checkpoint
    from training.learn.ppo import ActorCritic, PolicyAgent, PolicyNetwork, PPOConfig

_EXPORTS = {
    "load_agent": "checkpoint",
    "load_checkpoint": "checkpoint",
    "CheckpointError": "checkpoint",
    "ActorCritic": "ppo",
    "PolicyAgent": "ppo",
    "PPOConfig": "ppo",
    "PolicyNetwork": "ppo",
}

__all__ = [
    "ActorCritic",
    "CheckpointError",
    "PPOConfig",
    "PolicyAgent",
    "PolicyNetwork",
    "load_agent",
    "load_checkpoint",
]


def _load_checkpoint_agent(path: Path, seed: int) -> PolicyAgent:
    """Checkpoint specs of :func:`loveletter_env.agents.specs.resolve_agent` load through here (greedy)."""
    from training.learn.checkpoint import load_agent

    return load_agent(path, seed=seed)


def _load_checkpoint_network(path: Path) -> ActorCritic:
    """:func:`loveletter_env.agents.specs.load_checkpoint_network` loads through here."""
    from training.learn.checkpoint import build_model, load_checkpoint

    return build_model(load_checkpoint(path)).eval()


# The environment package loads checkpoints only through these (it never imports training).
register_checkpoint_loader(_load_checkpoint_agent, _load_checkpoint_network)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'training' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
