"""Nearest-level rounding: sorted levels and thresholds, one tie rule.

:func:`nearest_index` is the one place where a value meets its level, for numpy arrays and
torch tensors alike; :class:`NearestLevels` (the value quantizers of paper Y) and
:class:`gradcomp.quantization.grids.FixedGrid` (paper L's fixed grids) both use it.

Tie rule: a value exactly on a threshold goes to the level nearer zero, i.e. to the upper
cell when the threshold is negative and to the lower cell when it is zero or positive. With
levels symmetric about zero the quantizer is then odd (``Q(-x) = -Q(x)``) except on a threshold
at zero itself, which goes down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["NearestLevels", "nearest_index"]


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def nearest_index(thresholds, x):
    """Cell index of every entry of ``x``: ``k`` with ``thresholds[k-1] < x < thresholds[k]``,
    ties by the module's rule (towards zero).

    ``thresholds``: float64 (L-1,), ascending. ``x``: numpy array (any shape; int64 result) or
    torch tensor (int64 tensor on x's device). NaN is not checked here.
    """
    if _is_torch(x):
        import torch

        t = torch.as_tensor(np.asarray(thresholds, dtype=np.float64), device=x.device)
        v = x.to(torch.float64)
        idx = torch.bucketize(v, t, right=False)  # on a threshold: the lower cell
        if t.numel():
            on = t[idx.clamp(max=t.numel() - 1)] == v
            idx = idx + ((v < 0) & on & (idx < t.numel())).to(idx.dtype)
        return idx
    th = np.asarray(thresholds, dtype=np.float64)
    vals = np.asarray(x, dtype=np.float64)
    cells = np.searchsorted(th, vals, side="left").astype(np.int64)
    if th.size:
        on_th = th[np.minimum(cells, th.size - 1)] == vals
        cells += (vals < 0) & on_th & (cells < th.size)
    return cells


@dataclass(frozen=True)
class NearestLevels:
    """Nearest-level rounding with sorted ``levels`` (L,) and ``thresholds`` (L-1,).

    An input ``x`` maps to index ``k`` such that ``thresholds[k-1] < x < thresholds[k]``;
    on a threshold, the tie rule of :func:`nearest_index` (towards zero).
    """

    levels: np.ndarray
    thresholds: np.ndarray

    def __post_init__(self):
        levels = np.asarray(self.levels, dtype=np.float64)
        thresholds = np.asarray(self.thresholds, dtype=np.float64)
        if levels.ndim != 1 or thresholds.shape != (max(levels.size - 1, 0),):
            raise ValueError("need levels of shape (L,) and thresholds of shape (L-1,)")
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "thresholds", thresholds)

    @classmethod
    def from_levels(cls, levels) -> NearestLevels:
        """Nearest-level quantizer (thresholds at midpoints); levels are sorted."""
        levels = np.sort(np.asarray(levels, dtype=np.float64))
        return cls(levels, 0.5 * (levels[:-1] + levels[1:]))

    @property
    def n_levels(self) -> int:
        return int(self.levels.size)

    @property
    def bits(self) -> int:
        """Fixed-rate index length, ceil(log2 L) bits."""
        return int(math.ceil(math.log2(self.n_levels))) if self.n_levels > 1 else 0

    def quantize(self, x):
        """Return (indices int64, reconstructed values) for a numpy array or torch tensor.

        Torch inputs give torch outputs on the same device (values in x's dtype).
        """
        idx = nearest_index(self.thresholds, x)
        if _is_torch(x):
            return idx, self.dequantize(idx).to(x.dtype)
        return idx, self.levels[idx]

    def dequantize(self, indices):
        """Levels at ``indices`` (numpy -> float64 array; torch -> float64 tensor)."""
        if _is_torch(indices):
            import torch

            lv = torch.as_tensor(self.levels, dtype=torch.float64, device=indices.device)
            if indices.dtype not in (torch.int32, torch.int64):
                indices = indices.long()
            # index_select: the same gather as lv[indices], several times faster on the CPU
            return lv.index_select(0, indices.reshape(-1)).reshape(indices.shape)
        return self.levels[np.asarray(indices)]
