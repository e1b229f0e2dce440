"""QSGD (Alistarh et al. 2017): stochastic rounding of |v| / ||v||_2 to s levels, Elias coded.

Per bucket (``bucket_size`` consecutive sent values v of a tensor, n entries; the last bucket
may be shorter): ``q(v_i) = ||v||_2 sign(v_i) xi_i / s`` with ``xi_i`` the unbiased
stochastic rounding of ``s |v_i| / ||v||_2`` to 0..s
(:class:`~gradcomp.compression.stochastic_levels.StochasticLevels`); ``E q(v) = v`` and
``E||q(v) - v||^2 <= min(n / s^2, sqrt(n) / s) ||v||^2`` (Lemma 3.1) in each bucket.

Bucketing is how the paper ran QSGD: its experiments quantize buckets of d = 512 consecutive
entries, each with its own norm (Sec. 3.1 "bucketing" and the experimental setup; the value
512 is the one the task brief cites from the paper, not re-read from a copy here), which
keeps the variance bound at ``min(512/s^2, sqrt(512)/s)`` whatever the tensor's size. The
spec key ``bucket_size`` defaults to 512; a class built without one (``bucket_size=None``)
quantizes the whole tensor as one bucket.

Rate knob: R bits per entry -> ``s = 2^(R-1) - 1`` levels per sign (R = 2: s = 1; R = 4:
s = 7), so that the fixed-rate index of the 2s + 1 = 2^R - 1 signed levels (a sign bit and
``ceil(log2(s + 1)) = R - 1`` magnitude bits) takes exactly R bits. R >= 2.

Rate parts: side info, one norm per bucket (float32, 32 bits each: ``32 / bucket_size``
bits per entry, 0.0625 at 512); fixed payload ``n R`` bits; coded payload
(the Huffman column of the uplink table) QSGD's own code, :class:`QSGDEliasCode`, which
needs no code table.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from bitarray import bitarray

from gradcomp.coding.elias import gamma_widths
from gradcomp.compression.stochastic_levels import StochasticLevels

__all__ = ["QSGD", "QSGDEliasCode", "qsgd_variance_bound"]

_COUNT_BITS = 32


def qsgd_variance_bound(n: int, s: int) -> float:
    """QSGD's bound on ``E||q(v) - v||^2 / ||v||^2`` (Lemma 3.1): ``min(n/s^2, sqrt(n)/s)``."""
    return min(n / s**2, math.sqrt(n) / s)


class QSGDEliasCode:
    """QSGD's coding of the level indices of one tensor (Alistarh et al. 2017, Sec. 3.2,
    with Elias gamma as the integer code).

    Stream: a 32-bit count of the non-zero levels, then for each non-zero entry in order:
    Elias gamma of its gap to the previous non-zero (the first: position + 1), one sign bit
    (1 = negative), Elias gamma of its level ``|xi|`` in 1..s. Zero levels cost nothing but
    the gaps. Bits: ``32 + sum_nz (gamma(gap) + 1 + gamma(|xi|))``. Both ends know the code
    (no table: :meth:`side_info_bits` is 0). Symbols are the indices ``s + sign xi``.
    """

    def __init__(self, s: int):
        self.s = int(s)

    def side_info_bits(self) -> int:
        return 0

    def encode(self, indices) -> bitarray:
        from gradcomp.coding.bit_kernels import pack_bits

        levels = np.asarray(indices, dtype=np.int64).ravel() - self.s
        pos = np.flatnonzero(levels)
        gaps = np.diff(pos, prepend=-1)
        mags, neg = np.abs(levels[pos]), (levels[pos] < 0).astype(np.int64)
        values = np.stack([gaps, neg, mags], axis=1).ravel()
        widths = np.stack([gamma_widths(gaps), np.ones_like(neg), gamma_widths(mags)], 1).ravel()
        packed, n_bits = pack_bits(
            np.concatenate([[pos.size], values]), np.concatenate([[_COUNT_BITS], widths])
        )
        out = bitarray(endian="big")
        out.frombytes(packed.tobytes())
        del out[n_bits:]
        return out

    def decode_prefix(self, buf: np.ndarray, n: int) -> tuple[np.ndarray, int]:
        """The ``n`` indices (int64) of the :meth:`encode` stream at the start of the bytes
        ``buf`` (uint8), and the stream's length in bits; ``ValueError`` when the stream ends
        early or does not fit n entries and s levels."""
        from gradcomp.coding.bit_kernels import read_signed_gaps

        buf = np.asarray(buf, dtype=np.uint8)
        if buf.size < _COUNT_BITS // 8:
            raise ValueError("QSGD stream ends inside its count")
        count = int.from_bytes(buf[: _COUNT_BITS // 8].tobytes(), "big")
        if count > n:
            raise ValueError(f"QSGD stream claims {count} non-zero levels in {n} entries")
        gaps, negative, mags, end = read_signed_gaps(buf, _COUNT_BITS, count)
        positions = np.cumsum(gaps) - 1
        if count and (positions[-1] >= n or mags.max() > self.s):
            raise ValueError("QSGD stream does not fit the tensor")
        out = np.full(n, self.s, dtype=np.int64)
        out[positions] = self.s + np.where(negative, -mags, mags)
        return out, end

    def decode(self, bits: bitarray, n: int) -> np.ndarray:
        """The ``n`` indices (int64) of an :meth:`encode` stream."""
        big = bits if bits.endian == "big" else bitarray(bits, endian="big")
        return self.decode_prefix(np.frombuffer(big.tobytes(), dtype=np.uint8), n)[0]


class QSGD(StochasticLevels):
    """``qsgd``: QSGD with ``s = 2^(rate-1) - 1`` levels per sign (see the module doc).

    Beyond its format (an entry whose reconstruction would be NaN or infinite: a bucket norm
    beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "qsgd"
    wire_code = 8  # its byte in the wire's header: never reused
    title = "QSGD"
    min_rate = 2
    scale_name = "norm"
    #: spec options (key -> default); :mod:`~gradcomp.compression.specs` checks them
    options: ClassVar[dict[str, object]] = {"bucket_size": 512}

    def __init__(self, rate: int, *, seed: int = 0, bucket_size: int | None = None):
        if rate < self.min_rate:
            raise ValueError(f"QSGD needs rate >= {self.min_rate} bits (s >= 1), got {rate}")
        self.rate = int(rate)
        super().__init__(2 ** (self.rate - 1) - 1, seed=seed, bucket_size=bucket_size)

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        """Why ``value`` is not a valid ``bucket_size``, or None."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            return f"must be an integer >= 1 (entries per bucket), got {value!r}"
        return None

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], seed=spec["seed"], bucket_size=int(spec["bucket_size"]))

    def scale_of(self, buckets):
        return buckets.norm(dim=1)

    def entropy_coder(self, counts) -> QSGDEliasCode:
        """QSGD's own code replaces the Huffman code of the indices."""
        return QSGDEliasCode(self.s)

    def known_code(self, n_levels: int) -> QSGDEliasCode:
        return QSGDEliasCode(self.s)
