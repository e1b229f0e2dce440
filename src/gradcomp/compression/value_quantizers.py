"""Value quantizers: the sent entries of one tensor (a 1-D float tensor) to what goes on the wire.

This module holds the interface (:class:`ValueQuantizer`, :class:`QuantizedValues`) and the
simple kinds; each model-based quantizer has a module of its own, and
:mod:`gradcomp.compression.registry` maps kinds to classes. A class's attributes say which
spec keys it takes (:mod:`gradcomp.compression.specs` checks them):

=================  ===========================================  ===========================
kind               what is sent per value                       side information
=================  ===========================================  ===========================
none               float32                                      --
float16            IEEE half                                    --
uniform            index of 2^R levels on [min, max]            min, max
lloyd              index of 2^R Lloyd levels of a fitted law    the law's parameters (+ tau)
kmeans             index of 2^R weighted k-means levels         the 2^R levels
gaussian_channel   a test-channel output, R bits                mean, std
=================  ===========================================  ===========================

Level quantizers use :class:`gradcomp.quantization.level_quantizer.LevelQuantizer` (nearest level,
thresholds at midpoints); the receiver recomputes the levels from the side information.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from gradcomp.compression.rates import FLOAT_BITS
from gradcomp.quantization.level_quantizer import LevelQuantizer
from gradcomp.quantization.minmax_levels import uniform_minmax_levels

__all__ = [
    "Float16",
    "PassThrough",
    "QuantizedValues",
    "UniformQuantizer",
    "ValueQuantizer",
    "level_bits",
    "level_values",
]


@dataclass
class QuantizedValues:
    """The value part of one tensor's payload.

    kind : quantizer kind; n : number of values.
    indices : int64 (n,) level indices (level quantizers) or None.
    values : transmitted values (n,) (float32, float16 or the channel output) or None.
    levels : float64 (L,) reconstruction levels (known to the receiver; sent only when
        ``levels_sent``).
    side : parameters sent, 32 bits each (name -> value).
    value_bits : fixed-rate bits per value.
    """

    kind: str
    n: int
    indices: torch.Tensor | None = None
    values: torch.Tensor | None = None
    levels: np.ndarray | None = None
    side: dict[str, float] = field(default_factory=dict)
    value_bits: int = FLOAT_BITS
    levels_sent: bool = False

    @property
    def side_bits(self) -> int:
        n_levels = len(self.levels) if (self.levels_sent and self.levels is not None) else 0
        return FLOAT_BITS * (len(self.side) + n_levels)


def level_bits(n_levels: int) -> int:
    """Fixed-rate bits of one index among ``n_levels`` levels: ``ceil(log2 L)`` (0 for one)."""
    return max(1, math.ceil(math.log2(n_levels))) if n_levels > 1 else 0


class ValueQuantizer:
    """Maps a 1-D float tensor of sent values to :class:`QuantizedValues` and back.

    Class attributes for spec checking: ``fixed_rate`` (bits per value when the kind has one,
    else None and the spec needs a ``rate``), ``takes_M``, ``takes_family``. With
    ``uses_full_tensor`` the compressor passes ``full=`` (the whole tensor before
    sparsification, 1-D) to :meth:`encode`, for designs that model what was dropped.
    """

    kind: ClassVar[str] = "base"
    fixed_rate: ClassVar[int | None] = None
    takes_M: ClassVar[bool] = False
    takes_family: ClassVar[bool] = False
    uses_full_tensor: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **kwargs: Any) -> ValueQuantizer:
        """Build from a checked spec (:func:`gradcomp.compression.specs.check_spec`)."""
        return cls()

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        raise NotImplementedError

    def decode(self, q: QuantizedValues, indices: torch.Tensor | None = None) -> torch.Tensor:
        """Float64 reconstruction (n,); ``indices`` overrides ``q.indices`` (e.g. decoded
        from the Huffman bitstream)."""
        idx = q.indices if indices is None else indices
        if idx is not None:
            return LevelQuantizer.from_levels(q.levels).dequantize(idx)
        return q.values.to(torch.float64)


def level_values(
    kind: str,
    values: torch.Tensor,
    levels: np.ndarray,
    side: dict[str, float],
    *,
    levels_sent: bool = False,
) -> QuantizedValues:
    """Nearest-level indices of ``values`` (1-D) as :class:`QuantizedValues` of ``kind``."""
    indices, _ = LevelQuantizer.from_levels(levels).quantize(values)
    return QuantizedValues(
        kind,
        values.numel(),
        indices=indices,
        levels=np.asarray(levels, dtype=np.float64),
        side=side,
        value_bits=level_bits(len(levels)),
        levels_sent=levels_sent,
    )


class PassThrough(ValueQuantizer):
    """``none``: values at float32."""

    kind = "none"
    fixed_rate = FLOAT_BITS

    def encode(self, values, name=""):
        return QuantizedValues(
            self.kind, values.numel(), values=values.to(torch.float32), value_bits=FLOAT_BITS
        )


class Float16(ValueQuantizer):
    """``float16``: values rounded to IEEE half precision."""

    kind = "float16"
    fixed_rate = 16

    def encode(self, values, name=""):
        return QuantizedValues(
            self.kind, values.numel(), values=values.to(torch.float16), value_bits=16
        )


class UniformQuantizer(ValueQuantizer):
    """``uniform``: 2^R levels from min to max of the values (2^R + 1 with ``slip``)."""

    kind = "uniform"

    def __init__(self, rate: int, *, slip: bool = False):
        self.rate, self.slip = int(rate), bool(slip)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], slip=spec["slip"])

    def encode(self, values, name=""):
        lo, hi = float(values.min()), float(values.max())
        levels = uniform_minmax_levels(lo, hi, self.rate, extra_level=self.slip)
        return level_values(self.kind, values, levels, {"min": lo, "max": hi})
