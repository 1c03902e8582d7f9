"""Differential tests: the batched env (on the compiled core, CPU and CUDA) against the scalar engine.

Random legal play drives both with the same decks and actions; every legal mask,
observation (every seat's, value for value: uint8 here, float32 from the reference
encoder), reward, done flag and full game state must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import BAD_SEEDS, edge_case_decks, ladder_edge_case_decks, table_sizes

from loveletter_env import engine
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.aec import raw_env
from loveletter_env.batched import BatchedIllegalActionError, BatchedLoveLetter
from loveletter_env.batched.mixed import MixedRulesBatched
from loveletter_env.cards import FULL_DECK, GUARD, PRINCESS
from loveletter_env.observation import OBSERVATION_SIZE, encode_observation
from loveletter_env.rules import LADDER, resolve_rules

RULES = ("classic", "pegasus", "king_ignores_handmaid")
TABLES = (2, 3, 4, "mixed")
RUNGS = tuple(r.name for r in LADDER)  # each at its own table size


def _cuda_ready() -> bool:
    """A CUDA device and numba-cuda to compile for it (the ``cuda`` extra)."""
    if not torch.cuda.is_available():
        return False
    try:
        import numba.cuda

        from loveletter_env.core import gpu  # noqa: F401 (needs numba-cuda, not numba's own CUDA target)

        return bool(numba.cuda.is_available())
    except ImportError:
        return False


#: The devices the differential tests run on: the CPU, and CUDA where there is one (the
#: kernels' simulator and PTX checks, which need no GPU, are in tests/core/test_cuda.py).
DEVICES = ("cpu", pytest.param("cuda", marks=pytest.mark.skipif(not _cuda_ready(), reason="needs a CUDA device")))


def _sample(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.multinomial(mask.cpu().float(), 1, generator=generator).squeeze(1).to(mask.device)


class ScalarMirror:
    """One scalar game per batched game, fed the decks the batched env dealt."""

    def __init__(self, env: BatchedLoveLetter):
        self.env = env
        self.games = [self._new_game(g) for g in range(env.num_games)]

    def _deck(self, g: int) -> list[int]:
        return self.env.state.deck[g].tolist()

    def _new_game(self, g: int) -> engine.GameState:
        sizes = self.env.num_players.tolist()
        return engine.new_game(sizes[g], self._deck(g), int(self.env.current_player[g]), self.env.rules)

    def step(self, actions: list[int]) -> tuple[np.ndarray, np.ndarray, list]:
        """Step every scalar game; return expected rewards [N, 4], dones [N] and, per game,
        (round winners, tokens) when its round ended."""
        n = self.env.num_games
        rewards, dones = np.zeros((n, 4), np.float32), np.zeros(n, bool)
        ended: list = [None] * n
        for g, game in enumerate(self.games):
            engine.step(game, int(actions[g]))
            if not game.round_over:
                continue
            ended[g] = (game.round_winners, list(game.tokens))
            if self.env.episode == "round" or game.game_over:
                winners = game.round_winners if self.env.episode == "round" else game.game_winners
                rewards[g, : game.num_players] = [1.0 if p in winners else -1.0 for p in range(game.num_players)]
                dones[g] = True
                self.games[g] = self._new_game(g)
            else:
                engine.start_round(game, self._deck(g))  # first player: the scalar rule decides
        return rewards, dones, ended

    def check(self, obs: torch.Tensor, mask: torch.Tensor) -> None:
        env = self.env
        assert env.current_player.tolist() == [game.current for game in self.games]
        expected_mask = np.array([engine.legal_mask(game) for game in self.games], dtype=bool)
        np.testing.assert_array_equal(mask.cpu().numpy(), expected_mask)
        expected_obs = np.stack([encode_observation(game, game.current) for game in self.games])
        _assert_same_observations(obs, expected_obs)
        sizes = env.num_players
        for k in range(1, 4):  # every other seat's view too
            seats = (env.current_player + k) % sizes
            expected = np.stack([encode_observation(game, int(s)) for game, s in zip(self.games, seats)])
            _assert_same_observations(env.observe(seats), expected)


def _assert_same_observations(obs: torch.Tensor, expected: np.ndarray) -> None:
    """The env's bytes hold exactly the reference encoder's float32 values (compared as
    float32, into which every byte converts exactly, so a fractional value would fail)."""
    assert obs.dtype == torch.uint8
    np.testing.assert_array_equal(obs.cpu().numpy().astype(np.float32), expected.astype(np.float32, copy=False))


def _play_differential(env: BatchedLoveLetter, steps: int, seed: int, decks=None) -> int:
    generator = torch.Generator().manual_seed(seed)
    obs, mask = env.reset(decks=decks)
    mirror = ScalarMirror(env)
    mirror.check(obs, mask)
    episodes = 0
    for _ in range(steps):
        actions = _sample(mask, generator)
        obs, mask, rewards, dones, info = env.step(actions)
        expected_rewards, expected_dones, ended = mirror.step(actions.tolist())
        np.testing.assert_array_equal(rewards.cpu().numpy(), expected_rewards)
        np.testing.assert_array_equal(dones.cpu().numpy(), expected_dones)
        for g, end in enumerate(ended):
            assert bool(info["round_over"][g]) == (end is not None)
            if end is not None:
                winners, tokens = end
                assert info["round_winners"][g].nonzero().flatten().tolist() == list(winners)
                assert info["tokens"][g, : len(tokens)].tolist() == tokens
        mirror.check(obs, mask)
        episodes += int(dones.sum())
    return episodes


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("table", TABLES)
def test_random_rounds_match_scalar(table, rules, device):
    env = BatchedLoveLetter(48, table_sizes(table, 48), rules=rules, episode="round", seed=7, device=device)
    episodes = _play_differential(env, steps=90, seed=11)
    assert episodes > 200  # thousands of rounds across the parametrisation


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("table", (2, "mixed"))
def test_random_games_match_scalar(table, rules, device):
    """Whole games: later rounds start from the previous round's lowest-seat winner."""
    env = BatchedLoveLetter(24, table_sizes(table, 24), rules=rules, episode="game", seed=3, device=device)
    episodes = _play_differential(env, steps=260, seed=5)
    assert episodes > 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("table", (2, 3, 4))
def test_scripted_decks_match_scalar(table, rules, device):
    decks = torch.tensor([d for d in edge_case_decks() for _ in range(8)], device=device)
    env = BatchedLoveLetter(len(decks), table, rules=rules, seed=table, device=device)
    _play_differential(env, steps=40, seed=table, decks=decks)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("episode", ("round", "game"))
@pytest.mark.parametrize("rules", RUNGS)
def test_ladder_matches_scalar(rules, episode, device):
    """The rungs at their table sizes, random and scripted first decks; later deals shuffle
    only the cards in play."""
    players = resolve_rules(rules).rung_players
    env = BatchedLoveLetter(48, players, rules=rules, episode=episode, seed=7, device=device)
    assert _play_differential(env, steps=90, seed=11) > (300 if episode == "round" else 10)
    decks = torch.tensor([d for d in ladder_edge_case_decks(resolve_rules(rules)) for _ in range(8)], device=device)
    env = BatchedLoveLetter(len(decks), players, rules=rules, episode=episode, seed=3, device=device)
    _play_differential(env, steps=40, seed=5, decks=decks)


def test_round_episodes_match_pettingzoo_env():
    """Rewards of the public AEC env for the same decks, first players and actions."""
    env = BatchedLoveLetter(16, 3, episode="round", seed=9)
    generator = torch.Generator().manual_seed(0)
    obs, mask = env.reset()
    aecs = []
    for g in range(16):
        aec = raw_env(num_players=3, episode="round")
        aec.reset(options={"deck": env.state.deck[g].tolist(), "first_player": int(env.current_player[g])})
        aecs.append(aec)
    finished = [False] * 16
    while not all(finished):
        actions = _sample(mask, generator)
        obs, mask, rewards, dones, _ = env.step(actions)
        for g, aec in enumerate(aecs):
            if finished[g]:
                continue
            assert aec.agent_selection == f"player_{int(actions.new_tensor(0) + aec.game.current)}"
            aec.step(int(actions[g]))
            if dones[g]:
                finished[g] = True
                assert [aec.rewards[a] for a in aec.possible_agents] == rewards[g, :3].tolist()
            else:
                np.testing.assert_array_equal(obs[g].numpy(), aec.observe(aec.agent_selection)["observation"])
                assert rewards[g].abs().sum() == 0


@pytest.mark.parametrize("device", DEVICES)
def test_same_seed_same_episodes(device):
    def run(seed: int) -> list[torch.Tensor]:
        env = BatchedLoveLetter(32, [2, 3, 4, 3] * 8, episode="game", seed=seed, device=device)
        generator = torch.Generator().manual_seed(1)
        obs, mask = env.reset()
        out = [obs]
        for _ in range(30):
            obs, mask, rewards, dones, _ = env.step(_sample(mask, generator))
            out += [obs, rewards]
        return out

    a, b, c = run(0), run(0), run(1)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


def test_shapes_dtypes_and_padding():
    env = BatchedLoveLetter(6, [2, 3, 4, 2, 3, 4], seed=0)
    obs, mask = env.reset()
    assert obs.shape == (6, OBSERVATION_SIZE) and obs.dtype == torch.uint8
    assert obs.element_size() * obs.shape[1] == 1382  # bytes an observation
    assert mask.shape == (6, NUM_ACTIONS) and mask.dtype == torch.bool
    assert env.current_player.dtype == torch.long and env.num_players.tolist() == [2, 3, 4, 2, 3, 4]
    _, _, rewards, dones, _ = env.step(_sample(mask, torch.Generator().manual_seed(0)))
    assert rewards.shape == (6, 4) and rewards.dtype == torch.float32 and dones.dtype == torch.bool
    assert env.state_bytes_per_game() <= 512
    # What the env hands out is a copy: editing it cannot make a seat outside a table look valid.
    sizes = env.num_players
    sizes += 2
    assert env.num_players.tolist() == [2, 3, 4, 2, 3, 4]
    with pytest.raises(ValueError, match="table of 2"):
        env.observe(torch.full((6,), 3))


@pytest.mark.parametrize("device", DEVICES)
def test_illegal_actions_are_named_and_change_nothing(device):
    env = BatchedLoveLetter(5, 2, seed=0, device=device)
    obs, mask = env.reset()
    actions = _sample(mask, torch.Generator().manual_seed(0))
    bad = actions.clone()
    illegal = (~mask[3]).nonzero()[0].item()
    bad[3] = illegal
    bad[4] = 99
    before = env.state.clone()
    with pytest.raises(BatchedIllegalActionError) as err:
        env.step(bad)
    assert err.value.games == (3, 4) and err.value.actions == (illegal, 99)
    assert "game 3" in str(err.value) and "game 4" in str(err.value) and "out of range" in str(err.value)
    for name, value in env.state.tensors().items():
        assert torch.equal(value, before.tensors()[name]), name
    env.step(actions)  # the legal actions still go through


@pytest.mark.parametrize("dtype", (torch.uint64, torch.uint32, torch.uint16, torch.uint8, torch.int8))
def test_an_out_of_range_action_is_named_as_given_whatever_its_integer_dtype(dtype):
    """The check compares the actions as int64, where a uint64 past int64's range wraps
    negative: the error must still name the value the caller gave, not the wrapped one."""
    env = BatchedLoveLetter(2, 2, seed=0)
    _, mask = env.reset()
    big = torch.iinfo(dtype).max
    bad = torch.from_numpy(np.array([big, mask[1].nonzero()[0].item()], dtype=str(dtype).removeprefix("torch.")))
    with pytest.raises(BatchedIllegalActionError, match=rf"game 0: action {big} \(out of range 0..40\)") as err:
        env.step(bad)
    assert err.value.games == (0,) and err.value.actions == (big,)
    seats = torch.from_numpy(np.array([big, 0], dtype=str(dtype).removeprefix("torch.")))
    with pytest.raises(ValueError, match=rf"game 0: {big} \(table of 2\)"):
        env.observe(seats)


@pytest.mark.parametrize(
    "actions, error",
    [
        (torch.zeros(4, dtype=torch.long), ValueError),  # wrong shape
        (torch.zeros(5, dtype=torch.float32), TypeError),  # wrong dtype
        ([0, 0, 0, 0, 0], TypeError),  # not a tensor
        (torch.zeros(5, 1, dtype=torch.long), ValueError),
    ],
)
@pytest.mark.parametrize("validate", (True, False))
def test_malformed_actions_are_rejected(actions, error, validate):
    env = BatchedLoveLetter(5, 2, seed=0, validate_actions=validate)
    env.reset()
    with pytest.raises(error, match="actions"):
        env.step(actions)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="num_players"):
        BatchedLoveLetter(3, [2, 5, 3])
    with pytest.raises(ValueError, match="num_players"):
        BatchedLoveLetter(3, [2, 3])
    with pytest.raises(ValueError, match="episode"):
        BatchedLoveLetter(3, episode="match")
    with pytest.raises(ValueError, match="rules"):
        BatchedLoveLetter(3, rules="house")
    with pytest.raises(
        ValueError, match=r"num_players must be 2, 3 or 4 \(or one per game\), got 1180591620717411303424"
    ):
        BatchedLoveLetter(3, 2**70)
    with pytest.raises(ValueError, match="validate_actions must be True or False, got 'no'"):
        BatchedLoveLetter(3, validate_actions="no")  # a string would have read as true
    env = BatchedLoveLetter(2, [2, 3])
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(2, dtype=torch.long))
    deck = torch.tensor([FULL_DECK, FULL_DECK])
    broken = deck.clone()
    broken[1, 0] = 8
    with pytest.raises(ValueError, match="game 1"):
        env.reset(decks=broken)
    with pytest.raises(ValueError, match="game 1"):
        env.reset(decks=deck, first_player=torch.tensor([1, 3]))
    obs, mask = env.reset(decks=deck, first_player=torch.tensor([1, 2]))
    assert env.current_player.tolist() == [1, 2]
    with pytest.raises(ValueError, match="info must be True or False, got 'no'"):
        env.step(mask.int().argmax(1), info="no")


@pytest.mark.parametrize("device", DEVICES)
def test_observations_into_caller_buffer_and_advance(device):
    """``step(out=...)`` writes into the caller's tensor; ``advance`` is ``step`` without
    observations; both give what a fresh ``step`` gives."""
    envs = [BatchedLoveLetter(40, [2, 3, 4, 3] * 10, episode="game", seed=2, device=device) for _ in range(3)]
    masks = [env.reset()[1] for env in envs]
    buffer = torch.full((40, OBSERVATION_SIZE), 7, dtype=torch.uint8, device=device)
    generator = torch.Generator().manual_seed(3)
    for _ in range(25):
        actions = _sample(masks[0], generator)
        obs, mask, rewards, dones, _ = envs[0].step(actions)
        into, mask_b, rewards_b, dones_b, _ = envs[1].step(actions, out=buffer)
        mask_c, rewards_c, dones_c, _ = envs[2].advance(actions)
        assert into.data_ptr() == buffer.data_ptr()
        assert torch.equal(obs, buffer) and torch.equal(obs, envs[2].observe(envs[2].current_player))
        for a, b, c in ((mask, mask_b, mask_c), (rewards, rewards_b, rewards_c), (dones, dones_b, dones_c)):
            assert torch.equal(a, b) and torch.equal(a, c)
        masks[0] = mask
    with pytest.raises(ValueError, match="out"):
        envs[1].step(_sample(masks[0], generator), out=torch.zeros(40, OBSERVATION_SIZE - 1, device=device))
    with pytest.raises(ValueError, match="out"):
        envs[1].observe(envs[1].current_player, out=torch.zeros(OBSERVATION_SIZE, 40, device=device).t())


@pytest.mark.parametrize("device", DEVICES)
def test_masks_into_caller_buffer_and_a_step_without_info(device):
    """``step(mask_out=...)`` writes the masks into the caller's tensor, which is then
    ``action_mask``; ``info=False`` builds no ``info``; the games are those of a plain ``step``."""
    envs = [BatchedLoveLetter(40, [2, 3, 4, 3] * 10, episode="game", seed=6, device=device) for _ in range(2)]
    mask = [env.reset()[1] for env in envs][0]
    storage = torch.zeros(3, 40, NUM_ACTIONS, dtype=torch.bool, device=device)  # rollout-like rows
    obs_rows = torch.full((3, 40, OBSERVATION_SIZE), 7, dtype=torch.uint8, device=device)
    generator = torch.Generator().manual_seed(4)
    round_ends = 0
    for turn in range(40):
        actions = _sample(mask, generator)
        obs, mask, rewards, dones, info = envs[0].step(actions)
        rows = turn % 3
        into, mask_b, rewards_b, dones_b, info_b = envs[1].step(
            actions, out=obs_rows[rows], mask_out=storage[rows], info=False
        )
        assert info_b is None
        assert mask_b.data_ptr() == storage[rows].data_ptr() and into.data_ptr() == obs_rows[rows].data_ptr()
        assert envs[1].action_mask.data_ptr() == storage[rows].data_ptr()
        for a, b in ((obs, into), (mask, mask_b), (rewards, rewards_b), (dones, dones_b)):
            assert torch.equal(a, b), turn
        round_ends += int(info["round_over"].sum())
    assert round_ends > 0  # rounds ended (and new ones were dealt) on steps without info


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "bad, expected",
    [
        (lambda d: torch.ones(6, NUM_ACTIONS, dtype=torch.uint8, device=d), "torch.uint8"),
        (lambda d: torch.ones(6, NUM_ACTIONS + 1, dtype=torch.bool, device=d), "[6, 42]"),
        (lambda d: torch.ones(NUM_ACTIONS, 6, dtype=torch.bool, device=d).t(), "not contiguous"),
    ],
    ids=("uint8", "wrong-shape", "not-contiguous"),
)
def test_mask_out_of_wrong_dtype_shape_or_layout_is_refused_and_changes_nothing(device, bad, expected):
    env = BatchedLoveLetter(6, [2, 3, 4] * 2, seed=5, device=device)
    _, mask = env.reset()
    mask = mask.clone()
    actions = _sample(mask, torch.Generator().manual_seed(0))
    state, current = env.state.tensors(), env.current_player.clone()
    out = bad(device)
    with pytest.raises(ValueError, match=r"^mask_out must be") as error:
        env.step(actions, mask_out=out)
    assert expected in str(error.value) and "\n" not in str(error.value)
    assert out.all()  # not written
    assert torch.equal(env.action_mask, mask) and torch.equal(env.current_player, current)
    for name, value in env.state.tensors().items():
        assert torch.equal(value, state[name]), name


class _CountingGenerator(torch.Generator):
    """A ``torch.Generator`` that counts how often its state is read out and written back."""

    moves = 0

    def get_state(self) -> torch.Tensor:
        _CountingGenerator.moves += 1
        return super().get_state()

    def set_state(self, state: torch.Tensor) -> _CountingGenerator:
        _CountingGenerator.moves += 1
        return super().set_state(state)


def test_the_deal_generator_state_stays_with_the_compiled_draws_between_steps(monkeypatch):
    """The generator's state (5 KB) leaves torch once, not twice at every step, and the
    env deals what torch itself would have dealt: its ``generator`` read afterwards holds
    the twin's state, and draws made on it in between are the env's next deals' starting point."""
    monkeypatch.setattr(torch, "Generator", _CountingGenerator)
    n = 30
    env = BatchedLoveLetter(n, [2, 3, 4] * 10, episode="round", seed=12)
    _, mask = env.reset()
    monkeypatch.undo()
    twin = torch.Generator().manual_seed(12)
    twin.set_state(env.generator.get_state())
    _CountingGenerator.moves = 0
    actions = torch.Generator().manual_seed(1)
    for _ in range(60):
        _, mask, _, _, _ = env.step(_sample(mask, actions))
    assert _CountingGenerator.moves <= 1
    reference = BatchedLoveLetter(n, [2, 3, 4] * 10, episode="round", seed=12)
    reference.reset()
    actions = torch.Generator().manual_seed(1)
    mask = reference.action_mask
    for _ in range(60):
        _, mask, _, _, _ = reference.step(_sample(mask, actions))
    assert torch.equal(env.generator.get_state(), reference.generator.get_state())
    # Draws on the generator between steps move the env's deals on, as they always did.
    torch.rand(5, generator=env.generator)
    torch.rand(5, generator=reference.generator)
    for _ in range(30):
        step = _sample(mask, actions)
        _, mask, _, _, _ = env.step(step)
        _, mask_r, _, _, _ = reference.step(step)
        assert torch.equal(mask, mask_r)
    assert torch.equal(env.state.deck, reference.state.deck)
    assert torch.equal(env.generator.get_state(), reference.generator.get_state())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "bad, expected",
    [
        (lambda d: torch.full((6, OBSERVATION_SIZE), 5.0, device=d), "uint8"),  # float32, as observations once were
        (lambda d: torch.full((6, OBSERVATION_SIZE), 5, dtype=torch.int64, device=d), "uint8"),
        (lambda d: torch.full((6, OBSERVATION_SIZE + 1), 5, dtype=torch.uint8, device=d), f"[6, {OBSERVATION_SIZE}]"),
    ],
    ids=("float32", "int64", "wrong-shape"),
)
def test_out_buffer_of_wrong_dtype_or_shape_is_refused_and_changes_nothing(device, bad, expected):
    """``step``, ``step_random`` and ``observe`` refuse an ``out`` that is not uint8
    ``[N, OBSERVATION_SIZE]``, in a sentence naming what they expect, before any game, mask,
    generator or the buffer itself changes."""
    from loveletter_env.core.sampling import new_generator

    env = BatchedLoveLetter(6, [2, 3, 4] * 2, seed=5, device=device)
    _, mask = env.reset()
    actions = _sample(mask, torch.Generator().manual_seed(0))
    state, current = env.state.tensors(), env.current_player.clone()
    generator = None if env.generator is None else env.generator.get_state()
    sampler = new_generator(3)
    sampler_before = sampler.copy()
    out = bad(device)
    calls = {
        "step": lambda: env.step(actions, out=out),
        "step_random": lambda: env.step_random(sampler, out=out),
        "observe": lambda: env.observe(env.current_player, out=out),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError) as error:
            call()
        message = str(error.value)
        assert message.startswith("out must be a uint8 tensor") and expected in message, (name, message)
        assert str(out.dtype) in message and "\n" not in message, (name, message)
    assert (out == 5).all()  # not written
    assert np.array_equal(sampler, sampler_before)
    assert torch.equal(env.action_mask, mask) and torch.equal(env.current_player, current)
    for name, value in env.state.tensors().items():
        assert torch.equal(value, state[name]), name
    if generator is not None:
        assert torch.equal(env.generator.get_state(), generator)
    # The same calls with a proper buffer go through.
    env.step(actions, out=torch.empty(6, OBSERVATION_SIZE, dtype=torch.uint8, device=device))


def test_observe_rejects_bad_seats():
    env = BatchedLoveLetter(3, [2, 3, 4], seed=0)
    env.reset()
    with pytest.raises(ValueError, match="game 0"):
        env.observe(torch.tensor([2, 0, 0]))
    with pytest.raises(ValueError, match="seats"):
        env.observe(torch.tensor([0, 0]))


def _plain_batch(device: str) -> BatchedLoveLetter:
    return BatchedLoveLetter(4096, 3, device=device, seed=1, validate_actions=False)


def _mixed_rules_batch(device: str) -> MixedRulesBatched:
    return MixedRulesBatched(4096, rules=["mini6", "classic"], device=device, seed=1, validate_actions=False)


@pytest.mark.skipif(not _cuda_ready(), reason="needs a CUDA device")
@pytest.mark.parametrize("make", [_plain_batch, _mixed_rules_batch], ids=["one rule set", "mixed rule sets"])
def test_cuda_never_synchronises_without_validation(make):
    """With ``validate_actions=False`` a CUDA loop of steps and observations never waits for
    the device: kernels are launched on torch's stream and write into its tensors (a batch of
    several rule sets skips its whole-batch checks too)."""
    fast = make("cuda")
    fast_mask = fast.reset()[1]
    generator = torch.Generator(device="cuda").manual_seed(0)
    buffer = torch.empty(4096, OBSERVATION_SIZE, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any host synchronisation inside step raises
    try:
        for _ in range(20):
            keys = torch.rand(fast_mask.shape, generator=generator, device="cuda")
            fast_mask = fast.step(keys.masked_fill(~fast_mask, -1.0).argmax(1), out=buffer)[1]
            fast.observe((fast.current_player + 1) % fast.num_players, out=buffer)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert fast_mask.any(1).all()


def _record_launches(env: BatchedLoveLetter) -> list[tuple[str, tuple]]:
    """Every direct launch of ``env``'s kernels from now on, as (kernel, arguments)."""
    launches: list[tuple[str, tuple]] = []
    for name, direct in env._gpu._direct.items():

        def recorded(num_threads, stream, *args, _name=name, _direct=direct):
            launches.append((_name, args))
            _direct(num_threads, stream, *args)

        env._gpu._direct[name] = recorded
    return launches


def _play_on_device(env: BatchedLoveLetter, steps: int) -> list[torch.Tensor]:
    """Resets from fixed decks, then steps with torch's and the kernel's actions and
    observes other seats: every output, in order."""
    from loveletter_env.core.sampling import new_generator

    n = env.num_games
    rng = np.random.default_rng(5)
    device = env.device
    decks = torch.tensor(np.array([rng.permutation(FULL_DECK) for _ in range(n)]), device=device)
    outputs = list(env.reset(decks, torch.zeros(n, dtype=torch.long, device=device)))
    generator = torch.Generator(device=device).manual_seed(0)
    sampler = new_generator(7)
    buffer = torch.empty(n, OBSERVATION_SIZE, dtype=torch.uint8, device=device)
    for step in range(steps):
        if step % 2:
            actions, obs, mask, rewards, dones, info = env.step_random(sampler, out=buffer)
            outputs += [actions, obs.clone()]
        else:
            keys = torch.rand(env.action_mask.shape, generator=generator, device=device)
            obs, mask, rewards, dones, info = env.step(keys.masked_fill(~env.action_mask, -1.0).argmax(1))
            outputs.append(obs)
        outputs += [mask, rewards, dones, *info.values(), env.current_player.clone()]
        outputs.append(env.observe((env.current_player + 1) % env.num_players))
    outputs.append(env.reset()[0])
    return outputs


@pytest.mark.skipif(not _cuda_ready(), reason="needs a CUDA device")
def test_cuda_direct_launch_packs_arguments_as_numba_does():
    """The env's direct launches hand the driver the very values numba's own launch would
    (its ``_prepare_args`` over numba views of the same tensors), for every kernel."""
    from loveletter_env.core import gpu

    env = BatchedLoveLetter(99, [2, 3, 4] * 33, device="cuda", seed=2)
    assert set(env._gpu._direct) == set(gpu.KERNEL_BODIES), gpu.direct_launch_unavailable()
    directs = dict(env._gpu._direct)
    launches = _record_launches(env)
    _play_on_device(env, 4)
    assert {name for name, _ in launches} == set(gpu.KERNEL_BODIES)
    for name, args in launches:
        direct = directs[name]
        ours = direct.pack(*args)
        numba_packed: list = []
        views = [gpu.map_tensors(a, gpu.tensor_view) for a in args]
        for argument_type, value in zip(direct.kernel.argument_types, views):
            direct.kernel._prepare_args(argument_type, value, 0, [], numba_packed)
        assert [type(v) for v in ours] == [type(v) for v in numba_packed], name
        assert [getattr(v, "value", v) for v in ours] == [getattr(v, "value", v) for v in numba_packed], name


@pytest.mark.skipif(not _cuda_ready(), reason="needs a CUDA device")
def test_cuda_launchers_play_the_same_games():
    """Direct launches and numba's own play the same games, bit for bit; a tensor of the
    wrong dtype is refused by the direct launch before anything runs."""
    from loveletter_env.batched.cuda_tuning import cuda_tuning

    direct = BatchedLoveLetter(300, [2, 3, 4] * 100, device="cuda", seed=4)
    assert direct._gpu._direct
    expected = _play_on_device(direct, 12)
    with cuda_tuning(launcher="numba"):
        through_numba = BatchedLoveLetter(300, [2, 3, 4] * 100, device="cuda", seed=4)
    assert not through_numba._gpu._direct
    for step, (ours, theirs) in enumerate(zip(expected, _play_on_device(through_numba, 12), strict=True)):
        assert torch.equal(ours, theirs), f"output {step}"
    seats = torch.zeros(300, dtype=torch.int32, device="cuda")
    out = torch.zeros(300, OBSERVATION_SIZE, dtype=torch.uint8, device="cuda")
    with pytest.raises(TypeError, match="contiguous torch.int64 tensor"):
        direct._gpu._direct["observe"](300, 0, direct._gpu.records, seats, out)


@pytest.mark.skipif(not _cuda_ready(), reason="needs a CUDA device")
@pytest.mark.parametrize("masks_only", [False, True])
def test_cuda_steps_replay_in_a_cuda_graph(masks_only):
    """A step of a CUDA env (``validate_actions`` off) and a torch draw of its actions,
    captured in one CUDA graph: each replay plays the turn the same step played eagerly
    plays, bit for bit, and the env's masks and current players follow the replays."""
    from loveletter_env.bench import _GraphLoop, _hashed_policy_step

    envs, buffers = [], []
    for _ in range(2):
        envs.append(BatchedLoveLetter(500, [2, 3, 4] * 166 + [2, 3], device="cuda", seed=5, validate_actions=False))
        envs[-1].reset()
        buffers.append(torch.zeros(500, OBSERVATION_SIZE, dtype=torch.uint8, device="cuda"))
    replay = _GraphLoop(envs[0], buffers[0], masks_only)  # three eager warm-up steps, then the capture
    eager = _hashed_policy_step(envs[1], buffers[1], masks_only)
    for _ in range(3):
        eager()
    for _ in range(25):
        replay(1)
        eager()
        torch.cuda.synchronize()
        assert torch.equal(envs[0]._gpu.records, envs[1]._gpu.records)
        assert torch.equal(buffers[0], buffers[1])
        assert torch.equal(envs[0].action_mask, envs[1].action_mask)
        assert torch.equal(envs[0].current_player, envs[1].current_player)


def test_the_hashed_policy_step_plays_legal_actions_drawn_across_the_mask():
    """The graph benchmark's draw (a hash of a counter and each cell, no generator) plays
    only legal actions (the CPU env refuses any other), writes each step's observation
    into the buffer, and does not favour one end of the mask."""
    from loveletter_env.bench import _hashed_policy_step

    env = BatchedLoveLetter(64, [2, 3, 4] * 21 + [2], seed=3)
    env.reset()
    buffer = torch.empty(64, OBSERVATION_SIZE, dtype=torch.uint8)
    step = _hashed_policy_step(env, buffer, masks_only=False)
    lowest = choices = 0
    for _ in range(150):
        mask = env.action_mask.clone()
        actions = step()
        assert mask.gather(1, actions[:, None]).all()
        assert torch.equal(buffer, env.observe(env.current_player))
        several = mask.sum(1) >= 2
        lowest += int((actions == mask.int().argmax(1))[several].sum())
        choices += int(several.sum())
    assert choices > 1000 and 0.2 < lowest / choices < 0.8


def test_shuffled_decks_are_uniform():
    from loveletter_env.batched.shuffle import shuffled_decks
    from loveletter_env.core.decks import deck_tables

    orders, placements = (torch.from_numpy(t) for t in deck_tables())
    assert len({tuple(r) for r in orders.tolist()}) == 40320
    assert len({tuple(r) for r in placements.tolist()}) == 12870
    assert (placements.sort(1).values == torch.arange(16)).all()
    decks = shuffled_decks(200_000, torch.Generator().manual_seed(0), torch.device("cpu")).long()
    assert (decks.sort(1).values == torch.tensor(sorted(FULL_DECK))).all()
    counts = torch.tensor([FULL_DECK.count(v) for v in range(1, 9)], dtype=torch.float64)
    frequency = torch.stack([(decks == v).double().mean(0) for v in range(1, 9)])  # [value, position]
    expected = (counts / 16)[:, None]
    sigma = (expected * (1 - expected) / len(decks)).sqrt()
    assert ((frequency - expected).abs() < 5 * sigma).all()
    # A joint event across the two halves of the construction: Princess on top, a Guard last.
    joint = ((decks[:, 0] == PRINCESS) & (decks[:, 15] == GUARD)).double().mean().item()
    assert abs(joint - 1 / 16 * 5 / 15) < 5 * (joint * (1 - joint) / len(decks)) ** 0.5


def test_bench_engine_plays_whole_games_round_after_round_as_its_docstring_says(monkeypatch):
    """Row (a) of the bench times whole games (a new one only once one is won), not one
    round per game: its docstring must say what the timed loop plays."""
    from loveletter_env import bench

    games = []
    new_game = bench.engine.new_game
    monkeypatch.setattr(bench.engine, "new_game", lambda *a, **k: games.append(1) or new_game(*a, **k))
    _, round_length = bench.bench_engine(2, turns=3000, seed=0)
    rounds = 3000 / round_length  # at least 3000 turns, in whole rounds
    assert rounds > 2 * len(games)  # a 2-player game takes several rounds
    doc = " ".join(bench.bench_engine.__doc__.split())
    assert "one round per game" not in doc and "whole games" in doc, doc


def test_bench_null_env_episodes_are_as_long_as_the_aec_episodes_as_its_docstring_says(monkeypatch):
    """Row (c) mirrors row (b): its episodes last as long as the real AEC env's episodes (a
    whole game by default, ``--episode``), not as long as a round, and its docstring says so."""
    import argparse

    from loveletter_env import bench

    lengths = []
    null = bench.bench_null_aec
    monkeypatch.setattr(
        bench, "bench_null_aec", lambda n, t, length, seed=0: lengths.append(length) or null(n, t, length, seed)
    )
    args = argparse.Namespace(players=2, turns=500, repeats=1, batched=False, vs_pgx=False, seed=0, episode="game")
    measured = bench._measure(args, pgx_missing=True)
    assert lengths == [round(measured.episode_length)] and measured.episode_length > 2 * measured.round_length
    doc = " ".join((null.__doc__ or "").split())
    assert "real env's rounds" not in doc and "episode" in doc, doc


def test_bench_batched_runs():
    from loveletter_env.bench import BATCHED_OBSERVATIONS, BATCHED_SAMPLING, bench_batched

    for kind in BATCHED_OBSERVATIONS:
        for sampling in BATCHED_SAMPLING:
            if sampling == "graph":
                continue  # CUDA only: test_cuda_steps_replay_in_a_cuda_graph
            rates = bench_batched(3, turns=64, batch=16, observations=kind, sampling=sampling)
            assert rates.cpu > 0 and rates.wall > 0
    with pytest.raises(ValueError, match="needs a CUDA device"):
        bench_batched(2, turns=64, batch=16, sampling="graph")
    with pytest.raises(ValueError, match="observations"):
        bench_batched(2, turns=64, batch=16, observations="all")
    with pytest.raises(ValueError, match="sampling"):
        bench_batched(2, turns=64, batch=16, sampling="python")


def _deck_from_draws(first_order: int, second_order: int, placement: int) -> list[int]:
    """The deck three deal draws pick (``core.decks``), built here in plain Python."""
    from loveletter_env.core.decks import deck_tables

    orders, placements = deck_tables()
    deck = [0] * 16
    for j in range(8):
        deck[placements[placement][j]] = FULL_DECK[orders[first_order][j]]
        deck[placements[placement][8 + j]] = FULL_DECK[8 + orders[second_order][j]]
    return deck


@pytest.mark.parametrize("episode", ("round", "game"))
def test_cpu_deals_are_the_torch_generators_draws(episode):
    """CPU deals are pinned to the seed's ``torch.Generator`` draws, in the order every
    release has drawn them, so a seed deals the games it always dealt (published figures
    depend on them). Reset: three ``randint`` rows (two orders, a placement) then
    ``rand`` for the first players; each step: ``rand`` then the three rows, used by the
    games whose round ended."""
    sizes = [2, 3, 4, 2, 3] * 8
    n = len(sizes)
    env = BatchedLoveLetter(n, sizes, rules="pegasus", episode=episode, seed=4)
    twin = torch.Generator().manual_seed(4)
    highs = (40320, 40320, 12870)

    def draw_rows() -> list[list[int]]:
        return [torch.randint(high, (n,), generator=twin).tolist() for high in highs]

    rows = draw_rows()
    first = (torch.rand(n, generator=twin) * torch.tensor(sizes)).long().clamp(max=3)
    _, mask = env.reset()
    assert [env.state.deck[g].tolist() for g in range(n)] == [_deck_from_draws(*column) for column in zip(*rows)]
    assert torch.equal(env.current_player, first)
    generator = torch.Generator().manual_seed(2)
    dealt = 0
    for _ in range(120):
        uniforms = torch.rand(n, generator=twin)
        rows = draw_rows()
        _, mask, _, dones, info = env.step(_sample(mask, generator))
        decks = env.state.deck
        for g in info["round_over"].nonzero().flatten().tolist():
            dealt += 1
            assert decks[g].tolist() == _deck_from_draws(rows[0][g], rows[1][g], rows[2][g])
            if dones[g]:
                assert int(env.current_player[g]) == min(int(uniforms[g] * np.float32(sizes[g])), 3)
    assert dealt > 100
    assert torch.equal(env.generator.get_state(), twin.get_state())


@pytest.mark.parametrize("seed", (0, 9, 2**40 + 3))
def test_compiled_generator_draws_what_torch_draws(seed):
    """``core.mt19937.deal_draws`` gives the values ``torch.rand`` and ``torch.randint`` give
    from the same generator, and leaves the generator where torch would: across refills of
    the state words (every 624 draws), at batch sizes around them, and taking turns with
    torch's own draws on one generator."""
    from loveletter_env.core import mt19937

    highs = np.array([40320, 40320, 12870, 3], np.int64)
    ours, theirs = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    for n in (1, 5, 155, 156, 157, 623, 624, 625, 2000, 1):
        uniforms, draws = np.empty(n, np.float32), np.empty((len(highs), n), np.int64)
        state = ours.get_state()
        mt19937.deal_draws(state.numpy(), uniforms, draws, highs, np.empty((len(highs) + 1) * n, np.uint32))
        ours.set_state(state)
        expected = torch.rand(n, generator=theirs)
        assert np.array_equal(uniforms.view(np.uint32), expected.numpy().view(np.uint32)), n
        for row, high in zip(draws, highs.tolist()):
            assert np.array_equal(row, torch.randint(high, (n,), generator=theirs).numpy()), (n, high)
        assert torch.equal(ours.get_state(), theirs.get_state()), n
        # torch draws next from both: the states agree in every field torch reads.
        assert torch.equal(torch.rand(7, generator=ours), torch.rand(7, generator=theirs))


@pytest.mark.parametrize("seed", (0, 9, 2**40 + 3))
def test_the_same_twist_draws_what_random_random_draws(seed):
    """``core.mt19937.genrand`` and ``randbelow`` over ``random.Random.getstate()[1]`` give
    ``getrandbits(32)`` and ``choice``'s index one draw at a time, across refills of the state
    words, and leave the state ``random.Random`` would."""
    import random

    from loveletter_env.core import mt19937

    reference = random.Random(seed)
    state = np.array(reference.getstate()[1], np.uint32)
    for _ in range(3 * mt19937.MT_WORDS + 5):
        assert mt19937.genrand(state) == reference.getrandbits(32)
    # Bounds just above a power of two reject most draws: several outputs for one index.
    for n in (1, 2, 3, 5, 17, 41, 2**31 + 1, 2**32 - 1):
        for _ in range(50):
            assert mt19937.randbelow(state, n) == reference.choice(range(n)), n
    assert tuple(int(word) for word in state) == reference.getstate()[1]


def test_env_falls_back_to_torch_draws_for_an_unknown_generator_layout(monkeypatch):
    """A torch whose generator state the compiled copy does not know still gives the same
    games: the env draws through torch then."""

    _assert_plays_as_torch_draws(monkeypatch, compiled_on=lambda turn: turn % 2 == 1, num_games=30, turns=80)


def _assert_plays_as_torch_draws(monkeypatch, compiled_on, num_games: int, turns: int) -> None:
    """An env whose layout check passes on the turns ``compiled_on`` picks plays the same games,
    and leaves its generator in the same state, as one that only ever draws through torch."""
    from loveletter_env.core import mt19937

    known = mt19937.STATE_BYTES
    table = [2, 3, 4] * (num_games // 3)
    env = BatchedLoveLetter(num_games, table, episode="game", seed=8)
    monkeypatch.setattr(mt19937, "STATE_BYTES", -1)
    torch_only = BatchedLoveLetter(num_games, table, episode="game", seed=8)
    generator = torch.Generator().manual_seed(1)
    results = [env.reset(), torch_only.reset()]
    for turn in range(turns):
        actions = _sample(results[0][1], generator)
        monkeypatch.setattr(mt19937, "STATE_BYTES", known if compiled_on(turn) else -1)
        results[0] = env.step(actions)
        monkeypatch.setattr(mt19937, "STATE_BYTES", -1)
        results[1] = torch_only.step(actions)
        for a, b in zip(results[0][:4], results[1][:4]):
            assert torch.equal(a, b), turn
    assert torch.equal(env.generator.get_state(), torch_only.generator.get_state())


def test_compiled_draws_are_used_only_where_they_match_this_torch(monkeypatch):
    """The once-a-process check passes on the installed torch (so the compiled draws run),
    and fails, sending the env back to torch's own draws, when the copy draws otherwise."""
    from loveletter_env.batched.torch_draws import compiled_draws_match_torch
    from loveletter_env.core import mt19937

    compiled_draws_match_torch.cache_clear()
    assert compiled_draws_match_torch()
    exact = mt19937.deal_draws

    def off_by_one(state, uniforms, draws, highs, words):
        exact(state, uniforms, draws, highs, words)
        draws[-1, -1] = (draws[-1, -1] + 1) % highs[-1]

    monkeypatch.setattr(mt19937, "deal_draws", off_by_one)
    compiled_draws_match_torch.cache_clear()
    try:
        assert not compiled_draws_match_torch()
        # Layout known on every turn, yet the games are torch's: the check sent it to torch.
        _assert_plays_as_torch_draws(monkeypatch, compiled_on=lambda turn: True, num_games=6, turns=60)
    finally:
        compiled_draws_match_torch.cache_clear()


def test_refused_reset_draws_nothing_from_the_generator():
    env, fresh = BatchedLoveLetter(4, 4, seed=5), BatchedLoveLetter(4, 4, seed=5)
    with pytest.raises(ValueError, match="first_player"):
        env.reset(first_player=torch.full((4,), 9))
    with pytest.raises(ValueError, match="decks"):
        env.reset(decks=torch.ones(4, 16, dtype=torch.long))
    for a, b in zip(env.reset(), fresh.reset()):
        assert torch.equal(a, b)
    assert torch.equal(env.state.deck, fresh.state.deck)
    actions = _sample(fresh.action_mask, torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip(env.step(actions)[:4], fresh.step(actions)[:4]))


def test_table_sizes_must_be_integers():
    with pytest.raises(ValueError, match="num_players"):
        BatchedLoveLetter(4, [2.5, 3.9, 2.0, 4.7])
    with pytest.raises(ValueError, match="num_players"):
        BatchedLoveLetter(4, torch.tensor([2.0, 3.0, 2.0, 4.0]))
    with pytest.raises(ValueError, match="num_players"):
        BatchedLoveLetter(2, 2.0)
    with pytest.raises(ValueError, match="num_players"):
        BatchedLoveLetter(2, [True, True])
    assert BatchedLoveLetter(3, np.int64(3)).num_players.tolist() == [3, 3, 3]
    assert BatchedLoveLetter(3, np.array([2, 3, 4], np.int8)).num_players.tolist() == [2, 3, 4]


def test_the_state_is_a_copy_and_changing_it_changes_no_game():
    env = BatchedLoveLetter(3, [2, 3, 4], seed=0)
    env.reset()
    before = {name: value.clone() for name, value in env.state.tensors().items()}
    state = env.state
    for value in state.tensors().values():  # every field, the uint8 ones the records hold as they are included
        value.fill_(1)
    for name, value in env.state.tensors().items():
        assert torch.equal(value, before[name]), name


def test_unvalidated_cpu_env_still_refuses_what_the_core_cannot_take():
    """On CPU the compiled core checks actions and seats even with ``validate_actions=False``:
    out-of-range values never reach compiled code, and a refused step changes nothing."""
    env = BatchedLoveLetter(3, [2, 3, 4], seed=0, validate_actions=False)
    obs, mask = env.reset()
    before = env.state
    for bad in (torch.tensor([0, 1, 10**6]), torch.tensor([-1, 0, 0]), torch.tensor([2**40, 0, 0])):
        with pytest.raises(BatchedIllegalActionError):
            env.step(bad)
    for name, value in env.state.tensors().items():
        assert torch.equal(value, before.tensors()[name]), name
    with pytest.raises(ValueError, match="seats"):
        env.observe(torch.tensor([0, 0, 9]))
    with pytest.raises(ValueError, match="seats"):
        env.observe(torch.tensor([-1, 0, 0]))
    env.step(_sample(mask, torch.Generator().manual_seed(0)))


def test_bench_refuses_a_batch_larger_than_the_machine_before_allocating_it(monkeypatch, capsys):
    from loveletter_env import bench

    monkeypatch.setattr(bench, "_physical_memory", lambda: 2**30)  # a machine of 1 GiB
    games = 2**30 // bench._BYTES_PER_GAME + 1
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--batched", "--batch", str(games), "--turns", "300", "--repeats", "1"])
    assert exit_info.value.code == 2
    assert f"--batch {games:,} needs about 1.0 GiB" in capsys.readouterr().err


def test_bench_vs_pgx_says_how_to_install_pgx_when_missing(monkeypatch, capsys):
    import builtins

    from loveletter_env import bench

    real_import = builtins.__import__

    def no_pgx(name, *args, **kwargs):
        if name == "pgx" or name.startswith("pgx."):
            raise ImportError("No module named 'pgx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pgx)
    monkeypatch.setenv("XLA_FLAGS", "")  # the bench sets it for JAX; restored after the test
    threads = torch.get_num_threads()
    try:
        bench.main(["--vs-pgx", "--turns", "300", "--repeats", "1", "--batch", "16"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "pgx leduc_holdem: skipped" in out and 'pip install -e ".[bench]"' in out
    assert "(d) batched env" in out and "torch threads: 1" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--turns", "0"], "--turns and --repeats must be positive"),
        (
            ["--seed", "-1"],
            "--seed must be in 0..9223372036854775803 (the last repeat plays --seed + --repeats - 1 "
            "of at most 2**63 - 1), got -1",
        ),
        (["--seed", str(2**63 - 2)], "--seed must be in 0..9223372036854775803"),
        (["--seed", str(2**63 - 1), "--repeats", "2"], "--seed must be in 0..9223372036854775806"),
    ],
)
def test_bench_refuses_bad_sizes_and_seeds_before_timing_anything(argv, message, capsys):
    from loveletter_env import bench

    with pytest.raises(SystemExit) as stop:
        bench.main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_bench_takes_every_seed_whose_repeats_stay_valid_seeds(monkeypatch, capsys):
    """Repeat ``r`` plays ``--seed + r``: with one repeat, the largest seed (2**63 - 1) is
    valid; it was refused, the bound taken one repeat too many."""
    from loveletter_env import bench

    seeds = []
    monkeypatch.setattr(bench, "bench_engine", lambda n, t, seed: seeds.append(seed) or (1.0, 1.0))
    monkeypatch.setattr(bench, "bench_aec", lambda n, t, seed, episode: (1.0, 1.0))
    monkeypatch.setattr(bench, "bench_null_aec", lambda n, t, length, seed: 1.0)
    bench.main(["--seed", str(2**63 - 1), "--repeats", "1"])
    bench.main(["--seed", str(2**63 - 3), "--repeats", "3"])
    assert seeds == [2**63 - 1, 2**63 - 3, 2**63 - 2, 2**63 - 1]
    assert "do-nothing AEC env" in capsys.readouterr().out


def test_bench_help_says_which_thread_counts_reach_xla(monkeypatch):
    """Only ``--threads 1`` sets XLA's flags (pgx); the help said every count set "torch and XLA
    CPU threads", while 2 or more left XLA on all the machine's cores."""
    import os

    from loveletter_env import bench

    monkeypatch.setenv("XLA_FLAGS", "")
    bench._limit_xla_threads(2)
    assert os.environ["XLA_FLAGS"] == ""
    threads = next(a for a in bench._parser()._actions if a.dest == "threads")
    assert "torch and XLA CPU threads" not in threads.help
    assert "1 (the default) also holds XLA" in threads.help


def test_bench_ends_a_ctrl_c_with_a_sentence_and_status_130(monkeypatch, capsys):
    """A Ctrl-C in the middle of the measurements: a sentence on standard error and status
    130 (128 + SIGINT, what a shell reports for Ctrl-C), not a traceback."""
    from loveletter_env import bench

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "bench_aec", interrupted)
    with pytest.raises(SystemExit) as stop:
        bench.main(["--turns", "300", "--repeats", "2"])
    assert stop.value.code == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert "interrupted before every repeat was timed; nothing is reported" in err


def _failing_import(monkeypatch: pytest.MonkeyPatch, module: str, error: BaseException) -> None:
    """Make ``import module`` raise ``error`` for the rest of the test."""
    import builtins

    real_import = builtins.__import__

    def failing(name, *args, **kwargs):
        if name == module:
            raise error
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)


@pytest.mark.parametrize(
    ("module", "error", "flag", "status", "message"),
    [
        # Importing torch (and jax for --vs-pgx) before the first repeat takes seconds: a Ctrl-C
        # then also gets the sentence and status 130, not a traceback from inside torch.
        (
            "torch",
            KeyboardInterrupt(),
            "--batched",
            130,
            "interrupted before every repeat was timed; nothing is reported",
        ),
        # pgx present but one of its own imports failing (a dependency missing, a broken jax) is
        # not "pgx is not installed": --vs-pgx is refused with the import's own error.
        (
            "pgx",
            ModuleNotFoundError("No module named 'svgwrite'", name="svgwrite"),
            "--vs-pgx",
            2,
            "pgx is installed but cannot be imported: No module named 'svgwrite'",
        ),
    ],
    ids=["ctrl-c-while-torch-imports", "broken-pgx"],
)
def test_bench_ends_a_failing_import_with_a_sentence(monkeypatch, capsys, module, error, flag, status, message):
    from loveletter_env import bench

    _failing_import(monkeypatch, module, error)
    monkeypatch.setenv("XLA_FLAGS", "")  # the bench sets it for JAX; restored after the test
    with pytest.raises(SystemExit) as stop:
        bench.main([flag, "--turns", "300", "--repeats", "1", "--batch", "16"])
    assert stop.value.code == status
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_bench_reports_the_machine_load_of_its_run(monkeypatch, capsys):
    """The figures depend on what else the machine runs: the report says the load average at
    the start and at the end of the measurements, as the docs quote it beside each run."""
    from loveletter_env import bench

    loads = iter([(1.25, 0.0, 0.0), (3.5, 0.0, 0.0)])
    monkeypatch.setattr(bench.os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(bench, "bench_engine", lambda n, t, seed: (1.0, 1.0))
    monkeypatch.setattr(bench, "bench_aec", lambda n, t, seed, episode: (1.0, 1.0))
    monkeypatch.setattr(bench, "bench_null_aec", lambda n, t, length, seed: 1.0)
    bench.main(["--repeats", "1", "--turns", "10"])
    assert "machine load (1-minute average): 1.25 at the start, 3.50 at the end" in capsys.readouterr().out

    def no_load_average():
        raise OSError("no load average")

    monkeypatch.setattr(bench.os, "getloadavg", no_load_average)
    bench.main(["--repeats", "1", "--turns", "10"])
    assert "machine load: not reported by this system" in capsys.readouterr().out


def test_bench_help_says_what_turns_episode_and_the_exit_status_mean():
    """The batched rows play whole steps of ``--batch`` games, 10 at least (``--turns 300``
    times 81,920 turns at the default batch); ``--episode`` sets the batched env's episodes
    too; and a missed target does not fail the command (status 0): the help says all three."""
    from loveletter_env import bench

    parser = bench._parser()
    helps = {a.dest: " ".join(a.help.split()) for a in parser._actions if a.help}
    assert "10 steps" in helps["turns"] and "--batch" in helps["turns"]
    assert "batched" in helps["episode"]
    epilog = " ".join((parser.epilog or "").split())
    assert "exit status 0" in epilog and "whether or not the targets" in epilog
    assert "2" in epilog and "130" in epilog


def test_bench_times_the_aec_env_after_the_kernels_are_loaded(monkeypatch):
    """The first reset of a process loads the compiled core's kernels (about 0.4 s of CPU, the
    time of some 25,000 turns): rows (b) and (c) time play only, after an untimed turn, or a
    bench of few repeats (``--repeats 1``) reports that loading as a slower env. On a clock
    that only the env moves: a microsecond a step, 1,000 s for the first reset."""
    from loveletter_env import bench

    clock = [0.0]
    monkeypatch.setattr(bench.time, "process_time", lambda: clock[0])
    real_make_env = bench.make_env

    def loading_on_first_reset(**kwargs):
        env = real_make_env(**kwargs)
        reset, step, loaded = env.reset, env.step, []

        def first_reset_loads(*args, **reset_kwargs):
            if not loaded:
                clock[0] += 1000.0
                loaded.append(True)
            return reset(*args, **reset_kwargs)

        def timed_step(action):
            clock[0] += 1e-6
            return step(action)

        env.reset, env.step = first_reset_loads, timed_step
        return env

    monkeypatch.setattr(bench, "make_env", loading_on_first_reset)
    rate, _ = bench.bench_aec(2, 200, seed=3)
    assert rate > 0.5e6  # a million turns a second, end-of-episode steps aside


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("episode", ("round", "game"))
def test_random_steps_play_what_the_sampler_draws_from_the_masks(episode, device):
    """``step_random``/``advance_random`` draw inside the compiled step exactly the actions
    ``sample_legal`` draws from the same masks and generator state: the same games, the
    same observations, and the generator ends in the same state."""
    from loveletter_env.core.sampling import new_generator, sample_legal

    sizes = [2, 3, 4, 2, 3] * 8
    fused = BatchedLoveLetter(40, sizes, rules="pegasus", episode=episode, seed=4, device=device)
    separate = BatchedLoveLetter(40, sizes, rules="pegasus", episode=episode, seed=4, device=device)
    fused_sampler, separate_sampler = new_generator(7), new_generator(7)
    _, mask = fused.reset()
    separate.reset()
    buffer = torch.full((40, OBSERVATION_SIZE), 9, dtype=torch.uint8, device=device)
    for turn in range(150):
        drawn = torch.zeros(40, dtype=torch.long)
        sample_legal(mask.cpu().numpy(), separate_sampler, drawn.numpy())
        drawn = drawn.to(device)
        if turn % 2:
            actions, obs, mask, rewards, dones, info = fused.step_random(fused_sampler, out=buffer)
            assert obs is buffer
            expected = separate.step(drawn)
            assert torch.equal(obs, expected[0])
            expected = expected[1:]
        else:
            actions, mask, rewards, dones, info = fused.advance_random(fused_sampler)
            expected = separate.advance(drawn)
        assert torch.equal(actions, drawn)
        for a, b in zip((mask, rewards, dones), expected[:3]):
            assert torch.equal(a, b)
        for key in ("round_over", "round_winners", "tokens"):
            assert torch.equal(info[key], expected[3][key])
    assert fused_sampler[0] == separate_sampler[0]
    assert torch.equal(fused.observe(fused.current_player), separate.observe(separate.current_player))


def test_random_steps_refuse_a_bad_sampler_and_change_nothing():
    from loveletter_env.core.sampling import new_generator

    env = BatchedLoveLetter(4, 2, seed=1)
    with pytest.raises(RuntimeError, match="reset"):
        env.advance_random(new_generator(0))
    _, mask = env.reset()
    before = env.state.tensors()
    for bad in (np.zeros(1, np.int64), np.zeros(2, np.uint64), 3, new_generator(0)[0:0]):
        with pytest.raises(ValueError, match="sampler"):
            env.step_random(bad)
    frozen = new_generator(0)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        env.advance_random(frozen)
    with pytest.raises(ValueError, match="out"):
        env.step_random(new_generator(0), out=torch.zeros(3, OBSERVATION_SIZE))
    assert torch.equal(env.action_mask, mask)
    for name, value in env.state.tensors().items():
        assert torch.equal(value, before[name]), name


# Seeds ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
def test_the_batched_engine_refuses_seeds_that_are_not_integers(seed):
    # 1.9, '1' and True used to deal what 1 deals; None and 2**64 gave torch's errors.
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer below 2\*\*63, got"):
        BatchedLoveLetter(num_games=2, seed=seed)


def test_the_batched_engine_takes_numpy_seeds_as_the_same_int():
    first, second = BatchedLoveLetter(num_games=4, seed=np.int64(9)), BatchedLoveLetter(num_games=4, seed=9)
    assert torch.equal(first.reset()[0], second.reset()[0])
    BatchedLoveLetter(num_games=1, seed=2**63 - 1).reset()


def test_deals_and_reward_dtype_ignore_torchs_default_dtype():
    """Torch's global default dtype is the caller's business: it must neither change which
    first players a seed deals (``torch.rand`` draws other values as float64) nor make
    rewards anything but float32, nor disable the compiled draws for the whole process."""
    from loveletter_env.batched.torch_draws import compiled_draws_match_torch

    def play() -> list[torch.Tensor]:
        env = BatchedLoveLetter(16, [2, 3, 4, 3] * 4, episode="game", seed=3)
        obs, mask = env.reset()
        out = [env.current_player.clone(), obs]
        generator = torch.Generator().manual_seed(1)
        for _ in range(40):
            obs, mask, rewards, dones, _ = env.step(_sample(mask, generator))
            out += [obs, rewards, dones]
        return out

    expected = play()
    compiled_draws_match_torch.cache_clear()
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got = play()
        assert compiled_draws_match_torch()
    finally:
        torch.set_default_dtype(previous)
        compiled_draws_match_torch.cache_clear()
    assert got[3].dtype == torch.float32  # rewards
    assert all(torch.equal(a, b) for a, b in zip(expected, got))


@pytest.mark.parametrize("num_games", (2**40 + 1, 2**60, 2**63, 2**70))
def test_a_batch_too_large_for_any_machine_is_refused_by_name(num_games):
    """Past any machine's memory torch fails with its own arithmetic ("Storage size
    calculation overflowed", "Overflow when unpacking long long"), naming no argument."""
    with pytest.raises(ValueError, match=rf"num_games must be a positive int of at most 2\*\*40, got {num_games}"):
        BatchedLoveLetter(num_games)
    with pytest.raises(ValueError, match=rf"num_games must be an integer in 1..{2**40}, got {num_games}"):
        MixedRulesBatched(num_games, rules=["classic", "mini6"])


def test_shuffled_decks_draw_from_the_generator_given_never_from_torchs_global_one():
    """``generator=None`` made torch draw from its global generator: decks that changed with
    ``torch.manual_seed`` and moved its state, whatever the caller's seed."""
    from loveletter_env.batched.shuffle import shuffled_decks

    with pytest.raises(TypeError, match="generator must be a torch.Generator, got None"):
        shuffled_decks(3, None, torch.device("cpu"))
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match=r"num must be a non-negative integer, got"):
            shuffled_decks(bad, torch.Generator(), torch.device("cpu"))
    assert shuffled_decks(0, torch.Generator(), torch.device("cpu")).shape == (0, 16)


def test_state_from_records_refuses_what_is_not_a_batch_of_core_records():
    """A float or int64 array was read as records (values past a byte truncated), and a
    wrong width or rank failed inside torch's reshape naming no argument."""
    from loveletter_env.batched.state import state_from_records
    from loveletter_env.core import RECORD_SIZE, new_records

    records = new_records(np.array([2, 3]), resolve_rules("classic"))
    assert state_from_records(records).num_players.tolist() == [2, 3]
    for bad in (
        records.astype(np.int64),
        records.astype(np.float32),
        records[:, :10],
        records[0],
        records.tolist(),
    ):
        with pytest.raises(ValueError, match=rf"records must be a uint8 array of shape \[N, {RECORD_SIZE}\]"):
            state_from_records(bad)


class _DealtDecks:
    """Stands in for an AEC env's deck shuffler: deals the deck the batched env dealt."""

    def __init__(self) -> None:
        self.pending: list[int] | None = None

    def next_array(self) -> np.ndarray:
        assert self.pending is not None, "the AEC env dealt a round the batched env did not"
        deck, self.pending = self.pending, None
        return np.array(deck, dtype=np.uint8)


@pytest.mark.parametrize("episode", ("round", "game"))
@pytest.mark.parametrize("mixed_rules", (False, True))
def test_episodes_match_the_pettingzoo_env_across_rounds_and_automatic_resets(episode, mixed_rules):
    """The public AEC env, game by game, with the decks the batched env dealt (later rounds'
    included): the agent to act, every seat's observation, masks, rewards and terminations,
    across round ends, game ends and the batched env's automatic resets; mixed tables, and a
    batch of several rule sets whose rungs seat 2, 3 and 4."""
    if mixed_rules:
        rules = ["pegasus", "mini6_3p", "mini7_4p", "mini9"]
        sizes = [2, 3, 4, 3] + [3] * 2 + [4] * 2 + [2] * 2
        env: BatchedLoveLetter | MixedRulesBatched = MixedRulesBatched(
            10, sizes, rules=rules, weights=[2, 1, 1, 1], episode=episode, seed=1
        )
        rules_of = env.game_rules
    else:
        env = BatchedLoveLetter(10, [2, 3, 4, 2, 3, 4, 2, 3, 4, 4], rules="king_ignores_handmaid", episode=episode)
        rules_of = ["king_ignores_handmaid"] * 10

    def decks() -> list[list[int]]:
        return [d for block in getattr(env, "envs", [env]) for d in block.state.deck.tolist()]

    def new_aec(g: int, deck: list[int]) -> raw_env:
        aec = raw_env(num_players=sizes[g], rules=rules_of[g], episode=episode)
        aec.reset(options={"deck": deck, "first_player": int(env.current_player[g])})
        aec._decks = _DealtDecks()
        return aec

    sizes = env.num_players.tolist()
    generator = torch.Generator().manual_seed(4)
    obs, mask = env.reset()
    aecs = [new_aec(g, deck) for g, deck in enumerate(decks())]
    ended = {"rounds": 0, "episodes": 0}
    for _ in range(150):
        seats = env.current_player.tolist()
        for k in range(4):
            seen = obs if k == 0 else env.observe((env.current_player + k) % env.num_players)
            for g, aec in enumerate(aecs):
                assert aec.agent_selection == f"player_{seats[g]}"
                view = aec.observe(f"player_{(seats[g] + k) % sizes[g]}")
                np.testing.assert_array_equal(seen[g].numpy(), view["observation"])
                if k == 0:
                    np.testing.assert_array_equal(mask[g].numpy(), view["action_mask"].astype(bool))
        actions = _sample(mask, generator)
        obs, mask, rewards, dones, info = env.step(actions)
        dealt = decks()
        for g, aec in enumerate(aecs):
            aec._decks.pending = dealt[g]
            aec.step(int(actions[g]))
            assert bool(dones[g]) == all(aec.terminations.values())
            assert bool(info["round_over"][g]) == (bool(dones[g]) or aec._decks.pending is None)
            ended["rounds"] += int(info["round_over"][g])
            if dones[g]:
                ended["episodes"] += 1
                assert rewards[g, : sizes[g]].tolist() == [aec.rewards[a] for a in aec.possible_agents]
                assert not rewards[g, sizes[g] :].any()
                aecs[g] = new_aec(g, dealt[g])
            else:
                assert not rewards[g].any()
    assert ended["episodes"] > (100 if episode == "round" else 3) and ended["rounds"] > 100
