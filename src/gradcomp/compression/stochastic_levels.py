"""Unbiased stochastic rounding onto 2s + 1 signed levels of a per-bucket scale.

The common core of QSGD (:mod:`~gradcomp.compression.qsgd`, L2-norm scale, s levels per
sign) and TernGrad (:mod:`~gradcomp.compression.terngrad`, max-norm scale, s = 1). A bucket
is a run of ``bucket_size`` consecutive sent values (the last one may be shorter); without a
bucket size the whole tensor is one bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from gradcomp.compression.inputs import WIRE_LIMITS, OutOfRangeUpdateError
from gradcomp.compression.rates import FLOAT_BITS
from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer, level_bits

__all__ = ["BucketedValues", "StochasticLevels"]


def _float32_at_least(x: torch.Tensor) -> torch.Tensor:
    """The smallest float32 >= each entry of a float64 tensor, as float64: a scale sent at 32
    bits that still bounds |v|."""
    y = x.to(torch.float32)
    up = torch.nextafter(y, torch.full_like(y, float("inf")))
    return torch.where(y.to(torch.float64) < x, up, y).to(torch.float64)


@dataclass
class BucketedValues(QuantizedValues):
    """Level indices of several buckets: ``scales`` float64 (n_buckets,), each sent at 32 bits;
    value i has the levels ``scales[i // bucket_size] * (-s..s) / s``; ``levels`` holds the
    unit levels ``(-s..s) / s``."""

    scales: np.ndarray | None = None
    bucket_size: int = 0

    @property
    def side_bits(self) -> int:
        return FLOAT_BITS * (0 if self.scales is None else len(self.scales))


class StochasticLevels(ValueQuantizer):
    """Values v (n,) -> levels ``scale * sign(v_i) * xi_i / s`` with ``xi_i`` in 0..s.

    ``xi_i`` is the stochastic rounding of ``r_i = s |v_i| / scale``: ``floor(r_i)`` plus one
    with probability ``r_i - floor(r_i)``, so ``E[xi_i] = r_i`` and the output is unbiased.
    ``scale`` (subclasses: :meth:`scale_of`) is rounded up to a float32, sent as side info
    (32 bits), so ``r_i <= s``; a scale beyond float32's range is refused
    (:class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, a ``ValueError``).
    Indices: ``s + sign(v_i) xi_i`` in 0..2s (level ``-s`` is index 0); fixed rate
    ``ceil(log2(2s + 1))`` bits per value. The uniforms come from a CPU ``torch.Generator``
    seeded with ``seed``: a given seed gives the same output.

    With ``bucket_size`` (None: the whole tensor) each bucket has its own scale; a tensor of
    one bucket gives a :class:`QuantizedValues` with the scale in ``side``, several a
    :class:`BucketedValues`.
    """

    scale_name: ClassVar[str] = "scale"
    nearest_labels = True

    def __init__(self, s: int, *, seed: int = 0, bucket_size: int | None = None):
        if s < 1:
            raise ValueError(f"need at least one level per sign, got s = {s}")
        if bucket_size is not None and not (isinstance(bucket_size, int) and bucket_size >= 1):
            raise ValueError(f"bucket_size must be an integer >= 1, got {bucket_size!r}")
        self.s = int(s)
        self.bucket_size = bucket_size
        self.generator = torch.Generator().manual_seed(int(seed))

    def scale_of(self, buckets: torch.Tensor) -> torch.Tensor:
        """The scale of each row of ``buckets`` (n_buckets, b), zero-padded; (n_buckets,)."""
        raise NotImplementedError

    def n_symbols(self) -> int:
        return 2 * self.s + 1

    def buckets(self, n: int) -> tuple[int, int]:
        """(entries per bucket, number of buckets) of n sent values."""
        b = n if self.bucket_size is None else min(self.bucket_size, n)
        return b, (-(-n // b) if n else 0)

    def encode(self, values, name=""):
        v = values.detach().to(torch.float64).reshape(-1)
        n = v.numel()
        b, n_buckets = self.buckets(n)
        padded = torch.zeros(n_buckets * b, dtype=torch.float64, device=v.device)
        padded[:n] = v
        scales = _float32_at_least(self.scale_of(padded.reshape(n_buckets, b)))
        if not torch.isfinite(scales).all():  # refused by name, as every kind's overflow
            bad = int((~torch.isfinite(scales)).sum()) * b
            raise OutOfRangeUpdateError(
                name, f"{self.kind} (a bucket {self.scale_name} beyond float32)", min(bad, n), n,
                float(v.abs().max()), WIRE_LIMITS["f4"],
            )  # fmt: skip
        # per bucket row, the same divisions as value by value (s |v| / scale, 0 at scale 0)
        safe = torch.where(scales > 0, scales, torch.ones_like(scales))
        rows = self.s * padded.abs().reshape(n_buckets, b) / safe[:, None]
        rows[scales <= 0] = 0.0
        r = rows.reshape(-1)[:n]
        low = r.floor()
        u = torch.rand(v.shape, generator=self.generator, dtype=torch.float64).to(v.device)
        xi = (low + (u < r - low).to(torch.float64)).clamp_(max=self.s)
        indices = (self.s + torch.sign(v) * xi).to(torch.int64)
        return self._values(n, scales.cpu().numpy(), indices)

    def _values(self, n: int, scales: np.ndarray, indices) -> QuantizedValues:
        """The :class:`QuantizedValues` of ``n`` values with bucket ``scales`` (float64 holding
        float32 numbers), one bucket or several."""
        unit = np.arange(-self.s, self.s + 1, dtype=np.float64) / self.s
        bits = level_bits(self.n_symbols())
        if scales.size <= 1:
            scale = float(scales[0]) if scales.size else 0.0
            side = {self.scale_name: scale}
            return QuantizedValues(
                self.kind, n, indices, levels=scale * unit, side=side, value_bits=bits
            )
        return BucketedValues(
            self.kind, n, indices, levels=unit, value_bits=bits,
            scales=scales, bucket_size=self.buckets(n)[0],
        )  # fmt: skip

    def write_side(self, q, w):
        scales = q.scales if isinstance(q, BucketedValues) else np.array([q.side[self.scale_name]])
        w.array(np.asarray(scales, dtype=np.float64).astype(np.float32), "f4")

    def read_side(self, r, n, *, name, step):
        scales = r.array("f4", self.buckets(n)[1], self.scale_name).astype(np.float64)
        return self._values(n, scales, None)

    def decode(self, q, indices=None):
        if not isinstance(q, BucketedValues):
            return super().decode(q, indices)
        idx = q.indices if indices is None else indices
        if idx is None or q.scales is None:
            raise ValueError("bucketed levels decode from their level indices and scales")
        scales = torch.from_numpy(q.scales).to(idx.device).repeat_interleave(q.bucket_size)
        return scales[: q.n] * (idx.to(torch.float64) - self.s) / self.s
