"""A tensor's symbol histograms, and the code lengths that depend on nothing else.

Every i.i.d. magnitude code of paper L (Huffman from a fitted law or from the data, the FP8
bytes, the empirical and cross entropies, the per-channel entropy) spends a number of bits
that is a function of how often each symbol occurs, not of where: ``sum_k n_k l_k`` plus one
raw sign bit per non-zero entry. :class:`SymbolCounts` holds those counts for one tensor;
a coder or bound with a ``counted_bits(counts) -> (payload_bits, side_bits)`` method states
its exact size from them (:func:`is_counted`), without writing a bitstream.

:func:`tensor_counts` builds the counts with torch on the values' own device (a CUDA tensor
stays on the GPU; only the histograms come back): the grid's midpoints decide the symbol
(ties towards zero, saturation at the extreme levels), so the counts are those of
``grid.encode`` exactly. (A cast to
``torch.float8_e5m2`` rounds ties to even and overflows to inf, so its byte histogram can
differ from the grid's symbols on exact midpoints and beyond 57344.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradcomp.coding.base import TensorSymbols
from gradcomp.quantization.grids import GridQuantizer

__all__ = ["SymbolCounts", "entropy_from_counts", "is_counted", "tensor_counts"]


@dataclass(frozen=True)
class SymbolCounts:
    """The histograms of one tensor's signed grid symbols.

    Attributes:
        rows: int64 ``(rows, K)``: per row (output channel) of the tensor, how many entries
            have each magnitude symbol (K = ``grid.n_magnitudes``).
        n_nonzero: entries on a non-zero level (one raw sign bit each).
        grid: the grid the symbols index.
        fits: family name -> fitted law of the entries (data units), as in TensorSymbols.
    """

    rows: np.ndarray
    n_nonzero: int
    grid: GridQuantizer
    fits: Mapping[str, Any] = field(default_factory=dict)

    @property
    def magnitudes(self) -> np.ndarray:
        """int64 (K,): entries per magnitude symbol."""
        return self.rows.sum(axis=0)

    @property
    def numel(self) -> int:
        return int(self.rows.sum())

    @classmethod
    def of_symbols(cls, x: TensorSymbols) -> SymbolCounts:
        """The counts of a tensor's symbols (numpy, on the CPU)."""
        m = x.magnitudes
        k = x.grid.n_magnitudes
        rows = np.bincount(
            (np.arange(m.shape[0])[:, None] * k + m).ravel(), minlength=m.shape[0] * k
        ).reshape(m.shape[0], k)
        return cls(rows, int(x.signs.size), x.grid, x.fits)


def tensor_counts(
    values: Any, grid: GridQuantizer, fits: Mapping[str, Any] | None = None
) -> tuple[SymbolCounts, int]:
    """The counts of ``grid.encode(values)`` and the number of saturated entries.

    ``values``: a 2-D ``(rows, cols)`` torch tensor (float32 or float64, data units;
    compared in float64) or numpy array; the work runs where the tensor lives.
    """
    import torch

    v = torch.as_tensor(values)
    if v.ndim != 2:
        raise ValueError(f"values must be (rows, cols), got shape {tuple(v.shape)}")
    if not grid.is_symmetric:
        raise ValueError("symbol counts need a grid symmetric about zero")
    # a symmetric grid's magnitude symbol is that of |v| on the magnitude midpoints, ties
    # to the smaller magnitude (= towards zero, either sign); one more bin above the top
    # level holds the saturated entries
    k = grid.n_magnitudes
    edges = grid.magnitude_edges[1:-1]
    bounds = torch.as_tensor(np.append(edges, grid.levels[-1]), device=v.device)
    mags = torch.bucketize(v.abs().to(torch.float64), bounds, right=False)
    if v.shape[0] > 1:
        mags += torch.arange(v.shape[0], device=v.device).unsqueeze(1) * (k + 1)
    rows = torch.bincount(mags.reshape(-1), minlength=v.shape[0] * (k + 1))
    rows = rows.reshape(v.shape[0], k + 1).cpu().numpy().astype(np.int64)
    n_saturated = int(rows[:, k].sum())
    rows[:, k - 1] += rows[:, k]
    rows = rows[:, :k]
    n_nonzero = int(rows[:, grid.magnitude_levels != 0].sum())
    return SymbolCounts(rows, n_nonzero, grid, dict(fits or {})), n_saturated


def entropy_from_counts(counts: np.ndarray) -> float:
    """``n H`` in bits of a histogram (any shape, summed over the last axis per leading
    index): ``sum n log2 n - sum n_k log2 n_k`` over each row of counts."""
    c = np.asarray(counts, dtype=np.float64).reshape(-1, np.shape(counts)[-1])
    per_row = c.sum(axis=1)
    used, rows = c[c > 0], per_row[per_row > 0]
    return float(-(used * np.log2(used)).sum() + (rows * np.log2(rows)).sum())


def is_counted(cls: type) -> bool:
    """Whether a coder or bound class states its size from :class:`SymbolCounts`."""
    return callable(getattr(cls, "counted_bits", None))
