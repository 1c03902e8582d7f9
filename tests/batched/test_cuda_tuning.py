"""loveletter_env.batched.cuda_tuning: the CUDA build and launch a measurement chooses, for a while."""

from __future__ import annotations

import pytest

from loveletter_env.batched.cuda_tuning import CudaTuning, cuda_tuning, current_tuning


def test_settings_hold_inside_and_come_back_however_the_block_is_left():
    assert current_tuning() == CudaTuning(None, "direct")
    variant = object()
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
