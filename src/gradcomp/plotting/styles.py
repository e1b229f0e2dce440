"""How a compressor variant looks in every paper-Y figure: one colour per rate curve
(:data:`~gradcomp.plotting.palette.SERIES` in config order; the entries joining a curve share it),
graded from light to dark over its M values, one marker and line style per rate R; the
uncompressed references in greys (past three: the greys again, dashed). Labels are readers'
names (:func:`gradcomp.names.variant` of the variant's spec) where the spec is given, never a
config identifier.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import matplotlib.colors as mcolors
import pandas as pd

from gradcomp import names
from gradcomp.compression.specs import variant_label
from gradcomp.plotting.palette import GREYS, MARKERS, SERIES

__all__ = [
    "GUIDE",
    "REFERENCE",
    "Style",
    "curve_name",
    "is_reference",
    "reader_name",
    "shade",
    "variant_styles",
]

#: Kinds that send the values uncompressed (float32, float16).
REFERENCE = ("none", "float16")
#: The ``gid`` of a reference or guide line (zero, a margin): not a data series, so no legend
#: entry is asked of it.
GUIDE = "guide"

_PALETTE = SERIES
_GREYS = GREYS
_MARKERS = MARKERS
_LINES = ["-", "--", "-.", ":"]
#: What a spec says about the rate and the kept set: left out of a curve's name.
_RATE_KEYS = ("levels", "target_bits")
_KEPT_KEYS = ("sparsifier", "topk")


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


def shade(color: str, i: int, n: int) -> str:
    """The i-th of n shades of ``color``: light (i = 0) to the full colour (i = n - 1)."""
    if n <= 1:
        return color
    mix = 0.6 * (n - 1 - i) / (n - 1)
    rgb = mcolors.to_rgb(color)
    return mcolors.to_hex(cast(tuple[float, float, float], tuple(c + (1.0 - c) * mix for c in rgb)))


def is_reference(quantizer: str) -> bool:
    """Uncompressed values (float32 or float16): drawn in greys, in every panel."""
    return quantizer in REFERENCE


def reader_name(
    name: str, rate: int | None, M: int | None, specs: Mapping[str, Mapping[str, Any]] | None
) -> str:
    """The variant's readers' name (:func:`gradcomp.names.variant` of its spec in ``specs``,
    variant label -> spec); ``rate`` None: the rate left out. A variant without a spec keeps
    the name its config gave it (a user's own compressor), with R and M.

    >>> reader_name("u", 2, 0, {"u/R2_M0": {"quantizer": "uniform", "topk": 0.1}})
    'uniform, 2 bits, top-K 10%'
    >>> reader_name("mine", 3, 0, {})
    'mine R3'
    """
    spec = _spec_of(name, rate, M, specs)
    if spec is None:
        return name + ("" if rate is None else f" R{rate}") + (f" M{M}" if M else "")
    if rate is None:
        spec = {k: v for k, v in spec.items() if k not in _RATE_KEYS}
    return _with_fit(names.variant(spec, rate, M), spec)


def curve_name(
    name: str, M: int | None, specs: Mapping[str, Mapping[str, Any]] | None, *, kept: bool = True
) -> str:
    """The readers' name of compressor ``name``'s curve at ``M`` (its rate, levels or target
    bits left out); ``kept`` False: its kept set left out too (a figure that holds one kept
    set names it in its title).

    >>> specs = {"g/R1_M2": {"quantizer": "lloyd", "family": "gennorm", "topk": 0.452}}
    >>> curve_name("g", 2, specs), curve_name("g", 2, specs, kept=False)
    ('GenNorm Lloyd M=2, top-K 45.2%', 'GenNorm Lloyd M=2')
    """
    spec = _spec_of(name, None, M, specs)
    if spec is None:
        return name + (f" M{M}" if M else "")
    spec = {k: v for k, v in spec.items() if k not in _RATE_KEYS}
    if not kept:
        bare = {k: v for k, v in spec.items() if k not in _KEPT_KEYS}
        return _with_fit(names.variant(bare, None, M).replace(", dense", ""), spec)
    return _with_fit(names.variant(spec, None, M), spec)


def _with_fit(text: str, spec: Mapping[str, Any]) -> str:
    """``text`` told apart from the same quantizer fitted the default way: a Lloyd quantizer
    whose law is fitted to the kept values as if untruncated (the authors' fit)."""
    if spec.get("quantizer") == "lloyd" and spec.get("lloyd_fit") == "survivors":
        return f"{text}, law fitted to the kept values"
    return text


def _spec_of(name, rate, M, specs) -> Mapping[str, Any] | None:
    """The spec of variant (name, rate, M), or of the first of ``name`` at ``M`` (then any
    M) where ``rate`` is None."""
    if not specs:
        return None
    if rate is not None:
        return specs.get(variant_label(name, rate, M))
    prefix = f"{name}/"
    own = [k for k in specs if k.startswith(prefix)]
    at_m = [k for k in own if k.endswith(f"_M{M}")]
    return specs[(at_m or own)[0]] if own else None


def variant_styles(
    variants: pd.DataFrame,
    quantizers: Mapping[str, str],
    curves: Mapping[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[tuple[str, int, int], Style]:
    """``(compressor, rate, M) -> Style`` for the variants (columns compressor, rate, M);
    ``quantizers`` (name -> kind, in config order) fixes each compressor's colour, and
    ``curves`` (name -> the rate curve it joins, ``lossy.curves``) gives the compressors of
    one curve one colour (the curve's first compressor's), so that the default's 12 curves
    take 12 distinct colours of :data:`~gradcomp.plotting.palette.SERIES`. ``specs`` (variant label
    -> spec): labels are readers' names (:func:`reader_name`); without, ``name R{rate} M{M}``."""
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
            label = reader_name(name, rate, M, specs) if specs else name
            styles[(name, rate, M)] = Style(_GREYS[i % len(_GREYS)], "", line, label)
            continue
        curve = curve_of.get(name, name)
        base = _PALETTE[(others.index(curve) if curve in others else 0) % len(_PALETTE)]
        Ms = sorted(variants.loc[variants["compressor"] == name, "M"].unique())
        r = rate_index.get(rate, 0)
        if specs:
            label = reader_name(name, rate, M, specs)
        else:
            label = f"{name} R{rate}" + (f" M{M}" if len(Ms) > 1 or kind == "lloyd" else "")
        styles[(name, rate, M)] = Style(
            shade(base, Ms.index(M), len(Ms)),
            _MARKERS[r % len(_MARKERS)],
            _LINES[r % len(_LINES)],
            label,
        )
    return styles
