"""``float8``: the sent values cast to an 8-bit float, E5M2 or E4M3, optionally scaled.

The grids are :data:`gradcomp.quantization.grids.GRIDS` ``fp8_e5m2`` (247 finite values,
max 57344, = torch ``float8_e5m2``) and ``fp8_e4m3`` (253 values, max 448, = torch
``float8_e4m3fn``). Per tensor (the sent values v, n entries):

- ``scaling="none"``: v is cast as it is (tiny values fall into the subnormals or onto 0);
- ``scaling="amax"``: v is first multiplied by ``2^k``, k the largest integer with
  ``max|v| 2^k <= max level`` (:func:`~gradcomp.quantization.grids.amax_exponent`, FP8 training
  recipes' power-of-two scaling), and the receiver divides by it; k in -128..127 is 8 bits of
  side information. A power of two changes no mantissa, so this is the grid scaled by 2^-k.

Rounding (``ties``) of a value to the nearest grid value:

- ``"even"`` (default, IEEE round-to-nearest-even as the hardware and torch casts): a value
  exactly halfway between two grid values goes to the one with an even code (last mantissa
  bit 0; consecutive non-negative grid values have consecutive codes);
- ``"upper"``: M22's ``np.digitize`` on the midpoints (the follow-up's
  ``fp8_152_bin_edges``): a halfway value goes to the upper (larger) grid value.

Beyond the largest grid value, values saturate to it (counted and logged), for both formats
(torch's cast to
``float8_e5m2`` gives inf there, which an uplink cannot send; its cast to ``float8_e4m3fn``,
a format without inf, saturates to +-448 in torch 2.14, the same as here); NaN is refused
with ``ValueError``. M22's float8 conversion is
``format="e5m2", scaling="none", ties="upper"``.

Rate parts: fixed payload 8 bits per value; coded payload the Huffman bitstream of the 8-bit
codes with its table (spec ``huffman``, default true); side information 8 bits (k) with
``amax`` scaling, else none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer
from gradcomp.quantization.grids import EXPONENT_BITS, SCALINGS, amax_exponent, as_numpy, get_grid

__all__ = ["FLOAT8_FORMATS", "FLOAT8_TIES", "Float8", "Float8Values"]

log = logging.getLogger(__name__)

#: ``float8_format`` values -> grid names.
FLOAT8_FORMATS = {"e5m2": "fp8_e5m2", "e4m3": "fp8_e4m3"}
FLOAT8_TIES = ("even", "upper")
_K_RANGE = (-(2 ** (EXPONENT_BITS - 1)), 2 ** (EXPONENT_BITS - 1) - 1)


@dataclass
class Float8Values(QuantizedValues):
    """:class:`QuantizedValues` whose side information is the 8-bit scaling exponent (if any)."""

    #: entries beyond the largest grid value, sent as it (the kind's documented saturation)
    saturated: int = 0

    @property
    def side_bits(self) -> int:
        return EXPONENT_BITS * len(self.side)


def round_to_grid(v: np.ndarray, levels: np.ndarray, ties: str) -> np.ndarray:
    """Indices (int64, v's shape) of the nearest of the sorted, zero-symmetric ``levels``.

    ``ties="upper"``: a value on a midpoint goes up (``np.digitize``); ``"even"``: to the level
    whose magnitude index (its code) is even. Values beyond the end levels saturate.
    """
    mid = 0.5 * (levels[1:] + levels[:-1])
    if ties == "upper":
        return np.searchsorted(mid, v, side="right").astype(np.int64)
    if ties != "even":
        raise ValueError(f"ties must be one of {FLOAT8_TIES}, got {ties!r}")
    idx = np.searchsorted(mid, v, side="left").astype(np.int64)  # a tie goes down here
    zero = levels.size // 2  # index of the level 0
    on_mid = np.zeros(v.shape, dtype=bool)
    inside = idx < mid.size
    on_mid[inside] = mid[idx[inside]] == v[inside]
    odd = np.abs(idx - zero) % 2 == 1
    return idx + (on_mid & odd)


class Float8(ValueQuantizer):
    """``float8``: see the module doc. ``fmt`` in :data:`FLOAT8_FORMATS`, ``scaling`` in
    :data:`~gradcomp.quantization.grids.SCALINGS`, ``ties`` in :data:`FLOAT8_TIES`.

    Beyond its grid: saturates, the one kind that clamps (an 8-bit float's recipe, and what
    ``float8_e4m3fn`` casts do); each tensor's count is ``Float8Values.saturated``, the total
    :attr:`saturated`, and a warning is logged. A reconstruction beyond the tensor's dtype
    is refused (:class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`)."""

    kind = "float8"
    title = "FP8 (E5M2)"
    fixed_rate = 8
    nearest_labels = True
    #: spec options (key -> default); :mod:`~gradcomp.compression.specs` checks them
    options: ClassVar[dict[str, object]] = {
        "float8_format": "e5m2",
        "float8_scaling": "none",
        "float8_ties": "even",
    }
    choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "float8_format": tuple(FLOAT8_FORMATS),
        "float8_scaling": SCALINGS,
        "float8_ties": FLOAT8_TIES,
    }

    def __init__(self, fmt: str = "e5m2", *, scaling: str = "none", ties: str = "even"):
        for key, value in (("float8_format", fmt), ("float8_scaling", scaling)):
            if value not in self.choices[key]:
                raise ValueError(f"{key} must be one of {self.choices[key]}, got {value!r}")
        if ties not in FLOAT8_TIES:
            raise ValueError(f"float8_ties must be one of {FLOAT8_TIES}, got {ties!r}")
        self.fmt, self.scaling, self.ties = fmt, scaling, ties
        self.unit_levels = get_grid(FLOAT8_FORMATS[fmt]).levels
        self.saturated = 0  # entries saturated so far (all tensors, all updates)

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        """Why ``value`` is not valid for option ``key``, or None."""
        if value not in cls.choices[key]:
            return f"must be one of {cls.choices[key]}, got {value!r}"
        return None

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["float8_format"], scaling=spec["float8_scaling"], ties=spec["float8_ties"])

    def exponent(self, v: np.ndarray) -> int:
        """The scaling exponent k of values ``v`` (0 without scaling), within 8 bits."""
        if self.scaling == "none" or v.size == 0:
            return 0
        k = amax_exponent(float(np.max(np.abs(v))), float(self.unit_levels[-1]))
        return int(np.clip(k, *_K_RANGE))

    def n_symbols(self) -> int:
        return int(self.unit_levels.size)

    def _values(self, n: int, k: int, indices=None) -> Float8Values:
        return Float8Values(
            self.kind,
            n,
            indices=indices,
            levels=self.unit_levels * 2.0**-k,
            side={"exponent": float(k)} if self.scaling == "amax" else {},
            value_bits=8,
        )

    def write_side(self, q, w):
        if self.scaling == "amax":
            w.array(np.array([q.side["exponent"]], dtype=np.int8), "i1")

    def read_side(self, r, n, *, name, step):
        k = int(r.array("i1", 1, "exponent")[0]) if self.scaling == "amax" else 0
        return self._values(n, k)

    def encode(self, values: torch.Tensor, name: str = "") -> Float8Values:
        v = np.asarray(as_numpy(values), dtype=np.float64)
        if np.isnan(v).any():
            raise ValueError(f"float8: tensor {name!r} has NaN values")
        k = self.exponent(v)
        scaled = v * 2.0**k
        indices = round_to_grid(scaled, self.unit_levels, self.ties)
        out = self._values(v.size, k, torch.from_numpy(indices).to(values.device))
        top = float(self.unit_levels[-1])
        out.saturated = int(np.count_nonzero(np.abs(scaled) > top))
        if out.saturated:  # the explicit clamp: counted here and on the object, and logged
            self.saturated += out.saturated
            log.warning(
                "float8: tensor %r: %d of %d entries beyond +-%g (x 2^%d) saturated to it",
                name, out.saturated, v.size, top, -k,
            )  # fmt: skip
        return out
