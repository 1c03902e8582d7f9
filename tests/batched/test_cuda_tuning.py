"""loveletter_env.batched.cuda_tuning: the CUDA build and launch a measurement chooses, for a while."""

from __future__ import annotations

import pytest
from conftest import numba_cuda

from loveletter_env.batched.cuda_tuning import CudaTuning, cuda_tuning, current_tuning


def test_settings_hold_inside_and_come_back_however_the_block_is_left():
    assert current_tuning() == CudaTuning(None, "direct")
    variant = None  # the default variant: a KernelVariant needs numba-cuda (the next test)
    with cuda_tuning(variant, "numba") as inside:
        assert current_tuning() is inside
        assert (inside.variant, inside.launcher) == (variant, "numba")
        with cuda_tuning(launcher="direct"):
            assert current_tuning() == CudaTuning(None, "direct")
        assert current_tuning() is inside
    assert current_tuning() == CudaTuning(None, "direct")
    with pytest.raises(RuntimeError), cuda_tuning(variant, "numba"):
        raise RuntimeError("a failed measurement")
    assert current_tuning() == CudaTuning(None, "direct")


def test_an_unknown_launcher_is_refused_by_name():
    with (
        pytest.raises(ValueError, match="launcher must be one of direct, numba, got 'ptx'"),
        cuda_tuning(launcher="ptx"),
    ):
        pass


@pytest.mark.parametrize("variant", [(128, False, True), "128,global,zeroed", 128])
def test_what_is_no_kernel_variant_is_refused_by_name(variant):
    """A variant that is no ``KernelVariant`` was taken, and a CUDA env made inside failed
    as it built its kernels: "'tuple' object has no attribute 'threads_per_block'"."""
    with (
        pytest.raises(TypeError, match=r"variant must be a loveletter_env.core.gpu.KernelVariant \(or None\), got"),
        cuda_tuning(variant),
    ):
        pass
    assert current_tuning() == CudaTuning(None, "direct")


def test_a_kernel_variant_is_taken():
    numba_cuda()
    from loveletter_env.core.gpu import KernelVariant

    variant = KernelVariant(128, False, True)
    with cuda_tuning(variant) as inside:
        assert inside.variant is variant
