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

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from gradcomp.coding.base import TensorSymbols
from gradcomp.quantization.grids import FixedGrid

__all__ = ["SymbolCounts", "bin_index", "entropy_from_counts", "is_counted", "tensor_counts"]


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
    grid: FixedGrid
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
    values: Any, grid: FixedGrid, fits: Mapping[str, Any] | None = None
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
    mags = bin_index(v.abs().to(torch.float64), np.append(edges, grid.levels[-1]))
    if v.shape[0] > 1:
        mags += torch.arange(v.shape[0], device=v.device).unsqueeze(1) * (k + 1)
    flat = torch.bincount(mags.reshape(-1), minlength=v.shape[0] * (k + 1))
    rows = flat.reshape(v.shape[0], k + 1).cpu().numpy().astype(np.int64)
    n_saturated = int(rows[:, k].sum())
    rows[:, k - 1] += rows[:, k]
    rows = rows[:, :k]
    n_nonzero = int(rows[:, grid.magnitude_levels != 0].sum())
    return SymbolCounts(rows, n_nonzero, grid, dict(fits or {})), n_saturated


KEY_SHIFT = 49  # a cell: float64s that share sign, exponent and 3 leading mantissa bits


def bin_index(x: Any, bounds: np.ndarray) -> Any:
    """``torch.bucketize(x, bounds)`` (the number of bounds below each entry) for a float64
    torch tensor ``x`` of magnitudes (>= 0, any shape and device) and sorted non-negative
    float64 ``bounds``; int64, shape of ``x``.

    On the CPU, where every cell of float64s that share their top 15 bits
    (:data:`KEY_SHIFT`) holds at most one bound, as the FP8 grids' midpoints do: two table
    reads and a comparison an entry (the cell's count of bounds below it, its bound), in
    numpy, about 6 times faster than ``bucketize``'s binary search, which was the largest
    part of whole-model coding. Elsewhere (other grids, other devices) ``bucketize``."""
    import torch

    raw = np.ascontiguousarray(bounds, dtype=np.float64).tobytes()
    lo, top = _cell_tables(raw) if x.device.type == "cpu" else (None, None)
    if lo is None:
        return torch.bucketize(x, torch.as_tensor(bounds, device=x.device), right=False)
    a = x.contiguous().numpy()
    key = a.view(np.int64) >> KEY_SHIFT
    return torch.from_numpy(lo[key] + (a > cast(np.ndarray, top)[key]))  # set with lo


@functools.lru_cache(maxsize=16)
def _cell_tables(raw: bytes) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """Per cell (key of every non-negative float64 and NaN): the number of bounds below the
    cell, and the cell's bound (+inf if none); ``(None, None)`` if a cell holds two."""
    bounds = np.frombuffer(raw, dtype=np.float64)
    if bounds.size == 0 or bounds[0] < 0 or np.any(np.diff(bounds) < 0):
        return None, None
    keys = bounds.view(np.int64) >> KEY_SHIFT
    if np.any(np.diff(keys) == 0):
        return None, None
    n_cells = 1 << (63 - KEY_SHIFT)
    starts = (np.arange(n_cells, dtype=np.int64) << KEY_SHIFT).view(np.float64)
    lo = np.searchsorted(bounds, starts, side="left").astype(np.int64)  # bounds < start
    top = np.full(n_cells, np.inf)
    top[keys] = bounds
    return lo, top


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
