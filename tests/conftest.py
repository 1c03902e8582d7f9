"""Shared helpers for the rules, knowledge, observation and env tests.

Most tests build a round from a *scripted deck*: they fix the cards they care about
(the set-aside card, the face-up cards, each seat's hand, the draw order) and let
:func:`scripted_deck` fill every other position with the cards left over, so the deck
is always a legal permutation of the 16 cards.

The helpers are plain functions (``from conftest import ...``) rather than fixtures
because tests call them with different arguments many times. pytest loads this file as a
plugin under a name of its own (importlib mode) and the tests import it again as ``conftest``
from ``tests/`` on the path, so the module may exist twice: keep mutable state out of it.
"""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import ACTIONS, NO_TARGET, encode_action
from loveletter_env.cards import CARD_NAMES, COUNTESS, DECK_SIZE, FULL_DECK, GUARD, KING, PRINCE, PRINCESS
from loveletter_env.engine import GameState, TurnEvent
from loveletter_env.observation import ObservationView, decode_observation, encode_observation

PLAYER_COUNTS = (2, 3, 4)

#: The repository's root, for the tests that read its files or run its scripts: test files sit
#: at different depths under tests/, this file at one place.
ROOT = Path(__file__).resolve().parents[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    """This process's environment for a subprocess that imports the repository's code: the
    repository first on ``PYTHONPATH`` (whichever copy is installed) and ``extra`` set."""
    return {**os.environ, **extra, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def run_script_stopped(script: str, patch: str, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run ``scripts/<script>.py``'s ``main(argv)`` in a subprocess after ``patch``, lines of
    Python that replace the script's work (the module is ``s``; ``stop`` raises
    ``KeyboardInterrupt``, a Ctrl-C mid-work): what the script prints and returns then."""
    code = (
        f"import contextlib, sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import {script} as s\n"
        "def stop(*args, **kwargs): raise KeyboardInterrupt\n"
        f"{patch}\n"
        f"sys.exit(s.main({list(argv)!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), timeout=120, capture_output=True, text=True
    )


#: A ``patch`` of :func:`run_script_stopped` for the scripts that compare against a revision:
#: the revision's files are this checkout's (no git work).
SAME_REVISION = "s.revision_files = lambda revision: contextlib.nullcontext(s.ROOT)"


def run_cut_short(
    command: Sequence[str], limit: int, timeout: float = 120, **options: object
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with files capped at ``limit`` bytes (a full disk, or a kill mid-write,
    at a known point) and check that a write was cut short ("File too large"); the caller
    then checks what the cut left behind."""

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    options.setdefault("env", subprocess_env())
    done = subprocess.run(list(command), capture_output=True, text=True, preexec_fn=capped, timeout=timeout, **options)  # type: ignore[call-overload]
    assert done.returncode != 0 and "File too large" in done.stderr, done.stderr
    return done


# Decks ------------------------------------------------------------------------------


#: Seeds that every seeded thing refuses (one check everywhere): fractions, text, booleans,
#: None where a seed is required, negatives and values past 2**63.
BAD_SEEDS = [1.9, "1", True, None, -1, 2**63, 2**64]

#: A training run small enough for a test: 16 games of 8 turns per update, one 32-unit layer,
#: one torch thread. Each test adds the length, evaluation and opponents it needs (``--set``
#: overrides). The full game only: the default run also trains on the ladder rungs, which seat
#: 2 players only. Every kind of opponent: the default run is pure self-play, and the tests
#: exercise past snapshots and bots too.
TINY_TRAINING = [
    "env.num_games=16",
    "env.rollout_steps=8",
    "model.hidden_sizes=[32]",
    "model.average_from=null",  # the last weights are the result, unless a test keeps a mean
    "env.rules=[classic]",
    "torch_threads=1",
    "opponents.current=0.6",
    "opponents.past=0.25",
    "opponents.bots=0.15",
]


# A suite started as a background job (`pytest &` from a script) inherits Ctrl-C ignored,
# and so would every command the Ctrl-C tests start: give it Python's usual handler back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _stop_signal_handlers_restored(request):
    """Put back SIGINT's and SIGTERM's handlers after each test, and say which test moved them.

    A stopped command ends by ``exit_interrupted``, which ignores both signals on its way out
    of the process. A test that ran such a command in this process and caught its
    ``SystemExit`` would leave them ignored for every later test and the commands it starts
    (a guard: no test does so today).
    """
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    moved = [signum.name for signum, handler in before.items() if signal.getsignal(signum) is not handler]
    for signum, handler in before.items():
        signal.signal(signum, handler)
    if moved:
        warnings.warn(f"{request.node.nodeid} left the handler of {', '.join(moved)} changed; put back", stacklevel=1)


def table_sizes(spec: int | str, n: int) -> list[int]:
    """Table sizes of ``n`` games: all ``spec`` players, or 2, 3, 4, 2, ... for ``"mixed"``."""
    return [2 + g % 3 for g in range(n)] if spec == "mixed" else [int(spec)] * n


def edge_case_decks() -> list[list[int]]:
    """Full decks ordered to force the rare paths: Guard duels, forced Countess, Prince into
    Princess, showdown ties and set-aside draws (the differential tests of fast engines)."""
    sorted_deck = list(FULL_DECK)
    court = [COUNTESS, KING, PRINCE, PRINCESS]
    rest = list(FULL_DECK)
    for c in [GUARD] + court:
        rest.remove(c)
    decks = [
        sorted_deck,  # all Guards up front: Guard duels
        sorted_deck[::-1],  # Princess set aside, court cards first
        [GUARD] + court + rest,  # forced Countess, Prince into Princess
        rest[:4] + court + [GUARD] + rest[4:],
        [GUARD] + rest[::-1] + court[::-1],  # late court cards: showdown ties, set-aside draws
    ]
    assert all(sorted(d) == sorted_deck for d in decks)
    return decks


def ladder_edge_case_decks(rules) -> list[list[int]]:
    """Decks of a ladder rung whose cards in play come sorted, reversed and rotated: Guard
    duels, the Princess set aside or in a hand, court cards early and late. Every third
    deck lays the face-up cards in reverse order, which a rung accepts."""
    in_play = sorted(rules.in_play)
    orders = [in_play, in_play[::-1]] + [in_play[k:] + in_play[:k] for k in (1, 2, len(in_play) // 2)]
    decks = [list(rules.deck_from_in_play(order)) for order in orders]
    face_up = rules.face_up_count(rules.rung_players)
    for deck in decks[::3]:
        deck[1 : 1 + face_up] = deck[face_up:0:-1]
    return decks


def scripted_deck(placed: Mapping[int, int]) -> tuple[int, ...]:
    """A 16-card deck (top first) with ``placed[i]`` at index ``i``.

    The other positions get the cards left over, lowest value first, so the result is
    always a permutation of the full deck. Raises ``ValueError`` when ``placed`` asks
    for more copies of a value than the deck holds or names a position off the deck.
    """
    leftover = Counter(FULL_DECK)
    for position, card in placed.items():
        if not 0 <= position < DECK_SIZE:
            raise ValueError(f"position {position} is off the deck (0..{DECK_SIZE - 1})")
        if leftover[card] == 0:
            raise ValueError(f"the deck has no copy of {CARD_NAMES.get(card, card)} left for position {position}")
        leftover[card] -= 1
    filler = iter(sorted(leftover.elements()))
    return tuple(placed[i] if i in placed else next(filler) for i in range(DECK_SIZE))


def deal_deck(
    num_players: int,
    *,
    first_player: int = 0,
    set_aside: int | None = None,
    face_up: Sequence[int] = (),
    hands: Mapping[int, int] | None = None,
    draws: Sequence[int] = (),
) -> tuple[int, ...]:
    """A deck that deals the given round (positions follow SPEC's round set-up).

    Args:
        num_players: table size, which decides whether there are face-up cards.
        first_player: the seat dealt first and to act first.
        set_aside: the face-down card (deck index 0).
        face_up: up to 3 face-up cards (2 players only).
        hands: ``{seat: card}`` for the cards dealt to seats.
        draws: the draw pile, in the order cards are drawn (the first player's first
            draw comes first; a Prince's replacement is the next card of this list).
    """
    if face_up and num_players != 2:
        raise ValueError("face-up cards exist only with 2 players")
    placed: dict[int, int] = {}
    if set_aside is not None:
        placed[0] = set_aside
    for i, card in enumerate(face_up):
        placed[1 + i] = card
    first_hand = 1 + (engine.FACE_UP_CARDS_2P if num_players == 2 else 0)
    for seat, card in (hands or {}).items():
        placed[first_hand + (seat - first_player) % num_players] = card
    for i, card in enumerate(draws):
        placed[first_hand + num_players + i] = card
    return scripted_deck(placed)


def start(num_players: int, *, rules: str = "classic", **deal) -> GameState:
    """A new engine game dealt from :func:`deal_deck` (``first_player`` defaults to 0)."""
    deck = deal_deck(num_players, **deal)
    return engine.new_game(num_players, deck, deal.get("first_player", 0), rules)


def make_env(num_players: int, deck: Sequence[int], first_player: int = 0, **kwargs):
    """The wrapped PettingZoo env, reset onto ``deck`` with ``first_player`` to act."""
    env = loveletter_env.env(num_players=num_players, **kwargs)
    env.reset(seed=0, options={"deck": list(deck), "first_player": first_player})
    return env


# Actions ----------------------------------------------------------------------------


def act(card: int, offset: int = NO_TARGET, guess: int = 0) -> int:
    """The action index playing ``card`` on seat ``offset`` (naming ``guess`` for a Guard)."""
    return encode_action(card, offset, guess)


def legal(state: GameState) -> list[int]:
    """The legal actions of the player to act, as a sorted list."""
    return list(engine.legal_actions(state))


def actions_of(state: GameState, card: int) -> list[int]:
    """The legal actions that play ``card``."""
    return [a for a in engine.legal_actions(state) if ACTIONS[a].card == card]


def play(state: GameState, actions: Iterable[int]) -> list[TurnEvent]:
    """Step the engine through ``actions``; return the turn events."""
    return [engine.step(state, a) for a in actions]


def play_cards(state: GameState, cards: Iterable[int]) -> None:
    """Each turn, the player to act plays the given card with its first legal action
    (for a Guard: the next seat, naming Priest; with no one to choose, no target)."""
    for card in cards:
        legal = actions_of(state, card)
        assert legal, f"player_{state.current} cannot play {CARD_NAMES[card]} in {state!r}"
        engine.step(state, legal[0])


def random_playout(state: GameState, rng: random.Random, max_turns: int = 10_000) -> list[int]:
    """Play random legal actions until the round ends; return the actions taken."""
    taken = []
    while not state.round_over and len(taken) < max_turns:
        action = rng.choice(engine.legal_actions(state))
        engine.step(state, action)
        taken.append(action)
    return taken


# Views ------------------------------------------------------------------------------


def view(state: GameState, seat: int) -> ObservationView:
    """What ``seat`` observes, decoded."""
    return decode_observation(encode_observation(state, seat))


def offset_of(state: GameState, observer: int, seat: int) -> int:
    """``seat`` as a seat offset from ``observer``."""
    return (seat - observer) % state.num_players


#: GameState slots that memoise derived values rather than hold game state.
CACHE_SLOTS = frozenset({"legal"})


def snapshot(state: GameState) -> tuple:
    """Every field of ``state`` (caches aside) as nested immutable values, to compare states by value."""

    def freeze(value):
        if isinstance(value, list):
            return tuple(freeze(v) for v in value)
        return value

    return tuple((name, freeze(getattr(state, name))) for name in GameState.__slots__ if name not in CACHE_SLOTS)


def legal_from_mask(mask: np.ndarray) -> list[int]:
    """The action indices a 0/1 mask allows."""
    return [int(a) for a in np.flatnonzero(mask)]


def play_legal_episode(env, act: Callable[[Mapping], int]) -> list[int]:
    """Play the AEC ``env``'s current episode to its end, every seat choosing with ``act``
    (observation -> action), asserting that each choice is in its mask; the actions played."""
    actions = []
    for _ in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        action = act(observation)
        assert observation["action_mask"][action] == 1
        actions.append(action)
        env.step(action)
    return actions


@pytest.fixture(params=PLAYER_COUNTS, ids=lambda n: f"{n}p")
def num_players(request) -> int:
    """Run a test once per table size."""
    return request.param


# Optional libraries ----------------------------------------------------------------


def import_openspiel():
    """``pyspiel``, for a test module that needs it: skipped without the openspiel extra, except
    in CI (``CI=true``), which installs every extra, so there its absence fails the module."""
    try:
        import pyspiel
    except ImportError:
        reason = 'needs the openspiel extra: pip install "loveletter-env[openspiel]"'
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the OpenSpiel tests, but open_spiel is missing ({reason})", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return pyspiel


# Skips that must fail --------------------------------------------------------------

#: Set to 1 where a skip would hide breakage: .ci/run's RLlib environment, whose tests skip
#: only when ray is missing, which there means the environment itself is broken.
FAIL_ON_SKIP = "LOVELETTER_FAIL_ON_SKIP"


def _fail_if_skipped(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail") and os.environ.get(FAIL_ON_SKIP) == "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, which {FAIL_ON_SKIP}=1 makes a failure: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With ``LOVELETTER_FAIL_ON_SKIP=1``, a skipped test is reported as failed, with its skip reason."""
    _fail_if_skipped((yield).get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped at import (``pytest.importorskip`` at module level)."""
    _fail_if_skipped((yield).get_result())


def numba_cuda():
    """``numba.cuda``, or a skip (a failure under CI) naming the missing extra."""
    try:
        from numba import cuda

        from loveletter_env.core import gpu  # noqa: F401 (refuses numba's own older CUDA target)
    except ImportError as error:
        message = f'numba-cuda is not installed (pip install -e ".[cuda]"): {error}'
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("this process runs numba's CUDA simulator, which compiles no PTX")
    return cuda


def kernels_as_ptx(kernels, signatures, cc, monkeypatch) -> dict[str, str]:
    """The PTX of each kernel of ``kernels`` (a build's namespace) compiled for compute
    capability ``cc`` with its argument types in ``signatures``, each checked to name the
    architecture and hold an entry point. Without a GPU, numba-cuda cannot ask a device for
    its compute capability when it compiles the device functions a kernel calls, so the
    architecture is named for it."""
    cuda = numba_cuda()
    import numba.cuda.dispatcher

    class Device:
        compute_capability = cc

    monkeypatch.setattr(numba.cuda.dispatcher, "get_current_device", lambda: Device())
    compiled = {}
    for name, signature in signatures.items():
        ptx, _ = cuda.compile_ptx(getattr(kernels, name).py_func, signature, cc=cc)
        assert f".target sm_{cc[0]}{cc[1]}" in ptx, name
        assert ".entry" in ptx, name
        compiled[name] = ptx
    return compiled


@pytest.fixture(autouse=True, scope="session")
def _library_logs_in_pytests_folder(tmp_path_factory):
    """Stable-Baselines3 makes a log folder for every model it builds, by default a new
    ``SB3-<date>`` folder in the system's temporary folder that nothing removes: point it
    at one of pytest's own, which pytest cleans up."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
        yield
