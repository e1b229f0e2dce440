"""Unbiased stochastic rounding onto 2s + 1 signed levels of a per-tensor scale.

The common core of QSGD (:mod:`~gradcomp.compression.qsgd`, L2-norm scale, s levels per
sign) and TernGrad (:mod:`~gradcomp.compression.terngrad`, max-norm scale, s = 1).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer, level_bits

__all__ = ["StochasticLevels", "float32_at_least"]


def float32_at_least(x: float) -> float:
    """The smallest float32 >= ``x`` (a scale sent at 32 bits that still bounds |v|)."""
    y = np.float32(x)
    if float(y) < x:
        y = np.nextafter(y, np.float32(np.inf))
    return float(y)


class StochasticLevels(ValueQuantizer):
    """Values v (n,) -> levels ``scale * sign(v_i) * xi_i / s`` with ``xi_i`` in 0..s.

    ``xi_i`` is the stochastic rounding of ``r_i = s |v_i| / scale``: ``floor(r_i)`` plus one
    with probability ``r_i - floor(r_i)``, so ``E[xi_i] = r_i`` and the output is unbiased.
    ``scale`` (subclasses: :meth:`scale_of`) is rounded up to a float32, sent as side info
    (32 bits), so ``r_i <= s``. Indices: ``s + sign(v_i) xi_i`` in 0..2s (level ``-s`` is
    index 0); fixed rate ``ceil(log2(2s + 1))`` bits per value. The uniforms come from a
    CPU ``torch.Generator`` seeded with ``seed``: a given seed gives the same output.
    """

    scale_name: ClassVar[str] = "scale"

    def __init__(self, s: int, *, seed: int = 0):
        if s < 1:
            raise ValueError(f"need at least one level per sign, got s = {s}")
        self.s = int(s)
        self.generator = torch.Generator().manual_seed(int(seed))

    def scale_of(self, values: torch.Tensor) -> float:
        raise NotImplementedError

    def encode(self, values, name=""):
        v = values.detach().to(torch.float64)
        scale = float32_at_least(self.scale_of(v)) if v.numel() else 0.0
        r = self.s * v.abs() / scale if scale > 0 else torch.zeros_like(v)
        low = r.floor()
        u = torch.rand(v.shape, generator=self.generator, dtype=torch.float64).to(v.device)
        xi = (low + (u < r - low).to(torch.float64)).clamp_(max=self.s)
        indices = (self.s + torch.sign(v) * xi).to(torch.int64)
        levels = scale * np.arange(-self.s, self.s + 1, dtype=np.float64) / self.s
        return QuantizedValues(
            self.kind,
            v.numel(),
            indices=indices,
            levels=levels,
            side={self.scale_name: scale},
            value_bits=level_bits(2 * self.s + 1),
        )
