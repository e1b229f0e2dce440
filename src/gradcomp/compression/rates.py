"""Uplink rate accounting: bits of a compressed tensor or update, by part.

Parts (all in bits, everything counted):

- ``payload_fixed_bits``: each sent value at its fixed width (a level index at
  ``ceil(log2 L)`` bits for L levels; float16: 16; float32: 32);
- ``payload_huffman_bits``: length of the Huffman bitstream of the level indices (equal to
  the fixed payload where nothing is entropy coded; a quantizer with its own code, such as
  QSGD's Elias code, puts that code's bitstream here);
- ``huffman_side_bits``: the code table of each Huffman code, charged with the coded payload;
- ``position_bits``: which entries were sent, the code of their flat indices
  (:func:`index_code_bits`), 0 when dense;
- ``side_bits``: parameters the receiver needs (fitted law, min/max, norms), 32 bits each;
- ``raw_bits``: entries of small tensors sent unquantized, 32 bits per sent entry.

``total(coded)`` = payload (Huffman + tables, or fixed) + position + side + raw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

from gradcomp.coding.elias import gamma_widths

__all__ = ["FLOAT_BITS", "RATE_FIELDS", "RateBreakdown", "elias_gamma_bits", "index_code_bits"]

FLOAT_BITS = 32
_METHOD_FLAG_BITS = 2  # which index code a tensor uses: dense, bitmap or gaps
_COUNT_BITS = 32  # entry count that precedes a gap code


@dataclass
class RateBreakdown:
    """Uplink bits of one tensor or of a whole update, by part (see module doc).

    ``n_entries``: entries of the tensor(s); ``n_sent``: entries whose value was sent.
    """

    payload_fixed_bits: int = 0
    payload_huffman_bits: int = 0
    position_bits: int = 0
    side_bits: int = 0
    huffman_side_bits: int = 0
    raw_bits: int = 0
    n_entries: int = 0
    n_sent: int = 0

    def total(self, coded: bool = True) -> int:
        """Total bits, with the Huffman payload and tables (``coded``) or the fixed payload."""
        payload = (
            self.payload_huffman_bits + self.huffman_side_bits if coded else self.payload_fixed_bits
        )
        return payload + self.position_bits + self.side_bits + self.raw_bits

    @property
    def total_coded(self) -> int:
        return self.total(True)

    @property
    def total_fixed(self) -> int:
        return self.total(False)

    def __add__(self, other: RateBreakdown) -> RateBreakdown:
        return RateBreakdown(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @classmethod
    def sum(cls, parts: Iterable[RateBreakdown]) -> RateBreakdown:
        out = cls()
        for part in parts:
            out = out + part
        return out


def elias_gamma_bits(values: np.ndarray) -> int:
    """Length of the Elias-gamma codes of positive integers: sum of 2 floor(log2 v) + 1.

    >>> import numpy as np
    >>> int(elias_gamma_bits(np.array([1, 2, 3, 4])))  # 1 + 3 + 3 + 5
    12
    """
    return int(np.sum(gamma_widths(values)))


def index_code_bits(indices: np.ndarray, numel: int) -> tuple[int, str]:
    """Bits and method of the cheapest code for sorted flat ``indices`` in ``numel`` entries.

    Returns ``(bits, method)`` with method ``"dense"`` (every entry sent: flag only),
    ``"bitmap"`` (numel bits) or ``"gaps"`` (32-bit count + Elias-gamma of the gaps);
    ``bits`` includes the 2-bit method flag.
    """
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size == numel:
        return _METHOD_FLAG_BITS, "dense"
    gaps = np.diff(indices, prepend=-1)
    gap_bits = _COUNT_BITS + elias_gamma_bits(gaps)
    if gap_bits < numel:
        return _METHOD_FLAG_BITS + gap_bits, "gaps"
    return _METHOD_FLAG_BITS + numel, "bitmap"


#: Integer fields of a :class:`RateBreakdown`, in table order.
RATE_FIELDS = tuple(f.name for f in fields(RateBreakdown))
