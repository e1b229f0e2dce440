"""Sparsifiers: which entries of an update are sent (name -> boolean mask of kept entries)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch

__all__ = ["TopK", "kth_largest"]

#: Entries above which :func:`kth_largest` first narrows the candidates with a sample.
_NARROW_ABOVE = 1 << 16
_SAMPLE_STRIDE = 64


def kth_largest(mags: torch.Tensor, k: int) -> torch.Tensor:
    """The ``k``-th largest entry of the 1-D tensor ``mags`` (1 <= k <= numel), a 0-d tensor
    of its dtype on its device: the same value as ``torch.kthvalue(mags, numel - k + 1)``.

    On the CPU it is a selection in numpy (about twice as fast as ``kthvalue``), and for a
    large ``mags`` and a small ``k`` a strided sample first bounds the answer from below:
    the entries at or above the bound are the only candidates, which is exact whenever
    there are at least ``k`` of them (checked; otherwise the whole tensor is searched).
    """
    n = mags.numel()
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    if mags.device.type != "cpu":
        return torch.kthvalue(mags, n - k + 1).values
    m = mags.numpy()
    if n > _NARROW_ABOVE and 4 * k < n:
        sample = m[::_SAMPLE_STRIDE].copy()
        # rank in the sample of a bound below the answer, with room for the sample's noise
        above = min(sample.size - 1, math.ceil(1.25 * k * sample.size / n) + 8)
        bound = np.partition(sample, sample.size - 1 - above)[sample.size - 1 - above]
        candidates = m[m >= bound]
        if candidates.size >= k:
            m = candidates
    value = np.partition(m, m.size - k)[m.size - k]
    return torch.tensor(value, dtype=mags.dtype)


class TopK:
    """Global top-K by magnitude across the tensors of an update.

    Keeps exactly ``k = ceil(fraction * total)`` entries (the smallest count that is at
    least the fraction; ``fraction * total`` is rounded to 9 decimals first so that
    float noise such as 0.452 * 1000 = 452.00000000000006 does not add an entry).
    Ties at the threshold magnitude are broken by position: tensors in the dict's
    order, entries in flat (C) order, earlier first.
    """

    def __init__(self, fraction: float):
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"top-K fraction must be in (0, 1], got {fraction}")
        self.fraction = float(fraction)

    def count(self, total: int) -> int:
        return min(total, math.ceil(round(self.fraction * total, 9)))

    def select(self, tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Name -> boolean mask (tensor's shape) of the kept entries."""
        names = list(tensors)
        flat = [tensors[n].detach().reshape(-1) for n in names]
        sizes = [f.numel() for f in flat]
        total = sum(sizes)
        k = self.count(total)
        if total == 0:
            return {n: torch.zeros_like(tensors[n], dtype=torch.bool) for n in names}
        dtype = flat[0].dtype
        for f in flat[1:]:
            dtype = torch.promote_types(dtype, f.dtype)
        if dtype not in (torch.float32, torch.float64):
            dtype = torch.float64
        # magnitudes in the tensors' common type: the upcasts are exact, so is the order
        mags = torch.cat([f.abs().to(dtype) for f in flat])
        if k == total:
            keep = torch.ones(total, dtype=torch.bool, device=mags.device)
        else:
            threshold = kth_largest(mags, k)
            keep = mags >= threshold
            if int(keep.sum()) > k:  # ties at the threshold: the earliest of them
                keep = mags > threshold
                need = k - int(keep.sum())
                ties = torch.nonzero(mags == threshold).squeeze(1)[:need]
                keep[ties] = True
        masks = torch.split(keep, sizes)
        return {n: m.reshape(tensors[n].shape) for n, m in zip(names, masks, strict=True)}
