"""Checkpoint files: safe round trip, clear errors for bad files, agents from checkpoints."""

from __future__ import annotations

import errno
import hashlib
import math
import os
import pickle
import random
import re
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import torch
from conftest import ROOT

import training.learn.checkpoint as checkpoint_module
from loveletter_env import engine
from loveletter_env import env as make_env
from loveletter_env.agents import checkpoint_loading
from loveletter_env.cards import FULL_DECK
from loveletter_env.observation import (
    OBSERVATION_SIZE,
    OBSERVATION_VERSION,
    V1_OBSERVATION_SIZE,
    check_observation_size,
    encode_observation,
)
from loveletter_env.validation import PLAYER_COUNTS
from training import load_agent
from training.learn.checkpoint import (
    DIGEST_KEY,
    CheckpointError,
    CheckpointWriteError,
    build_model,
    checkpoint_digest,
    export_agent,
    format_header,
    load_checkpoint,
    model_payload,
    save_checkpoint,
)
from training.learn.policy_agent import PolicyAgent
from training.learn.ppo import ActorCritic, masked_logits
from training.selfplay import main as selfplay_main


@pytest.fixture
def model() -> ActorCritic:
    return ActorCritic(hidden_sizes=(32, 16), generator=torch.Generator().manual_seed(3))


@pytest.fixture
def saved(tmp_path, model):
    payload = {
        "model": model_payload(model),
        "config": {"seed": 0},
        "update": 7,
        "global_step": 700,
        "training": {"optimizer": torch.optim.Adam(model.parameters()).state_dict()},
    }
    return save_checkpoint(tmp_path / "run" / "latest.pt", payload)


def test_round_trip_loads_with_weights_only(saved, model):
    raw = torch.load(saved, weights_only=True)  # no pickled code is needed to read it
    assert raw["update"] == 7 and raw["global_step"] == 700
    loaded = build_model(load_checkpoint(saved))
    obs = torch.rand(4, OBSERVATION_SIZE)
    assert torch.equal(loaded(obs)[0], model(obs)[0])
    assert loaded.hidden_sizes == (32, 16)


def test_save_is_atomic_and_leaves_no_temporary_files(saved):
    assert sorted(p.name for p in saved.parent.iterdir()) == ["latest.pt"]
    before = saved.read_bytes()

    class Crash(Exception):
        pass

    for error in (Crash, KeyboardInterrupt):  # a crash, or Ctrl-C, mid-write

        def half_a_write(f, error=error):
            f.write(b"half a checkpoint")
            f.flush()
            raise error

        with pytest.raises(error):
            checkpoint_module.write_atomically(saved, half_a_write)
        # The good file is still there, byte for byte, and the half-written one is gone.
        assert saved.read_bytes() == before
        assert sorted(p.name for p in saved.parent.iterdir()) == ["latest.pt"]


def test_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nope.pt")


@pytest.mark.parametrize(
    "kind, message",
    [
        ("loop", "symbolic link that leads to no file"),
        ("dangling", "symbolic link that leads to no file"),
        ("fifo", "not a regular file"),
    ],
)
def test_a_path_that_is_no_file_is_named_for_what_it_is(tmp_path, kind, message):
    # "does not exist" would send the user looking for a file that is there.
    path = tmp_path / "model.pt"
    if kind == "loop":
        path.symlink_to(path)
    elif kind == "dangling":
        path.symlink_to(tmp_path / "moved_away.pt")
    else:
        os.mkfifo(path)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError, match=message):
        checkpoint_loading.load_checkpoint_agent(path)
    with pytest.raises(FileNotFoundError, match=message):
        checkpoint_loading.load_checkpoint_network(path)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_file_gives_a_clear_error(tmp_path, saved, damage):
    bad = tmp_path / "bad.pt"
    data = saved.read_bytes()
    bad.write_bytes(
        {"garbage": b"this is not a checkpoint" * 10, "truncated": data[: len(data) // 2], "empty": b""}[damage]
    )
    with pytest.raises(CheckpointError, match="is not a checkpoint"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError):
        load_agent(bad)


def flip_bytes(data: bytes, start: int, count: int) -> bytes:
    """``data`` with ``count`` bytes from ``start`` inverted."""
    damaged = bytearray(data)
    for i in range(start, start + count):
        damaged[i] ^= 0xFF
    return bytes(damaged)


SHIPPED_2P = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"


def test_damaged_tensor_bytes_are_refused(tmp_path):
    # 2,000 bytes a third of the way into the file land in the weights: torch's zip reader
    # loads them without complaint, the digest does not match.
    data = SHIPPED_2P.read_bytes()
    damaged = flip_bytes(data, len(data) // 3, 2000)
    bad = tmp_path / "damaged.pt"
    bad.write_bytes(damaged)
    raw = torch.load(bad, weights_only=True)  # what used to be played with
    assert not torch.equal(
        raw["model"]["state_dict"]["trunk.0.weight"],
        torch.load(SHIPPED_2P, weights_only=True)["model"]["state_dict"]["trunk.0.weight"],
    )
    with pytest.raises(CheckpointError, match="damaged"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="damaged"):
        load_agent(bad)


@pytest.mark.parametrize("edit", ["weight", "config", "drop digest"])
def test_edited_content_is_refused(tmp_path, saved, edit):
    data = torch.load(saved, weights_only=True)
    if edit == "weight":
        data["model"]["state_dict"]["trunk.0.bias"][0] += 1e-6
    elif edit == "config":
        data["config"]["seed"] = 1
    else:
        del data[DIGEST_KEY]
    path = tmp_path / "edited.pt"
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="damaged"):
        load_checkpoint(path)


def test_digest_survives_a_load_and_save(tmp_path, saved):
    again = save_checkpoint(tmp_path / "again.pt", load_checkpoint(saved))
    assert torch.load(again, weights_only=True)[DIGEST_KEY] == torch.load(saved, weights_only=True)[DIGEST_KEY]


def test_a_checkpoint_holding_a_set_loads_back(tmp_path, saved):
    # A set comes back from the file in another order (and strings hash differently in each
    # process): its digest must not depend on that, or the file is refused as damaged forever.
    data = load_checkpoint(saved)
    data["evaluation"] = {"opponents": {"rule", "random", "belief", "ismcts", "guided", 3, (1, "a")}}
    path = save_checkpoint(tmp_path / "with_set.pt", data)
    assert load_checkpoint(path)["evaluation"] == data["evaluation"]
    # ... in a fresh process too (another string hash seed).
    code = "import sys; from training.learn.checkpoint import load_checkpoint; load_checkpoint(sys.argv[1])"
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr


def test_legacy_version_1_files_without_digest_still_load(tmp_path, saved, model):
    data = torch.load(saved, weights_only=True)
    del data[DIGEST_KEY]
    data["format_version"] = 1
    path = tmp_path / "legacy.pt"
    torch.save(data, path)
    obs = torch.rand(3, OBSERVATION_SIZE)
    assert torch.equal(build_model(load_checkpoint(path))(obs)[0], model(obs)[0])
    # Saving it again writes the current format, digest included.
    resaved = torch.load(save_checkpoint(tmp_path / "resaved.pt", load_checkpoint(path)), weights_only=True)
    assert resaved["format_version"] == 2 and resaved[DIGEST_KEY] == checkpoint_digest(resaved)


def test_foreign_torch_file_is_refused(tmp_path):
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.zeros(2)}}, foreign)
    with pytest.raises(CheckpointError, match="not a loveletter-ppo checkpoint"):
        load_checkpoint(foreign)
    torch.save(torch.zeros(3), foreign)
    with pytest.raises(CheckpointError, match="not a loveletter-ppo checkpoint"):
        load_checkpoint(foreign)


def test_file_needing_pickled_code_is_refused(tmp_path):
    path = tmp_path / "code.pt"
    # Any class outside torch's weights-only allow-list must not be rebuilt on load.
    torch.save({"format": "loveletter-ppo", "obj": Fraction(1, 3)}, path)
    with pytest.raises(CheckpointError, match="not a checkpoint.*fractions.Fraction") as info:
        load_checkpoint(path)
    # Torch's own message advises weights_only=False, which would run the file's code.
    assert "weights_only" not in str(info.value)


class _RunsCode:
    """Pickles as a call to ``os.system``, which a loader that ran pickled code would make."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_file_that_would_run_a_command_is_named_as_such_and_runs_nothing(tmp_path):
    """Torch words a global of a module it blocks (os, posix, subprocess) otherwise than one outside
    its allow-list: such a file was called corrupt, not one holding code."""
    path, marker = tmp_path / "code.pt", tmp_path / "ran"
    torch.save({"format": "loveletter-ppo", "obj": _RunsCode(marker)}, path)
    with pytest.raises(
        CheckpointError,
        match=r"code.pt' is not a checkpoint: it holds a Python object \((posix|nt)\.system\) that only code",
    ) as info:
        load_agent(path)
    assert "weights_only" not in str(info.value)
    assert not marker.exists()


def test_values_nested_too_deep_to_digest_are_named(tmp_path):
    """A file nesting lists deeper than Python's recursion limit was refused as holding a tensor
    that is not dense (the digest's RecursionError is a RuntimeError)."""
    import zipfile

    base = tmp_path / "base.pt"
    torch.save({"format": "loveletter-ppo", "format_version": 2, "sha256": "0" * 64, "evaluation": "MARKER"}, base)
    deep = tmp_path / "deep.pt"
    depth = 20 * sys.getrecursionlimit()
    with zipfile.ZipFile(base) as source, zipfile.ZipFile(deep, "w") as target:
        for name in source.namelist():
            content = source.read(name)
            if name.endswith("data.pkl"):  # the string "MARKER" becomes a list nested `depth` deep
                assert content.count(b"X\x06\x00\x00\x00MARKER") == 1
                content = content.replace(b"X\x06\x00\x00\x00MARKER", b"]" * depth + b"a" * (depth - 1))
            target.writestr(name, content)
    with pytest.raises(CheckpointError, match=r"deep.pt' is malformed: it holds values nested deeper than Python"):
        load_checkpoint(deep)


def test_plain_pickle_is_not_a_checkpoint_and_no_unsafe_advice(tmp_path):
    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(CheckpointError, match="is not a checkpoint") as info:
        load_checkpoint(path)
    assert "weights_only" not in str(info.value)


@pytest.mark.parametrize(
    "key,value",
    [
        ("observation_size", OBSERVATION_SIZE + 1),
        ("observation_version", 999),
        ("num_actions", 40),
        ("format_version", 99),
    ],
)
def test_other_layouts_are_refused(tmp_path, saved, key, value):
    data = torch.load(saved, weights_only=True)
    data[key] = value
    path = tmp_path / "other.pt"
    if key == "format_version":
        torch.save(data, path)  # save_checkpoint always writes the current version
    else:
        save_checkpoint(path, data)  # a valid digest: the layout check speaks
    with pytest.raises(CheckpointError, match=key.split("_")[0]):
        load_checkpoint(path)


def test_weights_that_do_not_fit_the_network(tmp_path, saved):
    data = torch.load(saved, weights_only=True)
    data["model"]["hidden_sizes"] = [64, 16]
    path = save_checkpoint(tmp_path / "mismatch.pt", data)
    with pytest.raises(CheckpointError, match="do not fit"):
        load_agent(path)


@pytest.mark.parametrize(
    "sizes", [[10**9, 10**9], [2**40], [2**60], [32] * 10_000], ids=["huge", "huger", "overflowing", "deep"]
)
def test_absurd_hidden_sizes_are_refused_with_the_bound(tmp_path, saved, sizes):
    # Building these networks would need petabytes (2**60 overflowed torch's size arithmetic).
    data = torch.load(saved, weights_only=True)
    data["model"]["hidden_sizes"] = sizes
    path = save_checkpoint(tmp_path / "absurd.pt", data)  # a valid digest: only the sizes are wrong
    with pytest.raises(CheckpointError, match=r"beyond what this code builds: .*at most 16 layers of 1\.\.65536 units"):
        load_agent(path)


def test_large_hidden_sizes_within_the_bound_are_compared_without_allocating(tmp_path, saved):
    # 16 layers of 65,536 units: 64 G parameters, were the network built; the shapes are compared on torch's
    # meta device instead.
    data = torch.load(saved, weights_only=True)
    data["model"]["hidden_sizes"] = [2**16] * 16
    path = save_checkpoint(tmp_path / "large.pt", data)
    with pytest.raises(CheckpointError, match="do not fit"):
        load_agent(path)


def test_layout_fields_must_be_plain_integers(tmp_path, saved):
    data = torch.load(saved, weights_only=True)
    data["observation_size"] = torch.tensor(OBSERVATION_SIZE)  # equal to the right size, yet not a number
    path = save_checkpoint(tmp_path / "tensor_size.pt", data)
    with pytest.raises(
        CheckpointError, match=rf"malformed: its observation_size is tensor\({OBSERVATION_SIZE}\), not an integer"
    ):
        load_checkpoint(path)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_weights_that_are_not_finite_are_refused(tmp_path, saved, value):
    data = torch.load(saved, weights_only=True)
    name, tensor = next(iter(data["model"]["state_dict"].items()))
    tensor.view(-1)[3] = value
    path = save_checkpoint(tmp_path / "diverged.pt", data)  # a valid digest: the file is as written
    with pytest.raises(CheckpointError, match=rf"not finite numbers \(NaN or infinity\) in {re.escape(name)}"):
        load_agent(path)
    with pytest.raises(CheckpointError, match="not finite"):
        load_checkpoint(path)


@pytest.mark.parametrize("network", ["magnet", "average"])
def test_kept_training_networks_that_are_not_finite_are_refused(tmp_path, saved, network):
    data = torch.load(saved, weights_only=True)
    weights = {name: tensor.clone() for name, tensor in data["model"]["state_dict"].items()}
    name = next(iter(weights))
    weights[name].view(-1)[0] = math.nan
    data["training"] = {network: weights}
    path = save_checkpoint(tmp_path / f"{network}.pt", data)
    with pytest.raises(CheckpointError, match=rf"not finite .* in training\.{network}\.{re.escape(name)}"):
        load_checkpoint(path)


@pytest.mark.parametrize("seed", [1.5, "1", True, None, -1, 2**64], ids=repr)
def test_checkpoint_agents_refuse_bad_seeds_by_name(saved, seed):
    with pytest.raises(
        ValueError, match=rf"^seed must be a non-negative integer below 2\*\*63, got {re.escape(repr(seed))}$"
    ):
        load_agent(saved, seed=seed)
    agent = load_agent(saved, seed=np.uint64(2**63 - 1))
    if seed is not None:  # None is "keep the generator as it is" for reset
        with pytest.raises(ValueError, match=r"^seed must be a non-negative integer below 2\*\*63, got"):
            agent.reset(seed=seed)


class FullDisk:
    """A file whose writes fail as on a full disk once ``room`` bytes are written."""

    def __init__(self, file, room: int):
        self.file, self.room = file, room

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def fill_disk_after(monkeypatch, room: int) -> None:
    """Every checkpoint written from now on finds ``room`` bytes free."""
    # FullDisk closes the file it wraps: save_checkpoint opens it in a with block.
    full = lambda *args, **kwargs: FullDisk(open(*args, **kwargs), room)  # noqa: E731, SIM115
    monkeypatch.setattr(checkpoint_module, "open", full, raising=False)


@pytest.mark.parametrize("room", [0, 1000, 10_000])
def test_a_full_disk_is_named_and_the_saved_file_is_kept(tmp_path, saved, model, monkeypatch, room):
    before = saved.read_bytes()
    fill_disk_after(monkeypatch, room)
    with pytest.raises(
        CheckpointWriteError, match="the disk is full; the latest.pt already there is unchanged"
    ) as info:
        save_checkpoint(saved, {"model": model_payload(model), "update": 8, "global_step": 800})
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert "unexpected pos" not in str(info.value)
    assert saved.read_bytes() == before and sorted(p.name for p in saved.parent.iterdir()) == ["latest.pt"]
    with pytest.raises(CheckpointWriteError, match=r"^cannot save '.*new\.pt': the disk is full$"):
        save_checkpoint(saved.parent / "new.pt", {"model": model_payload(model), "update": 8, "global_step": 800})


@pytest.mark.parametrize(
    "model_entry",
    [
        {"hidden_sizes": None, "state_dict": None},
        {"hidden_sizes": "abc", "state_dict": {}},
        {"hidden_sizes": [64, 64], "state_dict": {"weight": 3}},
    ],
    ids=["no sizes", "text sizes", "not tensors"],
)
def test_malformed_model_entry_is_refused(tmp_path, saved, model_entry):
    data = torch.load(saved, weights_only=True)
    data["model"] = model_entry
    path = save_checkpoint(tmp_path / "malformed.pt", data)
    with pytest.raises(CheckpointError, match="malformed"):
        load_agent(path)


def test_run_folder_prefers_best(tmp_path, saved, model):
    assert load_checkpoint(saved.parent)["update"] == 7  # only latest.pt there
    save_checkpoint(saved.parent / "best.pt", {"model": model_payload(model), "update": 5, "global_step": 500})
    assert load_checkpoint(saved.parent)["update"] == 5
    with pytest.raises(CheckpointError, match="holds none of"):
        load_checkpoint(tmp_path)


def test_export_strips_training_state(tmp_path, saved):
    small = export_agent(saved, tmp_path / "agent.pt")
    data = load_checkpoint(small)
    assert "training" not in data and data["update"] == 7
    assert small.stat().st_size < saved.stat().st_size


@pytest.mark.parametrize("greedy", [True, False])
def test_loaded_agent_plays_legal_moves(saved, greedy):
    agent = load_agent(saved, greedy=greedy, seed=1)
    env = make_env(num_players=3, episode="round")
    for episode in range(3):
        env.reset(seed=episode)
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            action = None if term or trunc else agent.act(obs)
            if action is not None:
                assert obs["action_mask"][action] == 1
            env.step(action)


def test_greedy_agent_is_deterministic_and_sampling_is_seeded(saved, model):
    env = make_env(num_players=2, episode="round")
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    legal = np.flatnonzero(obs["action_mask"])
    assert len(legal) > 1  # a decision with a choice, on a network with a near-flat policy
    # Greedy: always the legal action of the highest logit, computed here from the network.
    logits, _ = model(torch.as_tensor(obs["observation"], dtype=torch.float32).unsqueeze(0))
    best = int(masked_logits(logits, torch.as_tensor(obs["action_mask"], dtype=torch.bool).unsqueeze(0)).argmax())
    assert {load_agent(saved).act(obs) for _ in range(5)} == {best}
    # Sampling: the same seed repeats the same draws, another seed draws others.
    first, second, other = (load_agent(saved, greedy=False, seed=s) for s in (4, 4, 5))
    picks = [first.act(obs) for _ in range(400)]
    assert picks == [second.act(obs) for _ in range(400)]
    assert picks != [other.act(obs) for _ in range(400)]
    assert all(np.asarray(obs["action_mask"])[a] == 1 for a in picks)
    # ... and draws the masked policy: every legal action, at about its probability.
    assert set(picks) == set(legal.tolist())
    probabilities = first.action_probabilities(obs)
    for action in legal:
        assert abs(picks.count(action) / len(picks) - probabilities[action]) < 0.08, action


def with_eval_greedy(tmp_path, saved, greedy) -> object:
    """``saved`` again, its run's config saying how its evaluations played it."""
    data = load_checkpoint(saved)
    data["config"] = {**data["config"], "eval": {"greedy": greedy}}
    return save_checkpoint(tmp_path / f"eval_greedy_{greedy}.pt", data)


def test_a_checkpoint_plays_as_its_run_evaluated_it_unless_told(tmp_path, saved):
    sampling = with_eval_greedy(tmp_path, saved, False)
    assert load_agent(sampling).greedy is False
    assert load_agent(with_eval_greedy(tmp_path, saved, True)).greedy is True
    # An explicit choice wins either way.
    assert load_agent(sampling, greedy=True).greedy is True
    assert load_agent(saved, greedy=False).greedy is False
    # No eval section in the recorded config: greedy, as before the setting was read.
    assert load_agent(saved).greedy is True
    # A recorded way that is no boolean is refused: "no" was read as not recorded, so greedy.
    for recorded in ("no", None, 0):
        with pytest.raises(CheckpointError, match=r"eval_greedy_.*\.pt' is malformed: its config's eval.greedy"):
            load_agent(with_eval_greedy(tmp_path, saved, recorded))
    # The default-sampling agent is the seeded sampling agent, not a greedy one.
    env = make_env(num_players=2, episode="round")
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    by_default, told = load_agent(sampling, seed=4), load_agent(saved, greedy=False, seed=4)
    played = [by_default.act(obs) for _ in range(50)]
    assert len(set(played)) > 1  # it samples (the network's policy here is near flat)
    assert played == [told.act(obs) for _ in range(50)]
    # ... seeded by the seed it was given: another seed draws other actions.
    reseeded = load_agent(sampling, seed=5)
    assert played != [reseeded.act(obs) for _ in range(50)]


def test_checkpoint_specs_play_as_the_checkpoint_or_the_spec_says(tmp_path, saved):
    from loveletter_env.agents.specs import resolve_agent

    sampling = with_eval_greedy(tmp_path, saved, False)
    assert resolve_agent(str(sampling)).greedy is False
    assert resolve_agent(f"checkpoint:path={sampling},greedy=True").greedy is True
    assert resolve_agent(f"checkpoint:path={saved},greedy=False").greedy is False


@pytest.mark.parametrize("greedy", ["yes", 1, 0.0])
def test_a_mode_that_is_not_true_false_or_none_is_refused(saved, greedy):
    with pytest.raises(ValueError, match=rf"^greedy must be True, False or None .*got {greedy!r}$"):
        load_agent(saved, greedy=greedy)


SHIPPED = sorted((ROOT / "checkpoints" / "shipped").glob("*.pt"))
V1 = sorted((ROOT / "checkpoints" / "v1").glob("*.pt"))


@pytest.mark.parametrize("path", SHIPPED + V1, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_agents_load_and_play_legally(path):
    data = load_checkpoint(path)
    assert "training" not in data  # shipped files carry weights only
    assert data["format_version"] >= 2 and DIGEST_KEY in data  # and are checked on load
    test_loaded_agent_plays_legal_moves(path, greedy=True)


def test_other_write_failures_are_named_too(tmp_path, saved, model, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(checkpoint_module, "open", read_only, raising=False)
    with pytest.raises(CheckpointWriteError, match=r"^cannot save '.*latest\.pt': Read-only file system; the latest"):
        save_checkpoint(saved, {"model": model_payload(model), "update": 8, "global_step": 800})


# --- Observation layouts: networks trained on version 1 keep playing -------------------------

V1_NETWORKS = {path.stem: path for path in V1}


def v1_payload(model: ActorCritic) -> dict:
    """What a version-1 run saved: its layout in the header and a 646-wide input layer."""
    header = {key: value for key, value in format_header(1).items() if key.startswith(("observation", "num"))}
    return {**header, "model": model_payload(model), "config": {"seed": 0}, "update": 1, "global_step": 10}


def random_states(count: int, seed: int) -> list:
    """Seeded positions of 2-, 3- and 4-player rounds, each with the player to act."""
    rng = random.Random(seed)
    states = []
    while len(states) < count:
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        n = rng.choice(PLAYER_COUNTS)
        state = engine.new_game(n, deck, first_player=rng.randrange(n))
        for _ in range(rng.randrange(12)):
            if state.round_over:
                break
            states.append(state.clone())
            legal = engine.legal_actions(state)
            engine.step(state, legal[rng.randrange(len(legal))])
    return states[:count]


def v1_policy(weights: dict, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The masked policy as the version-1 code computed it: the MLP applied to 646-entry vectors."""
    x = torch.from_numpy(np.ascontiguousarray(observations))
    layers = sorted({name.split(".")[1] for name in weights if name.startswith("trunk.")}, key=int)
    for layer in layers:
        x = torch.relu(torch.nn.functional.linear(x, weights[f"trunk.{layer}.weight"], weights[f"trunk.{layer}.bias"]))
    logits = torch.nn.functional.linear(x, weights["policy_head.weight"], weights["policy_head.bias"])
    legal = torch.from_numpy(masks.astype(bool))
    return torch.softmax(masked_logits(logits, legal).double(), dim=-1).numpy()


def test_new_checkpoints_record_the_current_layout(saved):
    raw = torch.load(saved, weights_only=True)
    assert (raw["observation_version"], raw["observation_size"]) == (OBSERVATION_VERSION, OBSERVATION_SIZE)
    assert OBSERVATION_VERSION == 2 and build_model(load_checkpoint(saved)).observation_version == 2


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_networks_read_the_current_observation(path):
    # Fails when the observation layout changes: the shipped networks need retraining then.
    data = load_checkpoint(path)
    assert (data["observation_version"], data["observation_size"]) == (OBSERVATION_VERSION, OBSERVATION_SIZE)


def test_the_version_1_networks_are_the_ones_their_readme_names():
    # The documented figures were measured on these exact files.
    readme = (ROOT / "checkpoints" / "v1" / "README.md").read_text()
    assert sorted(V1_NETWORKS) == ["ppo_2p", "ppo_2to4p"]
    for name, path in V1_NETWORKS.items():
        assert f"| `{name}.pt` |" in readme and f"`{hashlib.sha256(path.read_bytes()).hexdigest()}`" in readme


@pytest.mark.parametrize("name", sorted(V1_NETWORKS))
def test_the_version_1_networks_read_the_version_1_prefix(name):
    data = load_checkpoint(V1_NETWORKS[name])
    assert (data["observation_version"], data["observation_size"]) == (1, V1_OBSERVATION_SIZE)
    model = build_model(data)
    assert model.observation_version == 1 and model.trunk[0].in_features == V1_OBSERVATION_SIZE


@pytest.mark.parametrize("name", sorted(V1_NETWORKS))
def test_a_version_1_network_plays_the_version_1_policy_on_version_2_observations(name):
    # Reference encoder: the full version-2 vector, whose first 646 entries are what version 1 computed.
    states = random_states(300, seed=11)
    observations = np.stack([encode_observation(s, s.current) for s in states])
    masks = np.stack([np.asarray(engine.legal_mask(s), np.int8) for s in states])
    assert observations.shape[1] == OBSERVATION_SIZE and observations[:, V1_OBSERVATION_SIZE:].any()
    weights = load_checkpoint(V1_NETWORKS[name])["model"]["state_dict"]
    agent = load_agent(V1_NETWORKS[name], greedy=False)
    expected = v1_policy(weights, observations[:, :V1_OBSERVATION_SIZE], masks)
    assert np.array_equal(agent.action_probabilities_batch(observations, masks), expected)
    # One observation at a time, as agents play (compared with the same batch shape: BLAS may round a
    # batch of one differently from a batch of many).
    for k in range(0, len(states), 37):
        one = agent.action_probabilities({"observation": observations[k], "action_mask": masks[k]})
        assert np.array_equal(
            one, v1_policy(weights, observations[k : k + 1, :V1_OBSERVATION_SIZE], masks[k : k + 1])[0]
        )


def scripted_state(seed: int):
    """The position the expected actions below were recorded on: a deck shuffled by ``seed``,
    then up to 7 seeded random legal moves."""
    rng = random.Random(seed)
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    n = 2 + seed % 3
    state = engine.new_game(n, deck, first_player=seed % n)
    for _ in range(rng.randrange(8)):
        legal = engine.legal_actions(state)
        engine.step(state, legal[rng.randrange(len(legal))])
    return state


#: Greedy actions of the version 1 networks on :func:`scripted_state`, recorded with the
#: version-1 code (observations of 646 entries): the version-1 path must never change them.
SCRIPTED_SEEDS = (1, 2, 4, 5, 8, 11, 12, 14, 16, 22, 23, 24)
EXPECTED_GREEDY = {
    "ppo_2p": (30, 30, 30, 32, 30, 22, 30, 30, 2, 27, 1, 1),
    "ppo_2to4p": (30, 33, 12, 32, 22, 22, 30, 30, 13, 10, 20, 3),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_GREEDY))
def test_version_1_networks_play_the_actions_they_played_before(name):
    agent = load_agent(V1_NETWORKS[name])
    assert agent.greedy  # their runs evaluated them greedily: the default way of playing is unchanged
    played = []
    for seed in SCRIPTED_SEEDS:
        state = scripted_state(seed)
        played.append(
            agent.act(
                {"observation": encode_observation(state, state.current), "action_mask": engine.legal_mask(state)}
            )
        )
    assert tuple(played) == EXPECTED_GREEDY[name]


def test_a_saved_version_1_network_round_trips_with_its_layout(tmp_path):
    model = ActorCritic((16,), observation_version=1, generator=torch.Generator().manual_seed(2))
    assert model.trunk[0].in_features == V1_OBSERVATION_SIZE
    path = save_checkpoint(tmp_path / "v1.pt", v1_payload(model))
    small = export_agent(path, tmp_path / "v1_small.pt")  # sharing a file keeps its layout
    for copy in (path, small):
        data = load_checkpoint(copy)
        assert (data["observation_version"], data["observation_size"]) == (1, V1_OBSERVATION_SIZE)
        loaded = build_model(data)
        obs = torch.rand(3, OBSERVATION_SIZE)
        assert torch.equal(loaded(obs)[0], model(obs)[0])
        assert torch.equal(loaded(obs)[0], model.policy_head(model.trunk(obs[:, :V1_OBSERVATION_SIZE])))


@pytest.mark.parametrize(
    "edit,message",
    [
        (
            {"observation_version": 7, "observation_size": 2000},
            r"trained on observation version 7 \(2000 entries\), which this code does not know "
            r"\(it reads versions 1, 2\)",
        ),
        (
            {"observation_version": 1, "observation_size": 1000},
            r"malformed: it records observation version 1 with observation_size=1000, but that layout has 646 entries",
        ),
        (
            {"observation_version": 2, "observation_size": V1_OBSERVATION_SIZE},
            r"observation version 2 with observation_size=646, but that layout has 1382 entries",
        ),
    ],
    ids=["unknown-version", "size-of-no-layout", "size-of-another-layout"],
)
def test_an_unknown_layout_is_refused_by_name(tmp_path, saved, edit, message):
    data = torch.load(saved, weights_only=True)
    path = save_checkpoint(tmp_path / "odd.pt", {**data, **edit})  # a valid digest: the layout check speaks
    with pytest.raises(CheckpointError, match=message):
        load_agent(path)


def test_a_layout_whose_weights_do_not_fit_is_refused(tmp_path, saved):
    data = torch.load(saved, weights_only=True)  # a 1382-wide network labelled version 1
    path = save_checkpoint(tmp_path / "mislabelled.pt", {**data, **format_header(1)})
    with pytest.raises(
        CheckpointError, match=r"do not fit its network \(hidden_sizes=\[32, 16\], observation version 1\)"
    ):
        load_agent(path)


@pytest.mark.parametrize("layout", [1, 2])
def test_an_observation_of_another_layout_is_refused_naming_both(layout):
    # Networks of either layout take the current observation; the old 646-entry vector is never reshaped.
    agent = PolicyAgent(ActorCritic((8,), observation_version=layout))
    mask = np.ones(41, np.int8)
    v1 = np.zeros(V1_OBSERVATION_SIZE, np.float32)
    both = r"expected observation version 2 \(1382 entries\), got observation version 1 \(646 entries\)"
    with pytest.raises(ValueError, match=both):
        agent.act({"observation": v1, "action_mask": mask})
    with pytest.raises(ValueError, match=both):
        agent.action_probabilities_batch(v1[None], mask[None])
    with pytest.raises(ValueError, match=r"got 700 entries \(no known layout\)"):
        agent.act({"observation": np.zeros(700, np.float32), "action_mask": mask})
    with pytest.raises(ValueError, match=r"expected observation version 1 \(646 entries\), got observation version 2"):
        check_observation_size(OBSERVATION_SIZE, version=1)


def test_a_network_of_an_unknown_layout_is_not_built():
    with pytest.raises(
        ValueError, match=r"unknown observation version 7; the known versions are the integers \[1, 2\]"
    ):
        ActorCritic((8,), observation_version=7)


# Bad checkpoints given to the tools -------------------------------------------------


@pytest.mark.parametrize("tool", ["play", "exploit", "evaluate"])
def test_absurd_hidden_sizes_in_a_checkpoint_are_named_without_a_traceback(tmp_path, tool):
    data = torch.load(ROOT / "checkpoints/shipped/ppo_2p.pt", weights_only=True)
    data["model"]["hidden_sizes"] = [10**9, 10**9]  # petabytes, were the network built
    path = save_checkpoint(tmp_path / "absurd.pt", data)  # a valid digest: only the sizes are wrong
    args = {
        "play": [str(path), "--seed", "0"],
        "exploit": ["--checkpoint", str(path), "--steps", "64", "--no-progress"],
        "evaluate": [str(path), "rule", "--rounds", "2", "--no-progress"],
    }[tool]
    run = subprocess.run(
        [sys.executable, "-m", f"training.{tool}", *args],
        cwd=tmp_path,
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "hidden_sizes" in run.stderr
    if tool != "exploit":  # exploit refuses the training config it derives from the checkpoint
        assert "absurd.pt" in run.stderr


@pytest.mark.parametrize("content", [b"just some text\n", pickle.dumps({"a": 1})], ids=["text", "pickle"])
def test_a_file_that_is_not_a_checkpoint_passed_as_an_agent_says_so(tmp_path, content):
    path = tmp_path / "agent.pt"
    path.write_bytes(content)
    run = subprocess.run(
        [sys.executable, "-m", "training.evaluate", str(path), "rule", "--rounds", "2", "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert f"'{path}' is not a checkpoint" in run.stderr
    assert "weights_only" not in run.stderr and "Traceback" not in run.stderr  # no advice to run its code


def test_training_refuses_to_start_from_a_damaged_checkpoint(tmp_path, capsys):
    data = (ROOT / "checkpoints/shipped/ppo_2p.pt").read_bytes()
    damaged = bytearray(data)
    for i in range(len(data) // 3, len(data) // 3 + 2000):
        damaged[i] ^= 0xFF
    (tmp_path / "damaged.pt").write_bytes(bytes(damaged))
    with pytest.raises(SystemExit) as exit_info:
        selfplay_main(
            [
                "--no-progress",
                "--set",
                f"out_dir={tmp_path / 'runs'}",
                "--set",
                f"model.init_from={tmp_path / 'damaged.pt'}",
            ]
        )
    assert exit_info.value.code == 2
    assert "damaged.pt' is damaged: its content does not match its sha256" in capsys.readouterr().err


def test_a_device_this_machine_lacks_is_named_not_blamed_on_the_file():
    """torch.load with a bad map_location had read as a damaged checkpoint."""
    import torch

    from training import load_agent
    from training.learn.checkpoint import build_model

    shipped = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"
    for device in ("gpu", "meta", *([] if torch.cuda.is_available() else ["cuda"])):
        with pytest.raises(ValueError, match=f"device.*{device}") as error:
            load_agent(shipped, device=device)
        assert "checkpoint" not in str(error.value)
    with pytest.raises(CheckpointError, match="build_model takes a checkpoint as load_checkpoint returns it"):
        build_model({})


def test_load_checkpoint_names_a_device_this_machine_lacks_not_the_file():
    # The same device check as load_agent's: torch.load's failure had read as a corrupt file.
    shipped = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"
    for device in ("gpu", "meta", *([] if torch.cuda.is_available() else ["cuda"])):
        with pytest.raises(ValueError, match=f"device.*{device}") as error:
            load_checkpoint(shipped, map_location=device)
        assert not isinstance(error.value, CheckpointError) and "not a checkpoint" not in str(error.value)
