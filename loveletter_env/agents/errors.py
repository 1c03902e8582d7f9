"""The errors of agent specs, shared by :mod:`~loveletter_env.agents.specs` and
:mod:`~loveletter_env.agents.checkpoint_loading` (which must not import each other's package root)."""

from __future__ import annotations


class AgentSpecError(ValueError):
    """A spec that names no agent, or options the agent does not take; the message says which."""


class AgentTypeError(AgentSpecError, TypeError):
    """Something given as an agent that is neither a spec nor an object with ``act()``."""
