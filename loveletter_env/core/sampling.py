"""Uniform random legal actions for N games in compiled code, from a caller-owned generator.

The generator is SplitMix64: its whole state is one 64-bit counter in a ``uint64 [1]``
array the caller owns (no global random state), and each draw is a few integer
operations, so sampling 8,192 games costs a few microseconds, not the milliseconds of
drawing 41 random keys per game.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..validation import check_seed

#: SplitMix64's increment and its two multipliers.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


def new_generator(seed: int) -> np.ndarray:
    """The state of a generator seeded with ``seed``, an integer in 0..2**63 - 1 as every seed
    of the package (a larger one would wrap round onto another seed's stream)."""
    return np.array([check_seed(seed)], dtype=np.uint64)


@njit(cache=True)
def _mix(counter):
    """SplitMix64's output for the counter value ``counter``."""
    z = counter
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def stream_key(seed, game, index):
    """A 64-bit key for the ``index``-th random event of game ``game`` under ``seed``: a
    counter-based generator (SplitMix64's mix of the three), so that each GPU thread draws
    from its own stream without shared state. Its draws are :func:`pick` of ``key``,
    ``key + GOLDEN``, ``key + 2 * GOLDEN``, and so on."""
    stream = _mix(np.uint64(seed) * GOLDEN + np.uint64(game))
    return _mix(stream + np.uint64(index) * GOLDEN)


@njit(cache=True)
def pick(count, counter):
    """The index ``k`` in ``0 .. count - 1`` that draw ``counter`` picks: the top 32 bits of
    the draw times ``count``. Each index has 2^32 // count or one more of the 2^32 tops, so
    its probability is off uniform by under count / 2^32 of itself: below 2^-26 for the
    41 actions, 2^-16.7 for the 40,320 rows of a deal's orders (torch's ``randint``, the
    CPU's deal draws, takes a 32-bit output modulo the bound: the same size of bias)."""
    return np.int64(((_mix(counter) >> np.uint64(32)) * np.uint64(count)) >> np.uint64(32))


@njit(cache=True)
def popcount(bits):
    """Set bits of a uint64, branch-free (SWAR; LLVM emits one ``popcnt``): a counting loop
    would mispredict its exit."""
    bits = bits - ((bits >> np.uint64(1)) & np.uint64(0x5555555555555555))
    bits = (bits & np.uint64(0x3333333333333333)) + ((bits >> np.uint64(2)) & np.uint64(0x3333333333333333))
    bits = (bits + (bits >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((bits * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True)
def nth_set_bit(bits, k):
    """The index of the ``k``-th (from 0) set bit of ``bits``, which has more than ``k``.

    A branch-free binary search: keep the low half when it holds more than ``k`` set bits,
    else skip it. Clearing the lowest bit ``k`` times mispredicted the loop's exit on
    nearly every call (3.1 ns against 1.3 ns)."""
    index = np.int64(0)
    for width in (32, 16, 8, 4, 2, 1):
        low = popcount(bits & ((np.uint64(1) << np.uint64(width)) - np.uint64(1)))
        skip = np.int64(k >= low)
        k -= low * skip
        bits >>= np.uint64(width * skip)
        index += width * skip
    return index


_PACK_BYTES = np.uint64(0x0102040810204080)


@njit(cache=True)
def mask_bits(row):
    """The set entries of ``row`` (41 bytes of 0/1) as a bit set, bit ``a`` for entry ``a``.

    Eight bytes at a time: a multiply moves the low bit of byte ``i`` of ``x`` to bit
    ``56 + i`` (each byte meets one multiplier byte there, and no partial products overlap,
    so nothing carries), which halved the sampler's time against a loop over the entries."""
    bits = np.uint64(0)
    whole = row.shape[0] // 8
    for i in range(whole):
        x = np.uint64(0)
        for k in range(8):
            x |= np.uint64(row[8 * i + k]) << np.uint64(8 * k)
        bits |= ((x * _PACK_BYTES) >> np.uint64(56)) << np.uint64(8 * i)
    for a in range(8 * whole, row.shape[0]):
        bits |= np.uint64(row[a]) << np.uint64(a)
    return bits


@njit(cache=True)
def sample_legal(masks, state, out):
    """``out[g]`` = an action drawn uniformly from the set entries of ``masks[g]`` (bool
    [N, 41]); -1 for a row with none. One draw per row with a set entry, in row order:
    the ``k``-th set entry (from 0) for ``k = pick(count, counter)``."""
    rows = masks.view(np.uint8)
    # The counter lives in a register for the loop: stored through ``state`` each draw, it
    # could alias ``out`` and be reloaded every row.
    counter = state[0]
    for g in range(rows.shape[0]):
        bits = mask_bits(rows[g])
        count = popcount(bits)
        if count == 0:
            out[g] = -1
            continue
        counter += GOLDEN
        out[g] = nth_set_bit(bits, pick(count, counter))
    state[0] = counter
