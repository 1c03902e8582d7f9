"""Games under several rule sets in one batch: a curriculum over the ladder's rungs and the
full game, stepped as one :class:`~loveletter_env.batched.BatchedLoveLetter`-like env.

Each rule set gets a contiguous block of the batch's games, as many as its weight's share
(:func:`split_games`), and one :class:`BatchedLoveLetter` steps that block. The blocks write
their observations straight into rows of one shared tensor, so the learner sees a single
batch: game ``g`` is always played under ``game_rules[g]``.

>>> env = MixedRulesBatched(num_games=256, rules=["classic", "mini6", "mini7"], weights=[2, 1, 1])
>>> obs, mask = env.reset()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..actions import NUM_ACTIONS
from ..cards import DECK_SIZE
from ..observation import OBSERVATION_SIZE
from ..rules import Rules, resolve_rules
from ..validation import MAX_SEED, check_int, check_seed, shown
from .driver import (
    MAX_GAMES,
    OBSERVATION_DTYPE,
    BatchedLoveLetter,
    _table_sizes,
    check_actions_legal,
    check_device,
    check_step_buffers,
    check_tensor,
)


def split_games(num_games: int, weights: Sequence[float]) -> list[int]:
    """How many of ``num_games`` each weight gets: proportional shares rounded by largest
    remainder (ties to the earlier weight), so the counts sum to ``num_games`` and every
    positive weight gets at least one game. Only the weights' ratios count: any finite
    positive weights split as well as small ones (``[1e308, 1e308]`` as ``[1, 1]``).

    Raises:
        ValueError: a weight that is not a finite positive number, fewer games than weights,
            or more than :data:`~loveletter_env.batched.driver.MAX_GAMES` (past 2**52 the
            float shares round, and the counts no longer sum to ``num_games``).
    """
    if num_games > MAX_GAMES:
        raise ValueError(f"num_games must be at most {MAX_GAMES}, got {num_games}")
    numbers_given = isinstance(weights, Sequence | np.ndarray) and not isinstance(weights, (str, bytes)) and all(
        isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) for x in weights
    )  # True or "13" would read as numbers
    w = np.asarray(weights, dtype=np.float64) if numbers_given else np.empty(0)
    if w.ndim != 1 or len(w) == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be finite positive numbers, got {shown(weights)}")
    if num_games < len(w):
        raise ValueError(f"{len(w)} rule sets need at least {len(w)} games, got num_games={num_games}")
    # Scaled so the largest weight is below 1, by a power of two: exact, so the shares are those
    # of the weights as given, and no sum or product below overflows (1e308 twice summed to inf).
    w = np.ldexp(w, -np.frexp(w.max())[1])
    # One game each first, so that no rule set of a small weight is left without a game.
    share = (num_games - len(w)) * w / w.sum()
    counts = np.floor(share).astype(np.int64) + 1
    short = num_games - int(counts.sum())
    order = sorted(range(len(w)), key=lambda i: (-(share[i] - np.floor(share[i])), i))
    counts[order[:short]] += 1
    return counts.tolist()


def block_seed(seed: int, block: int) -> int:
    """The seed of block ``block``: block 0 keeps ``seed``, so one rule set deals exactly as
    :class:`BatchedLoveLetter` with the same seed would; the others get independent seeds."""
    if block == 0:
        return seed
    mixed = np.random.SeedSequence([seed, block]).generate_state(2, np.uint64)[0]
    return int(mixed % np.uint64(MAX_SEED + 1))


class MixedRulesBatched:
    """N games split between rule sets, stepped as one batch.

    Args:
        num_games: N, split between the rule sets by :func:`split_games`.
        num_players: as :class:`BatchedLoveLetter`'s (an int or one per game); a ladder
            rung takes its own table size only.
        rules: preset names or :class:`~loveletter_env.rules.Rules`, each at most once.
        weights: one relative weight per rule set (default: equal).
        episode: as :class:`BatchedLoveLetter`'s.
        device: as :class:`BatchedLoveLetter`'s.
        seed: the first block's seed (:func:`block_seed` derives the others).
        validate_actions: as :class:`BatchedLoveLetter`'s.

    The public surface is :class:`BatchedLoveLetter`'s for playing: :meth:`reset`,
    :meth:`step`, :meth:`advance`, :meth:`observe`, :attr:`current_player`,
    :attr:`num_players` and :attr:`action_mask`, with the same shapes and dtypes.
    """

    def __init__(
        self,
        num_games: int,
        num_players: int | Sequence[int] | torch.Tensor = 2,
        rules: Sequence[str | Rules] = ("classic",),
        weights: Sequence[float] | None = None,
        episode: str = "round",
        device: str | torch.device = "cpu",
        seed: int = 0,
        validate_actions: bool = True,
    ):
        num_games = check_int("num_games", num_games, 1, MAX_GAMES)
        if not _is_list(rules) or isinstance(rules, Rules) or len(rules) == 0:
            raise ValueError(f"rules must be a non-empty list of rule sets, got {rules!r}")
        resolved = [resolve_rules(r) for r in rules]
        names = [r.name for r in resolved]
        if len(set(names)) != len(names):
            raise ValueError(f"rules must name each rule set once, got {names}")
        if weights is not None and not _is_list(weights):
            raise ValueError(f"weights must be a list of one weight per rule set, got {weights!r}")
        weights = [1.0] * len(resolved) if weights is None else list(weights)
        if len(weights) != len(resolved):
            raise ValueError(f"weights must give one weight per rule set ({len(resolved)}), got {len(weights)}")
        seed = check_seed(seed)
        self.num_games = num_games
        self.device = check_device(device)
        players = _table_sizes(num_players, self.num_games, self.device)
        counts = split_games(self.num_games, weights)
        bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
        #: Each block's rows of the batch, ``slice(begin, end)``, in ``rules`` order.
        self.blocks = [slice(bounds[i], bounds[i + 1]) for i in range(len(counts))]
        #: The :class:`BatchedLoveLetter` of each block.
        self.envs = [
            BatchedLoveLetter(
                num_games=counts[i],
                num_players=players[block],
                rules=resolved[i],
                episode=episode,
                device=self.device,
                seed=block_seed(seed, i),
                validate_actions=validate_actions,
            )
            for i, block in enumerate(self.blocks)
        ]
        for env, block in zip(self.envs, self.blocks):
            env.first_game = block.start
        #: The rule set's name of each game.
        self.game_rules = [names[i] for i, n in enumerate(counts) for _ in range(n)]
        self.rules = resolved
        self.episode = episode
        self._players = players

    @property
    def current_player(self) -> torch.Tensor:
        """long [N]: the seat to act in each game."""
        return torch.cat([env.current_player for env in self.envs])

    @property
    def num_players(self) -> torch.Tensor:
        """long [N]: each game's table size (a copy, as :attr:`BatchedLoveLetter.num_players`)."""
        return self._players.clone()

    @property
    def action_mask(self) -> torch.Tensor:
        """bool [N, 41]: the legal actions of the player to act."""
        return torch.cat([env.action_mask for env in self.envs])

    def reset(
        self, decks: torch.Tensor | None = None, first_player: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Start a new episode in every game; ``decks`` and ``first_player`` as
        :meth:`BatchedLoveLetter.reset`'s, one row per game of the whole batch."""
        for name, value, shape in (
            ("decks", decks, (self.num_games, DECK_SIZE)),
            ("first_player", first_player, (self.num_games,)),
        ):
            if value is not None and (not isinstance(value, torch.Tensor) or tuple(value.shape) != shape):
                got = list(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                raise ValueError(f"{name} must be a tensor of shape {list(shape)}, one row per game, got {got}")
        # Every block checks its part before any block deals: a refused reset changes nothing.
        for env, block in zip(self.envs, self.blocks):
            if decks is not None:
                env._check_decks(decks[block])
            if first_player is not None:
                env._check_seats(first_player[block], "first_player")
        obs = self._new_observations()
        masks = []
        for env, block in zip(self.envs, self.blocks):
            o, m = env.reset(
                None if decks is None else decks[block], None if first_player is None else first_player[block]
            )
            obs[block] = o
            masks.append(m)
        return obs, torch.cat(masks)

    def step(
        self,
        actions: torch.Tensor,
        out: torch.Tensor | None = None,
        *,
        mask_out: torch.Tensor | None = None,
        info: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any] | None]:
        """As :meth:`BatchedLoveLetter.step`; each block writes its rows of ``out`` and ``mask_out``."""
        check_step_buffers(self.num_games, self.device, out, mask_out)
        self._check_actions(actions)
        obs = self._new_observations() if out is None else out
        if mask_out is None:
            mask_out = torch.empty(self.num_games, NUM_ACTIONS, dtype=torch.bool, device=self.device)
        results = [
            env.step(actions[block], out=obs[block], mask_out=mask_out[block], info=info)
            for env, block in zip(self.envs, self.blocks)
        ]
        _, _, rewards, dones, infos = zip(*results)
        return obs, mask_out, torch.cat(rewards), torch.cat(dones), (_cat_infos(infos) if info else None)

    def advance(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """As :meth:`BatchedLoveLetter.advance`: :meth:`step` without observations."""
        self._check_actions(actions)
        results = [env.advance(actions[block]) for env, block in zip(self.envs, self.blocks)]
        masks, rewards, dones, infos = zip(*results)
        return torch.cat(masks), torch.cat(rewards), torch.cat(dones), _cat_infos(infos)

    def observe(self, seats: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """As :meth:`BatchedLoveLetter.observe`: seat ``seats[g]``'s observation of game ``g``."""
        check_tensor(seats, "seats", (self.num_games,), self.device)
        check_step_buffers(self.num_games, self.device, out)
        for env, block in zip(self.envs, self.blocks):  # every block's seats before any row is written
            env._check_seats(seats[block], "seats", values=env._checks_values)
        obs = self._new_observations() if out is None else out
        for env, block in zip(self.envs, self.blocks):
            env.observe(seats[block], out=obs[block])
        return obs

    def _check_actions(self, actions: Any) -> None:
        check_tensor(actions, "actions", (self.num_games,), self.device)
        if not self.envs[0]._checks_values:
            return  # CUDA without validate_actions: reading the batch's legality back would synchronise
        # The whole batch is checked before any block moves: a refused batch changes nothing,
        # and the error names games by their place in the whole batch.
        # Against the blocks' own masks, not the tensor the last step handed out, which is the
        # caller's to write into: a block's own check must never be the one that refuses.
        if all(env._all_legal(actions[block]) for env, block in zip(self.envs, self.blocks)):
            return
        masks = torch.cat([env._checked_masks() for env in self.envs])
        check_actions_legal(actions, masks, self.current_player, self._players)

    def _new_observations(self) -> torch.Tensor:
        return torch.empty(self.num_games, OBSERVATION_SIZE, dtype=OBSERVATION_DTYPE, device=self.device)


def _is_list(values: Any) -> bool:
    """Whether ``values`` is a list-like of items (a sequence or a 1-D array, not a string):
    what ``len`` and iteration take without a Python error that names nothing."""
    if isinstance(values, np.ndarray):
        return values.ndim == 1
    return isinstance(values, Sequence) and not isinstance(values, (str, bytes))


def _cat_infos(infos: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {key: torch.cat([info[key] for info in infos]) for key in infos[0]}
