"""Elias-gamma bitstreams: codewords packed into a real ``bitarray`` and read back.

The Elias-gamma codeword of a positive integer v with k = floor(log2 v) is k zeros followed
by v in binary (k + 1 bits): ``2k + 1`` bits in all, which is v written in ``2k + 1`` bits.
So a stream of gamma codes, fixed-width fields and single bits is a list of
(value, width) fields, packed MSB first by :func:`pack_fields` and read by :class:`BitReader`.
"""

from __future__ import annotations

import numpy as np
from bitarray import bitarray

__all__ = ["BitReader", "gamma_widths", "pack_fields"]

_SHIFTS = np.arange(63, -1, -1, dtype=np.uint64)


def gamma_widths(values: np.ndarray) -> np.ndarray:
    """Elias-gamma codeword lengths ``2 floor(log2 v) + 1`` (int64) of positive integers."""
    v = np.asarray(values, dtype=np.int64)
    if v.size and v.min() < 1:
        raise ValueError("Elias-gamma codes positive integers only")
    return 2 * (np.frexp(v.astype(np.float64))[1] - 1) + 1  # exact for v < 2^53


def pack_fields(values: np.ndarray, widths: np.ndarray) -> bitarray:
    """Concatenate fields: the low ``widths[i]`` bits (1..64) of ``values[i]``, MSB first."""
    v = np.asarray(values, dtype=np.uint64)
    w = np.asarray(widths, dtype=np.int64)
    out = bitarray(endian="big")
    if v.size == 0:
        return out
    if w.min() < 1 or w.max() > 64:
        raise ValueError("field widths must be in 1..64")
    if np.any((w < 64) & (v >> np.minimum(w, 63).astype(np.uint64) != 0)):
        raise ValueError("a value does not fit its field width")
    bits = ((v[:, None] >> _SHIFTS) & np.uint64(1)).astype(bool)  # (n, 64), MSB first
    flat = bits[np.arange(64) >= 64 - w[:, None]]
    out.frombytes(np.packbits(flat).tobytes())
    del out[flat.size :]
    return out


class BitReader:
    """Reads fixed-width fields and Elias-gamma codes from a ``bitarray``, front to back."""

    def __init__(self, bits: bitarray):
        self._s = bits.to01()
        self.pos = 0

    def _need(self, n: int) -> None:
        if self.pos + n > len(self._s):
            raise ValueError("bit stream ends early")

    def read(self, width: int) -> int:
        """The next ``width``-bit unsigned integer (MSB first)."""
        self._need(width)
        value = int(self._s[self.pos : self.pos + width], 2) if width else 0
        self.pos += width
        return value

    def read_gamma(self) -> int:
        """The next Elias-gamma coded positive integer."""
        one = self._s.find("1", self.pos)
        if one < 0:
            raise ValueError("bit stream ends inside an Elias-gamma code")
        zeros = one - self.pos
        self.pos = one
        return self.read(zeros + 1)
