"""A trained network as an agent: :class:`PolicyAgent`, ``act(observation_dict) -> int``,
the interface every bot and evaluation tool of the project uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents.base import action_mask_of
from loveletter_env.validation import check_seed
from training.learn.ppo import masked_logits, sample_actions
from training.learn.runtime import check_device


class PolicyAgent:
    """A trained network as an agent: ``act(observation_dict) -> int``.

    Args:
        model: an :class:`ActorCritic` (or any module with the same ``forward``).
        greedy: play the most likely legal action, an explicit choice; by default the agent
            samples the masked policy, the mixed strategy it was trained to play.
        seed: seeds this agent's own generator (used only when sampling): an integer in
            ``0..MAX_SEED`` (:func:`~loveletter_env.validation.check_seed`).
        device: where to run the network.
    """

    def __init__(self, model: nn.Module, greedy: bool = False, seed: int = 0, device: str | torch.device = "cpu"):
        if not isinstance(model, nn.Module):  # a checkpoint's path or dict failed on "has no attribute 'to'"
            raise TypeError(
                f"PolicyAgent takes a network (a torch.nn.Module), got {type(model).__name__}: "
                "load a checkpoint file with training.load_agent(path)"
            )
        if not isinstance(greedy, (bool, np.bool_)):  # "no" would read as true: a pure strategy
            raise ValueError(f"greedy must be True or False, got {greedy!r}")
        self.device = check_device(device)
        self.model = model.to(self.device).eval()
        self.greedy = bool(greedy)
        self.generator = torch.Generator(device=self.device).manual_seed(check_seed(seed))

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode (the network keeps no memory); with ``seed``, reseed sampling."""
        if seed is not None:
            self.generator.manual_seed(check_seed(seed))

    @torch.no_grad()
    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        """The action for one observation dict ``{"observation", "action_mask"}``."""
        vector, mask = _checked(observation)
        obs = torch.as_tensor(vector, device=self.device)
        logits, _ = self.model(obs.unsqueeze(0))
        legal = torch.as_tensor(mask, device=self.device).unsqueeze(0)
        return int(sample_actions(logits, legal, self.generator, greedy=self.greedy)[0])

    @torch.no_grad()
    def explain(self, observation: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """The masked policy's probability for each legal action and the value estimate
        (what replays show for the decision); it changes nothing."""
        vector, mask = _checked(observation)
        obs = torch.as_tensor(vector, device=self.device)
        logits, value = self.model(obs.unsqueeze(0))
        legal = torch.as_tensor(mask, device=self.device)
        probs = torch.softmax(logits[0].masked_fill(~legal, float("-inf")), dim=-1)
        return {
            "probabilities": {int(a): float(probs[a]) for a in np.flatnonzero(mask)},
            "value": float(value.reshape(-1)[0]),
        }

    #: The network reads one observation at a time (see ``ProbabilisticAgent`` in
    #: :mod:`loveletter_env.agents.base`).
    remembers_round = False
    exact_probabilities = True

    def action_probabilities(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """float64 [41]: the probability of each action :meth:`act` plays here (changes nothing)."""
        vector, mask = _checked(observation)
        return self.action_probabilities_batch(vector[None], mask[None])[0]

    @torch.no_grad()
    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """float64 [B, 41]: :meth:`action_probabilities` for a batch (``observations`` [B, OBSERVATION_SIZE],
        ``masks`` [B, 41]): the masked softmax when sampling, the argmax when greedy. A batch of other
        shapes, a mask that is no action mask or has no legal action, or an observation that is not
        finite raises ``ValueError``, as :meth:`act` does for one observation."""
        vectors, legal_masks = checked_batch(observations, masks)
        obs = torch.as_tensor(vectors, device=self.device)
        legal = torch.as_tensor(legal_masks, device=self.device)
        logits, _ = self.model(obs)
        if self.greedy:
            best = masked_logits(logits, legal).argmax(-1)
            probs = torch.nn.functional.one_hot(best, logits.shape[-1]).double()
        else:
            probs = torch.softmax(masked_logits(logits, legal).double(), dim=-1)
        return probs.cpu().numpy()


def _checked(observation: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The observation vector (float32) and the action mask (bool) of an observation dict,
    refused with a ``ValueError`` naming the fault: a mask that is no action mask or has no
    legal action (:func:`~loveletter_env.agents.base.action_mask_of`), an observation with
    a value that is not finite (a NaN one would still give an action)."""
    mask = action_mask_of(observation)
    try:
        vector = _real(observation["observation"])
    except (KeyError, TypeError, ValueError):
        raise ValueError("an agent needs the env's observation dict with a numeric 'observation' entry") from None
    if vector.ndim != 1:  # a batch would fail deep in sampling, with no word of the observation
        raise ValueError(f"an agent acts on one observation vector, got one of shape {vector.shape}")
    if not np.isfinite(vector).all():
        raise ValueError("the observation holds a value that is not a finite number (NaN or infinity)")
    return vector, mask


def checked_batch(observations: Any, masks: Any) -> tuple[np.ndarray, np.ndarray]:
    """A batch's observations (float32 [B, n]) and masks (bool [B, 41]), refused with a
    ``ValueError`` as :func:`_checked` refuses one observation: a row whose mask has no legal
    action would get a policy over illegal moves only (every action, at equal odds)."""
    try:
        vectors, raw = np.asarray(observations), np.asarray(masks)
    except ValueError:  # numpy's own words for rows of different lengths name neither argument
        raise ValueError(
            f"a batch is observations [B, n] and action masks [B, {NUM_ACTIONS}], got rows of different lengths"
        ) from None
    try:
        vectors = _real(vectors)
    except ValueError as err:
        raise ValueError(f"a batch is observations of real numbers, got {err}") from None
    if vectors.ndim != 2 or raw.shape != (len(vectors), NUM_ACTIONS):
        raise ValueError(
            f"a batch is observations [B, n] and action masks [B, {NUM_ACTIONS}], got shapes {vectors.shape} "
            f"and {raw.shape}"
        )
    if raw.dtype.kind not in "biuf" or not ((raw == 0) | (raw == 1)).all():
        raise ValueError(f"action masks hold entries of 0 or 1, got dtype {raw.dtype} with other values")
    legal = raw.astype(bool)
    if not legal.any(axis=1).all():
        raise ValueError(f"row {int(np.flatnonzero(~legal.any(axis=1))[0])} of the action masks has no legal action")
    if not np.isfinite(vectors).all():
        raise ValueError("the observations hold a value that is not a finite number (NaN or infinity)")
    return vectors, legal


def _real(values: Any) -> np.ndarray:
    """``values`` as float32, or ``ValueError`` naming their dtype when they are no real
    numbers: numpy would cast complex ones to their real part with only a warning."""
    raw = np.asarray(values)
    if raw.dtype.kind in "biufO":  # an object array's entries convert, or fail, one by one
        try:
            return raw.astype(np.float32)
        except (TypeError, ValueError):
            pass
    raise ValueError(f"dtype {raw.dtype}")
