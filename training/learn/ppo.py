"""Masked PPO for Love Letter, written to be read top to bottom.

Pieces, in the order a training update uses them:

1. :class:`PPOConfig` - every hyper-parameter of the algorithm, in one checked model.
2. :class:`ActorCritic` - the policy/value network: ``forward(obs) -> (logits, value)``.
3. Masked distribution helpers - illegal actions get a logit of ``-inf`` in effect
   (the most negative float), so they are never sampled, carry no probability in the
   loss, and add nothing to the entropy: the entropy is over legal actions only.
4. :func:`compute_gae` - advantages over each *player's own* decision points. In a
   multi-player turn-based game the "next state" of a decision is the same player's
   next decision, not the next turn of the table; the end-of-round reward is credited
   to every seat's last decision.
5. :func:`ppo_losses` / :func:`ppo_update` - clipped surrogate objective, (optionally
   clipped) value loss, entropy bonus, per-minibatch advantage normalisation and
   gradient-norm clipping; optionally the magnetic mirror descent term, a reverse KL
   from the policy to a slowly moving *magnet* policy (:func:`masked_kl`).
6. :func:`learning_rate` - the linear learning-rate schedule.

:class:`~training.learn.policy_agent.PolicyAgent` wraps a network as an agent with
``act(observation_dict) -> int``, the interface every bot and evaluation tool of the project uses.

Randomness always comes from an explicit :class:`torch.Generator`, never from torch's
global generator, so a seeded run is reproducible.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field
from torch import nn

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.observation import (
    OBSERVATION_VERSION,
    check_observation_size,
    layout_size,
    observation_for_layout,
)
from loveletter_env.schema import StrictModel, WholeNumber
from loveletter_env.validation import is_int


# ---------------------------------------------------------------------------------
# 1. Hyper-parameters
# ---------------------------------------------------------------------------------
class PPOConfig(StrictModel):
    """Hyper-parameters of one PPO update (the environment side lives in ``training.learn.config``).

    Values are checked when the config is built: a value out of range raises a
    ``ValueError`` naming the field.

    Attributes:
        learning_rate: Adam step size at the start of training (above 1 Adam only diverges).
        anneal_lr: decay the learning rate linearly to 0 over the run.
        gamma: discount per decision of the same player. Rounds are short, so 1.0 works.
        gae_lambda: GAE bias/variance trade-off.
        update_epochs: passes over each rollout.
        num_minibatches: minibatches per pass (with ``norm_adv``, fewer when the batch holds
            under two decisions for each: a lone decision's normalised advantage is 0).
        clip_coef: PPO ratio clip range.
        clip_vloss: also clip the value update around the old value estimate.
        ent_coef: entropy bonus weight (at the start of the run when ``ent_coef_end`` is set).
        ent_coef_end: when set, the entropy weight moves linearly from ``ent_coef`` to this
            over the run (each stage of a staged run), as ``anneal_lr`` moves the learning
            rate. The entropy bonus makes the trained policy an equilibrium of a smoothed
            game, exploitable by about its weight; ending it small keeps the early
            exploration without that bias at the end. ``None``: constant.
        vf_coef: value loss weight.
        max_grad_norm: gradient-norm clip.
        norm_adv: normalise advantages within each minibatch.
        target_kl: stop the update's epochs early once the approximate KL exceeds this
            (``None``: never stop early).
        magnet_coef: weight ``alpha`` of ``KL(policy || magnet)`` in the loss: magnetic
            mirror descent (Sokota et al., ICLR 2023), which, unlike plain self-play,
            approaches an equilibrium in two-player zero-sum imperfect-information games.
            0.2 by default; 0 leaves the PPO loss exactly as without it.
        magnet_every: with ``magnet_coef > 0``, the magnet becomes a copy of the current
            policy every this many updates (the trainer keeps it between updates).
        adam_beta1: Adam's momentum, the decay of its running mean of the gradients. In a
            game the gradient turns as the opponent (here the network itself) changes, and
            momentum carries each step on along the old direction; 0 steps along each
            minibatch's own gradient, still scaled by Adam's running mean of its squares.
        adam_beta2: the decay of Adam's running mean of the squared gradients.
    """

    learning_rate: Annotated[float, Field(gt=0, le=1)] = 8e-4
    anneal_lr: bool = True
    gamma: Annotated[float, Field(gt=0, le=1)] = 1.0
    gae_lambda: Annotated[float, Field(ge=0, le=1)] = 0.95
    update_epochs: Annotated[WholeNumber, Field(ge=1)] = 4
    num_minibatches: Annotated[WholeNumber, Field(ge=1)] = 8
    clip_coef: Annotated[float, Field(gt=0)] = 0.2
    clip_vloss: bool = True
    ent_coef: Annotated[float, Field(ge=0)] = 0.02
    ent_coef_end: Annotated[float, Field(ge=0)] | None = None
    vf_coef: Annotated[float, Field(ge=0)] = 0.5
    max_grad_norm: Annotated[float, Field(gt=0)] = 0.5
    norm_adv: bool = True
    target_kl: Annotated[float, Field(gt=0)] | None = None
    magnet_coef: Annotated[float, Field(ge=0)] = 0.2
    magnet_every: Annotated[WholeNumber, Field(ge=1)] = 20
    adam_beta1: Annotated[float, Field(ge=0, lt=1)] = 0.9
    adam_beta2: Annotated[float, Field(ge=0, lt=1)] = 0.999


# ---------------------------------------------------------------------------------
# 2. The network
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SparseObservations:
    """Observations held as each row's nonzero entries: what :class:`ObservationLinear` reads.

    A version 2 observation has about 1,400 entries of which a few dozen are nonzero. Row
    ``i`` has ``counts[i]`` entries, from ``starts[i]`` on in ``columns`` (its nonzero
    columns, in order) and ``values`` (theirs). A PPO update builds this once for its whole
    batch (:func:`compact_observations`), so its minibatch steps neither scan the dense rows
    for their entries nor copy them.
    """

    columns: torch.Tensor  # long [N]
    values: torch.Tensor  # float [N]
    starts: torch.Tensor  # long [B]
    counts: torch.Tensor  # long [B]
    width: int  # the length of the dense rows

    @classmethod
    def from_dense(cls, dense: torch.Tensor) -> SparseObservations:
        """The nonzero entries of ``dense`` (``[B, width]``, any dtype)."""
        rows, columns = dense.nonzero(as_tuple=True)  # row-major, so each row's entries are together
        counts = torch.bincount(rows, minlength=dense.shape[0])
        return cls(columns, dense[rows, columns].float(), counts.cumsum(0) - counts, counts, dense.shape[1])

    def __len__(self) -> int:
        return self.counts.shape[0]

    def __getitem__(self, idx: torch.Tensor) -> SparseObservations:
        """The rows ``idx``, their entries gathered into one block."""
        counts = self.counts[idx]
        starts = counts.cumsum(0) - counts
        total = int(counts.sum())
        moved = torch.repeat_interleave(self.starts[idx] - starts, counts, output_size=total)
        source = moved + torch.arange(total, device=moved.device)
        return SparseObservations(self.columns[source], self.values[source], starts, counts, self.width)

    def prefix(self, width: int) -> SparseObservations:
        """The first ``width`` entries of each row (an older layout's fields, as
        :func:`~loveletter_env.observation.observation_for_layout` takes them): the entries
        beyond it stay in place with the value 0, adding nothing."""
        if width >= self.width:
            return self
        kept = self.columns < width
        return SparseObservations(
            self.columns.where(kept, 0), self.values.where(kept, 0.0), self.starts, self.counts, width
        )


def reads_sparse(obs: torch.Tensor) -> bool:
    """Whether the network reads ``obs`` by its nonzero entries: the env's whole-number
    observations on the CPU. Float or GPU tensors take the dense product (what a GPU does best)."""
    return not obs.is_floating_point() and obs.device.type == "cpu"


def compact_observations(obs: torch.Tensor) -> torch.Tensor | SparseObservations:
    """A batch ``[B, width]`` in the form the network reads fastest: as
    :class:`SparseObservations` when it :func:`reads_sparse`, else as it is."""
    return SparseObservations.from_dense(obs) if reads_sparse(obs) and obs.ndim == 2 else obs


class ObservationLinear(nn.Linear):
    """The network's input layer: an ``nn.Linear`` that reads sparse observations cheaply.

    Given a float tensor it is exactly ``nn.Linear``. Given :class:`SparseObservations`, or
    the observation as the env writes it (whole numbers, ``uint8``) on the CPU, it sums the
    weight columns of the nonzero entries only, a twentieth of a dense product's work: a
    PPO gradient step on 1,024 decisions takes about 12 ms on one core instead of 28. Same
    parameters, same state dict; the sum only rounds in another order (about 1e-6), and
    each row's sum is independent of the rest of the batch.
    """

    def forward(self, x: torch.Tensor | SparseObservations) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            if not reads_sparse(x) or x.numel() == 0:
                return super().forward(x.float())
            sparse = SparseObservations.from_dense(x.reshape(-1, self.in_features))
            return self.forward(sparse).reshape(*x.shape[:-1], self.out_features)
        if x.width != self.in_features:
            raise ValueError(f"this layer reads {self.in_features} entries per row, got rows of {x.width}")
        # Rows of the transposed weight are the columns to add; the copy costs far less than
        # gathering (and scattering gradients) across a strided view.
        out = nn.functional.embedding_bag(
            x.columns, self.weight.t().contiguous(), x.starts, mode="sum", per_sample_weights=x.values
        )
        return out + self.bias


class ActorCritic(nn.Module):
    """A shared MLP trunk with a policy head (41 logits) and a value head.

    One network plays every seat and every table size: the observation vector already
    has one shape for 2, 3 and 4 players, with seats relative to the observer.
    ``forward`` knows nothing of masks, so the module exports to ONNX as is.

    ``observation_version`` is the observation layout the network was trained on: its
    input layer has that layout's width (:attr:`obs_size`), yet :meth:`forward` always
    takes the current observation and reads the entries of its own layout
    (:func:`~loveletter_env.observation.observation_for_layout`). So a network of an
    older layout plays wherever a network plays, and nothing outside it slices.

    ``generator`` draws the initial weights (without one, a copy of torch's global generator's
    state does, and the global generator is left as it was).
    """

    def __init__(
        self,
        hidden_sizes: Sequence[int] = (256, 256),
        observation_version: int = OBSERVATION_VERSION,
        num_actions: int = NUM_ACTIONS,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        # Checked as they are, not through int(): "256" would build layers of 2, 5 and 6 units
        # and 1.5 one of 1 unit, without a word.
        listed = isinstance(hidden_sizes, Iterable) and not isinstance(hidden_sizes, (str, bytes))
        sizes = tuple(hidden_sizes) if listed else ()
        if not sizes or not all(is_int(h) and h >= 1 for h in sizes):
            raise ValueError(f"hidden_sizes must be a non-empty list of positive integers, got {hidden_sizes!r}")
        self.hidden_sizes = tuple(int(h) for h in sizes)
        self.observation_version = observation_version
        self.obs_size = layout_size(observation_version)
        self.num_actions = num_actions
        layers: list[nn.Module] = []
        width = self.obs_size
        # nn.Linear's own init, which reset_parameters replaces, draws from torch's global
        # generator, and so does reset_parameters without a generator: the global state is put
        # back afterwards, so building a network (every run, every checkpoint load) leaves it as
        # it was. (It works on the meta device too, where the config counts parameters.)
        with torch.random.fork_rng(devices=[]):
            for h in self.hidden_sizes:
                layers += [(ObservationLinear if not layers else nn.Linear)(width, h), nn.ReLU()]
                width = h
            self.trunk = nn.Sequential(*layers)
            self.policy_head = nn.Linear(width, num_actions)
            self.value_head = nn.Linear(width, 1)
            self.reset_parameters(generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Orthogonal init (CleanRL's choice): a small policy head so the first policy is
        near uniform over legal actions, and zero biases. ``generator`` draws the weights
        (``None``: torch's global generator)."""
        gains = [(m, np.sqrt(2)) for m in self.trunk if isinstance(m, nn.Linear)]
        gains += [(self.policy_head, 0.01), (self.value_head, 1.0)]
        for layer, gain in gains:
            nn.init.orthogonal_(layer.weight, gain=float(gain), generator=generator)
            nn.init.zeros_(layer.bias)

    def forward(self, obs: torch.Tensor | SparseObservations) -> tuple[torch.Tensor, torch.Tensor]:
        """``obs`` ``[B, OBSERVATION_SIZE]`` -> (logits ``[B, 41]``, value ``[B]``).

        ``obs`` is a current observation whatever layout the network was trained on; any
        other width raises ``ValueError`` naming both layouts (never reshaped). Pass it as
        the env writes it (``uint8``), or as :class:`SparseObservations`, to let the input
        layer read only its nonzero entries (:class:`ObservationLinear`), or as float for
        the plain dense product."""
        if not isinstance(obs, (torch.Tensor, SparseObservations)) or (
            isinstance(obs, torch.Tensor) and obs.dtype.is_complex
        ):  # a numpy array failed deep inside; a complex one lost its imaginary part unsaid
            shown_type = f"a {obs.dtype} tensor" if isinstance(obs, torch.Tensor) else type(obs).__name__
            raise TypeError(f"obs must be a real torch.Tensor (or SparseObservations), got {shown_type}")
        if isinstance(obs, SparseObservations):
            check_observation_size(obs.width)
            features = self.trunk(obs.prefix(self.obs_size))
        else:
            features = self.trunk(observation_for_layout(obs, self.observation_version))
        return self.policy_head(features), self.value_head(features).squeeze(-1)


#: Names this module no longer uses, each with the one to use: they still work, with a
#: ``DeprecationWarning`` (``PolicyNetwork`` was a second name of :class:`ActorCritic`).
RENAMED = {"PolicyNetwork": "ActorCritic"}


def renamed(name: str, stacklevel: int = 2) -> Any:
    """What the old ``name`` of :data:`RENAMED` stands for, after a ``DeprecationWarning``
    attributed ``stacklevel`` frames up (the code that used the old name)."""
    warnings.warn(
        f"{name} is deprecated: use {RENAMED[name]}, the same class", DeprecationWarning, stacklevel=stacklevel + 1
    )
    return globals()[RENAMED[name]]


def __getattr__(name: str) -> Any:
    if name in RENAMED:
        return renamed(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------
# 3. Masked distribution
# ---------------------------------------------------------------------------------
def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with illegal actions pushed to the most negative float.

    The most negative finite float rather than ``-inf`` keeps ``0 * log p`` finite in the
    entropy and keeps gradients free of NaNs; after softmax those actions get exactly 0.
    """
    return logits.masked_fill(~mask, torch.finfo(logits.dtype).min)


def masked_log_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Log-probabilities of every action under the masked policy (illegal ones ~ -inf)."""
    return torch.log_softmax(masked_logits(logits, mask), dim=-1)


def masked_entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Entropy of the masked policy, summed over legal actions only: ``[B]``."""
    log_p, p = _masked_log_probs_and_probs(logits, mask)
    return -(p * log_p).where(mask, torch.zeros_like(log_p)).sum(-1)


def masked_kl(logits: torch.Tensor, target_log_probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``KL(policy || target)`` over legal actions, ``[B]``: the policy from ``logits``, the
    target as masked log-probabilities (:func:`masked_log_probs` of the same ``mask``).

    This reverse KL is what magnetic mirror descent adds: its gradient moves the policy's
    probability towards the target's wherever the policy puts weight.
    """
    log_p, p = _masked_log_probs_and_probs(logits, mask)
    return (p * (log_p - target_log_probs)).where(mask, torch.zeros_like(log_p)).sum(-1)


def _masked_log_probs_and_probs(logits: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`masked_log_probs` and the probabilities of the legal actions (the illegal
    ones' are left at 1: every caller masks them out). On the CPU, ``exp`` of a masked
    entry (about -3e38, whose result underflows to 0) leaves the vectorised path and takes
    some 70 times as long, a tenth of a PPO update's time; the legal entries' ``exp`` is
    the same, bit for bit, either way."""
    log_p = masked_log_probs(logits, mask)
    return log_p, log_p.where(mask, 0.0).exp()


def sample_actions(
    logits: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None, greedy: bool = False
) -> torch.Tensor:
    """One legal action per row: the most likely one (``greedy``, ties to the lowest
    action) or a sample.

    Sampling uses the Gumbel-max trick with uniforms drawn from ``generator``, which it
    needs (``ValueError`` without one: never torch's global generator); masked logits are so
    low that an illegal action can never win the argmax. A row with no legal action gets
    any action: the callers' masks come from the env, which always has one, and checking
    here would make every rollout turn wait for the device.
    """
    return _pick(masked_logits(logits, mask), generator, greedy)


def sample_with_log_prob(
    logits: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sample_actions` and the :func:`action_log_prob` of the actions drawn (the same
    values, bit for bit), masking the logits once for both: what a rollout records."""
    scores = masked_logits(logits, mask)
    actions = _pick(scores, generator, greedy=False)
    return actions, _taken(torch.log_softmax(scores, dim=-1), actions)


def _pick(scores: torch.Tensor, generator: torch.Generator | None, greedy: bool) -> torch.Tensor:
    """The argmax of masked ``scores``, after Gumbel noise unless ``greedy``."""
    if not greedy:
        if generator is None:
            raise ValueError(
                "sampling needs a generator (a torch.Generator; never torch's global one, so a seeded run repeats)"
            )
        uniform = torch.rand(scores.shape, generator=generator, device=scores.device).clamp_(1e-20, 1.0)
        # Gumbel noise is bounded (about -4..17) while masked scores sit at -3e38: never picked.
        scores = scores - torch.log(-torch.log(uniform))
    return scores.argmax(-1)


def action_log_prob(logits: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Log-probability of ``actions`` (``[B]``) under the masked policy."""
    return _taken(masked_log_probs(logits, mask), actions)


def _taken(log_probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    return log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


# ---------------------------------------------------------------------------------
# 4. Advantages over each player's own decision points
# ---------------------------------------------------------------------------------
def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminal: torch.Tensor,
    next_index: torch.Tensor,
    gamma: float,
    gae_lambda: float,
    blocks: Sequence[tuple[int, int]] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates for transitions linked per player.

    Transition ``i`` is one decision of one seat in one game. Its successor is the same
    seat's next decision in the same game, ``next_index[i]`` (always ``> i``), or none:

    - ``terminal[i]``: the episode ended before that seat acted again; ``rewards[i]``
      holds the seat's end-of-episode reward and there is nothing to bootstrap from;
    - ``next_index[i] >= 0``: bootstrap from the successor's value and recurse into
      its advantage (the successor's own advantage counts as 0 when it is unresolved);
    - otherwise the rollout stopped before the outcome of this decision was known: it is
      *unresolved*, gets no advantage and is left out of the loss, but its value still
      serves as the bootstrap of its predecessor.

    ``blocks``, optional, splits the transitions into ``[start, end)`` runs, in order and
    covering them all, such that every successor lies in a later block (a rollout's turns:
    a seat acts at most once per turn). The sweep then takes a block at a time on the
    tensors' device instead of one transition at a time in Python; it does the same float64
    arithmetic in the same order, so the results are the same to the bit.

    Returns ``(advantages, returns, resolved)``; ``returns = advantages + values``. Inputs
    that break these rules (lengths that differ, a successor that is not later, or not in a
    later block, blocks that do not cover the transitions, a reward that is not a finite
    number) raise ``ValueError`` naming the first offending transition.
    """
    _check_links(rewards, values, terminal, next_index, blocks)
    if blocks is not None:
        return _gae_by_block(rewards, values, terminal, next_index, gamma, gae_lambda, blocks)
    n = rewards.shape[0]
    r, v = rewards.tolist(), values.tolist()
    term, nxt = terminal.tolist(), next_index.tolist()
    adv = [0.0] * n
    resolved = [False] * n
    # Successors always come later, so one backward sweep sees them first.
    for i in range(n - 1, -1, -1):
        if term[i]:
            adv[i] = r[i] - v[i]
        elif nxt[i] >= 0:
            j = nxt[i]
            delta = r[i] + gamma * v[j] - v[i]
            adv[i] = delta + gamma * gae_lambda * adv[j]
        else:
            continue
        resolved[i] = True
    advantages = torch.tensor(adv, dtype=values.dtype, device=values.device)
    return advantages, advantages + values, torch.tensor(resolved, dtype=torch.bool, device=values.device)


def _check_links(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminal: torch.Tensor,
    next_index: torch.Tensor,
    blocks: Sequence[tuple[int, int]] | None,
) -> None:
    """Refuse inputs that :func:`compute_gae` would otherwise turn into wrong advantages
    without a word (a successor not yet swept, or rows of no block, count as advantage 0).
    One read from the device, whatever the size."""
    lengths = [tuple(t.shape) for t in (rewards, values, terminal, next_index)]
    n = rewards.shape[0] if rewards.ndim == 1 else -1
    if any(shape != (n,) for shape in lengths):
        raise ValueError(
            "compute_gae needs one entry per transition in rewards, values, terminal and next_index, "
            f"got shapes {', '.join(str(list(shape)) for shape in lengths)}"
        )
    rows = torch.arange(n, device=next_index.device)
    if blocks is None:
        first_allowed = rows + 1
    else:
        bounds = [(int(start), int(end)) for start, end in blocks]
        edges = [0, *(end for _, end in bounds)]
        if [start for start, _ in bounds] != edges[:-1] or edges[-1] != n or any(e < s for s, e in bounds):
            raise ValueError(
                f"blocks must cover the {n} transitions in order, as consecutive [start, end) runs, got {bounds}"
            )
        ends = torch.tensor([end for _, end in bounds], dtype=torch.long, device=next_index.device)
        sizes = torch.tensor([end - start for start, end in bounds], dtype=torch.long, device=next_index.device)
        first_allowed = torch.repeat_interleave(ends, sizes, output_size=n)
    misplaced = (next_index >= 0) & ((next_index < first_allowed) | (next_index >= n))
    not_finite = ~torch.isfinite(rewards)
    if not bool((misplaced | not_finite).any()):
        return
    if bool(not_finite.any()):
        i = int(not_finite.nonzero()[0, 0])
        raise ValueError(
            f"compute_gae got rewards with a value that is not a finite number at transition {i}: {rewards[i].item()}"
        )
    i = int(misplaced.nonzero()[0, 0])
    j = int(next_index[i])
    if blocks is None or j <= i or j >= n:
        raise ValueError(f"compute_gae: transition {i} links to {j}, but a successor must come after it and before {n}")
    raise ValueError(
        f"compute_gae: transition {i} links to {j}, in its own block: a successor must lie in a later block"
    )


def _gae_by_block(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminal: torch.Tensor,
    next_index: torch.Tensor,
    gamma: float,
    gae_lambda: float,
    blocks: Sequence[tuple[int, int]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`compute_gae`'s sweep a block at a time. float64 and the operations in the
    order of the per-transition loop (whose Python floats are float64): the same bits."""
    r, v = rewards.double(), values.double()
    has_next = next_index >= 0
    successor = next_index.clamp(min=0)
    trace = gamma * gae_lambda  # the loop multiplies gamma * gae_lambda first, then the advantage
    adv = torch.zeros_like(v)
    for start, end in reversed(blocks):
        j = successor[start:end]
        bootstrapped = r[start:end] + gamma * v[j] - v[start:end] + trace * adv[j]
        ended = r[start:end] - v[start:end]
        adv[start:end] = torch.where(terminal[start:end], ended, torch.where(has_next[start:end], bootstrapped, 0.0))
    advantages = adv.to(values.dtype)
    return advantages, advantages + values, terminal | has_next


# ---------------------------------------------------------------------------------
# 5. The clipped objective and the update
# ---------------------------------------------------------------------------------
@dataclass
class RolloutBatch:
    """Resolved learner transitions of one rollout, flat over games, seats and time."""

    obs: torch.Tensor | SparseObservations  # uint8 [B, OBSERVATION_SIZE] as the batched env writes them (or float)
    masks: torch.Tensor  # bool [B, 41]
    actions: torch.Tensor  # long [B]
    logprobs: torch.Tensor  # float [B], under the policy that acted
    values: torch.Tensor  # float [B], its value estimates
    advantages: torch.Tensor  # float [B]
    returns: torch.Tensor  # float [B]
    magnet_log_probs: torch.Tensor | None = None  # float [B, 41], masked; only with ppo.magnet_coef > 0

    def __len__(self) -> int:
        return self.actions.shape[0]

    def rows(self, idx: torch.Tensor) -> RolloutBatch:
        """The transitions ``idx`` (a minibatch)."""
        picked: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            picked[f.name] = None if value is None else value[idx]
        return RolloutBatch(**picked)


def policy_loss(new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, clip_coef: float):
    """PPO's clipped surrogate, as a loss to minimise: ``mean(max(-A r, -A clip(r)))``."""
    ratio = (new_logprobs - old_logprobs).exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)
    return torch.max(unclipped, clipped).mean()


def value_loss(
    new_values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    clip_coef: float | None,
) -> torch.Tensor:
    """Half mean squared error to the returns; with ``clip_coef`` the pessimistic max of
    the plain and the clipped-around-``old_values`` errors."""
    error = (new_values - returns) ** 2
    if clip_coef is not None:
        clipped = old_values + (new_values - old_values).clamp(-clip_coef, clip_coef)
        error = torch.max(error, (clipped - returns) ** 2)
    return 0.5 * error.mean()


def normalize(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero mean, unit standard deviation (a single element is just centred)."""
    if x.numel() < 2:
        return x - x.mean()
    return (x - x.mean()) / (x.std() + eps)


def ppo_losses(model: nn.Module, batch: RolloutBatch, cfg: PPOConfig) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Total loss of one minibatch and its pieces (for logging)."""
    logits, new_values = model(batch.obs)
    new_logprobs = action_log_prob(logits, batch.masks, batch.actions)
    entropy = masked_entropy(logits, batch.masks).mean()
    advantages = normalize(batch.advantages) if cfg.norm_adv else batch.advantages
    pg = policy_loss(new_logprobs, batch.logprobs, advantages, cfg.clip_coef)
    vf = value_loss(new_values, batch.values, batch.returns, cfg.clip_coef if cfg.clip_vloss else None)
    loss = pg - cfg.ent_coef * entropy + cfg.vf_coef * vf
    pieces: dict[str, torch.Tensor] = {}
    if cfg.magnet_coef > 0:
        if batch.magnet_log_probs is None:
            raise ValueError("ppo.magnet_coef > 0 needs the magnet's log-probabilities in the batch")
        magnet_kl = masked_kl(logits, batch.magnet_log_probs, batch.masks).mean()
        loss = loss + cfg.magnet_coef * magnet_kl
        pieces["magnet_kl"] = magnet_kl.detach()
    with torch.no_grad():
        log_ratio = new_logprobs - batch.logprobs
        # The low-variance KL estimator (k3) from http://joschu.net/blog/kl-approx.html
        approx_kl = ((log_ratio.exp() - 1) - log_ratio).mean()
        clip_fraction = ((log_ratio.exp() - 1).abs() > cfg.clip_coef).float().mean()
    return loss, {
        "policy_loss": pg.detach(),
        "value_loss": vf.detach(),
        "entropy": entropy.detach(),
        "approx_kl": approx_kl,
        "clip_fraction": clip_fraction,
        **pieces,
    }


def _check_batch(batch: RolloutBatch) -> None:
    """Refuse a batch that would make every weight NaN (one value that is not finite, from a
    NaN reward say) or train on an action its mask forbids (a row with no legal action), before
    any step. One read from the device."""
    numbers = {name: getattr(batch, name) for name in ("advantages", "returns", "values", "logprobs")}
    finite = {name: torch.isfinite(x) for name, x in numbers.items()}
    legal = batch.masks.gather(-1, batch.actions.unsqueeze(-1)).squeeze(-1)
    if bool(torch.stack([legal.all(), *(ok.all() for ok in finite.values())]).all()):
        return
    for name, ok in finite.items():
        if not bool(ok.all()):
            i = int((~ok).nonzero()[0, 0])
            raise ValueError(
                f"ppo_update got batch.{name} holding a value that is not a finite number in row {i}: "
                f"{float(numbers[name][i])} (an update would make every weight NaN)"
            )
    i = int((~legal).nonzero()[0, 0])
    raise ValueError(
        f"ppo_update got an action its mask calls illegal in row {i} (action {int(batch.actions[i])}, "
        f"{int(batch.masks[i].sum())} legal actions)"
    )


def ppo_update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: RolloutBatch,
    cfg: PPOConfig,
    generator: torch.Generator,
    magnet: nn.Module | None = None,
) -> dict[str, float]:
    """Run ``update_epochs`` passes of minibatch gradient steps over ``batch``.

    ``magnet`` (needed when ``cfg.magnet_coef > 0``) is the network whose policy the
    magnetic mirror descent term pulls towards; it is evaluated once on the whole batch.

    Returns the mean of each loss piece over the minibatches, plus ``explained_variance``
    of the value estimates that collected the batch.
    """
    size = len(batch)
    if size == 0:
        raise ValueError("ppo_update got an empty batch: the rollout resolved no learner decision")
    _check_batch(batch)
    if isinstance(batch.obs, torch.Tensor):
        # Once for the batch, rather than once per minibatch step inside the network.
        batch = dataclasses.replace(batch, obs=compact_observations(batch.obs))
    if cfg.magnet_coef > 0:
        if magnet is None:
            raise ValueError("ppo.magnet_coef > 0 needs a magnet network: pass magnet= to ppo_update")
        with torch.no_grad():
            magnet_logits, _ = magnet(batch.obs)
        batch = dataclasses.replace(batch, magnet_log_probs=masked_log_probs(magnet_logits, batch.masks))
    # One decision's normalised advantage is 0: minibatches of one row would train the value
    # and never the policy. So a batch of fewer than two decisions per minibatch takes fewer.
    minibatch = max(min(size, 2) if cfg.norm_adv else 1, size // cfg.num_minibatches)
    # Summed on the tensors' device in float64 (the precision of the Python floats they
    # replace) and read back once at the end: reading them per minibatch would make the
    # host wait for the device at every gradient step.
    totals: dict[str, torch.Tensor] = {}
    steps = 0
    for _ in range(cfg.update_epochs):
        order = torch.randperm(size, generator=generator, device="cpu").to(batch.actions.device)
        for start in range(0, size - minibatch + 1, minibatch):
            idx = order[start : start + minibatch]
            mb = batch.rows(idx)
            loss, stats = ppo_losses(model, mb, cfg)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
            for k, val in stats.items():
                totals[k] = totals[k] + val.double() if k in totals else val.double()
            steps += 1
        if cfg.target_kl is not None and float(stats["approx_kl"]) > cfg.target_kl:
            break
    # Population variances: their ratio is the sample variances', and one decision gives 0
    # (no spread to explain) rather than torch's "degrees of freedom" warning.
    var_returns = batch.returns.var(correction=0)
    unexplained = (batch.returns - batch.values).var(correction=0)
    explained = torch.where(var_returns > 0, 1 - unexplained / var_returns, 0.0)
    *summed, explained_variance = torch.stack([*totals.values(), explained.double()]).tolist()
    return {**{k: val / steps for k, val in zip(totals, summed)}, "explained_variance": explained_variance}


# ---------------------------------------------------------------------------------
# 6. Learning-rate schedule
# ---------------------------------------------------------------------------------
def learning_rate(cfg: PPOConfig, progress: float) -> float:
    """Learning rate once a fraction ``progress`` (0..1) of the run is done."""
    if not cfg.anneal_lr:
        return cfg.learning_rate
    return cfg.learning_rate * max(0.0, 1.0 - progress)


def entropy_coef(cfg: PPOConfig, progress: float) -> float:
    """Entropy bonus weight once a fraction ``progress`` (0..1) of the run is done."""
    if cfg.ent_coef_end is None:
        return cfg.ent_coef
    done = min(max(progress, 0.0), 1.0)
    return cfg.ent_coef + (cfg.ent_coef_end - cfg.ent_coef) * done
