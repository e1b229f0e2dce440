"""Paper Y's figures from the one-round paired study: Y6 (one row per variant, paired
differences to the baseline) and Y7 (rate curves, a line per compressor and M).

Every interval is over the design's units (warm starts where there are several, else seeds;
:mod:`gradcomp.lossy.nested`); styles and panels as in :mod:`gradcomp.lossy.figures`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter

from gradcomp import plots
from gradcomp.compression.specs import variant_label
from gradcomp.lossy import facets
from gradcomp.lossy.figures import POINTS_PER_MBIT, config_order, finish
from gradcomp.lossy.matched_bits import lower_hull
from gradcomp.lossy.rate_curves import curve_points, drop_dominated
from gradcomp.lossy.styles import variant_styles
from gradcomp.lossy.tables import one_round_data, t4_table
from gradcomp.palette import MARKERS

__all__ = ["Y7_PARTS", "figure_y6", "figure_y7", "y7_panels"]


def figure_y6(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    png: str | Path,
    *,
    baseline: str,
    title: str,
    pairable=None,
    kept_sets=None,
    curves=None,
) -> None:
    """Y6: the one-round study per variant (mean and 95% interval over the design's units,
    the rounds of a trajectory averaged first), one row per variant grouped by compressor
    (config order, then R and M): the accuracy a round gains per uplink bit (left) and the
    test-loss increase against the uncompressed aggregate (right); ``*``: the paired
    difference to ``baseline`` at the same rate on the same kept set is significant after
    Holm's adjustment over T4's family (``pairable``, ``kept_sets``, ``curves``: as T4's).
    The height grows with the number of variants, the width does not."""
    plots.set_theme()
    data = one_round_data(tables)
    summary = config_order(
        t4_table(tables, baseline=baseline, pairable=pairable, kept_sets=kept_sets,
                 curves=curves),
        quantizers,
    )  # fmt: skip
    styles = variant_styles(data, quantizers, curves)
    keys = list(zip(summary["compressor"], summary["rate"], summary["M"], strict=True))
    n = len(keys)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 1.4 + 0.16 * n), sharey=True, squeeze=False)
    axes = axes[0]
    metrics = (  # (T4 column, its paired column, axis label, scale to the label's unit)
        ("gain_per_bit", "gain_per_bit",
         "round's accuracy gain per Mbit of uplink\n(accuracy points per Mbit)", POINTS_PER_MBIT),
        ("loss_increase", "test_loss", "test loss - uncompressed aggregate's\n(nats)", 1.0),
    )  # fmt: skip
    groups = summary["compressor"].ne(summary["compressor"].shift()).cumsum().to_numpy()
    for ax, (metric, paired, xlabel, scale) in zip(axes, metrics, strict=True):
        for i, (key, (_, r)) in enumerate(zip(keys, summary.iterrows(), strict=True)):
            style = styles[key]
            mean, lo, hi = (scale * r[f"{metric}_{end}"] for end in ("mean", "lo", "hi"))
            ax.errorbar(
                [mean], [i], xerr=[[mean - lo], [hi - mean]] if np.isfinite(lo) else None,
                color=style.color, marker=style.marker or "o", capsize=2, ls="none", ms=4,
            )  # fmt: skip
            if bool(r.get(f"{paired}_vs_{baseline}_significant", False)):
                ax.annotate("*", (hi if np.isfinite(hi) else mean, i), xytext=(2, -3),
                            textcoords="offset points", fontsize=9, color=style.color)  # fmt: skip
            if groups[i] % 2 == 0:  # every other compressor on a light band
                ax.axhspan(i - 0.5, i + 0.5, color="0.93", lw=0, zorder=0)
        ax.axvline(0.0, color="0.6", lw=0.8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(range(n))
    # the knob beside the measured bits per entry it spends (coded, mean over seeds)
    bits = summary["bits_per_entry_mean"].to_numpy()
    axes[0].set_yticklabels(
        [f"{styles[k].label} ({b:.2g} b/entry)" for k, b in zip(keys, bits, strict=True)],
        fontsize=8,
    )
    full = {k[0]: styles[k].color for k in sorted(keys, key=lambda k: k[2])}  # largest M
    for label, key in zip(axes[0].get_yticklabels(), keys, strict=True):
        label.set_color(full[key[0]] if full[key[0]] != "#999999" else "0.4")
    axes[0].set_ylim(n - 0.5, -0.5)
    finish(fig, axes, title, png)


def _operational_curve(curves, names) -> list[tuple[float, float]]:
    """The lower convex hull over every configuration of the compressors ``names`` (mean
    bits, mean loss increase: :func:`gradcomp.lossy.matched_bits.lower_hull`, the verdicts'
    ``frontier``), as (bits, loss increase) by bits; [] without points."""
    points = [(t[0], t[2][0]) for (n, _), stats in curves.items() if n in names for t in stats]
    if not points:
        return []
    bits, loss = (np.array(v) for v in zip(*points, strict=True))
    on = lower_hull(bits, loss)
    order = np.argsort(bits[on], kind="stable")
    return list(zip(bits[on][order], loss[on][order], strict=True))


def _interval(rows, column: str) -> tuple[float, float, float]:
    """(mean, lo, hi) of ``column`` over the design's units (warm starts where there are
    several, else seeds)."""
    from gradcomp.lossy.nested import nested_test

    t = nested_test(rows[column], rows["warm_start"])
    return t.mean, t.lo, t.hi


#: Y7's parts, one question each: (file suffix, what its panels hold); the workflow writes
#: ``Y7{suffix}_{model}.png`` for each.
Y7_PARTS = (
    ("a", "the quantizers on the baseline's kept set"),
    ("b", "the dense compressors of the field"),
    ("c", "the other kept sets"),
)


def y7_panels(
    names: Sequence[str],
    kept_sets: dict[str, str],
    *,
    baseline: str | None,
    base_names: set[str],
    curves: dict[str, str] | None = None,
) -> dict[str, list[tuple[str | None, list[str]]]]:
    """Y7's panels per part (:data:`Y7_PARTS`), each (title, compressors drawn in it):
    part ``a`` the compressors on the baseline's kept set (the entries joining its curve in
    one panel, the baseline's), ``b`` the dense ones, ``c`` every other kept set (the
    baseline's curve on those sets in one panel). ``kept_sets``: compressor -> kept set
    (:func:`gradcomp.lossy.matched_bits.kept_set_of`); ``names`` in config order; ``curves``
    (name -> its rate curve): an entry that joins another's curve on the same kept set is
    drawn in that curve's panel.

    >>> y7_panels(["u", "u10", "g", "q"], {"u": "top-K 45.2%", "u10": "top-K 10%",
    ...     "g": "top-K 45.2%", "q": "dense"}, baseline="u", base_names={"u", "u10"})
    {'a': [('u', ['u']), ('g', ['g'])], 'b': [('q', ['q'])], 'c': [('u: other kept sets', ['u10'])]}
    >>> y7_panels(["u", "g", "g15"], dict.fromkeys(["u", "g", "g15"], "top-K 45.2%"),
    ...     baseline="u", base_names={"u"}, curves={"g15": "g"})["a"]
    [('u', ['u']), ('g', ['g', 'g15'])]
    """
    home = kept_sets.get(baseline, "") if baseline is not None else ""
    # a title is None where the baseline's panel has no baseline to name
    parts: dict[str, list[tuple[str | None, list[str]]]] = {suffix: [] for suffix, _ in Y7_PARTS}
    joined: dict[str, list[str]] = {"a": [], "c": []}
    for name in names:
        where = kept_sets.get(name, "")
        part = "a" if where == home or not home else "b" if where == "dense" else "c"
        if name in base_names and part != "b":
            joined[part].append(name)
            if joined[part] == [name]:
                title = baseline if part == "a" else f"{baseline}: other kept sets"
                parts[part].append((title, joined[part]))
        else:
            curve = (curves or {}).get(name, name)
            home_panel = [p for p in parts[part] if p[0] == curve] if curve != name else []
            if home_panel:
                home_panel[0][1].append(name)
            else:
                parts[part].append((name, [name]))
    return parts


def figure_y7(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    pngs: dict[str, str | Path],
    *,
    titles: dict[str, str],
    kept_sets: dict[str, str] | None = None,
    baseline: str | None = None,
    curves: dict[str, str] | None = None,
) -> None:
    """Y7: rate curves of the one-round study in three parts (:data:`Y7_PARTS`; ``pngs`` and
    ``titles``: suffix -> file, title), a line per compressor and M through its rates: the
    test-loss increase against the uncompressed aggregate (nats: the verdicts' measure; the
    accuracy of the same configurations is in T4 and Y6), over the measured uplink bits per
    entry (coded, log scale); mean and 95% interval over the design's units (warm starts, each the
    mean of its seeds; :mod:`gradcomp.lossy.nested`). A configuration that another of its
    own curve beats in mean bits and loss increase is drawn hollow, off its line. Every
    panel holds the configurations of ``baseline``'s curve (every compressor that joins it
    through ``curves``, small grey points, without intervals), its operational curve (the
    lower convex hull of all its configurations, dotted: what the verdicts' ``frontier``
    compares with) and the references (grey marks). ``kept_sets``: compressor -> kept set
    (default: all on the baseline's). A part without compressors says so in its one panel."""
    from gradcomp.lossy.paired import seed_means

    plots.set_theme()
    data = one_round_data(tables)
    per_seed = seed_means(data, ["bits_per_entry", Y7_METRIC[0]])
    joins: dict[Any, str] = dict(curves or {})  # get() is also asked for baseline None
    dominated = {lb for labels in drop_dominated(curve_points(per_seed, joins),
                                                 "loss_increase")[1].values()
                 for lb in labels.split(",")}  # fmt: skip
    styles = variant_styles(data, quantizers, joins)
    base_curve = joins.get(baseline, baseline)
    base_names = {n for n in data["compressor"].unique() if joins.get(n, n) == base_curve}
    stats = {}  # (name, M) -> (bits per entry, rate, (mean, lo, hi) of Y7_METRIC), by bits
    for (name, M), curve in per_seed.groupby(["compressor", "M"]):
        stats[(name, int(M))] = sorted(
            (at["bits_per_entry"].mean(), rate, _interval(at, Y7_METRIC[0]))
            for rate, at in curve.groupby("rate")
        )
    front = _operational_curve(stats, base_names)
    names = facets.compressors(data, quantizers)
    panels = y7_panels(names, dict(kept_sets or {}), baseline=baseline, base_names=base_names,
                       curves=joins)  # fmt: skip
    refs = list(dict.fromkeys(config_order(facets.references(data, quantizers),
                                           quantizers)["compressor"]))  # fmt: skip
    bits = [t[0] for curve in stats.values() for t in curve]
    xlim = (min(bits) / 1.3, max(bits) * 1.3)
    draw = _Y7Drawer(stats, styles, dominated, refs, baseline, base_names, front, xlim)
    for suffix, _ in Y7_PARTS:
        draw.figure(panels[suffix], titles[suffix], pngs[suffix])


#: Y7's y axis: linear within +-Y7_LINEAR nats, logarithmic past it, ticks at Y7_TICKS.
Y7_LINEAR = 0.01
#: What Y7's panels plot: (column of the one-round tables, axis label).
Y7_METRIC = (
    "loss_increase",
    f"test loss - uncompressed aggregate's\n(nats; linear within ±{Y7_LINEAR:g})",
)
Y7_TICKS = (-0.1, -0.01, -0.005, 0.0, 0.005, 0.01, 0.1, 1.0)


class _Y7Drawer:
    """Draws one Y7 part: the shared curves, references and limits of every part."""

    def __init__(self, stats, styles, dominated, refs, baseline, base_names, front, xlim):
        self.stats, self.styles, self.dominated = stats, styles, dominated
        self.refs, self.baseline, self.base_names = refs, baseline, base_names
        self.front, self.xlim = front, xlim

    def curve(self, ax, name, M, ls="-", bars=True, **kw):
        stats = self.stats[(name, M)]
        x = np.array([t[0] for t in stats])
        mean, lo, hi = (np.array([t[2][j] for t in stats]) for j in range(3))
        out = np.array([variant_label(name, t[1], M) in self.dominated for t in stats])
        err = np.array([mean - lo, hi - mean]) if bars and np.isfinite(lo).all() else None
        on = ~out
        ax.errorbar(x[on], mean[on], yerr=None if err is None else err[:, on], capsize=2, ms=4,
                    ls=ls if on.sum() > 1 else "none", **kw)  # fmt: skip
        if out.any():  # dominated within its curve: hollow, off the line
            kw = {**kw, "label": None}
            ax.errorbar(x[out], mean[out], yerr=None if err is None else err[:, out], capsize=2,
                        ms=4, ls="none", mfc="white", **kw)  # fmt: skip

    def figure(self, panels, title, png) -> None:
        fig, axes = facets.grid(len(panels), width=3.3, height=2.7, sharey=True)
        if not panels:
            axes[0].text(0.5, 0.5, "no compressor of this configuration\nfalls in this part",
                         ha="center", va="center", transform=axes[0].transAxes)  # fmt: skip
        for ax, (panel, own) in zip(axes, panels, strict=False):
            for j, ref in enumerate(self.refs):
                for n, M in [c for c in self.stats if c[0] == ref]:
                    style = self.styles[(ref, self.stats[(n, M)][0][1], M)]
                    self.curve(ax, n, M, color=style.color, marker=MARKERS[j % len(MARKERS)],
                               lw=1.0, label=ref)  # fmt: skip
            if self.baseline is not None and not set(own) <= self.base_names:
                # the baseline's configurations as faint points, without their intervals
                for n, M in [c for c in self.stats if c[0] in self.base_names]:
                    self.curve(ax, n, M, ls="none", bars=False, color="0.55", marker=".",
                               label=f"{self.baseline}'s configurations")  # fmt: skip
            if self.front:
                ax.plot(*zip(*self.front, strict=True), color="0.15", ls=":", lw=1.6,
                        label=f"{self.baseline}'s operational curve")  # fmt: skip
            keys = []
            for n, M in [c for c in self.stats if c[0] in own]:
                first = self.styles[(n, self.stats[(n, M)][0][1], M)]
                self.curve(ax, n, M, color=first.color, marker=first.marker or "o", lw=1.3)
                keys += [(n, r, M) for _, r, *_ in self.stats[(n, M)]]
            facets.family_legend(ax, own[0], keys, self.styles, rates=False, title=panel)
            ax.axhline(0.0, color="0.6", lw=0.8)
            ax.set_xscale("log")
            ax.set_xlim(*self.xlim)
            # linear near zero (where the quantizers differ), logarithmic past Y7_LINEAR
            # (uniform at one bit per kept value loses ten times that)
            ax.set_yscale("symlog", linthresh=Y7_LINEAR, linscale=1.5)
            ax.yaxis.set_major_locator(FixedLocator(Y7_TICKS))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        fig.supylabel(Y7_METRIC[1], fontsize=9)
        fig.supxlabel("measured uplink bits per entry (coded, all users)", fontsize=9)
        finish(fig, axes, title, png)
