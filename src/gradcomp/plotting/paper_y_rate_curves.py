"""Paper Y's figure Y7, from the one-round paired study: rate curves, the test loss each
configuration adds over the uncompressed aggregate at the bits it spends, in three figures,
one question each (:data:`Y7_PARTS`).

``figure_y7`` reads the one-round tables and hands them to ``draw_y7``, which draws and writes
each part with :func:`gradcomp.plotting.common.save_figure` (:mod:`gradcomp.plotting`).
Points, intervals and units as in :mod:`gradcomp.plotting.paper_y_points`; panels and widths
as in :mod:`gradcomp.plotting.facets`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from gradcomp.lossy.paper_y_tables import one_round_data
from gradcomp.plotting import facets
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import GREYS, MARKERS, SERIES
from gradcomp.plotting.paper_y_points import (
    METRIC,
    Point,
    configuration_points,
    fewest,
    mark_handles,
)
from gradcomp.plotting.styles import GUIDE, curve_name, is_reference, shade, variant_styles
from gradcomp.statistics.matched_bits import lower_hull, pareto_front

__all__ = ["Y7_PANELS", "Y7_PARTS", "draw_y7", "figure_y7", "y7_panels"]

#: Y7's figures, one question each (:data:`gradcomp.plotting.catalogue.FIGURES`): (file
#: suffix, what its panels hold).
Y7_PARTS = (
    ("a", "the quantizers on the baseline's kept set"),
    ("b", "the field's dense compressors"),
    ("c", "the curves that keep fewer entries"),
)


#: The most panels of a Y7 figure (wide enough for a legend inside each).
Y7_PANELS = 4


def y7_panels(
    names: Sequence[str],
    kept_sets: Mapping[str, str],
    *,
    baseline: str | None,
    curves: Mapping[str, str] | None = None,
) -> dict[str, list[list[str]]]:
    """Y7's panels per part (:data:`Y7_PARTS`), each a list of the rate curves it draws:
    part ``a`` the curves on the baseline's kept set (the baseline's own left out: it is in
    every panel), ``b`` the dense ones, ``c`` every curve that has an entry on another kept
    set (its entries on every kept set in its panel; the baseline's first). At most
    :data:`Y7_PANELS` panels a part: neighbouring curves (config order) share one where
    there are more. ``names``: the compressors in config order;
    ``kept_sets``: compressor -> kept set; ``curves``: compressor -> its rate curve.

    >>> y7_panels(["u", "u10", "g", "q"], {"u": "top-K 45.2%", "u10": "top-K 10%",
    ...     "g": "top-K 45.2%", "q": "dense"}, baseline="u", curves={"u10": "u"})
    {'a': [['g']], 'b': [['q']], 'c': [['u']]}
    """
    joins = dict(curves or {})
    home = kept_sets.get(baseline, "") if baseline is not None else ""
    base_curve = joins.get(baseline, baseline) if baseline is not None else None
    order = list(dict.fromkeys(joins.get(n, n) for n in names))
    where: dict[str, set[str]] = {c: set() for c in order}
    for name in names:
        where[joins.get(name, name)].add(kept_sets.get(name, home))
    parts: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    for curve in order:
        kept = where[curve]
        if kept - {home, "dense"}:
            parts["c"].append(curve)
        if curve == base_curve:
            continue
        if home in kept or not home:
            parts["a"].append(curve)
        if "dense" in kept:
            parts["b"].append(curve)
    most = Y7_PANELS
    if base_curve in parts["c"]:  # the baseline's own kept sets first
        parts["c"].remove(base_curve)
        parts["c"].insert(0, base_curve)
    return {
        suffix: [[curves_[i] for i in run] for run in facets.partition([1] * len(curves_), most)]
        for suffix, curves_ in parts.items()
    }


@dataclass
class Series:
    """One line of a Y7 panel: configurations joined in order of bits, with its look."""

    label: str
    points: list[Point]
    color: str
    marker: str
    linestyle: str = "-"

    def handle(self) -> Line2D:
        """The series' legend handle."""
        return Line2D([], [], color=self.color, marker=self.marker, ls=self.linestyle, ms=5)


def figure_y7(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    pngs: Mapping[str, str | Path],
    *,
    model: str,
    source: str = "",
    kept_sets: Mapping[str, str] | None = None,
    baseline: str | None = None,
    curves: Mapping[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Y7: rate curves of the one-round study in three figures (:data:`Y7_PARTS`; ``pngs``: suffix
    -> file; the titles name ``model``, the question and ``source``): the test loss each
    configuration adds over the uncompressed aggregate (nats, the verdicts' measure) at its measured
    uplink bits per entry (coded, log axis), a line per curve and M through its configurations in
    order of bits; mean and 95% interval over the design's units where there are enough
    (:mod:`~gradcomp.plotting.paper_y_points`), else the runs' values. Every panel of ``a`` holds
    the baseline's curve on its own kept set (grey, means), every panel of ``b`` its configurations
    on every kept set (grey points) and their operational curve (the lower convex hull, dotted: the
    verdicts' ``frontier``); ``c`` colours the kept sets, the baseline's kept set included. At most
    :data:`Y7_PANELS` panels a figure, a legend in each. ``kept_sets``: compressor -> kept set;
    ``specs``: variant label -> spec (readers' names). A part without curves draws the baseline and
    says so."""
    draw_y7(one_round_data(tables), quantizers, pngs, model=model, source=source,
            kept_sets=kept_sets, baseline=baseline, curves=curves, specs=specs)  # fmt: skip


def draw_y7(
    data: pd.DataFrame,
    quantizers: dict[str, str],
    pngs: Mapping[str, str | Path],
    *,
    model: str,
    source: str = "",
    kept_sets: Mapping[str, str] | None = None,
    baseline: str | None = None,
    curves: Mapping[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Y7 from the one-round rows ``data`` (:func:`gradcomp.lossy.paper_y_tables.
    one_round_data`'s frame), as :func:`figure_y7` describes it."""
    set_theme()
    data = data[[not is_reference(quantizers.get(c, c)) for c in data["compressor"]]]
    points = configuration_points(data, METRIC[0])
    joins = dict(curves or {})
    kept = {n: (kept_sets or {}).get(n, "") for n in data["compressor"].unique()}
    styles = variant_styles(data, quantizers, joins, specs)
    names = facets.compressors(data, quantizers)
    panels = y7_panels(names, kept, baseline=baseline, curves=joins)
    draw = _Y7(points, styles, joins, kept, baseline, specs, names)
    for suffix, _ in Y7_PARTS:
        title = question_title(f"Y7{suffix}", model, source)
        draw.figure(suffix, panels[suffix], title, pngs[suffix])


class _Y7:
    """Draws Y7's figures from the configurations' points."""

    def __init__(self, points, styles, joins, kept, baseline, specs, names):
        self.points, self.styles, self.joins, self.kept = points, styles, joins, kept
        self.baseline, self.specs, self.names = baseline, specs, names
        self.home = kept.get(baseline, "") if baseline is not None else ""
        self.base_curve = joins.get(baseline, baseline)

    def members(self, curve: str, kept: str | None = None) -> list[str]:
        """The compressors of ``curve`` (on kept set ``kept``), config order."""
        return [n for n in self.names if self.joins.get(n, n) == curve
                and (kept is None or self.kept.get(n, "") == kept)]  # fmt: skip

    def series(self, names: Sequence[str], M: int) -> list[Point]:
        return sorted((p for k, p in self.points.items() if k[0] in names and k[2] == M),
                      key=lambda p: p.bits)  # fmt: skip

    def Ms(self, names: Sequence[str]) -> list[int]:
        return sorted({k[2] for k in self.points if k[0] in names})

    def reference(self) -> Series | None:
        """The baseline's curve on its own kept set (means, grey)."""
        own = self.members(self.base_curve, self.home) if self.baseline is not None else []
        if not own:
            return None
        pts = [p for M in self.Ms(own) for p in self.series(own, M)]
        label = curve_name(self.baseline, 0, self.specs) + ", the baseline (means)"
        return Series(label, sorted(pts, key=lambda p: p.bits), GREYS[1], "o", "--")

    def curve_series(self, curve: str, kept: str) -> list[Series]:
        """A series per M of ``curve``'s compressors on ``kept``, in the curve's colours."""
        own = self.members(curve, kept)
        out: list[Series] = []
        for M in self.Ms(own):
            pts = self.series(own, M)
            first = self.styles[(pts[0].name, pts[0].rate, M)]
            label = curve_name(own[0], M, self.specs, kept=False)
            if any(s.label == label for s in out):  # a kind whose name leaves its M out
                label = f"{label} M={M:g}"
            out.append(Series(label, pts, first.color, MARKERS[len(out) % len(MARKERS)]))
        return out

    def kept_set_series(self, curve: str) -> list[Series]:
        """Part ``c``: a series per kept set and M of ``curve``, a colour per kept set (the
        same in every panel), a marker and line style per M; labelled by kept set and M (the
        panel's title names the curve)."""
        kept_sets = sorted({self.kept.get(n, "") for n in self.members(curve)}, key=_kept_order)
        Ms = self.Ms(self.members(curve))
        out = []
        for kept in kept_sets:
            own = self.members(curve, kept)
            for M in (m for m in Ms if self.series(own, m)):
                j = Ms.index(M)
                # the kept set's colour, light to full over M (as every figure shades M)
                colour = shade(SERIES[self.kept_index(kept) % len(SERIES)], j, len(Ms))
                many = len(Ms) > 1
                label = (f"M={M:g}, " if many else "") + kept
                out.append(Series(label, self.series(own, M), colour, MARKERS[j % len(MARKERS)],
                                  ["-", "--", ":"][j % 3]))  # fmt: skip
        return out

    def kept_index(self, kept: str) -> int:
        every = sorted(set(self.kept.values()), key=_kept_order)
        return every.index(kept) if kept in every else 0

    def figure(self, suffix: str, panels: list[list[str]], title: str, png) -> None:
        n = max(len(panels), 1)
        cols = 1 if n <= 3 else 2  # full-width panels stacked, else two a row
        rows = -(-n // cols)
        # about 2 inches of title, axis label and legend, the rest panels
        height = 2.1 + max(3.5, 2.4 * rows) + 0.3 * (rows - 1) if cols == 1 else 2.0 + 2.8 * rows
        fig, axes = facets.grid(n, height=height, ncols=cols, sharex=True, sharey=True)
        drawn: list[Point] = []
        shared: dict[str, Any] = {}
        if not panels:  # the baseline alone, and why
            ref = self.reference()
            if ref is not None:
                self.draw(axes[0], ref, lw=1.0, bars=False)
                shared[ref.label] = ref.handle()
            axes[0].text(0.5, 0.5, "no compressor of this configuration\nfalls in this part",
                         ha="center", va="center", transform=axes[0].transAxes,
                         fontsize=9)  # fmt: skip
        for ax, curves_ in zip(axes, panels, strict=False):
            heading = None
            if suffix == "c":  # the legend's title names the curve, its entries the kept sets
                lines = [s for c in curves_ for s in self.kept_set_series(c)]
                heading = " / ".join(curve_name(c, None, self.specs, kept=False) for c in curves_)
            else:
                kept = self.home if suffix == "a" else "dense"
                lines = [s for c in curves_ for s in self.curve_series(c, kept)]
                ref = self.reference() if suffix == "a" else None
                if ref is not None:
                    self.draw(ax, ref, lw=1.0, bars=False)
                    shared[ref.label] = ref.handle()
                if suffix == "b":
                    shared.update(self.operational(ax))
            for s in lines:
                drawn += self.draw(ax, s)
            handles = {s.label: s.handle() for s in lines}
            if handles:
                ax.legend(list(handles.values()), list(handles), loc="upper right", fontsize=8,
                          framealpha=0.9, handlelength=2.2, title=heading, title_fontsize=8,
                          ncol=2 if len(handles) > 3 and facets.FIG_WIDTH / len(axes) > 3
                          else 1)  # fmt: skip
            ax.axhline(0.0, color="0.6", lw=0.8, gid=GUIDE)
            ax.set_xscale("log")
        bits = [p.bits for p in drawn + self.shared_points(suffix, empty=not panels)]
        xlim = (min(bits) / 1.2, max(bits) * 1.2) if bits else (0.1, 10.0)
        axes[0].set_xlim(*xlim)
        facets.log_ticks(axes[0].xaxis, *xlim)
        for ax in axes:
            ax.tick_params(labelsize=8)
        if suffix == "a" and panels:
            self.clip_reference(axes, drawn)
        fig.supxlabel("uplink bits per entry (measured, coded, all users; log scale)", fontsize=9)
        fig.supylabel(METRIC[1], fontsize=9)
        beaten = any(ln.get_marker() not in ("x", "None") and ln.get_markerfacecolor() == "white"
                     for ax in axes for ln in ax.get_lines())  # fmt: skip
        marks = mark_handles(drawn, beaten)
        facets.legend_below(fig, [], ncol=2, extra={**shared, **marks})
        facets.title(fig, title)
        save_figure(fig, png, replicates=fewest(drawn))

    def clip_reference(self, axes, drawn: Sequence[Point]) -> None:
        """Part ``a``: the loss axis scaled to the quantizers (with their intervals and runs)
        where the baseline's curve climbs far above them (its one-bit point, ten times their
        loss); each baseline point above the axis is written at its top edge, an arrow and
        its value, not cut off unseen."""
        tops = [p.hi if p.interval else float(np.max(p.units)) for p in drawn]
        lows = [p.lo if p.interval else float(np.min(p.units)) for p in drawn]
        ref = self.shared_points("a")
        if not tops or not ref:
            return
        top, low = max(max(tops), 0.0), min(min(lows), 0.0)
        if max(p.mean for p in ref) <= top + 0.5 * (top - low):
            return
        limit = top + 0.3 * (top - low)
        axes[0].set_ylim(low - 0.08 * (top - low), limit)
        above = sorted((p for p in ref if p.mean > limit), key=lambda p: p.bits)
        groups: list[list[Point]] = []  # points closer than 10% in bits share one note
        for p in above:
            if groups and p.bits < groups[-1][0].bits * 1.1:
                groups[-1].append(p)
            else:
                groups.append([p])
        for ax in axes:
            for group in groups:
                text = ", ".join(f"{p.mean:.2g}" for p in group)
                ax.annotate(text, xy=(group[0].bits, limit), xytext=(0.02, 0.9),
                            textcoords="axes fraction", ha="left", fontsize=8,
                            color=GREYS[1],
                            arrowprops={"arrowstyle": "->", "color": GREYS[1]})  # fmt: skip

    def shared_points(self, suffix: str, empty: bool = False) -> list[Point]:
        """The points of the reference a part draws in every panel (for the x limits)."""
        if self.baseline is None or (suffix == "c" and not empty):
            return []
        kept = self.home if suffix != "b" else None
        own = self.members(self.base_curve, kept)
        return [p for M in self.Ms(own) for p in self.series(own, M)]

    def draw(self, ax, s: Series, lw: float = 1.6, bars: bool = True) -> list[Point]:
        """``s``'s configurations: the line joins, in order of bits, those no other of the
        line beats in both bits and mean (:func:`gradcomp.statistics.matched_bits.pareto_front`,
        T5's curve); the beaten ones are hollow, off the line. An interval where there are
        enough units, else each run's value (crosses)."""
        on = pareto_front([float(np.log2(p.bits)) for p in s.points], [p.mean for p in s.points])
        line = [p for p, o in zip(s.points, on, strict=True) if o]
        size = 7 if bars else 3.5
        ax.plot([p.bits for p in line], [p.mean for p in line], color=s.color, ls=s.linestyle,
                lw=lw, marker=s.marker, ms=size, label=s.label)  # fmt: skip
        off = [p for p, o in zip(s.points, on, strict=True) if not o]
        if off:
            ax.plot([p.bits for p in off], [p.mean for p in off], ls="none", marker=s.marker,
                    ms=size, mfc="white", color=s.color, label=s.label)  # fmt: skip
        if not bars:
            return []
        for p in s.points:
            if p.interval:
                ax.errorbar([p.bits], [p.mean], yerr=[[p.mean - p.lo], [p.hi - p.mean]],
                            color=s.color, ls="none", lw=0.9, capsize=2,
                            label=s.label)  # fmt: skip
            elif len(p.units) > 1:
                ax.plot(np.full(len(p.units), p.bits), p.units, ls="none", marker="x",
                        color=s.color, ms=7, mew=1.5, label=s.label)  # fmt: skip
        return list(s.points)

    def operational(self, ax) -> dict[str, Any]:
        """Part ``b``'s reference: the baseline's configurations on every kept set (grey
        points) and their lower convex hull (dotted); their legend handles."""
        own = self.members(self.base_curve) if self.baseline is not None else []
        pts = [p for M in self.Ms(own) for p in self.series(own, M)]
        if not pts:
            return {}
        name = curve_name(self.baseline, 0, self.specs, kept=False)
        dots = f"{name}, each kept set and level (means)"
        hull = f"{name}'s operational curve (lower convex hull)"
        ax.plot([p.bits for p in pts], [p.mean for p in pts], ls="none", marker="o", ms=3.5,
                color=GREYS[2], label=dots)  # fmt: skip
        out = {dots: ax.lines[-1]}
        bits = np.array([p.bits for p in pts])
        loss = np.array([p.mean for p in pts])
        on = lower_hull(bits, loss)
        order = np.argsort(bits[on], kind="stable")
        ax.plot(bits[on][order], loss[on][order], color="0.1", ls=":", lw=1.6, label=hull)
        out[hull] = ax.lines[-1]
        return out


def _kept_order(kept: str) -> tuple[int, float, str]:
    """Kept sets from the most entries kept to the fewest: dense, then top-K by share."""
    if kept == "dense":
        return (0, 0.0, kept)
    try:
        share = float(kept.rsplit(" ", 1)[-1].rstrip("%"))
    except ValueError:
        return (2, 0.0, kept)
    return (1, -share, kept)
