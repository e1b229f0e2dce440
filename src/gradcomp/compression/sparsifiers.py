"""Sparsifiers: which entries of an update are sent (name -> boolean mask of kept entries)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

__all__ = ["TopK"]


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
        mags = torch.cat([f.abs().to(torch.float64) for f in flat])
        if k == total:
            keep = torch.ones(total, dtype=torch.bool, device=mags.device)
        else:
            threshold = torch.kthvalue(mags, total - k + 1).values  # k-th largest magnitude
            keep = mags > threshold
            need = k - int(keep.sum())
            ties = torch.nonzero(mags == threshold).squeeze(1)[:need]
            keep[ties] = True
        masks = torch.split(keep, sizes)
        return {n: m.reshape(tensors[n].shape) for n, m in zip(names, masks, strict=True)}
