"""Throughput benchmark: ``python -m loveletter_env.bench``.

Plays random legal moves and prints turns per second for
(a) the engine alone, (b) the AEC env through ``agent_iter``/``last``/``step``, and
(c) in the same run, a do-nothing AEC env with the same spaces and the same loop: the
ceiling of the PettingZoo API on this machine. Ratios against (c) are what to compare
across machines; absolute figures are noisy. Times are CPU time of this process
(``time.process_time``), so other work on a shared machine skews them less.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from . import engine
from .actions import NUM_ACTIONS
from .aec import OBSERVATION_HIGH, DeckShuffler
from .aec import env as make_env
from .core.layout import RECORD_SIZE
from .core.sampling import GOLDEN, MIX1, MIX2
from .machine_load import load_line, machine_load
from .observation import OBSERVATION_SIZE
from .validation import MAX_SEED


def bench_engine(num_players: int, turns: int, seed: int = 0) -> tuple[float, float]:
    """Turns per second of the bare engine under uniform random legal play, and the mean
    number of turns in a round. It plays whole games, round after round (each from a fresh
    deck; a new game once one is won), in whole rounds until at least ``turns`` turns."""
    rng = random.Random(seed)
    decks = DeckShuffler(np.random.default_rng(seed))
    done = rounds = 0
    start = time.process_time()
    state = engine.new_game(num_players, decks.next(), 0)
    while done < turns:
        if state.round_over:
            if state.game_over:
                state = engine.new_game(num_players, decks.next(), 0)
            else:
                engine.start_round(state, decks.next())
        while not state.round_over:
            legal = engine.legal_actions(state)
            engine.step(state, legal[int(rng.random() * len(legal))])
            done += 1
        rounds += 1
    return done / (time.process_time() - start), done / rounds


def _aec_loop(env, turns: int, seed: int) -> tuple[float, float]:
    """Random legal play through ``agent_iter``/``last``/``step`` for at least ``turns``
    turns; returns turns per second and the mean number of turns per episode. One turn is
    played first, untimed: a process's first reset and step load the compiled core's kernels
    (about 0.4 s of CPU, thousands of turns' worth), which a bench of few repeats would
    otherwise report as a slower env."""
    env.reset(seed=seed)
    observation = env.last()[0]
    env.step(int(np.flatnonzero(observation["action_mask"])[0]))
    rng = random.Random(seed)
    done = episodes = 0
    start = time.process_time()
    env.reset(seed=seed)
    while True:
        for _agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                action = None
            else:
                legal = np.flatnonzero(obs["action_mask"])
                action = int(legal[int(rng.random() * len(legal))])
                done += 1
            env.step(action)
        episodes += 1
        if done >= turns:
            return done / (time.process_time() - start), done / episodes
        env.reset()


def bench_aec(num_players: int, turns: int, seed: int = 0, episode: str = "game") -> tuple[float, float]:
    """Turns per second of the wrapped AEC env (``loveletter_env.env``) and its mean episode length."""
    return _aec_loop(make_env(num_players=num_players, episode=episode), turns, seed)


class NullAECEnv(AECEnv):
    """An AEC env that does nothing: the same spaces and bookkeeping as the real one,
    a fixed observation, and episodes of ``episode_length`` turns. Its speed is the
    ceiling any PettingZoo AEC env can reach through the same loop."""

    metadata = {"render_modes": [], "name": "null_v0", "is_parallelizable": False}

    def __init__(self, num_players: int = 2, episode_length: int = 12):
        super().__init__()
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, OBSERVATION_HIGH, (OBSERVATION_SIZE,), np.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
            }
        )
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self._obs = {
            "observation": np.zeros(OBSERVATION_SIZE, np.float32),
            "action_mask": np.ones(NUM_ACTIONS, np.int8),
        }
        self.episode_length = episode_length

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed=None, options=None):
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._turn = 0
        self.agent_selection = self.agents[0]

    def observe(self, agent):
        return self._obs

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._turn += 1
        if self._turn >= self.episode_length:
            for i, a in enumerate(self.agents):
                self.rewards[a] = 1.0 if i == 0 else -1.0
                self.terminations[a] = True
            self._accumulate_rewards()
        else:
            self.agent_selection = self.agents[self._turn % len(self.agents)]


def bench_null_aec(num_players: int, turns: int, episode_length: int, seed: int = 0) -> float:
    """Turns per second of :class:`NullAECEnv` through the same wrapper and loop, with
    episodes of ``episode_length`` turns: the bench passes the real AEC env's mean episode
    length (a round or a whole game, as ``--episode`` says), since resets and end-of-episode
    steps cost too."""
    env = wrappers.OrderEnforcingWrapper(NullAECEnv(num_players, episode_length))
    return _aec_loop(env, turns, seed)[0]


#: How the batched benchmark delivers observations: written into one reused caller buffer
#: (``step(actions, out=...)``, as a trainer filling rollout storage does), as a fresh tensor
#: per step (``step(actions)``), or not at all (``advance(actions)``: masks only).
BATCHED_OBSERVATIONS = ("buffer", "fresh", "none")
#: Where the benchmark's random actions are drawn: by a sampler call in the Python loop,
#: between steps (as a policy acts), inside the compiled step itself
#: (``step_random``/``advance_random``), as pgx's benchmark draws inside its jitted step, or
#: (CUDA only) by torch in a CUDA graph that holds the draw and the env's step, replayed
#: once a step, as a rollout captured in a graph would run.
BATCHED_SAMPLING = ("loop", "step", "graph")

#: Odd 64-bit constants of the graph's action hash (SplitMix64's, from the compiled sampler),
#: as torch's int64.
_HASH_CONSTANTS = tuple(int(c) - (1 << 64) for c in (GOLDEN, MIX1, MIX2))


class Rates(NamedTuple):
    """Transitions per second of process CPU time and of wall-clock time."""

    cpu: float
    wall: float


def _timed(
    play: Callable[[int], None], steps: int, batch: int, synchronise: Callable[[], None] = lambda: None
) -> Rates:
    """Run ``play(steps)`` (already warmed up) and return its transitions per CPU and wall second."""
    synchronise()
    cpu, wall = time.process_time(), time.perf_counter()
    play(steps)
    synchronise()
    return Rates(steps * batch / (time.process_time() - cpu), steps * batch / (time.perf_counter() - wall))


def bench_batched(
    num_players: int,
    turns: int,
    batch: int,
    device: str = "cpu",
    seed: int = 0,
    episode: str = "round",
    observations: str = "buffer",
    sampling: str = "loop",
) -> Rates:
    """Turns per second of :class:`~loveletter_env.batched.BatchedLoveLetter` under random
    legal play: actions drawn uniformly from the mask inside the timed loop (on CPU by a
    compiled sampler, :mod:`loveletter_env.core.sampling`; on CUDA by torch), finished
    games reset by the env, every game's turn counted; ``observations`` is one of
    :data:`BATCHED_OBSERVATIONS`, ``sampling`` one of :data:`BATCHED_SAMPLING`. At least
    ``turns`` turns (and 10 steps) after 3 warm-up steps, which also compile anything not
    yet compiled."""
    import torch

    from .batched import OBSERVATION_DTYPE, BatchedLoveLetter
    from .core.sampling import new_generator, sample_legal
    from .observation import OBSERVATION_SIZE

    if observations not in BATCHED_OBSERVATIONS:
        raise ValueError(f"observations must be one of {BATCHED_OBSERVATIONS}, got {observations!r}")
    if sampling not in BATCHED_SAMPLING:
        raise ValueError(f"sampling must be one of {BATCHED_SAMPLING}, got {sampling!r}")
    cuda = torch.device(device).type == "cuda"
    if sampling == "graph" and not cuda:
        raise ValueError(f"sampling='graph' captures a CUDA graph: it needs a CUDA device, got {device!r}")
    env = BatchedLoveLetter(batch, num_players, episode=episode, device=device, seed=seed, validate_actions=False)
    generator = torch.Generator(device=device).manual_seed(seed)
    sampler_state = new_generator(seed)
    actions = torch.zeros(batch, dtype=torch.long, device=device)
    buffer = (
        torch.empty(batch, OBSERVATION_SIZE, dtype=OBSERVATION_DTYPE, device=device)
        if observations == "buffer"
        else None
    )
    env.reset()

    def sample(mask: torch.Tensor) -> torch.Tensor:
        if cuda:
            # Uniform over the legal actions: keys in [1, 2) for them, 0 for the others.
            return torch.rand(mask.shape, generator=generator, device=device).add_(1.0).mul_(mask).argmax(1)
        sample_legal(mask.numpy(), sampler_state, actions.numpy())
        return actions

    def play(steps: int) -> None:
        mask = env.action_mask
        for _ in range(steps):
            actions = sample(mask)
            mask = env.advance(actions)[0] if observations == "none" else env.step(actions, out=buffer)[1]

    def play_drawing_in_step(steps: int) -> None:
        for _ in range(steps):
            if observations == "none":
                env.advance_random(sampler_state)
            else:
                env.step_random(sampler_state, out=buffer)

    loop: Callable[[int], None]
    if sampling == "graph":
        loop = _GraphLoop(env, buffer, observations == "none")
    else:
        loop = play_drawing_in_step if sampling == "step" else play
    loop(3)
    steps = max(10, -(-turns // batch))
    return _timed(loop, steps, batch, (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None))


def _hashed_policy_step(env: Any, buffer: Any, masks_only: bool) -> Callable[[], Any]:
    """One step of ``env`` (a reset :class:`~loveletter_env.batched.BatchedLoveLetter`)
    with legal actions drawn by torch on the env's device, from a hash of a step counter
    and each game's row and action instead of a generator, so that the step can be
    captured in a CUDA graph with no generator state to register; the masks it draws from
    are its own, refreshed by each step. The step returns the actions it played."""
    import torch

    device = env.device
    golden, mix1, mix2 = _HASH_CONSTANTS
    cells = torch.arange(env.num_games * NUM_ACTIONS, device=device).view(env.num_games, NUM_ACTIONS) * golden
    counter = torch.zeros(1, dtype=torch.long, device=device)
    mask = env.action_mask.clone()

    def step() -> Any:
        counter.add_(1)
        keys = cells + counter * mix1
        keys = (keys ^ (keys >> 31)) * mix2
        keys = (keys ^ (keys >> 29)) & ((1 << 63) - 1)
        actions = keys.masked_fill_(~mask, -1).argmax(1)
        mask.copy_(env.advance(actions)[0] if masks_only else env.step(actions, out=buffer)[1])
        return actions

    return step


class _GraphLoop:
    """Replays of one CUDA graph holding :func:`_hashed_policy_step` (``env`` on CUDA with
    ``validate_actions`` off): a replay runs the draw and the env's step without Python.
    It keeps the step's closure, whose tensors (counter, masks, hash table) the graph reads
    and writes in place: freed, their memory would go back to torch's allocator while the
    graph still used it."""

    def __init__(self, env: Any, buffer: Any, masks_only: bool) -> None:
        import torch

        self.step = _hashed_policy_step(env, buffer, masks_only)
        # Warm up on a side stream before capturing, as torch asks.
        side = torch.cuda.Stream(env.device)
        side.wait_stream(torch.cuda.current_stream(env.device))
        with torch.cuda.stream(side):
            for _ in range(3):
                self.step()
        torch.cuda.current_stream(env.device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.step()

    def __call__(self, steps: int) -> None:
        for _ in range(steps):
            self.graph.replay()


def bench_pgx(turns: int, batch: int, seed: int = 0, game: str = "leduc_holdem") -> Rates:
    """Steps per second of the pgx game ``game`` (JAX), under the same protocol as
    :func:`bench_batched`: ``batch`` games, uniform random legal actions drawn inside the
    timed (jitted) step, games that end reset at once (``pgx.experimental.auto_reset``),
    every game's step counted, compilation and 3 warm-up steps excluded.

    Raises ``ImportError`` when pgx is not installed (``pip install -e ".[bench]"``)."""
    import jax
    import jax.numpy as jnp
    import pgx
    from pgx.experimental import auto_reset

    env = pgx.make(game)
    init = jax.vmap(env.init)

    @jax.jit
    def advance(state, key):
        key, pick, reset = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(pick, logits, axis=1)
        state = jax.vmap(auto_reset(env.step, env.init))(state, action, jax.random.split(reset, batch))
        return state, key

    key, first = jax.random.split(jax.random.PRNGKey(seed))
    box = [jax.jit(init)(jax.random.split(first, batch)), key]

    def play(steps: int) -> None:
        state, key = box
        for _ in range(steps):
            state, key = advance(state, key)
        box[:] = [state, key]

    play(3)
    steps = max(10, -(-turns // batch))
    return _timed(play, steps, batch, lambda: jax.block_until_ready(box[0]))


PGX_MISSING = 'pgx is not installed: pip install -e ".[bench]" (or pip install pgx) to compare with it'


def _limit_xla_threads(threads: int) -> None:
    """Ask XLA (pgx's backend) for ``threads`` compute threads; only effective before jax is imported."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "intra_op_parallelism_threads" not in flags and threads == 1:
        flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    os.environ["XLA_FLAGS"] = flags.strip()


#: The help's last paragraph: what the exit status says (a missed target is no failure).
_EPILOG = (
    "Targets are printed beside the ratios they apply to, each measured against a baseline in the "
    "same run; the command reports them and does not judge them: exit status 0 once every "
    "measurement ran, whether or not the targets are met, 2 for a bad argument, 130 when "
    "interrupted (Ctrl-C)."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loveletter_env.bench", description=__doc__.split("\n\n")[0], epilog=_EPILOG
    )
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4), help="table size (default 2)")
    parser.add_argument(
        "--turns",
        type=int,
        default=100_000,
        help="turns per measurement, at least: the batched rows play whole steps of --batch games, "
        "10 steps at least (default 100000)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats; medians are reported (default 5)")
    parser.add_argument(
        "--episode",
        choices=("game", "round"),
        default="game",
        help="episode kind of the AEC env and of the batched env's games; the engine alone (a) plays "
        "whole games (default game)",
    )
    parser.add_argument("--seed", type=int, default=0)
    batched = parser.add_argument_group("batched engine")
    batched.add_argument("--batched", action="store_true", help="also time the batched engine")
    batched.add_argument("--batch", type=int, default=8192, help="games stepped at once (default 8192)")
    batched.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="torch device (default cpu)")
    batched.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads; 1 (the default) also holds XLA (pgx) to one thread, other counts leave "
        "XLA its own default (on a busy 2-core machine, 2 threads ran 10x slower)",
    )
    batched.add_argument(
        "--vs-pgx",
        action="store_true",
        help="also time pgx's leduc_holdem (JAX) with the same protocol and batch; implies --batched",
    )
    return parser


#: Host memory one game of the batched benchmark takes: its record, its byte observation, its mask.
_BYTES_PER_GAME = RECORD_SIZE + OBSERVATION_SIZE + NUM_ACTIONS


def _physical_memory() -> int | None:
    """Bytes of memory this machine has, where the system says (``None`` elsewhere)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def _check_and_prepare(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """Refuse non-positive sizes and a missing CUDA device, and set the thread counts before
    anything is timed; returns whether ``--vs-pgx`` was asked for without pgx installed."""
    if args.turns <= 0 or args.repeats <= 0:
        parser.error("--turns and --repeats must be positive")
    if args.batch <= 0:
        parser.error("--batch must be positive")
    need, memory = args.batch * _BYTES_PER_GAME, _physical_memory()
    if (args.batched or args.vs_pgx) and memory is not None and need > memory:
        parser.error(
            f"--batch {args.batch:,} needs about {need / 2**30:,.1f} GiB ({_BYTES_PER_GAME:,} bytes a game: "
            f"its record, observation and mask), more than this machine's {memory / 2**30:,.1f} GiB"
        )
    if args.threads <= 0:
        parser.error("--threads must be positive")
    largest = MAX_SEED - (args.repeats - 1)  # repeat r plays seed + r, up to seed + repeats - 1
    if not 0 <= args.seed <= largest:
        parser.error(
            f"--seed must be in 0..{largest} (the last repeat plays --seed + --repeats - 1 "
            f"of at most 2**63 - 1), got {args.seed}"
        )
    args.batched = args.batched or args.vs_pgx
    pgx_missing = False
    if args.vs_pgx:
        _limit_xla_threads(args.threads)
        try:
            import pgx  # noqa: F401
        except ImportError as err:
            if err.name not in (None, "pgx"):  # pgx is there, but one of its own imports fails
                parser.error(f"--vs-pgx: pgx is installed but cannot be imported: {err}")
            pgx_missing = True
    if args.batched:
        import torch

        if args.device == "cuda" and not torch.cuda.is_available():
            parser.error("--device cuda: no CUDA device is available")
        torch.set_num_threads(args.threads)
    return pgx_missing


#: (observations, sampling) of each batched row.
_BATCHED_KINDS = [("buffer", "loop"), ("fresh", "loop"), ("none", "loop"), ("buffer", "step"), ("none", "step")]


class _Measurements(NamedTuple):
    """Every repeat's rates, and the mean lengths of a round and of an AEC episode in the last repeat."""

    engine: list[float]
    aec: list[float]
    null: list[float]
    pgx: list[Rates]
    batched: dict[tuple[str, str], list[Rates]]
    round_length: float
    episode_length: float


def _measure(args: argparse.Namespace, pgx_missing: bool) -> _Measurements:
    n, t = args.players, args.turns
    # Interleave the measurements so that load from other processes on a noisy machine
    # hits all of them alike; report medians.
    engine_rates, aec_rates, null_rates, pgx_rates = [], [], [], []
    batched_rates: dict[tuple[str, str], list[Rates]] = {kind: [] for kind in _BATCHED_KINDS}
    for r in range(args.repeats):
        if args.batched:
            for (kind, sampling), rates in batched_rates.items():
                rates.append(bench_batched(n, t, args.batch, args.device, args.seed + r, args.episode, kind, sampling))
        if args.vs_pgx and not pgx_missing:
            pgx_rates.append(bench_pgx(t, args.batch, args.seed + r))
        rate, round_length = bench_engine(n, t, args.seed + r)
        engine_rates.append(rate)
        rate, episode_length = bench_aec(n, t, args.seed + r, args.episode)
        aec_rates.append(rate)
        null_rates.append(bench_null_aec(n, t, max(1, round(episode_length)), args.seed + r))
    return _Measurements(engine_rates, aec_rates, null_rates, pgx_rates, batched_rates, round_length, episode_length)


def _report_aec(args: argparse.Namespace, measured: _Measurements, load: str) -> float:
    """Print rows (a) to (c) under the run's ``load`` line; returns the AEC env's median rate,
    the unit of the batched rows."""
    eng, aec, ceiling = (statistics.median(x) for x in (measured.engine, measured.aec, measured.null))
    print(
        f"{args.players} players, random legal play, median of {args.repeats} x {args.turns:,} turns; "
        f"{measured.round_length:.1f} turns per round, {measured.episode_length:.1f} per {args.episode} episode; "
        "rates per second of process CPU time"
    )
    print(f"  {load}")
    print(f"  (a) engine alone       {eng:>12,.0f} turns/s   {eng / ceiling:5.2f} x ceiling")
    print(f"  (b) AEC env            {aec:>12,.0f} turns/s   {aec / ceiling:5.2f} x ceiling  (target >= 0.7)")
    print(f"  (c) do-nothing AEC env {ceiling:>12,.0f} turns/s   1.00 x ceiling")
    return aec


def _report_batched(args: argparse.Namespace, measured: _Measurements, aec: float) -> dict[tuple[str, str], float]:
    """Print rows (d) to (f'); returns each row's median rate per CPU second."""
    import torch

    engine_name = "compiled core" if args.device == "cpu" else "compiled core, CUDA kernels"
    print(
        f"  batched ({engine_name}): {args.batch:,} games per step on {args.device}, {args.episode} episodes, "
        f"random legal actions sampled in the loop; torch threads: {torch.get_num_threads()}"
    )
    rows = (
        ("(d) batched env", ("buffer", "loop"), "observations into a reused buffer, masks"),
        ("(e) batched env", ("fresh", "loop"), "a fresh observation tensor per step, masks"),
        ("(f) batched engine", ("none", "loop"), "masks only, no observations"),
        ("(d') batched env", ("buffer", "step"), "as (d), actions drawn inside the compiled step"),
        ("(f') batched engine", ("none", "step"), "as (f), actions drawn inside the compiled step"),
    )
    print(f"  {'':<22} {'turns/CPU-s':>12}  {'turns/wall-s':>12}")
    medians: dict[tuple[str, str], float] = {}
    for label, row, what in rows:
        if row not in measured.batched:
            continue
        cpu = statistics.median(x.cpu for x in measured.batched[row])
        wall = statistics.median(x.wall for x in measured.batched[row])
        medians[row] = cpu
        print(f"  {label:<22} {cpu:>12,.0f}  {wall:>12,.0f}   {cpu / aec:6.1f} x AEC env  ({what})")
    return medians


def _report_pgx(measured: _Measurements, pgx_missing: bool, medians: dict[tuple[str, str], float]) -> None:
    """Print row (g) and the batched rows' ratios to it, or why it was skipped."""
    if pgx_missing:
        print(f"  (g) pgx leduc_holdem: skipped, {PGX_MISSING}")
        return
    import jax

    cpu = statistics.median(x.cpu for x in measured.pgx)
    wall = statistics.median(x.wall for x in measured.pgx)
    print(
        f"  {'(g) pgx leduc_holdem':<22} {cpu:>12,.0f}  {wall:>12,.0f}   same batch and protocol, "
        f"jax {jax.__version__} on {jax.default_backend()}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"
    )
    print(f"  (d) / (g) per CPU-second: {medians['buffer', 'loop'] / cpu:.2f}  (target >= 2.5)")
    if ("buffer", "step") in medians:
        print(
            f"  (d') / (g) per CPU-second: {medians['buffer', 'step'] / cpu:.2f}  "
            "(both draw their actions inside the step)"
        )


def _report_batched_sizes(num_players: int, device: str) -> None:
    from .batched import OBSERVATION_DTYPE, BatchedLoveLetter

    print(f"  batched state: {BatchedLoveLetter(1, num_players, device=device).state_bytes_per_game()} bytes per game")
    obs_bytes = OBSERVATION_SIZE * OBSERVATION_DTYPE.itemsize
    print(f"  batched observation: {obs_bytes:,} bytes ({OBSERVATION_SIZE:,} entries, {OBSERVATION_DTYPE})")


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        # Preparing imports torch (and jax): seconds in which a Ctrl-C is as likely as later.
        pgx_missing = _check_and_prepare(parser, args)
        start = machine_load()
        measured = _measure(args, pgx_missing)
        end = machine_load()
    except KeyboardInterrupt:
        # A sentence, not a traceback; 130 (128 + SIGINT) is what a shell reports for Ctrl-C.
        print(
            "\ninterrupted before every repeat was timed; nothing is reported (the figures are medians "
            "over all repeats)",
            file=sys.stderr,
        )
        raise SystemExit(130) from None
    aec = _report_aec(args, measured, load_line(start, end))
    if not args.batched:
        return
    medians = _report_batched(args, measured, aec)
    if args.vs_pgx:
        _report_pgx(measured, pgx_missing, medians)
    _report_batched_sizes(args.players, args.device)


if __name__ == "__main__":
    main()
