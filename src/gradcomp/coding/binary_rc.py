"""Integer building blocks of a binary context-mixing coder, compiled with numba: a 32-bit
binary arithmetic (range) coder, the logistic ``stretch`` / ``squash`` pair on 12-bit
probabilities, adaptive probability counters and a logistic mixer.

Everything is integer arithmetic (int64 in numba, no floating point anywhere in a model or
the coder), so a stream decodes to the same symbols on any CPU, numpy or numba build; without
numba (the workflow extra's) the same functions run as plain Python: the same bytes, slower.

Units:

- a probability ``p`` is P(bit = 1) in 12 bits, an int in ``[1, 4095]`` (``p / 4096``);
- a counter's probability is 22 bits (``[0, 2**22)``), its count an int in ``[0, LIMIT]``;
- ``stretch(p)`` = ln(p / (1 - p)) in units of 1/256, an int in ``[-2047, 2047]``;
  ``squash`` is its inverse (:func:`squash_table`, 4096 entries, built in integers);
- mixer weights are 16.16 fixed point (65536 = 1.0).

Coder (carry-less, after the classic LZMA / lpaq design): ``low`` and ``high`` bound the
interval, 32 bits; a bit splits it at ``low + (high - low >> 12) * p``; a byte is shifted out
whenever the top bytes of ``low`` and ``high`` agree. :func:`rc_flush` writes one byte; the
decoder reads 0xFF past the end of the stream, which stays inside the final interval.
"""

from __future__ import annotations

import warnings

import numpy as np


def _plain(fn):
    return fn


try:
    import numba
except ImportError:  # the workflow extra's: without it the same integer code runs in Python
    warnings.warn(
        "numba is not installed: gradcomp's adaptive and context-mixing coders run as plain "
        "Python (the same streams, far slower); pip install 'gradcomp[workflow]' or numba",
        RuntimeWarning,
        stacklevel=2,
    )
    njit = inline = _plain
else:
    njit = numba.njit(cache=True, nogil=True)
    # inlined into its caller by numba: a call between compiled functions that passes 13
    # arrays measured ~170 ns (argument handling and reference counts), an inlined one ~12 ns
    inline = numba.njit(inline="always")

__all__ = [
    "LIMIT", "MASK32", "counter_learn", "counter_rates", "inline", "njit", "rc_bytes",
    "rc_code_bit", "rc_decode_bit", "rc_decoder", "rc_encode_bit", "rc_encoder", "rc_flush",
    "squash_table", "stretch_table",
]  # fmt: skip

MASK32 = 0xFFFFFFFF
LIMIT = 127  # largest count of an adaptive counter: its rate stays >= 1/(LIMIT + 1.5)


def squash_table() -> np.ndarray:
    """``squash(d)`` for ``d`` = -2048..2047 (index ``d + 2048``): 4096 / (1 + e^(-d/256)),
    by linear interpolation between its values at d = -2048, -1920, ..., 2048 (rounded to
    integers, written out so that no floating-point exp decides a probability), int64 in
    [1, 4095]."""
    knots = np.array(
        [1, 2, 4, 6, 10, 17, 27, 45, 74, 120, 194, 311, 488, 747, 1102, 1546, 2048, 2550,
         2994, 3349, 3608, 3785, 3902, 3976, 4022, 4051, 4069, 4079, 4086, 4090, 4092, 4094,
         4095],
        dtype=np.int64,
    )  # fmt: skip
    d = np.arange(-2048, 2048, dtype=np.int64)
    i = (d + 2048) >> 7
    w = d & 127
    nxt = knots[np.minimum(i + 1, 32)]
    out = (knots[i] * (128 - w) + nxt * w + 64) >> 7
    return np.clip(out, 1, 4095)


def stretch_table() -> np.ndarray:
    """``stretch(p)`` for p = 0..4095: the smallest ``d`` with ``squash(d) >= p`` (the
    inverse of :func:`squash_table`), int64 in [-2047, 2047]."""
    sq = squash_table()
    out = np.searchsorted(sq, np.arange(4096), side="left") - 2048
    return np.clip(out, -2047, 2047).astype(np.int64)


def counter_rates(limit: int = LIMIT) -> np.ndarray:
    """Adaptation rate of a counter after ``n`` updates, 16.16 fixed point: 65536 / (n + 1.5)
    (a Krichevsky-Trofimov-like running average, then a window of about ``limit`` updates;
    ``limit`` at most 1023, the counter's count field)."""
    if not 1 <= limit <= 1023:
        raise ValueError(f"a counter counts 1..1023 updates, not {limit}")
    n = np.arange(limit + 1, dtype=np.int64)
    return (131072 // (2 * n + 3)).astype(np.int64)


@inline
def counter_learn(ctr, j, bit, rates):
    """Update counter ``ctr[j]`` (uint32: 22-bit probability << 10 | count) with ``bit``
    at the rate ``rates[count]`` (:func:`counter_rates`), and count the update."""
    v = np.int64(ctr[j])
    c = v & 1023
    pr = v >> 10
    pr += (((bit << 22) - pr) * rates[c]) >> 16
    if c < rates.size - 1:
        c += 1
    ctr[j] = np.uint32((pr << 10) | c)


@njit
def rc_encode_bit(state, out, bit, p):
    """Code ``bit`` (0/1) with P(1) = ``p``/4096. ``state``: int64[3] (low, high, bytes
    written); ``out``: uint8 buffer the bytes go to."""
    low, high = state[0], state[1]
    mid = low + ((high - low) >> 12) * p
    if bit:
        high = mid
    else:
        low = mid + 1
    while ((low ^ high) & 0xFF000000) == 0:
        out[state[2]] = high >> 24
        state[2] += 1
        low = (low << 8) & MASK32
        high = ((high << 8) & MASK32) | 255
    state[0], state[1] = low, high


@njit
def rc_flush(state, out):
    """End the stream: one byte, the top byte of ``low``."""
    out[state[2]] = state[0] >> 24
    state[2] += 1


@njit
def rc_decode_bit(state, data, p):
    """The next bit under P(1) = ``p``/4096. ``state``: int64[4] (low, high, x, read
    position); ``data``: the stream's bytes (0xFF read past its end)."""
    low, high, x = state[0], state[1], state[2]
    mid = low + ((high - low) >> 12) * p
    if x <= mid:
        bit = 1
        high = mid
    else:
        bit = 0
        low = mid + 1
    while ((low ^ high) & 0xFF000000) == 0:
        low = (low << 8) & MASK32
        high = ((high << 8) & MASK32) | 255
        pos = state[3]
        byte = data[pos] if pos < data.size else 255
        state[3] = pos + 1
        x = ((x << 8) & MASK32) | byte
    state[0], state[1], state[2] = low, high, x
    return bit


@inline
def rc_code_bit(state, buf, bit, p, dec):
    """Decode the next bit (``dec``; ``state`` and ``buf`` a decoder's) or encode ``bit``
    (an encoder's) at P(1) = ``p``/4096; returns the bit: one function codes both ways."""
    if dec:
        return rc_decode_bit(state, buf, p)
    rc_encode_bit(state, buf, bit, p)
    return bit


def rc_encoder(max_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """A fresh encoder: its state (int64[3], see :func:`rc_encode_bit`) and an output buffer
    of ``max_bytes`` (zeroed pages, which cost memory only once written)."""
    return np.array([0, MASK32, 0], dtype=np.int64), np.zeros(max_bytes, dtype=np.uint8)


def rc_bytes(state: np.ndarray, out: np.ndarray) -> bytes:
    """End the stream (:func:`rc_flush`) and return its bytes."""
    rc_flush(state, out)
    return out[: state[2]].tobytes()


def rc_decoder(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """A decoder of ``data``: its state (int64[4], see :func:`rc_decode_bit`, the first 4
    bytes read) and the bytes as a writable uint8 array (one compiled function codes both
    ways, and numba types a read-only array apart)."""
    src = np.frombuffer(data, dtype=np.uint8).copy()
    x0 = 0
    for k in range(4):
        x0 = (x0 << 8) | (int(src[k]) if k < src.size else 255)
    return np.array([0, MASK32, x0, 4], dtype=np.int64), src
