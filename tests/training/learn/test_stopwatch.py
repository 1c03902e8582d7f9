"""training.learn.stopwatch: seconds per named part of an update."""

from __future__ import annotations

import time

import torch

from training.learn.stopwatch import Stopwatch


def test_parts_add_up_nest_and_are_taken_once():
    watch = Stopwatch(torch.device("cpu"))
    with watch("update"):
        with watch("env"):
            time.sleep(0.02)
        with watch("env"):
            time.sleep(0.02)
    taken = watch.take()
    assert set(taken) == {"update_s", "env_s"}
    assert 0.04 <= taken["env_s"] <= taken["update_s"]
    assert watch.take() == {}, "a second take reports only what was timed since the first"
