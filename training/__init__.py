"""Everything that learns or measures Love Letter agents.

- :mod:`training.ppo`: masked PPO (the network, losses, GAE over each player's decisions);
- :mod:`training.selfplay`: ``python -m training.selfplay``, self-play on the batched engine;
- :mod:`training.config`: the run configuration (dataclasses, YAML, ``--set`` overrides);
- :mod:`training.checkpoint`: safe checkpoint files and :func:`load_agent`;
- :mod:`training.exploit`: ``python -m training.exploit``, a best response to a frozen checkpoint;
- :mod:`training.evaluate`: ``python -m training.evaluate``, win rates with confidence intervals.
"""

from .checkpoint import CheckpointError, load_agent, load_checkpoint
from .ppo import ActorCritic, PolicyAgent, PPOConfig

#: The policy network class (an alias that reads naturally next to ``load_agent``).
PolicyNetwork = ActorCritic

__all__ = ["ActorCritic", "CheckpointError", "PPOConfig", "PolicyAgent", "PolicyNetwork", "load_agent", "load_checkpoint"]
