"""The batched envs' ``device``: a CUDA device the machine lacks is refused by name, when the
env is made, on any machine (torch's CUDA device count is set by each test)."""

from __future__ import annotations

import pytest
import torch

from loveletter_env.batched import BatchedLoveLetter, MixedRulesBatched

MAKERS = {
    "BatchedLoveLetter": lambda device: BatchedLoveLetter(4, device=device),
    "MixedRulesBatched": lambda device: MixedRulesBatched(4, rules=["classic", "mini7"], device=device),
}


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda", 1)])
def test_cuda_without_a_gpu_is_refused_by_name(make, device, monkeypatch):
    """A torch built without CUDA raised its own AssertionError ("Torch not compiled with
    CUDA enabled"), and one with CUDA but no GPU a RuntimeError about drivers: neither
    named the argument."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(ValueError, match=rf"device '?{device}'?: torch sees no CUDA device on this machine; use 'cpu'"):
        make(device)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("device", ["cuda:1", "cuda:7"])
def test_a_cuda_device_past_the_last_is_refused_by_name(make, device, monkeypatch):
    """``cuda:N`` past the devices there are reached torch's allocation ("invalid device
    ordinal"), or numba's, naming no argument."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match=rf"device '{device}': this machine has 1 CUDA device\(s\) \(cuda:0\)"):
        make(device)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("device", ["gpu", "meta", "cuda:-1", None, 1.5])
def test_what_names_no_device_is_refused_by_name(make, device):
    """None read as torch's default device; a string torch cannot parse raised its own
    RuntimeError ("Invalid device string")."""
    with pytest.raises(ValueError, match=r"device must be 'cpu' or a CUDA device \('cuda', 'cuda:1'\), got"):
        make(device)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_the_cpu_is_taken_in_every_spelling(make):
    for device in ("cpu", "cpu:0", torch.device("cpu")):
        assert make(device).device == torch.device("cpu")
