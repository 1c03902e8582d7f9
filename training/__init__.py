"""Everything that learns or measures Love Letter agents, in four wings. One module, one job.

The commands are thin modules at the top (``python -m training.NAME``): ``selfplay``,
``evaluate``, ``solve``, ``exploit``, ``curve``, ``sweep``, ``play``, ``serve``, ``replay`` and
``export``. Each runs the ``main`` of a module in a wing; ``evaluate`` picks between two
(:mod:`~training.measure.evaluate_command`, and :mod:`~training.exploitability.exact_command`
for ``--exact``).

The wings, each importing only the wings listed before it:

- :mod:`training.measure`: playing agents against each other (:func:`~training.measure.evaluation.evaluate`,
  :mod:`~training.measure.matches`, :mod:`~training.measure.ray_cluster`), their figures
  (:mod:`~training.measure.stats`), leagues and ratings (:mod:`~training.measure.league`,
  :mod:`~training.measure.ratings`);
- :mod:`training.learn`: self-play PPO: :mod:`~training.learn.trainer` (the run),
  :mod:`~training.learn.ppo` (the network and the update, readable top to bottom),
  :mod:`~training.learn.rollout`, :mod:`~training.learn.seating` (who sits in which seat),
  :mod:`~training.learn.metrics`, :mod:`~training.learn.config`, :mod:`~training.learn.checkpoint`
  (safe checkpoint files, :func:`load_agent`), :mod:`~training.learn.search_space` (a hyperparameter
  search's file), and what long runs need:
  :mod:`~training.learn.runtime` (devices, seeds, run folders), :mod:`~training.learn.interrupt`
  (Ctrl-C) and :mod:`~training.learn.compile_notice`;
- :mod:`training.exploitability`: how exploitable an agent is: :mod:`~training.exploitability.cfr`
  (CFR+ and exact passes over :class:`loveletter_env.tree.GameTree`), :mod:`~training.exploitability.solver`,
  :mod:`~training.exploitability.exact_response`, :mod:`~training.exploitability.search_response`,
  :mod:`~training.exploitability.learned_response`, :mod:`~training.exploitability.training_curve` and
  :mod:`~training.exploitability.sweep_study` (the hyperparameter search, on exact exploitability);
- :mod:`training.apps`: what people use: :mod:`~training.apps.terminal`, :mod:`~training.apps.server`
  with :mod:`~training.apps.web`, :mod:`~training.apps.live_game` (one game loop for both),
  :mod:`~training.apps.narration` and :mod:`~training.apps.onnx`.

Agent specs (bot names, checkpoint paths, factories) are resolved by
:mod:`loveletter_env.agents.specs`; this package registers the checkpoint loader it uses.
The names below load on first use, so ``import training.measure.evaluation`` does not pull in torch.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from training.learn.interrupt import loading_package

# `python -m training.NAME` imports this package (numba and numpy, through the specs: most of
# a second) before NAME's own `with loading_command` line: a Ctrl-C meanwhile ends the command
# the same way, a message and status 130. Imported as a library, nothing changes.
with loading_package(__name__):
    from loveletter_env.agents.specs import register_checkpoint_loader

if TYPE_CHECKING:
    from training.learn.checkpoint import CheckpointError, load_agent, load_checkpoint
    from training.learn.policy_agent import PolicyAgent
    from training.learn.ppo import ActorCritic, PPOConfig

_EXPORTS = {
    "load_agent": "learn.checkpoint",
    "load_checkpoint": "learn.checkpoint",
    "CheckpointError": "learn.checkpoint",
    "ActorCritic": "learn.ppo",
    "PolicyAgent": "learn.policy_agent",
    "PPOConfig": "learn.ppo",
}

__all__ = [
    "ActorCritic",
    "CheckpointError",
    "PPOConfig",
    "PolicyAgent",
    "load_agent",
    "load_checkpoint",
]


def _load_checkpoint_agent(path: Path, seed: int, greedy: bool | None) -> PolicyAgent:
    """Checkpoint specs of :func:`loveletter_env.agents.specs.resolve_agent` load through here."""
    from training.learn.checkpoint import load_agent

    return load_agent(path, greedy=greedy, seed=seed)


def _load_checkpoint_network(path: Path) -> ActorCritic:
    """:func:`loveletter_env.agents.specs.load_checkpoint_network` loads through here."""
    from training.learn.checkpoint import build_model, load_checkpoint

    return build_model(load_checkpoint(path)).eval()


# The environment package loads checkpoints only through these (it never imports training).
register_checkpoint_loader(_load_checkpoint_agent, _load_checkpoint_network)


def __getattr__(name: str) -> Any:
    if name == "PolicyNetwork":  # deprecated, and so not kept: every use is warned
        from training.learn.ppo import renamed

        return renamed(name)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'training' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
