"""The CUDA kernels against the reference engine, game by game (used by tests/core/test_cuda.py).

Runs on a real GPU, or on the CPU in numba's CUDA simulator when the environment sets
``NUMBA_ENABLE_CUDASIM=1`` before numba is imported (``python tests/core/cuda_differential.py``
in a subprocess: the simulator runs every thread as Python, so it plays few games).

The same decks, first players and random legal actions drive the GPU kernels and the
reference engine; every legal mask, observation, reward, done, round winner, token count
and the full state must agree after every turn. Deals after a round are the GPU's own
(counter-based); the reference rebuilds each one independently from the same key with
the CPU-compiled draws, so a deal that differs fails too. Half of the steps let the
kernel draw the actions, which must be those the CPU sampler draws from the same masks.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

from loveletter_env import engine
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.cards import FULL_DECK
from loveletter_env.core import new_records, record_from_state
from loveletter_env.core.decks import deck_tables
from loveletter_env.core.layout import DECK
from loveletter_env.core.sampling import GOLDEN, pick, sample_legal, stream_key
from loveletter_env.observation import OBSERVATION_SIZE, encode_observation
from loveletter_env.rules import resolve_rules

RULES = ("classic", "pegasus", "king_ignores_handmaid", "mini7")  # mini7: a ladder rung, 2 players


def _deck_for_key(key: np.uint64, rules, previous: list[int]) -> list[int]:
    """The deck ``kernels.deal_from_key`` deals for ``key`` after the deck ``previous``, built
    here in plain Python (on a ladder rung, by the CPU build of the rung's shuffle, which
    moves only the cards in play and is checked against the reference by the CPU tests)."""
    from loveletter_env.core import kernels

    orders, placements = deck_tables()
    first = int(pick(len(orders), key + GOLDEN))
    second = int(pick(len(orders), key + np.uint64(2) * GOLDEN))
    placement = int(pick(len(placements), key + np.uint64(3) * GOLDEN))
    if rules.in_play is not None:
        deck = np.array(previous, np.uint8)
        kernels.shuffle_in_play(deck, rules.face_up_count(2), orders[first], orders[second], placements[placement])
        return deck.tolist()
    deck = [0] * 16
    for j in range(8):
        deck[placements[placement][j]] = FULL_DECK[orders[first][j]]
        deck[placements[placement][8 + j]] = FULL_DECK[8 + orders[second][j]]
    return deck


def _check(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    if not np.array_equal(actual, expected):
        bad = [g for g in range(len(actual)) if not np.array_equal(actual[g], expected[g])]
        np.testing.assert_array_equal(actual[bad[0]], expected[bad[0]], err_msg=f"{what} of game {bad[0]}")


def play(sizes: list[int], rules: str, episode: str, steps: int, seed: int, variant) -> int:
    """Random legal play of ``len(sizes)`` games on the CUDA kernels (built as ``variant``)
    and the reference engine side by side; returns the number of rounds played."""
    from numba import cuda

    from loveletter_env.core.gpu import DealStream, build_kernels, launch
    from loveletter_env.core.kernels import TurnOutputs

    kernels = build_kernels(variant)
    # Poisoned before each launch, or zeroed where the variant's kernels write only the
    # nonzero entries (as the env does): a missed store shows either way.
    fill = 0 if variant.zeroed_observations else 0xA5

    def prepared(observations):
        observations.copy_to_device(np.full(observations.shape, fill, np.uint8))
        return observations

    rng = np.random.default_rng(seed)
    preset = resolve_rules(rules)
    n = len(sizes)
    orders, placements = (cuda.to_device(t.astype(np.uint8)) for t in deck_tables())
    records = cuda.to_device(new_records(sizes, preset))
    if preset.in_play is not None:
        decks = np.array([preset.deck_from_in_play(rng.permutation(preset.in_play)) for _ in range(n)], np.int8)
    else:
        decks = np.array([rng.permutation(FULL_DECK) for _ in range(n)], np.int8)
    initial = new_records(sizes, preset)[:, DECK : DECK + 16]
    firsts = np.array([rng.integers(s) for s in sizes], np.int64)
    masks, legal = cuda.to_device(np.zeros((n, NUM_ACTIONS), np.uint8)), cuda.to_device(np.zeros(n, np.uint64))
    deals = cuda.to_device(np.zeros(n, np.int64))
    current = cuda.to_device(np.zeros(n, np.int64))
    deal_counts = np.ones(n, np.int64)  # the reset used each game's first key
    tables = (DealStream(orders, placements, np.uint64(seed), deals), masks, legal, current)
    if seed % 2:  # the kernel's own deal and first seat
        launch(kernels, "reset", n, 0, records, cuda.to_device(decks), False, cuda.to_device(firsts), False, *tables)
        keys = [np.uint64(stream_key(np.uint64(seed), g, 0)) for g in range(n)]
        decks = np.array([_deck_for_key(key, preset, initial[g].tolist()) for g, key in enumerate(keys)], np.int8)
        firsts = np.array([pick(size, key) for size, key in zip(sizes, keys)], np.int64)
    else:
        launch(kernels, "reset", n, 0, records, cuda.to_device(decks), True, cuda.to_device(firsts), True, *tables)
    assert current.copy_to_host().tolist() == firsts.tolist()
    games = [engine.new_game(sizes[g], decks[g].tolist(), int(firsts[g]), preset) for g in range(n)]
    outputs = dict(
        rewards=np.zeros((n, 4), np.float32), dones=np.zeros(n, np.uint8), round_over=np.zeros(n, np.uint8),
        round_winners=np.zeros((n, 4), np.uint8), tokens=np.zeros((n, 4), np.int8), current=np.zeros(n, np.int64),
    )  # fmt: skip  # the dtypes the env passes (core.gpu.KERNEL_SIGNATURES): bools as bytes
    device_outputs = {name: cuda.to_device(value) for name, value in outputs.items()}
    observations = cuda.to_device(np.zeros((n, OBSERVATION_SIZE), np.uint8))  # the env's dtype, one byte an entry
    rounds = 0
    for step in range(steps):
        host_masks = masks.copy_to_host().astype(np.bool_)
        _check(host_masks, np.array([engine.legal_mask(game) for game in games], bool), "legal mask")
        _check(records.copy_to_host(), np.stack([record_from_state(game) for game in games]), "state")
        draw = step % 2 == 1
        sampler = np.uint64(rng.integers(1 << 63))
        if draw:
            actions = np.zeros(n, np.int64)
            expected_actions = np.zeros(n, np.int64)
            sample_legal(host_masks, np.array([sampler], np.uint64), expected_actions)
        else:
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in host_masks], np.int64)
        device_actions = cuda.to_device(actions)
        args = (device_actions, draw, sampler, episode == "round", tables[0])
        turn = TurnOutputs(*device_outputs.values(), masks, legal)
        launch(kernels, "step", n, 0, records, *args, turn, prepared(observations), True)
        actions = device_actions.copy_to_host()
        if draw:
            _check(actions, expected_actions, "actions drawn in the kernel")
        out = {name: value.copy_to_host() for name, value in device_outputs.items()}
        expected_rewards = np.zeros((n, 4), np.float32)
        for g, game in enumerate(games):
            engine.step(game, int(actions[g]))
            assert bool(out["round_over"][g]) == game.round_over, f"round_over of game {g}"
            assert out["tokens"][g, : game.num_players].tolist() == game.tokens, f"tokens of game {g}"
            if not game.round_over:
                assert not out["dones"][g], f"done of game {g}"
                continue
            rounds += 1
            assert np.flatnonzero(out["round_winners"][g]).tolist() == list(game.round_winners)
            done = episode == "round" or game.game_over
            assert bool(out["dones"][g]) == done, f"done of game {g}"
            key = np.uint64(stream_key(np.uint64(seed), g, deal_counts[g]))
            deal_counts[g] += 1
            deck = _deck_for_key(key, preset, list(game.deck))
            if done:
                won = game.round_winners if episode == "round" else game.game_winners
                expected_rewards[g, : game.num_players] = [1.0 if p in won else -1.0 for p in range(game.num_players)]
                games[g] = engine.new_game(game.num_players, deck, int(pick(game.num_players, key)), preset)
            else:
                engine.start_round(game, deck)  # the reference picks the first player
        _check(out["rewards"], expected_rewards, "rewards")
        assert out["current"].tolist() == [game.current for game in games]
        expected_obs = np.stack([encode_observation(game, game.current) for game in games])
        _check(observations.copy_to_host(), expected_obs, "observations")
        if step % 5 == 0:  # every seat's view, through the observe kernel
            for k in range(1, 4):
                seats = np.array([(game.current + k) % game.num_players for game in games], np.int64)
                launch(kernels, "observe", n, 0, records, cuda.to_device(seats), prepared(observations))
                expected_obs = np.stack([encode_observation(game, int(s)) for game, s in zip(games, seats)])
                _check(observations.copy_to_host(), expected_obs, f"observations of seat offset {k}")
    return rounds


def play_env(sizes: list[int], rules: str, episode: str, steps: int, seed: int, variant) -> int:
    """The batched env's CUDA driver (``batched.driver._CudaGames``: its launches, argument
    order, output tensors, resets, random steps and observe), its kernels built as
    ``variant`` (through ``batched.cuda_tuning``), against the reference engine.
    In the simulator its torch tensors are CPU tensors handed to the kernels as numpy views
    (on a GPU, :func:`play` and the env's own CUDA tests cover this). Returns the rounds played."""
    import torch

    from loveletter_env.batched import driver as batched_env
    from loveletter_env.batched.cuda_tuning import cuda_tuning
    from loveletter_env.core.sampling import new_generator

    class SimulatedGames(batched_env._CudaGames):
        def _view(self, tensor: torch.Tensor) -> np.ndarray:
            return (tensor.view(torch.uint8) if tensor.dtype == torch.bool else tensor).numpy()

        def _stream(self) -> int:
            return 0

    n = len(sizes)
    env = batched_env.BatchedLoveLetter(n, sizes, rules=rules, episode=episode, seed=seed)
    records = new_records(sizes, env.rules)
    orders, placements = (t.astype(np.uint8) for t in deck_tables())
    with cuda_tuning(variant):
        env._gpu = SimulatedGames(records, orders, placements, env.device, seed)
    assert env._gpu.kernels.variant == variant
    rng = np.random.default_rng(seed)
    if env.rules.in_play is not None:
        decks = torch.tensor(
            np.array([env.rules.deck_from_in_play(rng.permutation(env.rules.in_play)) for _ in range(n)])
        )
    else:
        decks = torch.tensor(np.array([rng.permutation(FULL_DECK) for _ in range(n)]))
    firsts = torch.tensor([int(rng.integers(s)) for s in sizes])
    obs, mask = env.reset(decks, firsts) if seed % 2 == 0 else env.reset()
    state = env.state
    games = [engine.new_game(sizes[g], state.deck[g].tolist(), int(env.current_player[g]), env.rules) for g in range(n)]
    sampler = new_generator(seed)
    rounds = 0
    for step in range(steps):
        _check(mask.numpy(), np.array([engine.legal_mask(game) for game in games], bool), "env mask")
        assert obs.dtype == torch.uint8, obs.dtype
        _check(obs.numpy(), np.stack([encode_observation(game, game.current) for game in games]), "env obs")
        if step % 3 == 2:
            seats = (env.current_player + 1) % env.num_players
            expected = np.stack([encode_observation(game, int(s)) for game, s in zip(games, seats)])
            _check(env.observe(seats).numpy(), expected, "env observe")
        if step % 2:
            actions, obs, mask, rewards, dones, info = env.step_random(sampler)
        else:
            actions = torch.tensor([rng.choice(np.flatnonzero(m)) for m in mask.numpy()])
            obs, mask, rewards, dones, info = env.step(actions)
        decks = env.state.deck
        for g, game in enumerate(games):
            engine.step(game, int(actions[g]))
            assert bool(info["round_over"][g]) == game.round_over, f"env round_over of game {g}"
            assert info["tokens"][g, : game.num_players].tolist() == game.tokens
            if not game.round_over:
                assert not dones[g] and not rewards[g].any()
                continue
            rounds += 1
            assert info["round_winners"][g].nonzero().flatten().tolist() == list(game.round_winners)
            done = episode == "round" or game.game_over
            assert bool(dones[g]) == done, f"env done of game {g}"
            if done:
                won = game.round_winners if episode == "round" else game.game_winners
                expected_rewards = [1.0 if p in won else -1.0 for p in range(game.num_players)]
                assert rewards[g, : game.num_players].tolist() == expected_rewards
                games[g] = engine.new_game(game.num_players, decks[g].tolist(), int(env.current_player[g]), env.rules)
            else:
                engine.start_round(game, decks[g].tolist())
        assert env.current_player.tolist() == [game.current for game in games]
    return rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CUDA kernels against the reference engine.")
    parser.add_argument("--games", type=int, default=6, help="games per case (mixed table sizes 2, 3, 4)")
    parser.add_argument("--steps", type=int, default=40, help="turns per case")
    parser.add_argument("--env", action="store_true", help="also the env's CUDA driver (simulator only)")
    parser.add_argument("--threads-per-block", type=int, default=None, help="the kernels' variant (default: the env's)")
    parser.add_argument("--records-in", choices=("shared", "global"), default=None)
    parser.add_argument("--observations", choices=("zeroed", "whole"), default=None)
    parser.add_argument("--max-registers", type=int, default=None, help="a register cap a thread (default: none)")
    parser.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    args = parser.parse_args(argv)
    from loveletter_env.core.gpu import DEFAULT_VARIANT, KernelVariant

    variant = KernelVariant(
        args.threads_per_block or DEFAULT_VARIANT.threads_per_block,
        DEFAULT_VARIANT.shared_records if args.records_in is None else args.records_in == "shared",
        DEFAULT_VARIANT.zeroed_observations if args.observations is None else args.observations == "zeroed",
        args.max_registers,
    )
    print(variant)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        # The simulator runs a block's threads as Python threads beside a manager that polls
        # them without ever blocking. At the default 5 ms switch interval the GIL can pass
        # among them so often that one launch takes minutes instead of a fraction of a
        # second (the 128-thread variant ran past 15 minutes on a 2-core machine, 10 alone).
        # Longer slices let each thread run its kernel to the end or to a barrier; much
        # longer ones let the polling manager hold the GIL while threads wait at a barrier.
        # 20 ms measured best for both kinds (15 s against 57 s at 10 ms for the 128-thread
        # variant, 14 s against 29 s at 50 ms for a shared-records one).
        sys.setswitchinterval(0.02)
    # The simulator runs the kernels as Python on numpy scalars, where uint64 arithmetic that
    # wraps (as it does on the device) warns.
    warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
    total = 0
    for case, (rules, episode) in enumerate((r, e) for r in RULES for e in ("round", "game")):
        if rules not in args.rules:
            continue
        sizes = [2 if rules == "mini7" else 2 + (g + case) % 3 for g in range(args.games)]
        rounds = play(sizes, rules, episode, args.steps, case, variant)
        total += rounds
        print(
            f"{rules:22s} {episode:5s}: {args.games} games, {args.steps} turns, {rounds} rounds: same as the reference"
        )
        if args.env:
            rounds = play_env(sizes, rules, episode, args.steps, case, variant)
            total += rounds
            print(f"{'':28s} the env's CUDA driver: {rounds} rounds, same as the reference")
    print(f"all cases agree ({total} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
