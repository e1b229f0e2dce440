"""Paper Y's figure Y8, from the one-round paired study: what a bit of coded uplink buys
against the weight M of the quantizer's distortion |g|^M (g - q)^2.

The series are the Lloyd quantizers of the GenNorm law and the weighted k-means quantizers
(the data-optimal reference of the same weighted distortion) on the baseline's kept set, one
per rate (bits per kept value, :data:`RATES` by default), each drawn against M. A point is
what one round bought per coded bit: the test loss the round took off the start model
(``start_loss - test_loss``, nats) and the accuracy it added (``test_acc - start_acc``,
points), each over the coded uplink bits per entry the configuration spent (``bits_coded /
entries``, all users). Rounds of a trajectory are averaged first; the mean and 95% interval
are over the warm starts, seeds nested (:func:`gradcomp.statistics.nested.nested_test`), drawn
only from at least :data:`gradcomp.plotting.paper_y_points.MIN_REPLICATES` units (fewer: the
units' own values). A dotted grey line per rate is the uncompressed aggregate's gain over
the same bits (``start - exact``, each trajectory over the bits the configuration spent):
what the bits would buy if quantizing lost nothing. The table :func:`figure_y8` returns
holds every plotted number.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from gradcomp import names
from gradcomp.lossy.paper_y_tables import one_round_data
from gradcomp.plotting import facets
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import GREYS
from gradcomp.plotting.paper_y_points import MIN_REPLICATES
from gradcomp.plotting.styles import curve_name, variant_styles
from gradcomp.statistics.nested import nested_test, unit_values
from gradcomp.statistics.paired import seed_means

__all__ = [
    "METRICS", "OFFSET", "RATES", "Y8_COLUMNS", "Y8Series", "draw_y8", "figure_y8", "m_points",
    "y8_series",
]  # fmt: skip

log = logging.getLogger(__name__)

#: The rates (bits per kept value) Y8 draws by default.
RATES = (1, 2)
#: Y8's panels, top to bottom: (column, the uncompressed aggregate's column, scale, axis
#: label). Each column is a gain over the coded bits per entry.
METRICS = (
    ("loss_per_bit", "exact_loss_per_bit", 1.0,
     "test loss taken off per bit\n(nats per coded bit per entry)"),
    ("acc_per_bit", "exact_acc_per_bit", 100.0,
     "accuracy added per bit\n(points per coded bit per entry)"),
)  # fmt: skip
#: The columns of the table :func:`figure_y8` returns, one row per panel, series and M.
Y8_COLUMNS = [
    "metric", "series", "compressor", "rate", "M", "bits_per_entry", "mean", "lo", "hi",
    "units", "design", "ceiling",
]  # fmt: skip
#: How far apart along x (in M) neighbouring series are drawn, so that their intervals do
#: not cover each other.
OFFSET = 0.09
#: A series' look per quantizer kind: (line style, open markers).
_KIND_LOOK = {"lloyd": ("-", False), "kmeans": ("--", True)}
#: A rate's marker (1 bit, 2 bits, ...) and its reference line's grey.
_RATE_MARKERS = ("o", "s", "^", "D")
_RATE_GREYS = (GREYS[1], GREYS[2], GREYS[0])


@dataclass(frozen=True)
class Y8Series:
    """One line of Y8: a compressor at one rate, drawn against M."""

    compressor: str
    kind: str
    rate: int
    label: str


def _spec_of(name: str, specs: Mapping[str, Mapping[str, Any]] | None) -> Mapping[str, Any]:
    """The spec of compressor ``name``'s first variant (empty without one)."""
    for label, spec in (specs or {}).items():
        if label.startswith(f"{name}/"):
            return spec
    return {}


def y8_series(
    present: Sequence[tuple[str, int]],
    quantizers: Mapping[str, str],
    *,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    baseline: str | None = None,
    rates: Sequence[int] = RATES,
) -> list[Y8Series]:
    """Y8's series in config order, GenNorm Lloyd's first: every (compressor, rate) of
    ``present`` whose compressor is a Lloyd quantizer of the GenNorm law (fitted the default
    way) or a weighted k-means, on the baseline's kept set (``kept_sets``: compressor -> kept
    set; without them or a baseline, any kept set), at a rate of ``rates``.

    >>> kinds = {"uniform": "uniform", "g": "lloyd", "g10": "lloyd", "k": "kmeans"}
    >>> specs = {"g/R1_M0": {"quantizer": "lloyd", "family": "gennorm"},
    ...          "g10/R1_M0": {"quantizer": "lloyd", "family": "gennorm"},
    ...          "k/R1_M2": {"quantizer": "kmeans"}}
    >>> kept = {"uniform": "top-K 45.2%", "g": "top-K 45.2%", "g10": "top-K 10%",
    ...         "k": "top-K 45.2%"}
    >>> [s.label for s in y8_series([("k", 1), ("g", 2), ("g", 1), ("g10", 1), ("g", 4)],
    ...     kinds, specs=specs, kept_sets=kept, baseline="uniform")]
    ['GenNorm Lloyd, 1 bit', 'GenNorm Lloyd, 2 bits', 'weighted k-means, 1 bit']
    """
    kept = dict(kept_sets or {})
    home = kept.get(baseline) if baseline is not None else None
    chosen: list[tuple[int, int, Y8Series]] = []
    order = {name: i for i, name in enumerate(quantizers)}
    ranked = sorted(dict.fromkeys(present), key=lambda k: (order.get(k[0], len(order)), k))
    for name, rate in ranked:
        kind = quantizers.get(name, name)
        spec = _spec_of(name, specs)
        if kind == "lloyd":
            family = spec.get("family", "gennorm" if name == "gennorm" else None)
            if family != "gennorm" or spec.get("lloyd_fit") == "survivors":
                continue
        elif kind != "kmeans":
            continue
        if (home is not None and kept.get(name, home) != home) or int(rate) not in rates:
            continue
        head = curve_name(name, None, specs, kept=False) if spec else names.kind(kind)
        label = f"{head}, {rate:g} bit" + ("" if rate == 1 else "s")
        if any(c[2].label == label for c in chosen):  # one line a name: the first in order
            log.info("Y8: %s R%d left out (%s is drawn from another compressor)", name, rate,
                     label)  # fmt: skip
            continue
        chosen.append((order.get(name, len(order)), int(rate),
                       Y8Series(name, kind, int(rate), label)))  # fmt: skip
    chosen.sort(key=lambda c: (c[2].kind != "lloyd", c[0], c[1]))
    return [s for _, _, s in chosen]


def _per_seed(data: pd.DataFrame) -> pd.DataFrame:
    """Per variant and trajectory (rounds averaged): the bits per entry and the gains per
    bit of :data:`METRICS` (accuracy as a fraction)."""
    bits = data["bits_per_entry"]
    data = data.assign(
        loss_per_bit=(data["start_loss"] - data["test_loss"]) / bits,
        exact_loss_per_bit=(data["start_loss"] - data["exact_loss"]) / bits,
        acc_per_bit=(data["test_acc"] - data["start_acc"]) / bits,
        exact_acc_per_bit=(data["exact_acc"] - data["start_acc"]) / bits,
    )
    return seed_means(data, ["bits_per_entry", *(c for m in METRICS for c in m[:2])])


def m_points(data: pd.DataFrame, series: Sequence[Y8Series]) -> pd.DataFrame:
    """The numbers Y8 plots (columns :data:`Y8_COLUMNS`), one row per metric
    (:data:`METRICS`), series and M present in ``data`` (:func:`gradcomp.lossy.paper_y_tables.
    one_round_data`'s frame): the mean bits per entry, the metric's mean and 95% interval
    over the design's units (NaN ends: fewer than two units), the number of units and the
    design, and ``ceiling``, the mean of the uncompressed aggregate's gain over the same
    bits. Accuracy in points (percent)."""
    per_seed = _per_seed(data)
    rows = []
    for metric, ceiling, scale, _ in METRICS:
        for s in series:
            own = per_seed[(per_seed["compressor"] == s.compressor) & (per_seed["rate"] == s.rate)]
            for M, at in own.groupby("M", sort=True):
                t = nested_test(scale * at[metric], at["warm_start"])
                top = nested_test(scale * at[ceiling], at["warm_start"])
                rows.append({
                    "metric": metric, "series": s.label, "compressor": s.compressor,
                    "rate": s.rate, "M": int(M),
                    "bits_per_entry": float(at["bits_per_entry"].mean()), "mean": t.mean,
                    "lo": t.lo, "hi": t.hi, "units": t.units, "design": t.design,
                    "ceiling": top.mean,
                })  # fmt: skip
    return pd.DataFrame(rows, columns=Y8_COLUMNS)


def figure_y8(
    tables: Sequence[str | Path],
    quantizers: Mapping[str, str],
    png: str | Path,
    *,
    model: str,
    source: str = "",
    specs: Mapping[str, Mapping[str, Any]] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    baseline: str | None = None,
    curves: Mapping[str, str] | None = None,
    rates: Sequence[int] = RATES,
) -> pd.DataFrame:
    """Y8: against M (x), the test loss (top) and accuracy (bottom) one round bought per
    coded bit per entry, a line per series (:func:`y8_series`: GenNorm Lloyd solid, filled
    marks; weighted k-means dashed, open; a marker per rate; each in the colour its
    compressor has in every paper-Y figure), each point the mean and 95% interval over the
    design's units, the series set a little apart along x so that their intervals do not
    cover each other; a dotted grey line per rate through the uncompressed aggregate's gain
    over the same bits (the mean over the rate's series at each M). ``quantizers``: name ->
    kind in config order; the title names ``model`` and ``source`` (the data line). Returns
    the plotted numbers (:func:`m_points`)."""
    title = question_title("Y8", model, source)
    return draw_y8(one_round_data(tables), quantizers, png, title=title, specs=specs,
                   kept_sets=kept_sets, baseline=baseline, curves=curves,
                   rates=rates)  # fmt: skip


def draw_y8(
    data: pd.DataFrame,
    quantizers: Mapping[str, str],
    png: str | Path,
    *,
    title: str,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    baseline: str | None = None,
    curves: Mapping[str, str] | None = None,
    rates: Sequence[int] = RATES,
) -> pd.DataFrame:
    """Y8 from the one-round rows ``data`` (:func:`gradcomp.lossy.paper_y_tables.
    one_round_data`'s frame), as :func:`figure_y8` describes it; returns the plotted numbers."""
    set_theme()
    present = list(zip(data["compressor"], data["rate"].astype(int), strict=True))
    series = y8_series(present, quantizers, specs=specs, kept_sets=kept_sets,
                       baseline=baseline, rates=rates)  # fmt: skip
    table = m_points(data, series)
    per_seed = _per_seed(data)
    if not series:
        log.warning("Y8: no GenNorm Lloyd or weighted k-means configuration at %s bits", rates)
    styles = variant_styles(data, dict(quantizers), curves, specs)
    colour = {}
    for s in series:  # the compressor's own colour at its fullest shade (its largest M)
        top = max(k[2] for k in styles if k[0] == s.compressor)
        colour[s.compressor] = styles[(s.compressor, s.rate, top)].color
    Ms = sorted(table["M"].unique()) if len(table) else [0]
    fig, axes = plt.subplots(2, 1, figsize=(facets.FIG_WIDTH, 7.2), sharex=True)
    fewest: list[int] = []
    for ax, (metric, _, _, ylabel) in zip(axes, METRICS, strict=True):
        rows = table[table["metric"] == metric]
        fewest += _draw_metric(ax, rows, series, colour, per_seed, metric)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.tick_params(labelsize=8)
        if not series:
            ax.text(0.5, 0.5, "no GenNorm Lloyd or weighted k-means configuration\n"
                    "on the baseline's kept set at these rates", ha="center", va="center",
                    transform=ax.transAxes, fontsize=9)  # fmt: skip
    ticks = np.arange(np.floor(min(Ms)), np.ceil(max(Ms)) + 1)
    axes[1].set_xticks(ticks)
    axes[1].set_xticklabels([f"{m:g}" for m in ticks])
    axes[1].set_xlim(ticks[0] - 0.4, ticks[-1] + 0.4)
    axes[1].set_xlabel(r"M, the weight $|g|^M$ of the quantizer's distortion", fontsize=9)
    for ax in axes:
        ax.grid(axis="x", visible=False)
    facets.legend_below(fig, [axes[0]], ncol=2, extra=_mark_handles(table, fewest))
    facets.title(fig, title)
    save_figure(fig, png, replicates=min(fewest) if fewest else None)
    return table


def _draw_metric(ax, rows, series, colour, per_seed, metric) -> list[int]:
    """One panel of Y8: the series of ``rows`` (:func:`m_points`' rows of ``metric``) set
    apart along x by :data:`OFFSET`, each point's interval or its units' values, and the
    dotted line per rate; the units behind each interval drawn."""
    offsets = OFFSET * (np.arange(len(series)) - (len(series) - 1) / 2)
    rate_list = sorted({s.rate for s in series})
    fewest: list[int] = []
    for s, dx in zip(series, offsets, strict=True):
        own = rows[rows["series"] == s.label].sort_values("M")
        ls, hollow = _KIND_LOOK.get(s.kind, ("-", False))
        c = colour[s.compressor]
        marker = _RATE_MARKERS[rate_list.index(s.rate) % len(_RATE_MARKERS)]
        x = own["M"].to_numpy(float) + dx
        ax.plot(x, own["mean"], color=c, ls=ls, lw=1.4, marker=marker, ms=6,
                mfc="white" if hollow else c, mew=1.4, label=s.label)  # fmt: skip
        for xi, p in zip(x, own.itertuples(index=False), strict=True):
            if p.units >= MIN_REPLICATES and np.isfinite(p.lo):
                ax.errorbar([xi], [p.mean], yerr=[[p.mean - p.lo], [p.hi - p.mean]],
                            color=c, ls="none", lw=1.1, capsize=2.5)  # fmt: skip
                fewest.append(int(p.units))
            else:
                units = _units(per_seed, s, p.M, metric)
                ax.plot(np.full(len(units), xi), units, ls="none", marker="x", ms=5,
                        color=c, label=s.label)  # fmt: skip
    for r in rate_list:
        ref = rows[rows["rate"] == r].groupby("M")["ceiling"].mean()
        grey = _RATE_GREYS[rate_list.index(r) % len(_RATE_GREYS)]
        ax.plot(ref.index, ref.values, color=grey, ls=":", lw=1.6, zorder=1,
                marker="_" if len(ref) == 1 else "", ms=14,
                label=_ceiling_label(r))  # fmt: skip
    return fewest


def _mark_handles(table: pd.DataFrame, fewest: Sequence[int]) -> dict[str, Any]:
    """Legend entries for Y8's marks: an interval (``fewest``: the units behind each one
    drawn) and a point's units drawn alone."""
    design = table["design"].iloc[0] if len(table) else "warm starts"
    counts = sorted(set(fewest))
    span = f"{counts[0]} " if len(counts) == 1 else ""
    extra: dict[str, Any] = {}
    if fewest:
        extra[f"mean and 95% interval over {span}{design}"] = Line2D(
            [], [], color="0.3", marker="|", ms=8, ls="none"
        )
    if len(fewest) < len(table):
        extra[f"each unit (fewer than {MIN_REPLICATES} {design}: no interval)"] = Line2D(
            [], [], color="0.3", marker="x", ms=5, ls="none"
        )
    return extra


def _ceiling_label(rate: int) -> str:
    """The legend's words for the dotted line of ``rate``."""
    return f"uncompressed aggregate's gain over the bits of {rate:g} bit" + (
        "" if rate == 1 else "s"
    )


def _units(per_seed: pd.DataFrame, s: Y8Series, M: int, metric: str) -> np.ndarray:
    """The units' values of ``metric`` of series ``s`` at ``M`` (a point without interval;
    ``per_seed``: :func:`_per_seed`'s frame)."""
    scale = next(m[2] for m in METRICS if m[0] == metric)
    at = per_seed[(per_seed["compressor"] == s.compressor) & (per_seed["rate"] == s.rate)
                  & (per_seed["M"] == M)]  # fmt: skip
    return unit_values(scale * at[metric], at["warm_start"])[0]
