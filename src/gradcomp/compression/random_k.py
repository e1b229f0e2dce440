"""Random-K: exactly K uniformly random entries of an update, scaled by 1/p (unbiased).

The sparsifier beside :class:`~gradcomp.compression.sparsifiers.TopK`, composable with any
value quantizer (``sparsifier: randomk`` in a spec). Across the N entries of an update (all
tensors, in the dict's order, flat C order), ``K = ceil(fraction * N)`` positions are drawn
uniformly without replacement, so every entry is kept with probability ``p = K / N``; the
kept values are multiplied by ``scale = 1 / p = N / K``, so the sparsified update is an
unbiased estimate of the update.

Positions: the positions of the update with index ``step`` (0 for the compressor's first,
one more per update) come from the 32-bit seed :meth:`RandomK.mask_seed` derives from the
spec's ``seed`` (agreed before the first round: the run seed and the user) and ``step``,
which the receiver knows too, so it regenerates them (:meth:`RandomK.masks_from_seed`):
the positions cost no bits and every kept entry's value is sent, zeros included.

With error feedback the kept values are sent unscaled (``unbiased=False``), as in Stich et
al. 2018 ("Sparsified SGD with memory"): the residual of the scaled version on the kept
entries is ``(1 - 1/p)`` times the value, so the memory grows by a factor ``(1 - p) / p``
in energy per round (1.21 at p = 0.452) and diverges, while the unscaled random-K is a
contraction (``E|x - C(x)|^2 = (1 - p)|x|^2``) and its memory stays bounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch

from gradcomp.compression.agreed_values import check_agreed_int
from gradcomp.compression.sparsifiers import TopK

__all__ = ["RandomK"]

_TAG = 0x52414E4B  # "RANK"


class RandomK:
    """Random-K sparsifier (see the module doc); ``select`` draws the positions of one update."""

    def __init__(self, fraction: float, *, seed: int = 0, unbiased: bool = True):
        self.count = TopK(fraction).count  # the same K = ceil(fraction * N)
        self.fraction = float(fraction)
        self.unbiased = bool(unbiased)  # scale the kept values by 1/p
        self.seed = int(seed)
        self.last_seed: int | None = None
        self.scale = 1.0

    @staticmethod
    def mask_seed(seed: int, step: int) -> int:
        """The 32-bit seed of the positions of update ``step`` of a compressor seeded ``seed``;
        :class:`~gradcomp.compression.agreed_values.AgreedValueError` naming ``rnd`` for a
        step that is not an integer >= 0."""
        step = check_agreed_int("rnd", step)
        state = np.random.SeedSequence([int(seed) % 2**63, int(step), _TAG]).generate_state(1)
        return int(state[0])

    @staticmethod
    def masks_from_seed(
        seed: int, k: int, shapes: Mapping[str, torch.Size]
    ) -> dict[str, torch.Tensor]:
        """Name -> boolean mask (CPU) of the ``k`` positions that ``seed`` gives."""
        sizes = [math.prod(s) for s in shapes.values()]
        keep = torch.zeros(sum(sizes), dtype=torch.bool)
        gen = torch.Generator().manual_seed(int(seed))
        keep[torch.randperm(sum(sizes), generator=gen)[:k]] = True
        parts = torch.split(keep, sizes)
        return {n: m.reshape(s) for (n, s), m in zip(shapes.items(), parts, strict=True)}

    def select(self, tensors: Mapping[str, torch.Tensor], *, step: int) -> dict[str, torch.Tensor]:
        """Name -> boolean mask (tensor's shape and device) of the kept entries of update
        ``step``; sets :attr:`scale` (N / K, or 1 when not ``unbiased``) and
        :attr:`last_seed` (:meth:`mask_seed`)."""
        shapes = {n: t.shape for n, t in tensors.items()}
        total = sum(t.numel() for t in tensors.values())
        k = self.count(total)
        self.scale = total / k if (k and self.unbiased) else 1.0
        self.last_seed = self.mask_seed(self.seed, step)
        masks = self.masks_from_seed(self.last_seed, k, shapes)
        return {n: m.to(tensors[n].device) for n, m in masks.items()}
