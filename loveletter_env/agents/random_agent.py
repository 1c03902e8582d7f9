"""The baseline: a uniformly random legal action."""

from __future__ import annotations

from ..observation import ObservationView
from .base import SeededAgent


class RandomAgent(SeededAgent):
    """Plays a legal action chosen uniformly at random (Princess included)."""

    name = "random"
    #: Its probabilities are 1/k over the k legal actions wherever it stands, so an exact
    #: computation can take them from the legal actions alone, without an observation.
    uniform_over_legal = True

    def choose(self, view: ObservationView, legal: list[int]) -> int:
        return self.rng.choice(legal)
