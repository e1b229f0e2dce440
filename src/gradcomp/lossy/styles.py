"""How a compressor variant looks in every paper-Y figure: one colour per rate curve
(:data:`gradcomp.palette.SERIES` in config order; the entries joining a curve share it),
graded from light to dark over its M values, one marker and line style per rate R; the
uncompressed references in greys (past three: the greys again, dashed). Legends go outside
the axes (:func:`gradcomp.plots.legend_outside`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import matplotlib.colors as mcolors
import pandas as pd

from gradcomp.palette import GREYS, MARKERS, SERIES
from gradcomp.plots import legend_outside  # one placement for both papers' figures

__all__ = ["REFERENCE", "Style", "is_reference", "legend_outside", "variant_styles"]

#: Kinds that send the values uncompressed (float32, float16).
REFERENCE = ("none", "float16")

_PALETTE = SERIES
_GREYS = GREYS
_MARKERS = MARKERS
_LINES = ["-", "--", "-.", ":"]


@dataclass(frozen=True)
class Style:
    """Colour, marker, line style and legend label of one variant."""

    color: str
    marker: str
    linestyle: str
    label: str

    def line(self) -> dict[str, Any]:
        """Keyword arguments for ``Axes.plot``."""
        return {
            "color": self.color, "marker": self.marker, "ls": self.linestyle,
            "label": self.label, "lw": 1.3, "ms": 4,
        }  # fmt: skip


def _shade(color: str, i: int, n: int) -> str:
    """The i-th of n shades of ``color``: light (i = 0) to the full colour (i = n - 1)."""
    if n <= 1:
        return color
    mix = 0.6 * (n - 1 - i) / (n - 1)
    rgb = mcolors.to_rgb(color)
    return mcolors.to_hex(cast(tuple[float, float, float], tuple(c + (1.0 - c) * mix for c in rgb)))


def is_reference(quantizer: str) -> bool:
    """Uncompressed values (float32 or float16): drawn in greys, in every panel."""
    return quantizer in REFERENCE


def variant_styles(
    variants: pd.DataFrame,
    quantizers: Mapping[str, str],
    curves: Mapping[str, str] | None = None,
) -> dict[tuple[str, int, int], Style]:
    """``(compressor, rate, M) -> Style`` for the variants (columns compressor, rate, M);
    ``quantizers`` (name -> kind, in config order) fixes each compressor's colour, and
    ``curves`` (name -> the rate curve it joins, ``lossy.curves``) gives the compressors of
    one curve one colour (the curve's first compressor's), so that the default's 12 curves
    take 12 distinct colours of :data:`gradcomp.palette.SERIES`."""
    order = list(quantizers)
    curve_of = dict(curves or {})
    rates = sorted(v for v, q in zip(variants["rate"], variants["compressor"], strict=True)
                   if not is_reference(quantizers.get(q, q)))  # fmt: skip
    rate_index = {r: i for i, r in enumerate(dict.fromkeys(rates))}
    refs = [n for n in order if is_reference(quantizers[n])]
    others = list(dict.fromkeys(curve_of.get(n, n) for n in order
                                if not is_reference(quantizers[n])))  # fmt: skip
    styles = {}
    for (name, rate, M), _ in variants.groupby(["compressor", "rate", "M"]):
        kind = quantizers.get(name, name)
        if is_reference(kind):
            i = refs.index(name) if name in refs else 0
            # greys first, then the greys again dashed, dotted (more than three references)
            line = _LINES[(i // len(_GREYS)) % len(_LINES)]
            styles[(name, rate, M)] = Style(_GREYS[i % len(_GREYS)], "", line, name)
            continue
        curve = curve_of.get(name, name)
        base = _PALETTE[(others.index(curve) if curve in others else 0) % len(_PALETTE)]
        Ms = sorted(variants.loc[variants["compressor"] == name, "M"].unique())
        r = rate_index.get(rate, 0)
        label = f"{name} R{rate}" + (f" M{M}" if len(Ms) > 1 or kind == "lloyd" else "")
        styles[(name, rate, M)] = Style(
            _shade(base, Ms.index(M), len(Ms)),
            _MARKERS[r % len(_MARKERS)],
            _LINES[r % len(_LINES)],
            label,
        )
    return styles
