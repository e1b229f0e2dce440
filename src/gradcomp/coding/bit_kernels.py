"""Compiled (numba) bit packing and Elias-gamma reading: the loops of the uplink's byte format
that cannot be vectorised, each one pass over the bits.

Bits are MSB first within a byte and fields are concatenated without gaps. An Elias-gamma
codeword of v >= 1 is v written in ``2 floor(log2 v) + 1`` bits (:mod:`gradcomp.coding.elias`),
so :func:`pack_bits` with those widths writes a gamma code. Readers take the bytes as a
uint8 array and a start bit and return the bit after the last one read; a stream that ends
early, or a gamma code longer than 63 bits (no int64 holds it), raises ``ValueError``.

This module imports numba (about 0.3 s), so the modules that use it import it where they
call it, not at their own import.
"""

from __future__ import annotations

import numpy as np

from gradcomp.coding.binary_rc import inline, njit

__all__ = ["pack_bits", "read_canonical", "read_gammas", "read_signed_gaps"]

_ENDS_EARLY = -1
_TOO_LONG = -2
_NO_CODEWORD = -3


@njit
def _pack(values, widths, out):
    pos = 0
    for i in range(values.size):
        v, w = values[i], widths[i]
        for b in range(w - 1, -1, -1):
            if (v >> np.uint64(b)) & np.uint64(1):
                out[pos >> 3] |= np.uint8(0x80 >> (pos & 7))
            pos += 1
    return pos


def pack_bits(values: np.ndarray, widths: np.ndarray) -> tuple[np.ndarray, int]:
    """The low ``widths[i]`` bits (1..64) of each ``values[i]`` (non-negative integers),
    concatenated MSB first: (uint8 bytes, zero-padded to a whole byte; number of bits)."""
    v = np.ascontiguousarray(values, dtype=np.uint64)
    w = np.ascontiguousarray(widths, dtype=np.int64)
    if v.shape != w.shape:
        raise ValueError(f"{v.size} values but {w.size} widths")
    if w.size and (w.min() < 1 or w.max() > 64):
        raise ValueError("field widths must be in 1..64")
    total = int(w.sum())
    out = np.zeros((total + 7) >> 3, dtype=np.uint8)
    _pack(v, w, out)
    return out, total


@inline
def _gamma(buf, pos, n_bits):
    """(value, next bit) of the gamma code at bit ``pos``; next bit < 0 on a bad stream."""
    zeros = 0
    while True:
        if pos >= n_bits:
            return 0, _ENDS_EARLY
        if (buf[pos >> 3] >> (7 - (pos & 7))) & 1:
            break
        zeros += 1
        pos += 1
    if zeros > 62:
        return 0, _TOO_LONG
    if pos + zeros + 1 > n_bits:
        return 0, _ENDS_EARLY
    v = 0
    for _ in range(zeros + 1):
        v = (v << 1) | ((buf[pos >> 3] >> (7 - (pos & 7))) & 1)
        pos += 1
    return v, pos


@njit
def _read_gammas(buf, pos, count, out):
    n_bits = buf.size * 8
    for i in range(count):
        v, pos = _gamma(buf, pos, n_bits)
        if pos < 0:
            return pos
        out[i] = v
    return pos


@njit
def _read_signed_gaps(buf, pos, count, gaps, negative, mags):
    n_bits = buf.size * 8
    for i in range(count):
        g, pos = _gamma(buf, pos, n_bits)
        if pos < 0:
            return pos
        if pos >= n_bits:
            return _ENDS_EARLY
        negative[i] = (buf[pos >> 3] >> (7 - (pos & 7))) & 1
        pos += 1
        m, pos = _gamma(buf, pos, n_bits)
        if pos < 0:
            return pos
        gaps[i], mags[i] = g, m
    return pos


def _checked(end: int) -> int:
    if end == _ENDS_EARLY:
        raise ValueError("bit stream ends early")
    if end == _TOO_LONG:
        raise ValueError("an Elias-gamma code longer than 63 bits")
    return int(end)


def read_gammas(buf: np.ndarray, start: int, count: int) -> tuple[np.ndarray, int]:
    """``count`` Elias-gamma codes from bit ``start`` of ``buf`` (uint8): (int64 values, the
    end bit)."""
    out = np.empty(int(count), dtype=np.int64)
    return out, _checked(
        _read_gammas(np.ascontiguousarray(buf, np.uint8), int(start), out.size, out)
    )


def read_signed_gaps(
    buf: np.ndarray, start: int, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``count`` triples (gamma gap, one sign bit, gamma magnitude) from bit ``start`` of
    ``buf`` (uint8), QSGD's stream: (gaps int64, negative bool, magnitudes int64, end bit)."""
    n = int(count)
    gaps, mags = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    negative = np.empty(n, dtype=np.uint8)
    end = _read_signed_gaps(
        np.ascontiguousarray(buf, np.uint8), int(start), n, gaps, negative, mags
    )
    return gaps, negative.astype(bool), mags, _checked(end)


@njit
def _read_canonical(buf, pos, n_bits, count, first, n_at, offset, symbols, max_len, out):
    for i in range(count):
        code, length = 0, 0
        while True:
            if pos >= n_bits:
                return _ENDS_EARLY
            code = (code << 1) | ((buf[pos >> 3] >> (7 - (pos & 7))) & 1)
            pos += 1
            length += 1
            d = code - first[length]
            if 0 <= d < n_at[length]:
                out[i] = symbols[offset[length] + d]
                break
            if length >= max_len:
                return _NO_CODEWORD
    return pos


def read_canonical(
    buf: np.ndarray, n_bits: int, count: int, lengths: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, int]:
    """``count`` symbols of the canonical prefix code with codeword ``lengths`` (int (L,),
    0 = no codeword, at most 62 bits) whose symbols in canonical order (by length, then by
    symbol) are ``order``, read from the first ``n_bits`` bits of ``buf`` (uint8, MSB first):
    (int64 (count,), bits read). A codeword the code does not have raises ``ValueError``."""
    max_len = int(lengths.max())
    if max_len > 62:
        raise ValueError(f"codewords of {max_len} bits: at most 62 here")
    n_at = np.bincount(lengths[order], minlength=max_len + 1).astype(np.int64)
    first = np.zeros(max_len + 2, dtype=np.int64)
    offset = np.zeros(max_len + 2, dtype=np.int64)
    code = 0
    for length in range(1, max_len + 1):  # the canonical first codeword of each length
        first[length], offset[length] = code, offset[length - 1] + n_at[length - 1]
        code = (code + n_at[length]) << 1
    out = np.empty(count, dtype=np.int64)
    symbols = np.ascontiguousarray(order, dtype=np.int64)
    end = _read_canonical(buf, 0, n_bits, count, first, n_at, offset, symbols, max_len, out)
    if end == _ENDS_EARLY:
        raise ValueError(f"the bits end before symbol {count} of {count}")
    if end == _NO_CODEWORD:
        raise ValueError("a bit sequence is no codeword of the code")
    return out, end
