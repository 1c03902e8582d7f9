"""Checkpoints whose weights are not a network's, or whose network does not play, are refused on load.

The digest only says a file is as it was written: these files are written with a valid one
(or as format version 1, which has none), so only the checks of what they hold can speak.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import ROOT

from loveletter_env.agents.checkpoint_loading import load_checkpoint_network, network_output_problem
from loveletter_env.agents.guided import GuidedSearchAgent, load_policy_network
from loveletter_env.observation import OBSERVATION_SIZE
from training import load_agent
from training.apps.onnx import main as export_main
from training.learn.checkpoint import (
    DIGEST_KEY,
    CheckpointError,
    build_model,
    load_checkpoint,
    model_payload,
    save_checkpoint,
)
from training.learn.ppo import ActorCritic


@pytest.fixture(scope="module")
def payload() -> dict:
    model = ActorCritic(hidden_sizes=(32, 16), generator=torch.Generator().manual_seed(3))
    return {"model": model_payload(model), "config": {"seed": 0}, "update": 7, "global_step": 700}


def with_weights(payload: dict, edit) -> dict:
    """A copy of ``payload`` whose state dict is ``edit(state_dict)``."""
    weights = {name: w.clone() for name, w in payload["model"]["state_dict"].items()}
    return {**payload, "model": {**payload["model"], "state_dict": edit(weights)}}


def replaced(name: str, make):
    """An edit that replaces the tensor ``name`` with ``make(tensor)``."""

    def edit(weights: dict) -> dict:
        weights[name] = make(weights[name])
        return weights

    return edit


def save_version_1(path, data: dict):
    """``data`` as a format version 1 file: no digest, so any tensor torch can write goes in."""
    torch.save({**data, "format": "loveletter-ppo", "format_version": 1, **_layout()}, path)
    return path


def _layout() -> dict:
    from training.learn.checkpoint import format_header

    header = format_header()
    return {key: header[key] for key in ("observation_version", "observation_size", "num_actions")}


def refused_everywhere(path, message: str) -> None:
    """Every way a checkpoint becomes a network or an agent refuses ``path`` with one error naming it."""
    named = rf"^{re.escape(repr(str(path)))} .*{message}"
    with pytest.raises(CheckpointError, match=named):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match=named):
        load_agent(path)
    with pytest.raises(CheckpointError, match=named):
        load_checkpoint_network(path)  # what agents that search with a network load through
    with pytest.raises(CheckpointError, match=named):
        load_policy_network(path)
    with pytest.raises(CheckpointError, match=named):
        GuidedSearchAgent(policy=str(path))


NAN_COMPLEX = replaced("trunk.0.weight", lambda w: torch.full_like(w, math.nan, dtype=torch.complex64))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (NAN_COMPLEX, r"trunk\.0\.weight is complex64, not a real floating-point type"),
        (replaced("trunk.2.weight", lambda w: w.to(torch.complex64)), r"trunk\.2\.weight is complex64"),
        (replaced("policy_head.bias", lambda w: (w * 100).round().long()), r"policy_head\.bias is int64"),
        (replaced("value_head.bias", lambda w: w > 0), r"value_head\.bias is bool"),
        (replaced("trunk.0.bias", lambda w: w.to(torch.float8_e4m3fn)), r"trunk\.0\.bias is float8_e4m3fn"),
    ],
    ids=["complex NaN", "complex finite", "integer", "bool", "float8"],
)
def test_weights_that_are_not_real_floating_point_are_refused(tmp_path, payload, edit, message):
    path = save_checkpoint(tmp_path / "odd.pt", with_weights(payload, edit))  # a valid digest
    refused_everywhere(path, rf"holds weights that are not a network's: {message}.*float16, bfloat16, float32")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda w: w.to_sparse(), r"trunk\.2\.weight is a sparse_coo tensor, not a dense one"),
        (lambda w: w.to_sparse_csr(), r"trunk\.2\.weight is a sparse_csr tensor, not a dense one"),
        (lambda w: torch.empty_like(w, device="meta"), r"trunk\.2\.weight is a meta tensor, which holds no values"),
        (
            lambda w: torch.quantize_per_tensor(w, 0.01, 0, torch.qint8),
            r"trunk\.2\.weight is a quantized tensor \(torch\.qint8\)",
        ),
    ],
    ids=["sparse", "sparse csr", "meta", "quantized"],
)
@pytest.mark.filterwarnings(
    "ignore::UserWarning"
)  # torch warns that sparse CSR and quantized tensors are beta/deprecated
def test_tensors_without_plain_values_in_a_version_1_file_are_refused(tmp_path, payload, make, message):
    # Format version 1 has no digest, so nothing computed the tensor's bytes before the weight check.
    path = save_version_1(tmp_path / "v1.pt", with_weights(payload, replaced("trunk.2.weight", make)))
    refused_everywhere(path, message)


def test_a_sparse_tensor_under_a_forged_digest_is_refused(tmp_path, payload):
    data = with_weights(payload, replaced("trunk.2.weight", lambda w: w.to_sparse()))
    torch.save(
        {**data, "format": "loveletter-ppo", "format_version": 2, **_layout(), DIGEST_KEY: "0" * 64}, tmp_path / "f.pt"
    )
    refused_everywhere(tmp_path / "f.pt", r"is malformed: it holds a tensor that is not a dense one")


def test_finite_weights_that_overflow_are_refused_by_running_the_network(tmp_path, payload):
    scaled = with_weights(payload, lambda weights: {name: w * 1e30 for name, w in weights.items()})
    path = save_checkpoint(tmp_path / "scaled.pt", scaled)  # every weight finite, the digest valid
    refused_everywhere(
        path, r"holds a network that cannot play: it gives logits that are not finite \(NaN or infinity\)"
    )


def test_weights_beyond_float32_are_refused_although_finite_in_the_file(tmp_path, payload):
    path = save_checkpoint(
        tmp_path / "wide.pt", with_weights(payload, replaced("value_head.bias", lambda w: w.double() + 1e300))
    )
    refused_everywhere(path, r"holds weights too large for the network's float32 in value_head\.bias")


def test_the_networks_kept_for_resuming_are_checked_too(tmp_path, payload):
    pool = {"snapshots": [with_weights(payload, NAN_COMPLEX)["model"]["state_dict"]], "labels": [0]}
    path = save_checkpoint(tmp_path / "run.pt", {**payload, "training": {"pool": pool}})
    with pytest.raises(CheckpointError, match=r"training\.pool\.snapshots\[0\]\.trunk\.0\.weight is complex64"):
        load_checkpoint(path)
    magnet = with_weights(payload, replaced("trunk.0.bias", lambda w: w.fill_(math.nan)))["model"]["state_dict"]
    path = save_checkpoint(tmp_path / "run.pt", {**payload, "training": {"magnet": magnet}})
    with pytest.raises(
        CheckpointError, match=r"not finite numbers \(NaN or infinity\) in training\.magnet\.trunk\.0\.bias"
    ):
        load_checkpoint(path)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_real_floating_point_types_load_and_play_as_float32(tmp_path, payload, dtype):
    stored = with_weights(payload, lambda weights: {name: w.to(dtype) for name, w in weights.items()})
    path = save_checkpoint(tmp_path / f"{dtype}.pt", stored)
    network = build_model(load_checkpoint(path))
    assert all(w.dtype == torch.float32 for w in network.state_dict().values())
    reference = build_model(payload | {"observation_version": _layout()["observation_version"]})
    observations = torch.rand(5, OBSERVATION_SIZE, generator=torch.Generator().manual_seed(0))
    tolerance = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float64: 1e-6}[dtype]
    assert torch.allclose(network(observations)[0], reference(observations)[0], atol=tolerance)
    assert load_agent(path).greedy is True


def test_a_network_whose_outputs_are_not_numbers_is_named():
    class Constant(torch.nn.Module):
        def __init__(self, logit: float, value: float, actions: int = 41):
            super().__init__()
            self.logit, self.value, self.actions = logit, value, actions

        def forward(self, obs):
            rows = obs.shape[0]
            return torch.full((rows, self.actions), self.logit), torch.full((rows,), self.value)

    assert network_output_problem(Constant(0.0, 0.5)) is None
    assert network_output_problem(Constant(1e30, -1e30)) is None  # finite, if extreme: it plays
    assert re.match(
        r"gives logits that are not finite \(NaN or infinity\) on (\d+) of \1 ",
        network_output_problem(Constant(math.inf, 0.0)),
    )
    assert network_output_problem(Constant(0.0, math.nan)).startswith("gives value estimates that are not finite")
    assert network_output_problem(Constant(0.0, 0.0, actions=40)).startswith("gives outputs of the wrong shape")
    for path in sorted((ROOT / "checkpoints").glob("*/*.pt")):  # every committed network plays
        assert network_output_problem(build_model(load_checkpoint(path))) is None, path


def test_the_probe_observations_are_real_decisions_and_always_the_same():
    from loveletter_env.agents.checkpoint_loading import probe_observations

    observations, masks = probe_observations()
    probe_observations.cache_clear()
    again, again_masks = probe_observations()
    assert np.array_equal(observations, again) and np.array_equal(masks, again_masks)
    assert observations.shape == (len(masks), OBSERVATION_SIZE) and len(masks) >= 8
    assert masks.any(axis=1).all()  # every one has a legal move: it is someone's turn


# The tools -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def overflowing(tmp_path_factory, payload):
    scaled = with_weights(payload, lambda weights: {name: w * 1e30 for name, w in weights.items()})
    return save_checkpoint(tmp_path_factory.mktemp("scaled") / "scaled.pt", scaled)


def test_exact_exploitability_refuses_a_network_that_plays_nan(overflowing):
    # It used to report a number (0.2361 on mini6) for a network whose every probability was NaN.
    run = subprocess.run(
        [sys.executable, "-m", "training.exploit", str(overflowing), "--exact", "--rules", "mini6"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "exploitability" not in run.stdout
    assert f"{str(overflowing)!r} holds a network that cannot play" in run.stderr


def test_onnx_export_refuses_a_network_that_plays_nan(tmp_path, overflowing, capsys):
    pytest.importorskip("onnxscript")
    with pytest.raises(SystemExit) as exit_info:
        export_main(["--checkpoint", str(overflowing), "--onnx", str(tmp_path / "policy.onnx"), "--no-verify"])
    assert exit_info.value.code == 2
    assert f"{str(overflowing)!r} holds a network that cannot play" in capsys.readouterr().err
    assert not (tmp_path / "policy.onnx").exists()
