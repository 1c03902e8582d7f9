"""The 32-bit Mersenne Twister in compiled code, once, for the two generators the project
reproduces draw for draw: torch's CPU generator and CPython's ``random.Random``. Both run
the same twist (:func:`_twist`) and tempering (:func:`_temper`); they differ only in where
the state lives and in how outputs become values.

**torch** (``torch.Generator``, over the bytes of ``Generator.get_state()``). The batched CPU
env draws every step's deals and first players from its ``torch.Generator``, as every
release has, so that a seed deals the games it always dealt. torch draws those values one at
a time (about 3 ns each, 12 ns a game); here the twist runs as vector code, tempering and
the conversions too, on a copy of the state's bytes that the env keeps between steps and
puts back into the generator whenever torch is to draw from it or someone reads it
(``BatchedLoveLetter.generator``), so torch and this module take turns on one generator.
Only the two draws the env makes are reproduced, both from one 32-bit output each:
``torch.rand`` (float32: the low 24 bits times 2^-24) and ``torch.randint(high)`` for
0 < ``high`` <= :data:`MAX_HIGH` (the output modulo ``high``; from 2^28 on torch draws 64
bits a value). ``tests/batched/test_batched.py`` checks
values and final states against torch.

**CPython** (``random.Random``, over ``getstate()[1]`` as uint32 [MT_WORDS + 1]). The compiled
bots and search draw one output at a time, in place (:func:`genrand`, :func:`randbelow`), so
that a compiled bot makes the choices of the Python bot with the same seed
(``tests/agents/test_batched_bots.py``, ``tests/agents/test_compiled_belief.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: State words (CPython's state is these, then the position: ``random.Random.getstate()[1]``).
MT_WORDS = 624
_M = 397  # the twist's offset
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER = np.uint32(0x80000000)
_LOWER = np.uint32(0x7FFFFFFF)
# Byte offsets in the state tensor (torch's legacy CPU generator layout): the seed (uint64),
# ``left`` (int32: draws until the next twist, plus one), ``seeded`` (int32), ``next``
# (uint64: index of the next state word) and the 624 state words, one per uint64.
_LEFT = 8
_NEXT = 16
_STATE = 24
STATE_BYTES = 5056
#: The largest ``high`` whose ``torch.randint`` draws one 32-bit output a value (torch draws
#: two from ``high`` = 2^28 on).
MAX_HIGH = (1 << 28) - 1


@njit(cache=True)
def _twist(mt):
    """Refill the state words ``mt[:MT_WORDS]`` in place (``next_state`` in torch, ``genrand_uint32``'s
    refill in CPython: the same algorithm).

    Three loops so that each one vectorises: the first reads only words it has not written
    yet, the second words it wrote 227 iterations before (wider than any vector)."""
    for i in range(MT_WORDS - _M):
        y = (mt[i] & _UPPER) | (mt[i + 1] & _LOWER)
        mt[i] = mt[i + _M] ^ (y >> np.uint32(1)) ^ (_MATRIX_A * (mt[i + 1] & np.uint32(1)))
    for i in range(MT_WORDS - _M, MT_WORDS - 1):
        y = (mt[i] & _UPPER) | (mt[i + 1] & _LOWER)
        mt[i] = mt[i + _M - MT_WORDS] ^ (y >> np.uint32(1)) ^ (_MATRIX_A * (mt[i + 1] & np.uint32(1)))
    y = (mt[MT_WORDS - 1] & _UPPER) | (mt[0] & _LOWER)
    mt[MT_WORDS - 1] = mt[_M - 1] ^ (y >> np.uint32(1)) ^ (_MATRIX_A * (mt[0] & np.uint32(1)))


@njit(cache=True)
def _temper(y):
    """The output the state word ``y`` (uint32) gives."""
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    return np.uint32(y ^ (y >> np.uint32(18)))


@njit(cache=True)
def genrand(mt):
    """The next 32-bit output (int64) of the CPython generator whose state is ``mt`` (uint32
    [MT_WORDS + 1]: ``random.Random.getstate()[1]``, the state words then the position),
    advanced in place: ``random.Random.getrandbits(32)``."""
    i = np.int64(mt[MT_WORDS])
    if i >= MT_WORDS:
        _twist(mt)
        i = 0
    mt[MT_WORDS] = i + 1
    return np.int64(_temper(mt[i]))


@njit(cache=True)
def randbelow(mt, n):
    """``random.Random._randbelow(n)`` for 0 < n < 2**32 from the CPython state ``mt``: the
    index ``Random.choice`` picks."""
    k = 0
    while (n >> k) > 0:
        k += 1
    r = genrand(mt) >> (32 - k)
    while r >= n:
        r = genrand(mt) >> (32 - k)
    return r


@njit(cache=True)
def _draw_words(words, cursor, out):
    """Fill ``out`` (uint32) with the torch generator's next ``len(out)`` 32-bit outputs, from
    the 624 state ``words`` (uint64 each) and ``cursor`` (``left``, ``next``), both advanced
    in place."""
    mt = np.empty(MT_WORDS, np.uint32)
    for i in range(MT_WORDS):
        mt[i] = np.uint32(words[i])
    left, index = cursor[0], cursor[1]
    done = 0
    while done < out.shape[0]:
        # torch decrements ``left`` before each draw and twists when it reaches 0.
        if left == 1:
            _twist(mt)
            left = MT_WORDS + 1
            index = 0
        take = min(left - 1, out.shape[0] - done)
        # Tempering, from slices: indexing ``mt`` and ``out`` at running offsets kept LLVM
        # from vectorising the loop (1.1 against 0.2 ns a word).
        source = mt[index : index + take]
        target = out[done : done + take]
        for i in range(take):
            target[i] = _temper(source[i])
        done += take
        index += take
        left -= take
    for i in range(MT_WORDS):
        words[i] = np.uint64(mt[i])
    cursor[0], cursor[1] = left, index


def deal_draws(
    state: np.ndarray, uniforms: np.ndarray, draws: np.ndarray, highs: np.ndarray, words: np.ndarray
) -> None:
    """What ``torch.rand(n, out=uniforms)`` then ``torch.randint(highs[i], (n,), out=draws[i])``
    for each row ``i`` of ``draws`` (int64 [k, n]) draw from the generator whose state bytes
    are ``state`` (uint8 [STATE_BYTES], from ``get_state().numpy()``), in the same order,
    advancing ``state`` in place. ``words`` is scratch (uint32 [(k + 1) n]). Each of ``highs``
    is 1 .. :data:`MAX_HIGH` (a ``ValueError`` otherwise: torch would draw other values).
    Buffers of other sizes are a ``ValueError`` too: the compiled code has no bounds checks,
    and read past a short ``words`` (other values each run) or wrote past a short row of
    ``draws`` (a segmentation fault).

    The fields are picked out here, in numpy, so that the compiled code sees plain arrays
    (reinterpreting bytes inside it cost a second of the first compile)."""
    _check_buffers(state, uniforms, draws, highs, words)
    if not all(0 < high <= MAX_HIGH for high in highs.tolist()):  # 3 bounds: a fraction of a microsecond
        raise ValueError(f"highs must be 1 .. 2**28 - 1 (torch draws other values beyond), got {highs.tolist()}")
    left = state[_LEFT : _LEFT + 4].view(np.int32)
    index = state[_NEXT : _NEXT + 8].view(np.uint64)
    cursor = np.array([left[0], index[0]], np.int64)
    _draw_words(state[_STATE : _STATE + 8 * MT_WORDS].view(np.uint64), cursor, words)
    left[0], index[0] = cursor
    _convert(words, uniforms, draws, highs)


def _check_buffers(
    state: np.ndarray, uniforms: np.ndarray, draws: np.ndarray, highs: np.ndarray, words: np.ndarray
) -> None:
    """A ``ValueError`` naming the first of :func:`deal_draws`' buffers whose dtype or shape
    does not fit the others (a microsecond: a few attribute reads)."""
    n = uniforms.shape[0] if uniforms.ndim == 1 else -1
    k = draws.shape[0] if draws.ndim == 2 else -1
    if state.dtype != np.uint8 or state.shape != (STATE_BYTES,):
        problem = f"state must be the {STATE_BYTES} bytes of a torch CPU generator's get_state() (uint8)"
        got = f"{state.dtype} {list(state.shape)}"
    elif uniforms.dtype != np.float32 or n < 0:
        problem, got = "uniforms must be float32 [n]", f"{uniforms.dtype} {list(uniforms.shape)}"
    elif draws.dtype != np.int64 or draws.shape != (k, n):
        rows = k if k >= 0 else "k"
        problem, got = f"draws must be [{rows}, {n}] int64 (a row a bound)", f"{draws.dtype} {list(draws.shape)}"
    elif highs.shape != (k,):
        problem, got = f"highs must hold one bound a row of draws ({k})", f"shape {list(highs.shape)}"
    elif words.dtype != np.uint32 or words.ndim != 1 or words.shape[0] < (k + 1) * n:
        problem, got = f"words must be uint32 [{(k + 1) * n}] or longer", f"{words.dtype} {list(words.shape)}"
    else:
        return
    raise ValueError(f"deal_draws: {problem}, got {got}")


@njit(cache=True)
def _convert(words, uniforms, draws, highs):
    """The values torch makes of the 32-bit ``words``: floats for ``uniforms``, then each
    row of ``draws`` modulo its ``highs``.

    The remainders without a division (the divider takes one at a time, 4 ns each): the
    quotient from a multiply by the rounded inverse is off by at most one either way, and
    the two corrections are arithmetic, not branches, so the loop vectorises (0.7 ns a game
    against 8 ns with selects)."""
    n = uniforms.shape[0]
    for g in range(n):
        uniforms[g] = np.float32(words[g] & np.uint32(0xFFFFFF)) * np.float32(1.0 / (1 << 24))
    for row in range(draws.shape[0]):
        high = np.int64(highs[row])
        inverse = 1.0 / high
        source = words[n * (1 + row) : n * (2 + row)]
        target = draws[row]
        for g in range(n):
            x = np.int64(source[g])
            r = x - np.int64(np.float64(x) * inverse) * high
            r += high * (r < 0)
            r -= high * (r >= high)
            target[g] = r
