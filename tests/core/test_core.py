"""Differential tests: the compiled core against the reference engine.

The same decks and random legal actions drive both; every legal mask, every seat's
observation, the full game state, rewards, dones, round winners and tokens must agree
at every turn. Tables of 2, 3, 4 and mixed sizes, every rule preset, round and game
episodes, plus the scripted edge-case decks of the batched tests.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, edge_case_decks, ladder_edge_case_decks, subprocess_env, table_sizes

from loveletter_env import engine
from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.cards import FULL_DECK
from loveletter_env.core import kernels, layout, new_records, record_from_state, state_from_record
from loveletter_env.core.decks import deck_tables
from loveletter_env.observation import OBSERVATION_SIZE, encode_observation
from loveletter_env.rules import LADDER, Rules, resolve_rules

RULES = ("classic", "pegasus", "king_ignores_handmaid")
TABLES = (2, 3, 4, "mixed")
RUNGS = tuple(r.name for r in LADDER)  # each at its own table size


def _deck_from_draws(draws: np.ndarray, previous: tuple[int, ...], rules: Rules) -> list[int]:
    """The deck ``kernels.deal_shuffled`` builds from ``draws``, built here in plain Python.
    On a ladder rung the draws place labels 0..15 (label l: the card at position l of the
    ``previous`` deck) and the cards in play are dealt back in the order their labels land."""
    orders, placements = deck_tables()
    labels = [0] * 16
    for j in range(8):
        labels[placements[draws[2]][j]] = orders[draws[0]][j]
        labels[placements[draws[2]][8 + j]] = 8 + orders[draws[1]][j]
    if not rules.is_rung:
        return [FULL_DECK[label] for label in labels]
    in_play = rules.in_play_positions(rules.rung_players)
    deck = list(previous)
    for position, label in zip(in_play, [label for label in labels if label in in_play]):
        deck[position] = previous[label]
    return deck


def _random_decks(rules: Rules, n: int, rng: np.random.Generator) -> np.ndarray:
    """uint8 [n, 16]: random decks the rules can deal (on a rung, face-up cards in a random order)."""
    if not rules.is_rung:
        return np.array([rng.permutation(FULL_DECK) for _ in range(n)], np.uint8)
    decks = []
    for _ in range(n):
        deck = list(rules.deck_from_in_play(list(rng.permutation(rules.in_play))))
        face_up = rules.face_up_count(rules.rung_players)
        deck[1 : 1 + face_up] = rng.permutation(deck[1 : 1 + face_up]).tolist()
        decks.append(deck)
    return np.array(decks, np.uint8)


def _assert_same(records: np.ndarray, masks: np.ndarray, games: list[engine.GameState]) -> None:
    """Full state, legal mask (``masks``, as the batch kernels last wrote them) and every
    seat's observation of each game (one comparison per kind: element-wise asserts per game
    would cost more than the engines)."""
    n = len(games)
    _assert_equal(records, np.stack([record_from_state(game) for game in games]), "state")
    _assert_equal(masks, np.array([engine.legal_mask(game) for game in games], bool), "legal mask")
    obs = np.zeros((n, OBSERVATION_SIZE), np.float32)
    for k in range(4):  # seat offset k from the player to act; games smaller than k + 1 wrap
        seats = np.array([(game.current + k) % game.num_players for game in games], np.int64)
        kernels.observe_batch(records, seats, obs)
        expected = np.stack([encode_observation(game, int(s)) for game, s in zip(games, seats)])
        _assert_equal(obs, expected, f"observations of seat offset {k}")


def _assert_equal(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    if not np.array_equal(actual, expected):
        bad = [g for g in range(len(actual)) if not np.array_equal(actual[g], expected[g])]
        np.testing.assert_array_equal(actual[bad[0]], expected[bad[0]], err_msg=f"{what} of game {bad[0]}")


def _play(sizes: list[int], rules: str, episode: str, steps: int, seed: int, first_decks=None) -> int:
    """Random legal play of ``len(sizes)`` games through ``kernels.step_batch`` and the
    reference engine side by side; returns the number of rounds played."""
    rng = np.random.default_rng(seed)
    preset = resolve_rules(rules)
    n = len(sizes)
    orders, placements = deck_tables()
    records = new_records(sizes, preset)
    decks = np.array(first_decks, np.uint8) if first_decks is not None else _random_decks(preset, n, rng)
    firsts = np.array([rng.integers(s) for s in sizes], np.int64)
    masks, legal = np.zeros((n, NUM_ACTIONS), np.bool_), np.zeros(n, np.uint64)
    kernels.reset_batch(records, decks, firsts, masks, legal)
    games = [engine.new_game(sizes[g], decks[g].tolist(), int(firsts[g]), preset) for g in range(n)]
    _assert_same(records, masks, games)
    rewards, tokens = np.zeros((n, 4), np.float32), np.zeros((n, 4), np.uint8)
    dones, round_over, winners = np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.zeros((n, 4), np.uint8)
    current, observations = np.zeros(n, np.int64), np.zeros((n, OBSERVATION_SIZE), np.float32)
    rounds = 0
    for _ in range(steps):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int64)
        uniforms = rng.random(n, dtype=np.float32)
        draws = np.stack(
            [
                rng.integers(len(orders), size=n),
                rng.integers(len(orders), size=n),
                rng.integers(len(placements), size=n),
            ]
        )
        deals = kernels.Deals(orders, placements, uniforms, draws)
        outputs = kernels.TurnOutputs(rewards, dones, round_over, winners, tokens, current, masks, legal)
        kernels.step_batch(records, actions, episode == "round", deals, outputs, observations, True)
        expected_rewards = np.zeros((n, 4), np.float32)
        for g, game in enumerate(games):
            engine.step(game, int(actions[g]))
            assert bool(round_over[g]) == game.round_over
            assert tokens[g, : game.num_players].tolist() == game.tokens
            if game.round_over:
                rounds += 1
                assert np.flatnonzero(winners[g]).tolist() == list(game.round_winners)
                done = episode == "round" or game.game_over
                assert bool(dones[g]) == done
                deck = _deck_from_draws(draws[:, g], game.deck, preset)
                if done:
                    won = game.round_winners if episode == "round" else game.game_winners
                    expected_rewards[g, : game.num_players] = [
                        1.0 if p in won else -1.0 for p in range(game.num_players)
                    ]
                    first = min(int(uniforms[g] * np.float32(game.num_players)), 3)
                    games[g] = engine.new_game(game.num_players, deck, first, preset)
                else:
                    engine.start_round(game, deck)  # the reference picks the first player
            else:
                assert not dones[g]
        _assert_equal(rewards, expected_rewards, "rewards")
        _assert_equal((legal[:, None] >> np.arange(NUM_ACTIONS, dtype=np.uint64)) & 1 == 1, masks, "private masks")
        assert current.tolist() == [game.current for game in games]
        _assert_equal(observations, np.stack([encode_observation(game, game.current) for game in games]), "step obs")
        _assert_same(records, masks, games)
    return rounds


@pytest.mark.parametrize("episode", ("round", "game"))
@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("table", TABLES)
def test_random_play_matches_reference(table, rules, episode):
    """About 1,100 rounds per case, 26,000 over the parametrisation."""
    seed = TABLES.index(table) * 100 + RULES.index(rules) * 10 + (episode == "game")
    rounds = _play(table_sizes(table, 48), rules, episode, steps=150, seed=seed)
    assert rounds > 600


@pytest.mark.parametrize("episode", ("round", "game"))
@pytest.mark.parametrize("rules", RUNGS)
def test_random_play_on_the_ladder_matches_reference(rules, episode):
    """The rungs, each at its table size: short rounds, so more of them (about 2,000 a case)."""
    seed = 1000 + RUNGS.index(rules) * 10 + (episode == "game")
    rounds = _play([resolve_rules(rules).rung_players] * 48, rules, episode, steps=150, seed=seed)
    assert rounds > 1000


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("table", (2, 3, 4))
def test_scripted_decks_match_reference(table, rules):
    decks = [d for d in edge_case_decks() for _ in range(8)]
    _play([table] * len(decks), rules, "round", steps=40, seed=table, first_decks=decks)


@pytest.mark.parametrize("rules", RUNGS)
def test_scripted_ladder_decks_match_reference(rules):
    decks = [d for d in ladder_edge_case_decks(resolve_rules(rules)) for _ in range(8)]
    _play([resolve_rules(rules).rung_players] * len(decks), rules, "round", steps=40, seed=7, first_decks=decks)


def test_record_round_trip_and_mid_round_turns():
    """Records made from reference states at random points of a round, stepped by the
    kernels one turn, equal the reference stepped the same way."""
    rng = np.random.default_rng(3)
    for rules in RULES:
        for _ in range(300):
            n = int(rng.integers(2, 5))
            game = engine.new_game(n, rng.permutation(FULL_DECK).tolist(), int(rng.integers(n)), rules)
            for _ in range(int(rng.integers(0, 14))):
                if game.round_over:
                    break
                legal = engine.legal_actions(game)
                engine.step(game, legal[int(rng.integers(len(legal)))])
            record = record_from_state(game)
            back = state_from_record(record, game.rules)
            np.testing.assert_array_equal(record_from_state(back), record)
            if game.round_over:
                continue
            for action in range(NUM_ACTIONS):
                assert kernels.is_legal(record, action) == (action in engine.legal_actions(game))
            action = engine.legal_actions(game)[int(rng.integers(len(engine.legal_actions(game))))]
            kernels.play(record, action)
            engine.step(game, action)
            np.testing.assert_array_equal(record, record_from_state(game))


def test_is_legal_refuses_out_of_range_actions():
    record = new_records([2], resolve_rules("classic"))[0]
    kernels.start_round(record, np.array(FULL_DECK, np.uint8), 0)
    assert not kernels.is_legal(record, -1) and not kernels.is_legal(record, NUM_ACTIONS)
    assert record.shape[0] == layout.RECORD_SIZE


def test_aec_env_game_is_a_live_read_only_view():
    """``env.game`` follows the game as it moves (callers hold it across steps), cannot be
    changed behind the env's back, and clones into an independent reference state."""
    import loveletter_env
    from loveletter_env.engine import GameState

    env = loveletter_env.env(num_players=3, episode="game")
    env.reset(seed=3)
    game = env.unwrapped.game
    assert isinstance(game, GameState)
    rng = np.random.default_rng(0)
    mirror = game.clone()
    for _ in range(40):
        legal = engine.legal_actions(game)
        assert legal == tuple(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))
        action = int(rng.choice(legal))
        env.step(action)
        engine.step(mirror, action)
        if mirror.round_over and not mirror.game_over:
            engine.start_round(mirror, game.deck)  # the env dealt the next round already
        np.testing.assert_array_equal(record_from_state(game), record_from_state(mirror))
        assert game.current == mirror.current and f"player_{game.current}" == env.agent_selection
    snapshot = game.clone()
    before = record_from_state(snapshot)
    env.step(int(rng.choice(engine.legal_actions(game))))
    np.testing.assert_array_equal(record_from_state(snapshot), before)  # the clone did not move
    with pytest.raises(AttributeError, match="read-only"):
        game.tokens = [7, 0, 0]
    with pytest.raises(AttributeError):
        engine.step(game, engine.legal_actions(game)[0])


def test_compiled_sampler_draws_uniform_legal_actions():
    from loveletter_env.core.sampling import new_generator, sample_legal

    masks = np.zeros((60_000, NUM_ACTIONS), np.bool_)
    masks[:, [0, 21, 40]] = True
    masks[7] = False
    out = np.zeros(len(masks), np.int64)
    sample_legal(masks, new_generator(5), out)
    assert out[7] == -1
    values, counts = np.unique(np.delete(out, 7), return_counts=True)
    assert values.tolist() == [0, 21, 40] and (abs(counts - 20_000) < 600).all()
    again = np.zeros_like(out)
    sample_legal(masks, new_generator(5), again)
    assert np.array_equal(out, again)
    with pytest.raises(ValueError, match="seed"):
        new_generator(-1)


def test_compiled_sampler_picks_the_kth_set_entry_of_any_mask():
    """Whatever entries are set (any of the 41, any count), the sampler plays the ``k``-th
    set entry for the ``k`` its generator draws: the bit tricks in ``mask_bits`` and
    ``nth_set_bit`` against a plain reading of the mask."""
    from loveletter_env.core.sampling import GOLDEN, new_generator, pick, sample_legal

    rng = np.random.default_rng(3)
    masks = rng.random((5_000, NUM_ACTIONS)) < rng.random((5_000, 1))  # densities 0..1
    masks[:3] = np.eye(3, NUM_ACTIONS, NUM_ACTIONS - 3, dtype=np.bool_)  # lone high entries
    masks[3] = True
    out = np.zeros(len(masks), np.int64)
    state = new_generator(11)
    sample_legal(masks, state, out)
    counter = int(new_generator(11)[0])
    for g, row in enumerate(masks):
        legal = np.flatnonzero(row)
        if len(legal) == 0:
            assert out[g] == -1
            continue
        counter = (counter + int(GOLDEN)) % (1 << 64)
        assert out[g] == legal[pick(len(legal), np.uint64(counter))], g
    assert int(state[0]) == counter


def test_aec_env_copies_and_pickles_into_an_independent_env():
    """A deep copy or a pickled copy of the env goes on exactly as the original, and
    stepping one leaves the other alone (its game view follows its own record)."""
    import copy
    import pickle

    import loveletter_env

    env = loveletter_env.env(num_players=3, episode="game")
    env.reset(seed=4)
    rng = np.random.default_rng(1)
    for _ in range(10):
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    before = record_from_state(env.unwrapped.game)
    for _ in range(30):
        action = int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])))
        for e in [env, *copies]:
            e.step(action)
        for other in copies:
            np.testing.assert_array_equal(
                other.observe(other.agent_selection)["observation"], env.observe(env.agent_selection)["observation"]
            )
    twin = copy.deepcopy(env)
    twin.step(int(np.flatnonzero(twin.observe(twin.agent_selection)["action_mask"])[0]))
    assert not np.array_equal(record_from_state(twin.unwrapped.game), record_from_state(env.unwrapped.game))
    assert twin.unwrapped.game._record is twin.unwrapped._record
    assert not np.array_equal(record_from_state(env.unwrapped.game), before)


def test_record_fields_follow_one_another_without_overlap():
    """Each field starts where the previous one ends, under the name it was declared with."""
    for fields, size in ((layout.RECORD_FIELDS, layout.RECORD_SIZE), (layout.MOVE_FIELDS, layout.MOVE_BYTES)):
        end = 0
        for name, offset, width in fields:
            assert (offset, getattr(layout, name)) == (end, end), name
            assert width > 0, name
            end += width
        assert end == size
        assert len({name for name, _, _ in fields}) == len(fields)
    # A new round zeroes two slices in one store each: every field inside them is the round's.
    names = [name for name, _, _ in layout.RECORD_FIELDS]
    assert names[names.index("HANDS") : names.index("GAME_WINNERS")] == [
        "HANDS", "OUT", "PROTECTED", "NUM_DISCARDS", "RULED_OUT", "ROUND_WINNERS",
    ]  # fmt: skip
    assert names[names.index("KNOWN") : names.index("FACE_UP")] == [
        "KNOWN", "SEEN", "DISCARDED", "DISCARDS", "DEALT", "MOVE_LOG",
    ]  # fmt: skip


def test_each_table_field_has_an_index_function_from_its_declaration():
    """``<field>_at`` gives entry ``[i]`` or ``[i, j]`` of a field in row-major order inside
    the field, for every entry of every field declared with a shape, and nothing else."""
    shapes = dict(layout.RECORD_SHAPES)
    assert [name for name, _, _ in layout.RECORD_FIELDS] == list(shapes)
    for name, offset, size in layout.RECORD_FIELDS:
        shape = shapes[name]
        assert int(np.prod(shape)) == size, name
        at = getattr(layout, f"{name.lower()}_at", None)
        if len(shape) == 1 and size == 1:
            continue  # a scalar: its offset is its name
        assert at is not None, name
        positions = [at(*index) for index in np.ndindex(*shape)]
        assert positions == list(range(offset, offset + size)), name


_COMPILE_ONE_KERNEL = """
import numpy as np
from loveletter_env.core import RECORD_SIZE, kernels
kernels.restart_game(np.zeros(RECORD_SIZE, np.uint8))
stats = kernels.restart_game.stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def test_kernel_cache_saved_under_another_layout_is_not_loaded(tmp_path):
    """numba's on-disk cache of a kernel is keyed on the layout: a kernel cached under
    another layout (its index stamped with another fingerprint) compiles afresh."""
    env = subprocess_env(NUMBA_CACHE_DIR=str(tmp_path))

    def hits_and_misses() -> list[int]:
        result = subprocess.run([sys.executable, "-c", _COMPILE_ONE_KERNEL], env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return [int(word) for word in result.stdout.split()]

    assert hits_and_misses() == [0, 1]  # compiled and saved
    assert hits_and_misses() == [1, 0]  # loaded
    (index,) = tmp_path.rglob("kernels.restart_game-*.nbi")
    with index.open("rb") as f:
        version = pickle.load(f)
        (source, _fingerprint), overloads = pickle.loads(f.read())
    with index.open("wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(pickle.dumps(((source, "another layout"), overloads), protocol=-1))
    assert hits_and_misses() == [0, 1]  # stale: compiled afresh
    assert hits_and_misses() == [1, 0]


_DEAL_FROM_KEY = """
import numpy as np
from loveletter_env.core import kernels, layout, new_records
from loveletter_env.core.decks import deck_tables
from loveletter_env.rules import CLASSIC
orders, placements = (t.astype(np.uint8) for t in deck_tables())
record = new_records([2], CLASSIC)[0]
kernels.deal_from_key(record, orders, placements, np.uint64(12345), 0)
print(*record[layout.DECK : layout.DECK + 16].tolist(), sum(kernels.deal_from_key.stats.cache_misses.values()))
"""


def _run_in_a_copy(package: Path, cache: Path, code: str) -> list[int]:
    """The integers ``code`` prints, run on the copy of the package in ``package`` (its
    kernels cached in ``cache``); the working folder is the copy's, so that it is imported."""
    env = {**subprocess_env(NUMBA_CACHE_DIR=str(cache)), "PYTHONPATH": str(package)}
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=package, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [int(word) for word in result.stdout.split()]


def _copy_package(tmp_path: Path) -> Path:
    package = tmp_path / "code"
    shutil.copytree(ROOT / "loveletter_env", package / "loveletter_env", ignore=shutil.ignore_patterns("__pycache__"))
    return package


def test_kernel_cache_is_not_loaded_after_a_kernel_it_calls_changes(tmp_path):
    """numba keys a cached kernel on its own file alone, but a kernel carries the compiled
    code of the kernels it calls from other files of the package (``kernels.deal_from_key``
    calls ``sampling.pick``): after a change to ``sampling.py`` the cache loaded the old
    ``pick`` inside ``deal_from_key`` while ``pick`` itself ran the new one."""
    package = _copy_package(tmp_path)

    def deck_and_misses() -> tuple[list[int], int]:
        *deck, misses = _run_in_a_copy(package, tmp_path / "cache", _DEAL_FROM_KEY)
        return deck, misses

    shuffled, misses = deck_and_misses()
    assert misses == 1 and shuffled != list(FULL_DECK)
    assert deck_and_misses() == (shuffled, 0)  # loaded
    with (package / "loveletter_env" / "core" / "sampling.py").open("a") as f:
        f.write("\n\n@njit(cache=True)\ndef pick(count, counter):\n    return np.int64(0)\n")
    # Every pick 0: the first order and placement rows, the sorted deck.
    assert deck_and_misses() == (list(FULL_DECK), 1)


_READ_VIEW = """
import numpy as np
from loveletter_env.agents.compiled_belief import read_view
from loveletter_env.cards import FULL_DECK
from loveletter_env.core import kernels, new_records
from loveletter_env.rules import CLASSIC
record = new_records([2], CLASSIC)[0]
kernels.start_round(record, np.array(FULL_DECK, np.uint8), 0)
unseen, opponents = np.zeros(9, np.int64), np.zeros(4, np.int64)
count = read_view(record, 0, unseen, opponents)
print(count, *unseen.tolist(), sum(read_view.stats.cache_misses.values()))
"""


def test_cache_of_compiled_code_outside_the_core_is_keyed_on_the_layout(tmp_path):
    """The compiled bots bake in the layout's offsets as the kernels do (``compiled_belief.
    read_view`` reads ``r[HANDS + seat]``): after a field was inserted, its cache loaded the
    old offsets and read the new records wrong (no opponent, -2 unseen cards of value 0)."""
    package = _copy_package(tmp_path)
    *view, misses = _run_in_a_copy(package, tmp_path / "cache", _READ_VIEW)
    assert misses == 1 and view[:2] == [1, 0]  # one opponent; value 0 is no card
    assert _run_in_a_copy(package, tmp_path / "cache", _READ_VIEW) == view + [0]  # loaded
    source = package / "loveletter_env" / "core" / "layout.py"
    declaration = 'NUM_PLAYERS = _record.field("NUM_PLAYERS", 1)'
    assert declaration in source.read_text()
    source.write_text(source.read_text().replace(declaration, '_PAD = _record.field("PAD", 1)\n' + declaration))
    assert _run_in_a_copy(package, tmp_path / "cache", _READ_VIEW) == view + [1]  # compiled afresh, read right


@pytest.mark.parametrize("kind", ["nbi", "nbc"])
@pytest.mark.parametrize("damage", ["garbage", "empty"])
def test_a_corrupt_kernel_cache_file_compiles_afresh(tmp_path, kind, damage):
    """An unreadable index or data file of a kernel (a disk error, a copy cut short) is a
    miss, named in a warning, and is overwritten: numba (numba#10434) raised an
    ``UnpicklingError`` or ``EOFError`` in every later process until the file was deleted."""
    env = subprocess_env(NUMBA_CACHE_DIR=str(tmp_path))

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _COMPILE_ONE_KERNEL], env=env, capture_output=True, text=True)

    assert run().stdout.split() == ["0", "1"]
    (entry,) = tmp_path.rglob(f"kernels.restart_game-*.{kind}")
    entry.write_bytes(b"\x80\x05garbage" if damage == "garbage" else b"")
    result = run()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1"] and entry.name in result.stderr and "compil" in result.stderr
    assert run().stdout.split() == ["1", "0"]  # overwritten: loaded again


def test_the_core_imports_and_compiles_where_no_cache_folder_can_be_written(tmp_path):
    """A read-only install with no writable ``NUMBA_CACHE_DIR`` or user cache folder (a
    read-only container): numba raised ``RuntimeError: cannot cache function '_mix': no
    locator available`` on import. Now the kernels compile into a private temporary folder
    and a warning names ``NUMBA_CACHE_DIR``. (Folders that are files stand in for read-only
    ones: root may write into those.)"""
    package = _copy_package(tmp_path)
    blocked = tmp_path / "a file"
    blocked.write_text("")
    for folder in package.rglob("loveletter_env"):
        for sub in [folder, *folder.rglob("*")]:
            if sub.is_dir():
                (sub / "__pycache__").write_text("")  # numba's in-tree cache cannot be made
    env = {
        **subprocess_env(NUMBA_CACHE_DIR=str(blocked / "cache"), HOME=str(blocked), XDG_CACHE_HOME=str(blocked)),
        "PYTHONPATH": str(package),
    }
    fallback = "print(cache._CACHE_PATHS.pop().startswith(str(cache._FALLBACK_DIR)))"
    code = f"{_COMPILE_ONE_KERNEL}from loveletter_env.core import cache\n{fallback}\n"
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=package, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1", "True"] and "NUMBA_CACHE_DIR" in result.stderr


@pytest.mark.parametrize("seed", [-1, True, 2**63, 2**64 + 5, 1.0])
def test_a_sampler_seed_outside_the_packages_seeds_is_refused(seed):
    """2**64 + 5 would have wrapped round onto seed 5's stream."""
    from loveletter_env.core.sampling import new_generator

    with pytest.raises(ValueError, match="seed must be a non-negative integer below 2\\*\\*63"):
        new_generator(seed)
    assert new_generator(5).tolist() == [5] and new_generator(2**63 - 1).tolist() == [2**63 - 1]


@pytest.mark.parametrize(
    "bad, problem",
    [
        (lambda r: r[:100].copy(), f"{layout.RECORD_SIZE} bytes"),  # a record of an older or other layout
        (lambda r: np.concatenate([r, np.zeros(5, np.uint8)]), f"{layout.RECORD_SIZE} bytes"),
        (lambda r: r.astype(np.int64), "uint8"),
        (lambda r: r.astype(np.float32), "uint8"),
        (lambda r: np.stack([r, r]), "one record"),
        (lambda r: r.tolist(), "numpy array"),
        (lambda r: np.where(np.arange(r.size) == layout.NUM_PLAYERS, 7, r).astype(np.uint8), "2 to 4 players"),
        (lambda r: np.zeros_like(r), "2 to 4 players"),
    ],
)
def test_a_record_view_refuses_what_is_no_record(bad, problem):
    """A record of the wrong size (another layout), dtype or shape is named, not read: a
    truncated record read as a game with a 5-card deck and no dealt cards, and the kernels
    (compiled without bounds checks) would read past its end."""
    from loveletter_env.core.record_view import RecordGameState

    game = engine.new_game(4, list(FULL_DECK), 0, "classic")
    record = record_from_state(game)
    with pytest.raises(ValueError, match=problem):
        state_from_record(bad(record), game.rules)
    with pytest.raises(ValueError, match=problem):
        RecordGameState(bad(record), game.rules)
    assert state_from_record(record, game.rules).deck == game.deck


@pytest.mark.parametrize("high", [0, -3, 2**28, 2**31 - 1])
def test_torch_draws_refuse_bounds_torch_draws_otherwise(high):
    """From ``high`` = 2**28 torch's ``randint`` draws 64 bits per value, so the one-word
    copy gave other values than torch (every second one of torch's) and left the generator
    elsewhere; it was documented for any ``high`` below 2**32. A bound of 0 or less has no value."""
    torch = pytest.importorskip("torch")
    from loveletter_env.core import mt19937

    state = torch.Generator().manual_seed(0).get_state().numpy()
    before = state.copy()
    highs = np.array([40320, high], np.int64)
    with pytest.raises(ValueError, match=r"highs must be 1 \.\. 2\*\*28"):
        mt19937.deal_draws(state, np.empty(4, np.float32), np.empty((2, 4), np.int64), highs, np.empty(12, np.uint32))
    assert np.array_equal(state, before)
    # The largest bound still draws what torch draws.
    ours, theirs = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    state, draws = ours.get_state(), np.empty((1, 9), np.int64)
    mt19937.deal_draws(state.numpy(), np.empty(9, np.float32), draws, np.array([2**28 - 1]), np.empty(18, np.uint32))
    torch.rand(9, generator=theirs)
    assert draws[0].tolist() == torch.randint(2**28 - 1, (9,), generator=theirs).tolist()


@pytest.mark.parametrize(
    "sizes, rules, problem",
    [
        ([1], "classic", r"num_players must be 2, 3 or 4, got 1"),
        ([2, 5], "classic", r"num_players must be 2, 3 or 4, got 5"),
        ([-1], "classic", r"num_players must be 2, 3 or 4, got -1"),
        (np.array([258]), "classic", r"num_players must be 2, 3 or 4, got 258"),
        ([2.5], "classic", r"num_players must be a sequence of integers"),
        (["2"], "classic", r"num_players must be a sequence of integers"),
        ([True, True], "classic", r"num_players must be a sequence of integers"),
        (2, "classic", r"num_players must be a sequence of integers"),
        ([[2, 3]], "classic", r"num_players must be a sequence of integers"),
        ([2], None, r"rules must be a preset name or a Rules object"),
        ([3], "mini7", r"ladder rung, played by 2 players only"),
    ],
)
def test_new_records_refuses_tables_and_rules_it_cannot_hold(sizes, rules, problem):
    """``new_records`` (the core's public constructor) wrote any table size into the record's
    byte: 1, 258 (wrapped to 2) or -1 (255 players, whose deal wrote past the record into its
    neighbours: the kernels have no bounds checks) were made silently, 5 failed with an
    ``IndexError`` and a non-``Rules`` with an ``AttributeError``."""
    preset = resolve_rules(rules) if isinstance(rules, str) else rules
    with pytest.raises(ValueError, match=problem):
        new_records(sizes, preset)
    assert new_records([], resolve_rules("classic")).shape == (0, layout.RECORD_SIZE)
    assert new_records(np.array([2, 4], np.uint8), resolve_rules("classic"))[:, layout.NUM_PLAYERS].tolist() == [2, 4]


@pytest.mark.parametrize(
    "uniforms, draws, highs, words, state_bytes, problem",
    [
        (8, (3, 8), 3, 8, None, r"words must be uint32 \[32\] or longer"),  # the scratch of one row
        (6, (1, 2), 1, 12, None, r"draws must be \[1, 6\]"),  # rows shorter than the uniforms
        (4, (2, 4), 1, 12, None, r"highs must hold one bound a row of draws \(2\)"),
        (4, (1, 4), 1, 8, 100, r"state must be the 5056 bytes"),
    ],
)
def test_torch_draws_refuse_buffers_they_would_write_past(uniforms, draws, highs, words, state_bytes, problem):
    """``deal_draws`` (compiled, no bounds checks) read past a short ``words`` scratch (other
    values each run) and wrote past a short row of ``draws`` (a segmentation fault): now a
    ``ValueError`` names the buffer, before the state moves."""
    torch = pytest.importorskip("torch")
    from loveletter_env.core import mt19937

    state = torch.Generator().manual_seed(0).get_state().numpy()
    if state_bytes is not None:
        state = state[:state_bytes].copy()
    before = state.copy()
    with pytest.raises(ValueError, match=problem):
        mt19937.deal_draws(
            state,
            np.empty(uniforms, np.float32),
            np.empty(draws, np.int64),
            np.full(highs, 7, np.int64),
            np.empty(words, np.uint32),
        )
    assert np.array_equal(state, before)
