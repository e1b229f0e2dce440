"""What an entropy-constrained scalar quantizer design is (:class:`ECSQResult`), shared by
the design on weighted points (``ecsq_design``) and the design of a fitted law
(:func:`gradcomp.compression.ecsq_law.ecsq_for_law`): its levels, cells, code lengths
(ideal or Huffman), M-weighted distortion and rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gradcomp.coding.huffman_lengths import huffman_lengths
from gradcomp.quantization.nearest_level import NearestLevels

__all__ = ["RATE_TOL", "ECSQResult", "Lengths", "code_lengths", "m_weights"]

Lengths = Literal["entropy", "huffman"]
#: How far above its target (bits per entry) a design's rate may be: float noise, so that a
#: design at exactly a fixed-rate design's entropy is not refused by the last ulp.
RATE_TOL = 1e-9


@dataclass(frozen=True)
class ECSQResult:
    """An entropy-constrained design (of weighted points or of a law).

    levels: (L,) sorted, units of x; thresholds: (L - 1,) the cell boundaries between
    adjacent levels (on points: midway between the last point of one cell and the first of
    the next);
    probabilities: (L,) of the cells; lengths: (L,) code lengths in bits of the indices;
    distortion: the ``|x|^M``-weighted mean squared error per entry (units x^(M+2)); rate:
    the mean code length, bits per entry (the entropy of the index for ``"entropy"``);
    lam: the Lagrange multiplier (NaN for a design not made by one); iterations: of the last
    design (0 for none).
    """

    levels: np.ndarray
    thresholds: np.ndarray
    probabilities: np.ndarray
    lengths: np.ndarray
    distortion: float
    rate: float
    lam: float
    M: float
    iterations: int

    def quantizer(self) -> NearestLevels:
        """The nearest-cell rule of the design's levels and thresholds."""
        return NearestLevels(self.levels, self.thresholds)


def m_weights(x: np.ndarray, M: float) -> np.ndarray:
    """The distortion's weights ``|x|^M`` (ones at M = 0, so that 0^0 needs no care)."""
    return np.abs(x) ** M if M else np.ones_like(x)


def code_lengths(p: np.ndarray, lengths: Lengths) -> np.ndarray:
    """Code lengths in bits of indices of probabilities ``p``: ``-log2 p`` (ideal entropy
    code) or the lengths of the Huffman code of ``p``."""
    if lengths == "huffman":
        return huffman_lengths(p).astype(np.float64)
    return -np.log2(p)
