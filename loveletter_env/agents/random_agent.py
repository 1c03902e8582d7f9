"""The baseline: a uniformly random legal action."""

from __future__ import annotations

from ..observation import ObservationView
from .base import SeededAgent


class RandomAgent(SeededAgent):
    """Plays a legal action chosen uniformly at random (Princess included)."""

    name = "random"

    def choose(self, view: ObservationView, legal: list[int]) -> int:
        return self.rng.choice(legal)
