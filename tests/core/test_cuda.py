"""The core's CUDA kernels, checked with and without a GPU.

- Every kernel compiles to PTX for sm_80 and sm_90 (no GPU or driver needed).
- The kernels play the same games as the reference engine (tests/core/cuda_differential.py):
  in numba's CUDA simulator on the CPU (a subprocess, since the simulator is chosen when
  numba is first imported), and on a real GPU where there is one.

They need numba-cuda (the ``cuda`` extra). Without it they skip, except under CI
(``CI=true``), where a missing numba-cuda fails them: CI installs the extra, so a skip
there would hide a broken install.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import kernels_as_ptx, numba_cuda, subprocess_env

#: The differential script, beside this file: run as a script in the simulator, imported on a GPU.
DIFFERENTIAL = Path(__file__).resolve().parent / "cuda_differential.py"


#: Kernel variants besides the default, as (threads a block, records in shared memory,
#: observations zeroed before the launch): each must play the same games.
OTHER_VARIANTS = [(128, False, False), (32, True, True), (64, False, True)]


def _variant_arguments(threads: int, shared: bool, zeroed: bool) -> list[str]:
    """cuda_differential.py's options for a kernel variant."""
    records, observations = "shared" if shared else "global", "zeroed" if zeroed else "whole"
    return ["--threads-per-block", str(threads), "--records-in", records, "--observations", observations]


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)], ids=["sm_80", "sm_90"])
def test_every_kernel_compiles_to_ptx(cc, monkeypatch):
    """Each kernel, with the argument types the batched env launches it with, compiles to
    PTX for the architecture."""
    numba_cuda()
    from loveletter_env.core.gpu import KERNEL_SIGNATURES, KernelVariant, build_kernels

    default = kernels_as_ptx(build_kernels(), KERNEL_SIGNATURES, cc, monkeypatch)
    # The kernels take their buffers in groups (named tuples), which numba passes member by
    # member: an array as 5 words and its shape and strides, anything else as one value. The
    # direct launch packs the members in the order gpu._members gives them.
    from numba import types as nb

    from loveletter_env.core.gpu import _members

    for name, signature in KERNEL_SIGNATURES.items():
        members = list(_members(signature, nb.BaseTuple))
        expected = sum(5 + 2 * t.ndim if isinstance(t, nb.Array) else 1 for t in members)
        assert default[name].count(".param") - default[name].count("ld.param") == expected, name
    # The default step plays its block's records in shared memory and writes only the
    # observation entries that may be nonzero: far fewer stores to device memory than a
    # whole row a thread, as the variant kept for comparison does.
    whole = kernels_as_ptx(build_kernels(KernelVariant(128, False, False)), KERNEL_SIGNATURES, cc, monkeypatch)
    assert "st.shared" in default["step"]
    assert default["step"].count("st.global") * 2 < whole["step"].count("st.global")


def test_kernel_variants_are_checked():
    """A block size that is not a warp's multiple, records that overflow a block's static
    shared memory, or a register cap no kernel can keep, are refused when the variant is
    made, not when a kernel compiles."""
    numba_cuda()
    from loveletter_env.core.gpu import KernelVariant

    with pytest.raises(ValueError, match="multiple of 32"):
        KernelVariant(48)
    with pytest.raises(ValueError, match="48 KiB"):
        KernelVariant(256, shared_records=True)
    assert KernelVariant(256, shared_records=False).threads_per_block == 256
    with pytest.raises(ValueError, match="max_registers must be in 16..255"):
        KernelVariant(max_registers=8)
    assert KernelVariant(max_registers=64).max_registers == 64


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"threads_per_block": 64.0}, "threads_per_block must be an int, a multiple of 32 in 32..1024, got 64.0"),
        ({"shared_records": "no"}, "shared_records must be True or False, got 'no'"),
        ({"zeroed_observations": None}, "zeroed_observations must be True or False, got None"),
        ({"max_registers": 40.5}, r"max_registers must be in 16..255 \(an int, or None\), got 40.5"),
    ],
)
def test_kernel_variants_refuse_what_is_no_setting(arguments, message):
    """A float block size passed the bounds and failed at the first launch ("griddim must be
    a sequence of integers, got [1.0]"); a flag "no" compiled as a true constant (records in
    shared memory after all); a fractional register cap was taken as it was."""
    numba_cuda()
    from loveletter_env.core.gpu import KernelVariant

    with pytest.raises(ValueError, match=message):
        KernelVariant(**arguments)
    # NumPy's ints and bools are taken as Python's: the same variant, the same build.
    assert KernelVariant(np.int64(128), np.False_, True, np.int64(64)) == KernelVariant(128, False, True, 64)


def _differential_in_the_simulator(*arguments: str) -> None:
    """Run the differential script in numba's CUDA simulator and expect every case to agree."""
    numba_cuda()
    command = [sys.executable, str(DIFFERENTIAL), *arguments]
    env = subprocess_env(NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all cases agree" in result.stdout


def test_kernels_match_reference_in_the_simulator():
    """A few games of every rule preset and episode kind, every turn compared."""
    _differential_in_the_simulator("--games", "6", "--steps", "24", "--env")


@pytest.mark.parametrize("threads, shared, zeroed", OTHER_VARIANTS)
def test_kernel_variants_match_reference_in_the_simulator(threads, shared, zeroed):
    """Each other kernel variant, over more games than one block holds (blocks that end
    past the last game included), the env's CUDA driver built with it included."""
    variant = _variant_arguments(threads, shared, zeroed)
    _differential_in_the_simulator("--games", str(threads + 5), "--steps", "6", "--rules", "classic", "--env", *variant)


def test_a_register_cap_builds_in_the_simulator():
    """A register-capped variant (its cap has no meaning for Python threads) plays the
    reference's games in the simulator too: its build passed the cap to the simulator's
    ``jit``, which takes no such option ("unexpected keyword argument 'max_registers'")."""
    variant = [*_variant_arguments(32, False, True), "--max-registers", "40"]
    _differential_in_the_simulator("--games", "37", "--steps", "6", "--rules", "classic", *variant)


def test_kernels_match_reference_on_the_gpu(monkeypatch):
    """The same check on a real GPU, with more games (more than a block holds)."""
    cuda = numba_cuda()
    if not cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.syspath_prepend(str(DIFFERENTIAL.parent))
    import cuda_differential

    # Sized for scripts/gpu_check.sh's test step: the reference engine plays every game in
    # Python, which is what takes the time (128 games of 40 turns did not fit in it).
    assert cuda_differential.main(["--games", "100", "--steps", "24"]) == 0


@pytest.mark.parametrize("threads, shared, zeroed", OTHER_VARIANTS)
def test_kernel_variants_match_reference_on_the_gpu(threads, shared, zeroed, monkeypatch):
    """Each other kernel variant on a real GPU."""
    cuda = numba_cuda()
    if not cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.syspath_prepend(str(DIFFERENTIAL.parent))
    import cuda_differential

    variant = _variant_arguments(threads, shared, zeroed)
    assert cuda_differential.main(["--games", "100", "--steps", "8", "--rules", "classic", "mini7", *variant]) == 0


def test_a_register_cap_plays_the_same_games_on_the_gpu(monkeypatch):
    """A variant whose kernels are compiled under a register cap (spilling what does not
    fit) still plays the reference engine's games."""
    cuda = numba_cuda()
    if not cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.syspath_prepend(str(DIFFERENTIAL.parent))
    import cuda_differential

    variant = [*_variant_arguments(64, False, True), "--max-registers", "64"]
    assert cuda_differential.main(["--games", "100", "--steps", "8", "--rules", "classic", *variant]) == 0


_WITHOUT_ROW_STACK = """
import numpy as np
if hasattr(np, "row_stack"):  # NumPy 2.5 removed the alias; older ones are made to look like it
    del np.row_stack
    np.__all__ = [name for name in np.__all__ if name != "row_stack"]
from numba import cuda
import numba.cuda.dispatcher
from loveletter_env.core import gpu

class Device:
    compute_capability = (8, 0)

numba.cuda.dispatcher.get_current_device = lambda: Device()

def fill(out):
    out[cuda.grid(1)] = 1

ptx, _ = cuda.compile_ptx(fill, (numba.uint8[::1],), cc=(8, 0))
assert ".entry" in ptx
print("row_stack" in dir(np))
"""


def test_kernels_compile_on_a_numpy_without_row_stack():
    """numba-cuda 0.30 registers an overload of ``np.row_stack``, which NumPy 2.5 removed:
    kernels still compile there, and importing the GPU module leaves NumPy as it was."""
    numba_cuda()
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_ROW_STACK], env=subprocess_env(), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == ["False"]
