"""Per-channel GenNorm ANS coder: one shape ``beta`` and zero atom ``p0`` per tensor, one scale
per output channel (row), all quantized and sent; magnitudes by ANS, signs raw.

Row r's magnitude pmf is ``(1 - p0) P_r(k) + p0 [k = 0]`` with ``P_r(k)`` the mass of
``|X|``, ``X ~ GenNorm(beta, loc=0, scale=s_r)``, in magnitude bin k of the grid.

Side information, in bits: :data:`BETA_BITS` (beta on :data:`BETAS`), :data:`P0_BITS`
(``p0 = q / 2**P0_BITS``) and :data:`SCALE_BITS` per row (``s_r = e_1 2**(j / SCALE_STEPS)``,
``e_1`` the grid's smallest non-zero magnitude edge): ``6 + 8 + 8 rows``. The encoder picks
the parameters that minimise the ideal code length (a search over the quantized values,
exact for the scales, coordinate-wise for beta then p0).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

import constriction
import numpy as np
import scipy.special
from bitarray import bitarray

from gradcomp.coding.ans import categorical_model
from gradcomp.coding.base import Bitstream, Coder, TensorSymbols, sign_bits, with_signs
from gradcomp.coding.elias import BitReader, pack_fields
from gradcomp.quantization.grids import FixedGrid

__all__ = ["BETAS", "GenNormChannelCoder", "channel_pmfs"]

BETAS = np.round(np.arange(0.2, 2.5 + 1e-9, 0.05), 2)  # 47 shapes
BETA_BITS, P0_BITS, SCALE_BITS, SCALE_STEPS = 6, 8, 8, 8
P0_CANDIDATES = (0, 1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 192, 224)  # q of p0 = q / 256
FLOOR = 1e-12


@lru_cache(maxsize=512)
def _unit_table(ratio_bytes: bytes, beta_index: int) -> np.ndarray:
    """Magnitude-bin masses (K, J) of GenNorm(beta, scale e_1 2**(j/8)), p0 = 0, for
    magnitude edges ``e / e_1`` given as float64 bytes."""
    r = np.frombuffer(ratio_bytes, dtype=np.float64)
    beta = float(BETAS[beta_index])
    scales = 2.0 ** (np.arange(2**SCALE_BITS) / SCALE_STEPS)
    t = (r[:, None] / scales[None, :]) ** beta  # (K+1, J), inf at the top edge
    lower = scipy.special.gammainc(1.0 / beta, t)
    upper = scipy.special.gammaincc(1.0 / beta, t)
    # differences of the upper tail above the median keep the small tail masses accurate
    p = np.where(lower[:-1] > 0.5, upper[:-1] - upper[1:], lower[1:] - lower[:-1])
    return np.clip(p, 0.0, None)


def _ratios(grid: FixedGrid) -> np.ndarray:
    e = grid.magnitude_edges
    return e / e[1]


def channel_pmfs(grid: FixedGrid, beta_index: int, q: int) -> np.ndarray:
    """Floored, normalised magnitude pmfs (J, K) for every scale index j, given beta and
    ``p0 = q / 2**P0_BITS``."""
    return 2.0 ** -_code_lengths(_ratios(grid).tobytes(), beta_index, q)


@lru_cache(maxsize=2048)
def _code_lengths(ratio_bytes: bytes, beta_index: int, q: int) -> np.ndarray:
    """``-log2`` of :func:`channel_pmfs`, (J, K) bits."""
    p = _unit_table(ratio_bytes, beta_index).T * (1.0 - q / 2.0**P0_BITS)
    p[:, 0] += q / 2.0**P0_BITS
    p = np.maximum(p, FLOOR)
    return -np.log2(p / p.sum(axis=1, keepdims=True))


def _row_costs(hist: np.ndarray, used: np.ndarray, grid: FixedGrid, b: int, q: int):
    """Ideal code lengths (rows, J) in bits of each row's histogram (rows, len(used)) of
    the magnitudes ``used``, under each scale's pmf. (einsum: a small product that a
    multithreaded BLAS only slows down on a busy machine.)"""
    lengths = _code_lengths(_ratios(grid).tobytes(), b, q)[:, used]
    return np.einsum("rk,jk->rj", hist, lengths)


class GenNormChannelCoder(Coder):
    """Per-channel GenNorm, ANS (constriction). See the module docstring for the stream."""

    name = "ans_gennorm_channel"
    raw_signs = True

    def choose(self, mags: np.ndarray, grid: FixedGrid) -> tuple[int, int, np.ndarray]:
        """``(beta index, q, scale index per row)`` minimising the ideal code length of the
        magnitudes ``mags`` (rows, cols)."""
        rows, k = mags.shape[0], grid.n_magnitudes
        hist = np.bincount(
            (np.arange(rows)[:, None] * k + mags).ravel(), minlength=rows * k
        ).reshape(rows, k)
        used = np.flatnonzero(hist.sum(axis=0))
        hist = hist[:, used].astype(np.float64)
        totals = [_row_costs(hist, used, grid, b, 0).min(axis=1).sum() for b in range(BETAS.size)]
        b = int(np.argmin(totals))
        costs = [_row_costs(hist, used, grid, b, q) for q in P0_CANDIDATES]
        best = int(np.argmin([c.min(axis=1).sum() for c in costs]))
        return b, P0_CANDIDATES[best], costs[best].argmin(axis=1)

    def encode(self, x: TensorSymbols) -> Bitstream:
        mags, signs = x.magnitudes, x.signs
        b, q, j = self.choose(mags, x.grid)
        pmfs = channel_pmfs(x.grid, b, q)
        side = pack_fields(
            np.concatenate([[b, q], j]).astype(np.uint64),
            np.concatenate([[BETA_BITS, P0_BITS], np.full(j.size, SCALE_BITS)]),
        )
        coder = constriction.stream.stack.AnsCoder()
        groups = np.unique(j)
        for g in groups[::-1]:  # a stack: the last group encoded is decoded first
            coder.encode_reverse(mags[j == g].ravel().astype(np.int32), categorical_model(pmfs[g]))
        words = np.asarray(coder.get_compressed(), dtype=np.uint32)
        return Bitstream(side=(side,), payload=(words, sign_bits(signs)), shape=x.shape)

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]) -> np.ndarray:
        rows, cols = stream.shape
        reader = BitReader(cast(bitarray, stream.side[0]))
        b, q = reader.read(BETA_BITS), reader.read(P0_BITS)
        j = np.array([reader.read(SCALE_BITS) for _ in range(rows)], dtype=np.int64)
        pmfs = channel_pmfs(grid, b, q)
        words, signs = cast(tuple[np.ndarray, bitarray], stream.payload)
        decoder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
        mags = np.zeros((rows, cols), dtype=np.int64)
        for g in np.unique(j):
            sel = j == g
            n = int(sel.sum()) * cols
            mags[sel] = decoder.decode(categorical_model(pmfs[g]), n).reshape(-1, cols)
        return with_signs(grid, mags, signs)
