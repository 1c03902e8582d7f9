"""Everything that learns or measures Love Letter agents. One module, one job:

Self-play training (``python -m training.selfplay``):

- :mod:`training.selfplay`: the command line;
- :mod:`training.trainer`: :class:`~training.trainer.SelfPlayTrainer`, the run (rollouts, updates,
  evaluations, checkpoints, resume);
- :mod:`training.ppo`: masked PPO, readable top to bottom (the network, losses, GAE over each
  player's decisions, the update, :class:`~training.ppo.PolicyAgent`);
- :mod:`training.rollout`: rollout storage, the learner's decisions linked per (game, seat);
- :mod:`training.opponents`: opponent kinds, the pool of past weights, who sits in which seat;
- :mod:`training.metrics`: ``metrics.csv``, TensorBoard and the learning-curve plot;
- :mod:`training.runtime`: the device and the derived seeds of a run;
- :mod:`training.interrupt`: Ctrl-C stops a run at the next safe point (or at once on a second press);
- :mod:`training.config`: the run configuration (dataclasses, YAML, ``--set`` overrides);
- :mod:`training.checkpoint`: safe checkpoint files and :func:`load_agent`.

Measuring agents (``python -m training.evaluate``, ``python -m training.exploit``):

- :mod:`training.evaluate`: :func:`~training.evaluate.evaluate` and the command line;
- :mod:`training.matches`: playing seeded episodes with rotating seats, in one or several processes;
- :mod:`training.stats`: :class:`~training.stats.EvaluationResult` (the one result type) and intervals;
- :mod:`training.league`: leagues (ratings fitted by :mod:`training.ratings`) and their Markdown/CSV/PNG tables;
- :mod:`training.exploit`: a best response to a frozen checkpoint.

Solving the ladder's rungs exactly (``python -m training.solve``, ``python -m training.exploit AGENT --exact``):

- :mod:`training.cfr`: the compiled CFR+, best-response and expected-value passes over the
  whole tree of one round (:class:`loveletter_env.tree.GameTree`);
- :mod:`training.solve`: :func:`~training.solve.solve` and the command line;
- :mod:`training.best_response`: an agent's exact exploitability.

:mod:`training.play` plays in the terminal, :mod:`training.replay` narrates a saved game,
:mod:`training.serve` (with :mod:`training.web`) plays and replays in the browser and
:mod:`training.export` exports to ONNX. Agent specs
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
    from .checkpoint import CheckpointError, load_agent, load_checkpoint
    from .ppo import ActorCritic, PolicyAgent, PolicyNetwork, PPOConfig

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
    from .checkpoint import load_agent

    return load_agent(path, seed=seed)


def _load_checkpoint_network(path: Path) -> ActorCritic:
    """:func:`loveletter_env.agents.specs.load_checkpoint_network` loads through here."""
    from .checkpoint import build_model, load_checkpoint

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
