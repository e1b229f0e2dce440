"""Value quantizers: the sent entries of one tensor (a 1-D float tensor) to what goes on the wire.

Every quantizer is a :class:`ValueQuantizer` registered by kind in :data:`QUANTIZERS`; its
class attributes say which spec keys it takes (:mod:`gradcomp.compression.specs` checks them):

=================  ==========================================  =======================
kind               what is sent per value                      side information
=================  ==========================================  =======================
none               float32                                     --
float16            IEEE half                                   --
uniform            index of 2^R levels on [min, max]           min, max
lloyd              index of 2^R Lloyd levels of a fitted law   the law's parameters
gaussian_channel   the value plus Gaussian noise, R bits       mean, std
=================  ==========================================  =======================

Level quantizers use :class:`gradcomp.quantization.lloyd.LevelQuantizer` (nearest level,
thresholds at midpoints); the receiver recomputes the levels from the side information.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import torch

from gradcomp.compression.rates import FLOAT_BITS
from gradcomp.quantization.lloyd import LevelQuantizer, lloyd_design, uniform_minmax_levels

log = logging.getLogger(__name__)

__all__ = [
    "LLOYD_FAMILIES",
    "QUANTIZERS",
    "Float16",
    "GaussianChannel",
    "LloydQuantizer",
    "PassThrough",
    "QuantizedValues",
    "UniformQuantizer",
    "ValueQuantizer",
    "level_bits",
]

LLOYD_FAMILIES = ("gennorm", "norm", "dweibull", "laplace")


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
    else None and the spec needs a ``rate``), ``takes_M``, ``takes_family``.
    """

    kind: ClassVar[str] = "base"
    fixed_rate: ClassVar[int | None] = None
    takes_M: ClassVar[bool] = False
    takes_family: ClassVar[bool] = False

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


def _level_values(
    kind: str, values: torch.Tensor, levels: np.ndarray, side: dict[str, float]
) -> QuantizedValues:
    indices, _ = LevelQuantizer.from_levels(levels).quantize(values)
    return QuantizedValues(
        kind,
        values.numel(),
        indices=indices,
        levels=np.asarray(levels, dtype=np.float64),
        side=side,
        value_bits=level_bits(len(levels)),
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
        levels = uniform_minmax_levels(lo, hi, self.rate, slip=self.slip)
        return _level_values(self.kind, values, levels, {"min": lo, "max": hi})


@lru_cache(maxsize=256)
def _standard_normal_levels(n_levels: int, M: float, one_iteration: bool, init: str | None):
    res = lloyd_design(
        "norm", {"loc": 0.0, "scale": 1.0}, n_levels, M, one_iteration=one_iteration, init=init
    )
    return res.levels


def _default_fit(x: np.ndarray, family: str, label: str):
    from gradcomp.distributions import fit

    return fit(x, family, label=label)


class LloydQuantizer(ValueQuantizer):
    """``lloyd``: Lloyd quantizer under ``|g|^M`` weighting for a law fitted per tensor.

    ``family="norm"``: values standardised by their mean and standard deviation and
    quantized with the Gaussian Lloyd levels (side info: mean, std). Other families:
    ``fit_fn(values, family, label)`` (default :func:`gradcomp.distributions.fit`)
    gives the parameters, sent as side info, from which both ends design the levels.
    ``slip=True`` stops Lloyd after one iteration, started from uniform levels on
    +-3 std (the authors' code's init is random; this is a deterministic stand-in).
    If the fit fails (e.g. constant values), uniform min-max levels are used instead
    (side info: min, max) and a warning is logged.
    """

    kind = "lloyd"
    takes_M = True
    takes_family = True

    def __init__(
        self,
        rate: int,
        family: str = "gennorm",
        M: float = 0.0,
        *,
        slip: bool = False,
        fit_fn: Callable[..., Any] | None = None,
    ):
        if family not in LLOYD_FAMILIES:
            raise ValueError(f"unknown Lloyd family {family!r}; expected one of {LLOYD_FAMILIES}")
        self.rate, self.family, self.M, self.slip = int(rate), family, float(M), bool(slip)
        self.fit_fn = fit_fn or _default_fit

    @classmethod
    def from_spec(cls, spec, *, fit_fn=None, **kwargs):
        return cls(spec["rate"], spec["family"], spec["M"], slip=spec["slip"], fit_fn=fit_fn)

    @property
    def n_levels(self) -> int:
        return 2**self.rate

    def _design(self, values: torch.Tensor, name: str) -> tuple[np.ndarray, dict[str, float]]:
        init = "uniform" if self.slip else None
        x = values.detach().to("cpu", torch.float64).numpy()
        if self.family == "norm":
            mean, std = float(x.mean()), float(x.std())
            if not std > 0:
                raise ValueError("zero standard deviation")
            z = _standard_normal_levels(self.n_levels, self.M, self.slip, init)
            return mean + std * z, {"mean": mean, "std": std}
        fitted = self.fit_fn(x, self.family, label=name)
        params = {k: float(v) for k, v in fitted.params.items()}
        res = lloyd_design(
            self.family, params, self.n_levels, self.M, one_iteration=self.slip, init=init
        )
        return res.levels, params

    def encode(self, values, name=""):
        try:
            levels, side = self._design(values, name)
        except ValueError as exc:  # GradientDataError is a ValueError
            log.warning(
                "lloyd %s on %r failed (%s); using uniform min-max levels", self.family, name, exc
            )
            q = UniformQuantizer(self.rate).encode(values, name)
            q.kind = self.kind
            return q
        return _level_values(self.kind, values, levels, side)


class GaussianChannel(ValueQuantizer):
    """``gaussian_channel``: reference test channel at rate R bits per value.

    Standardise, add N(0, 2^(-2R)) noise, de-standardise: ``x + std * N(0, 2^(-2R))``.
    Its rate is R bits per value by definition; side info: mean, std. ``seed`` seeds
    the noise (one torch.Generator per quantizer, on the CPU).
    """

    kind = "gaussian_channel"

    def __init__(self, rate: int, *, seed: int = 0):
        self.rate = int(rate)
        self.generator = torch.Generator().manual_seed(int(seed))

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], seed=spec["seed"])

    def encode(self, values, name=""):
        x = values.to(torch.float64)
        mean = float(x.mean()) if x.numel() else 0.0
        std = float(x.std(unbiased=False)) if x.numel() else 0.0
        noise = torch.randn(x.shape, generator=self.generator, dtype=torch.float64)
        out = x + std * 2.0 ** (-self.rate) * noise.to(x.device)
        return QuantizedValues(
            self.kind,
            values.numel(),
            values=out,
            side={"mean": mean, "std": std},
            value_bits=self.rate,
        )


#: Value quantizers by kind (the registry :mod:`gradcomp.compression.specs` builds from).
QUANTIZERS: dict[str, type[ValueQuantizer]] = {
    cls.kind: cls
    for cls in (PassThrough, Float16, UniformQuantizer, LloydQuantizer, GaussianChannel)
}
