"""``BatchedLoveLetter``: N Love Letter games stepped together, with automatic resets.

On CPU the games run on the compiled core (:mod:`loveletter_env.core`): one compiled
call per step plays every game's turn, deals the rounds that ended, and writes masks
and observations. On CUDA they run on the torch engine (:mod:`.engine`), which never
synchronises with the host. Both give the same results for the same seed, bit for bit,
as the reference engine does for the same decks and actions.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..actions import NUM_ACTIONS, describe_action
from ..cards import DECK_SIZE
from ..core import RECORD_SIZE, kernels, mt19937, new_records
from ..core.decks import deck_tables
from ..core.layout import DECK as DECK_AT
from ..engine import MAX_PLAYERS, MIN_PLAYERS
from ..observation import OBSERVATION_SIZE
from ..rules import Rules, resolve_rules
from ..validation import check_episode
from . import engine
from .observe import discard_scratch, encode_observations
from .shuffle import deck_draws, shuffled_decks
from .state import BatchedState, empty_state, state_from_records
from .tables import MAX_SEATS, tables_for

#: How many faulty games an error message lists before summarising the rest.
_MAX_LISTED = 8


class BatchedIllegalActionError(ValueError):
    """Some games were given an action that is not legal there. Nothing was changed.

    ``games`` and ``actions`` hold the faulty game indices and the actions they got.
    """

    def __init__(self, message: str, games: Sequence[int], actions: Sequence[int]):
        super().__init__(message)
        self.games = tuple(games)
        self.actions = tuple(actions)


class BatchedLoveLetter:
    """N games of Love Letter as torch tensors, bit-identical to the scalar engine.

    Args:
        num_games: N.
        num_players: table size, an int (2..4) or one per game (sequence or 1-D tensor).
        rules: preset name or :class:`~loveletter_env.rules.Rules`.
        episode: ``"round"`` (an episode is one round) or ``"game"`` (rounds until a
            player reaches the token target; a new round starts within the episode).
        device: torch device of every tensor.
        seed: seed of the ``torch.Generator`` that shuffles decks and picks first players.
        validate_actions: check that every action is legal in its game before stepping,
            and that the seats passed to :meth:`observe` exist. The checks read one flag
            back to the host; turn them off for a CUDA loop that samples from the mask and
            must never synchronise. Shape, dtype and device are always checked (that costs
            no synchronisation). On CPU the checks always run, inside the compiled step,
            where they cost next to nothing: nothing unchecked reaches compiled code.

    Observations are those of :func:`loveletter_env.observation.encode_observation`
    for the player to act; masks are ``engine.legal_mask``; rewards are +1 to each winner
    and -1 to every other seat at an episode's end (0 for padding seats).
    """

    def __init__(
        self,
        num_games: int,
        num_players: int | Sequence[int] | torch.Tensor = 2,
        rules: str | Rules = "classic",
        episode: str = "round",
        device: str | torch.device = "cpu",
        seed: int = 0,
        validate_actions: bool = True,
    ):
        if isinstance(num_games, bool) or not hasattr(num_games, "__index__") or int(num_games) < 1:
            raise ValueError(f"num_games must be a positive int, got {num_games!r}")
        num_games = int(num_games)
        check_episode(episode)
        self.device = torch.empty(0, device=device).device  # normalised: "cuda" -> "cuda:0"
        self.rules = resolve_rules(rules)
        self.episode = episode
        self.num_games = num_games
        self.validate_actions = validate_actions
        self._players = _table_sizes(num_players, num_games, self.device)
        if self.rules.is_rung:
            if self.device.type != "cpu":
                raise ValueError(
                    f"rules {self.rules.name!r} are a ladder rung, which the batched env plays on CPU only "
                    f"(the compiled core); got device {self.device}"
                )
            for size in self._players.unique().tolist():
                self.rules.check_num_players(size)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))
        self._mask: torch.Tensor | None = None
        # CPU: the games live in compiled-core records; CUDA: in a BatchedState of tensors.
        self._records: np.ndarray | None = None
        if self.device.type == "cpu":
            self._records = new_records(self._players.numpy(), self.rules)
            self._current = torch.zeros(num_games, dtype=torch.long)
            self._legal = np.zeros(num_games, np.uint64)  # private copy of the masks, as bit sets
            # Scratch for each step's random draws (first players, then deck indices).
            self._uniforms = np.empty(num_games, np.float32)
            self._draws = np.empty((3, num_games), np.int64)
            self._words = np.empty(4 * num_games, np.uint32)
            # uint8 copies of the deck tables: a quarter of the cache footprint of int64.
            self._deck_tables = tuple(t.astype(np.uint8) for t in deck_tables())
            orders, placements = self._deck_tables
            self._draw_highs = np.array([len(orders), len(orders), len(placements)], np.int64)
        else:
            self._state = empty_state(self._players, self.rules)
            self._scratch = discard_scratch(num_games, self.device)  # reused by every observation

    # Public views --------------------------------------------------------------------
    @property
    def state(self) -> BatchedState:
        """The games' state as a :class:`BatchedState`. On CPU this is a copy made from the
        compiled core's records (changing it changes nothing); on CUDA, the live state."""
        if self._records is not None:
            return state_from_records(self._records)
        return self._state

    @property
    def current_player(self) -> torch.Tensor:
        """long [N]: the seat to act in each game."""
        return self._current if self._records is not None else self._state.current

    @property
    def num_players(self) -> torch.Tensor:
        """long [N]: each game's table size."""
        return self._players

    @property
    def action_mask(self) -> torch.Tensor:
        """bool [N, 41]: the legal actions of the player to act."""
        return self._require_reset()

    def state_bytes_per_game(self) -> int:
        """Bytes of game state per game."""
        return RECORD_SIZE if self._records is not None else self._state.nbytes_per_game()

    # Episode control -------------------------------------------------------------------
    def reset(
        self, decks: torch.Tensor | None = None, first_player: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Start a new episode in every game. ``decks`` (int [N, 16], top first) and
        ``first_player`` (int [N]) fix the first round; by default both are random.

        Returns ``(obs float32 [N, OBSERVATION_SIZE], mask bool [N, 41])``.
        """
        n = self.num_games
        # Check everything before drawing from the generator: a refused call changes nothing.
        if decks is not None:
            decks = self._check_decks(decks)
        if first_player is not None:
            first_player = self._check_seats(first_player, "first_player")
        decks = self._shuffled_decks() if decks is None else decks
        first = self._random_first_players() if first_player is None else first_player
        if self._records is not None:
            mask = torch.empty(n, NUM_ACTIONS, dtype=torch.bool)
            kernels.reset_batch(self._records, decks.numpy().astype(np.uint8), first.numpy(), mask.numpy(), self._legal)
            self._current = first.clone()
            self._mask = mask
            return self._observe(self._current, None), mask
        state = empty_state(self._players, self.rules)
        engine.start_rounds(state, decks, first, torch.ones(n, dtype=torch.bool, device=self.device))
        self._state = state
        self._mask = engine.legal_mask(state, self.rules)
        return self._observe(state.current, None), self._mask

    def step(
        self, actions: torch.Tensor, out: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """Each game's player to act plays ``actions[g]`` (long [N]).

        Returns ``(obs, mask, rewards float32 [N, 4], dones bool [N], info)``. Finished
        games are reset, so ``obs``/``mask`` of a done game belong to the new episode.
        ``info`` holds ``"round_over"`` (bool [N]), ``"round_winners"`` (bool [N, 4])
        and ``"tokens"`` (int8 [N, 4], before any reset) of the step that just ended.
        ``out`` (float32 [N, OBSERVATION_SIZE], contiguous) receives ``obs``, e.g. a slice
        of rollout storage; it is checked before anything changes.
        """
        if out is not None:
            self._check_out(out)
        if self._records is not None:
            obs = torch.empty(self.num_games, OBSERVATION_SIZE) if out is None else out
            mask, rewards, dones, info = self._advance_core(actions, obs)
            return obs, mask, rewards, dones, info
        mask, rewards, dones, info = self.advance(actions)
        return self._observe(self._state.current, out), mask, rewards, dones, info

    def advance(
        self, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """:meth:`step` without building the observation: returns ``(mask, rewards,
        dones, info)``. For drivers that need only masks (random or scripted players)
        or observe other seats with :meth:`observe`."""
        if self._records is not None:
            return self._advance_core(actions, None)
        mask = self._require_reset()
        actions = self._check_tensor(actions, "actions", (self.num_games,)).long()
        if self.validate_actions:
            self._check_actions_legal(actions, mask)
        state, rules = self._state, self.rules
        engine.play_turn(state, actions, rules)

        round_over, round_winners, tokens = state.round_over, state.round_winners, state.tokens
        present = state.present
        if self.episode == "round":
            dones, winners = round_over, round_winners
        else:
            reached = (tokens >= state.tokens_to_win[:, None]) & present
            dones, winners = reached.any(1), reached
        rewards = torch.where(winners, 1.0, -1.0).masked_fill(~(present & dones[:, None]), 0.0)
        info = {"round_over": round_over, "round_winners": round_winners, "tokens": tokens}

        # A new round everywhere a round ended: a fresh game (random first player, no
        # tokens) where the episode is done, else the next round of the same game, which
        # the previous round's lowest-seat winner starts.
        lowest_winner = round_winners.to(torch.int8).argmax(1)
        first = torch.where(dones, self._random_first_players(), lowest_winner)
        state.tokens = state.tokens.masked_fill(dones[:, None], 0)
        engine.start_rounds(state, self._shuffled_decks(), first, round_over)

        self._mask = engine.legal_mask(state, rules)
        return self._mask, rewards, dones, info

    def step_random(
        self, sampler: np.ndarray, out: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """:meth:`step` with uniformly random legal actions drawn inside the compiled step
        (CPU only): for random players and benchmarks, it saves a separate pass over the
        masks. ``sampler`` is a generator state from
        :func:`loveletter_env.core.sampling.new_generator`, advanced in place; the actions
        are those :func:`~loveletter_env.core.sampling.sample_legal` would draw from the
        current masks with the same state, so the games are the same as sampling first and
        calling :meth:`step`.

        Returns ``(actions, obs, mask, rewards, dones, info)``; ``actions`` (long [N]) are
        the actions played."""
        if out is not None:
            self._check_out(out)
        self._check_sampler(sampler)
        obs = torch.empty(self.num_games, OBSERVATION_SIZE) if out is None else out
        actions = torch.empty(self.num_games, dtype=torch.long)
        mask, rewards, dones, info = self._advance_core(actions, obs, sampler)
        return actions, obs, mask, rewards, dones, info

    def advance_random(
        self, sampler: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """:meth:`step_random` without building the observation, as :meth:`advance` is to
        :meth:`step`: returns ``(actions, mask, rewards, dones, info)``."""
        self._check_sampler(sampler)
        actions = torch.empty(self.num_games, dtype=torch.long)
        mask, rewards, dones, info = self._advance_core(actions, None, sampler)
        return actions, mask, rewards, dones, info

    def _advance_core(
        self, actions: torch.Tensor, obs: torch.Tensor | None, sampler: np.ndarray | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """:meth:`advance` on the compiled core; writes the new observations into ``obs`` if
        given. With a ``sampler``, the kernel draws the actions and writes them into ``actions``."""
        self._require_reset()
        if sampler is not None:
            actions_np = actions.numpy()
        else:
            actions = self._check_tensor(actions, "actions", (self.num_games,))
            actions_np = actions.numpy().astype(np.int64, copy=False)
            # Always checked (one compiled pass over a private copy of the masks, which callers
            # cannot change): an illegal action never reaches the kernels.
            if kernels.first_illegal(self._legal, actions_np) >= 0:
                self._check_actions_legal(actions.long(), self._legal_masks())
        uniforms, draws = self._deal_draws()
        orders, placements = self._deck_tables
        n = self.num_games
        rewards = torch.empty(n, MAX_SEATS)
        dones = torch.empty(n, dtype=torch.bool)
        round_over = torch.empty(n, dtype=torch.bool)
        round_winners = torch.empty(n, MAX_SEATS, dtype=torch.bool)
        tokens = torch.empty(n, MAX_SEATS, dtype=torch.int8)
        current = torch.empty(n, dtype=torch.long)
        mask = torch.empty(n, NUM_ACTIONS, dtype=torch.bool)
        observations = obs.numpy() if obs is not None else np.empty((0, OBSERVATION_SIZE), np.float32)
        outputs = (
            rewards.numpy(), dones.numpy(), round_over.numpy(), round_winners.numpy(), tokens.numpy(),
            current.numpy(), mask.numpy(), self._legal, observations, obs is not None,
        )
        deals = (self.episode == "round", uniforms, orders, placements, draws)
        if sampler is None:
            kernels.step_batch(self._records, actions_np, *deals, *outputs)
        else:
            kernels.random_step_batch(self._records, sampler, actions_np, *deals, *outputs)
        self._current, self._mask = current, mask
        info = {"round_over": round_over, "round_winners": round_winners, "tokens": tokens}
        return mask, rewards, dones, info

    def _deal_draws(self) -> tuple[np.ndarray, np.ndarray]:
        """A step's random values: a uniform float per game (first players of new games)
        and three rows of deck indices, the same draws in the same order as the torch path
        (``_random_first_players``, then ``shuffle.deck_draws``), so the same seed gives the
        same games. Drawn by the compiled copy of the generator (a third of torch's time),
        unless this torch's generator state has a layout it does not know."""
        state = self.generator.get_state()
        if state.numel() == mt19937.STATE_BYTES and _compiled_draws_match_torch():
            mt19937.deal_draws(state.numpy(), self._uniforms, self._draws, self._draw_highs, self._words)
            self.generator.set_state(state)
            return self._uniforms, self._draws
        uniforms, draws = torch.from_numpy(self._uniforms), torch.from_numpy(self._draws)
        torch.rand(self.num_games, generator=self.generator, out=uniforms)
        for row, high in zip(draws, self._draw_highs.tolist()):
            torch.randint(high, (self.num_games,), generator=self.generator, out=row)
        return self._uniforms, self._draws

    def _check_sampler(self, sampler: Any) -> None:
        if self._records is None:
            raise NotImplementedError("step_random and advance_random run on the compiled core: CPU only")
        if not isinstance(sampler, np.ndarray) or sampler.dtype != np.uint64 or sampler.shape != (1,):
            raise ValueError(
                "sampler must be a generator state from loveletter_env.core.sampling.new_generator "
                f"(uint64 array of shape [1]), got {sampler!r}"
            )
        if not sampler.flags.writeable:
            raise ValueError("sampler must be writeable: it is advanced in place")

    def observe(self, seats: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """float32 [N, OBSERVATION_SIZE]: each game seen from ``seats[g]`` (long [N]),
        written into ``out`` if given. Seats are checked to exist when ``validate_actions``
        is on (the check synchronises a CUDA device)."""
        self._require_reset()
        # The compiled core always checks seats: out-of-range ones must never reach it.
        seats = self._check_seats(seats, "seats", values=self.validate_actions or self._records is not None)
        if out is not None:
            self._check_out(out)
        return self._observe(seats, out)

    def _legal_masks(self) -> torch.Tensor:
        """bool [N, 41]: the masks the core last wrote, from its private copy."""
        bits = torch.from_numpy(self._legal.astype(np.int64))
        return (bits[:, None] >> torch.arange(NUM_ACTIONS)) & 1 == 1

    def _observe(self, seats: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
        if self._records is not None:
            obs = torch.empty(self.num_games, OBSERVATION_SIZE) if out is None else out
            kernels.observe_batch(self._records, seats.numpy(), obs.numpy())
            return obs
        return encode_observations(self._state, seats, self.rules, out, self._scratch)

    # Randomness ------------------------------------------------------------------------
    def _shuffled_decks(self) -> torch.Tensor:
        """int8 [N, 16]: a uniformly shuffled deck per game (on a ladder rung, only the cards
        in play are shuffled, from the same draws, as the compiled deal does)."""
        if not self.rules.is_rung:
            return shuffled_decks(self.num_games, self.generator, self.device)
        draws = deck_draws(self.num_games, self.generator, self.device).T.contiguous().numpy()
        decks = self._records[:, DECK_AT : DECK_AT + DECK_SIZE].copy()  # type: ignore[index]
        orders, placements = self._deck_tables
        kernels.shuffle_in_play_batch(decks, self.rules.face_up_count(2), orders, placements, draws)
        return torch.from_numpy(decks.astype(np.int8))

    def _random_first_players(self) -> torch.Tensor:
        u = torch.rand(self.num_games, generator=self.generator, device=self.device)
        return (u * self._players).long().clamp(max=MAX_SEATS - 1)

    # Input checks ----------------------------------------------------------------------
    def _require_reset(self) -> torch.Tensor:
        """The current masks; a clear error before the first reset."""
        if self._mask is None:
            raise RuntimeError("call reset() before step(), observe() or action_mask")
        return self._mask

    def _check_tensor(self, x: Any, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise TypeError(f"{name} must have an integer dtype, got {x.dtype}")
        if tuple(x.shape) != shape:
            raise ValueError(f"{name} must have shape {list(shape)}, got {list(x.shape)}")
        if x.device != self.device:
            raise ValueError(f"{name} is on {x.device}, the env is on {self.device}")
        return x

    def _check_out(self, out: Any) -> None:
        shape = (self.num_games, OBSERVATION_SIZE)
        if not isinstance(out, torch.Tensor) or out.dtype != torch.float32 or tuple(out.shape) != shape:
            raise ValueError(f"out must be a float32 tensor of shape {list(shape)}, got {_describe(out)}")
        if out.device != self.device or not out.is_contiguous():
            raise ValueError(f"out must be contiguous and on {self.device}, got {_describe(out)}")

    def _check_seats(self, seats: Any, name: str, values: bool = True) -> torch.Tensor:
        """Shape, dtype and device; with ``values``, also that each seat exists (a host sync)."""
        seats = self._check_tensor(seats, name, (self.num_games,)).long()
        if not values:
            return seats
        bad = (seats < 0) | (seats >= self._players)
        if bool(bad.any()):
            games = bad.nonzero().flatten().tolist()
            listed = ", ".join(
                f"game {g}: {int(seats[g])} (table of {int(self._players[g])})" for g in games[:_MAX_LISTED]
            )
            raise ValueError(f"{name} must be a seat of each game's table; bad in {len(games)} game(s): {listed}")
        return seats

    def _check_decks(self, decks: Any) -> torch.Tensor:
        decks = self._check_tensor(decks, "decks", (self.num_games, DECK_SIZE))
        expected = tables_for(self.device).full_deck.long()
        bad = (decks.long().sort(1).values != expected).any(1)
        if bool(bad.any()):
            games = bad.nonzero().flatten().tolist()
            listed = "; ".join(f"game {g}: {decks[g].tolist()}" for g in games[:_MAX_LISTED])
            raise ValueError(f"decks must be permutations of the 16 cards; {len(games)} are not: {listed}")
        face_up = self.rules.face_up_cards
        if face_up is not None:
            shown = decks[:, 1 : 1 + len(face_up)].long().sort(1).values
            bad = (shown != torch.tensor(face_up, device=decks.device)).any(1)
            if bool(bad.any()):
                games = bad.nonzero().flatten().tolist()
                try:
                    self.rules.check_deck(decks[games[0]].tolist())
                except ValueError as error:
                    raise ValueError(f"{len(games)} deck(s) lack the face-up cards; game {games[0]}: {error}") from None
        return decks.to(torch.int8)

    def _check_actions_legal(self, actions: torch.Tensor, mask: torch.Tensor) -> None:
        """Raise :class:`BatchedIllegalActionError` naming every game whose action ``mask`` refuses."""
        in_range = (actions >= 0) & (actions < NUM_ACTIONS)
        legal = in_range & mask.gather(1, actions.long().clamp(0, NUM_ACTIONS - 1)[:, None]).squeeze(1)
        if bool(legal.all()):
            return
        games = (~legal).nonzero().flatten().tolist()
        lines = []
        for g in games[:_MAX_LISTED]:
            a, player, n = int(actions[g]), int(self.current_player[g]), int(self._players[g])
            what = describe_action(a, player, n) if 0 <= a < NUM_ACTIONS else "out of range 0..40"
            allowed = ", ".join(str(i) for i in mask[g].nonzero().flatten().tolist())
            lines.append(f"game {g}: action {a} ({what}) for player_{player}; legal: [{allowed}]")
        more = f"\n  ... and {len(games) - _MAX_LISTED} more" if len(games) > _MAX_LISTED else ""
        raise BatchedIllegalActionError(
            f"illegal actions in {len(games)} of {self.num_games} games (nothing was changed):\n  "
            + "\n  ".join(lines) + more,
            games,
            [int(actions[g]) for g in games],
        )


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        layout = "" if x.is_contiguous() else ", not contiguous"
        return f"{x.dtype} tensor of shape {list(x.shape)} on {x.device}{layout}"
    return type(x).__name__


def _table_sizes(num_players: Any, num_games: int, device: torch.device) -> torch.Tensor:
    """long [N] table sizes from an int or one int per game; raise ValueError naming bad ones.

    Python and numpy integers are accepted; floats (even whole ones) and booleans are
    refused rather than truncated."""
    if isinstance(num_players, (bool, np.bool_)):
        raise ValueError(f"num_players must be 2, 3 or 4 (or one per game), got {num_players!r}")
    if isinstance(num_players, numbers.Integral):
        sizes = torch.full((num_games,), int(num_players), dtype=torch.long)
    else:
        try:
            values = np.asarray(num_players.cpu() if isinstance(num_players, torch.Tensor) else num_players)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"num_players must be an int or a sequence of ints, got {num_players!r}") from None
        if values.dtype == np.bool_ or not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"num_players must be an int or a sequence of ints, got {num_players!r}")
        if values.shape != (num_games,):
            raise ValueError(f"num_players per game must have shape [{num_games}], got {list(values.shape)}")
        sizes = torch.from_numpy(values.astype(np.int64))
    bad = ((sizes < MIN_PLAYERS) | (sizes > MAX_PLAYERS)).nonzero().flatten().tolist()
    if bad:
        raise ValueError(
            f"num_players must be 2, 3 or 4; games {bad[:_MAX_LISTED]} have {sizes[bad[:_MAX_LISTED]].tolist()}"
        )
    return sizes.to(device)


@functools.cache
def _compiled_draws_match_torch() -> bool:
    """Whether the compiled copy of the generator draws what this torch draws, checked once a
    process on a throwaway generator across several refills of its state.

    The copy knows torch's generator by the layout of its state bytes; a torch release that
    kept the size but changed the algorithm would otherwise deal other games without a sound.
    On a mismatch the env draws through torch itself (slower, same games)."""
    highs = np.array([40320, 12870, 7], np.int64)
    games = 700  # 2,800 words: four refills of the 624-word state
    ours, theirs = torch.Generator().manual_seed(20261126), torch.Generator().manual_seed(20261126)
    state = ours.get_state()
    if state.numel() != mt19937.STATE_BYTES:
        return False
    uniforms, draws = np.empty(games, np.float32), np.empty((len(highs), games), np.int64)
    mt19937.deal_draws(state.numpy(), uniforms, draws, highs, np.empty((len(highs) + 1) * games, np.uint32))
    ours.set_state(state)
    same = np.array_equal(uniforms, torch.rand(games, generator=theirs).numpy())
    for row, high in zip(draws, highs.tolist()):
        same = same and np.array_equal(row, torch.randint(high, (games,), generator=theirs).numpy())
    return bool(same and torch.equal(ours.get_state(), theirs.get_state()))
