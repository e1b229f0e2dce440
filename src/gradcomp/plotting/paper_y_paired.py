"""Paper Y's figures from the one-round paired study: Y6 (one row per variant: the test loss
it adds, and what the verdicts decide about it) and Y7 (rate curves: the test loss each
configuration adds at the bits it spends), Y7 in three figures, one question each
(:data:`Y7_PARTS`).

Intervals are over the design's units (warm starts where there are several, else seeds;
:mod:`gradcomp.statistics.nested`) and drawn only where there are at least
:data:`MIN_REPLICATES` units; a configuration with fewer (the descriptive variants, run on
the first warm start only) shows its units' own values instead. Names are readers' names
(:mod:`gradcomp.names`), panels and widths as in :mod:`gradcomp.plotting.facets`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from gradcomp.lossy.paper_y_tables import one_round_data
from gradcomp.plotting import common as plots
from gradcomp.plotting import facets
from gradcomp.plotting.palette import GREYS, MARKERS, SERIES
from gradcomp.plotting.paper_y import config_order, finish
from gradcomp.plotting.styles import (
    GUIDE,
    curve_name,
    is_reference,
    reader_name,
    shade,
    variant_styles,
)
from gradcomp.statistics.matched_bits import lower_hull, pareto_front
from gradcomp.statistics.nested import nested_test, unit_values

__all__ = [
    "MIN_REPLICATES",
    "VERDICT_MARKS",
    "Y7_PARTS",
    "figure_y6",
    "figure_y7",
    "verdict_columns",
    "y7_panels",
]

#: The fewest independent units an interval is drawn from; fewer: the units themselves.
MIN_REPLICATES = 5
#: What Y6 and Y7 plot: (column of the one-round tables, axis label).
METRIC = ("loss_increase", "test loss minus the uncompressed aggregate's (nats)")


@dataclass
class Point:
    """One configuration of the one-round study: its mean bits per entry and the metric's
    mean, 95% interval and units' values over the design's units."""

    name: str
    rate: int
    M: int
    bits: float
    mean: float
    lo: float
    hi: float
    units: np.ndarray = field(repr=False)
    design: str = "warm starts"

    @property
    def interval(self) -> bool:
        """Whether an interval is drawn (enough units and a finite one)."""
        return len(self.units) >= MIN_REPLICATES and bool(np.isfinite(self.lo))


def _points(data: pd.DataFrame, metric: str) -> dict[tuple[str, int, int], Point]:
    """(compressor, rate, M) -> :class:`Point` of ``metric`` (rounds of a trajectory averaged
    first)."""
    from gradcomp.statistics.paired import seed_means

    per_seed = seed_means(data, ["bits_per_entry", metric])
    out = {}
    for (name, rate, M), rows in per_seed.groupby(["compressor", "rate", "M"]):
        t = nested_test(rows[metric], rows["warm_start"])
        units, design = unit_values(rows[metric], rows["warm_start"])
        key = (str(name), int(rate), int(M))
        out[key] = Point(*key, float(rows["bits_per_entry"].mean()), t.mean, t.lo, t.hi,
                         units, design)  # fmt: skip
    return out


def _fewest(points: Sequence[Point]) -> int | None:
    """The fewest units behind a drawn interval (None: no interval drawn)."""
    counts = [len(p.units) for p in points if p.interval]
    return min(counts) if counts else None


def _mark_labels(points: Sequence[Point]) -> tuple[str, str, str]:
    """The legend's words for an interval, for a configuration's runs drawn alone and for a
    configuration of one run."""
    many = [p for p in points if p.interval]
    design = (many or list(points))[0].design if points else "warm starts"
    counts = sorted({len(p.units) for p in many})
    span = f"{counts[0]} " if len(counts) == 1 else ""
    return (
        f"mean and 95% interval over {span}{design}",
        f"each run (fewer than {MIN_REPLICATES} {design}: no interval)",
        "no interval: a single run",
    )


def verdict_columns(
    verdicts: pd.DataFrame, specs: Mapping[str, Mapping[str, Any]] | None
) -> list[tuple[tuple[str, int, str], str]]:
    """The references the verdicts compare with, in the table's order: ((reference,
    reference M, match), readers' header).

    >>> table = pd.DataFrame({"reference": ["exact", "uniform"], "reference_M": [0, 0],
    ...                       "match": ["exact", "kept_set"]})
    >>> [h for _, h in verdict_columns(table, {"uniform/R1_M0": {"quantizer": "uniform"}})]
    ['vs uncompressed', 'vs uniform,\\nsame kept set']

    A question against one reference configuration (``reference_rate``) has its own column:

    >>> table = table.assign(reference_rate=[None, 1])
    >>> [h for _, h in verdict_columns(table, {"uniform/R1_M0": {"quantizer": "uniform"}})]
    ['vs uncompressed', 'vs uniform R1,\\nsame kept set']
    """
    out: dict[tuple[str, int, str], str] = {}
    for ref, ref_m, match, rate in zip(verdicts["reference"], verdicts["reference_M"],
                                       verdicts["match"], _reference_rates(verdicts),
                                       strict=True):  # fmt: skip
        key = _verdict_key(ref, ref_m, match, rate)
        if key in out:
            continue
        if match == "exact":
            out[key] = "vs uncompressed"
            continue
        name = curve_name(str(ref), int(ref_m), specs, kept=False)
        if rate is not None:  # one configuration of the reference, at its own bits
            name += f" R{rate}"
        where = "same kept set" if match == "kept_set" else "any kept set"
        out[key] = f"vs {name},\n{where}"
    return list(out.items())


def _reference_rates(verdicts: pd.DataFrame) -> list[int | None]:
    """Each verdict row's ``reference_rate`` (one reference configuration at its own bits),
    None for a question against a curve at the test's bits."""
    if "reference_rate" not in verdicts:
        return [None] * len(verdicts)
    rates = pd.to_numeric(verdicts["reference_rate"], errors="coerce")
    return [None if pd.isna(r) else int(r) for r in rates]


def _verdict_key(ref: Any, ref_m: Any, match: Any, rate: int | None) -> tuple[str, int, str]:
    """A verdict's column in Y6's grid: its reference, M and match, and the reference's rate
    where it is one configuration."""
    return (str(ref), int(ref_m), str(match) if rate is None else f"{match} R{rate}")


def _read_verdicts(verdicts, model: str | None) -> pd.DataFrame:
    """The verdict table (a path or a frame) of ``model``; empty without questions."""
    if verdicts is None:
        return pd.DataFrame()
    table = verdicts if isinstance(verdicts, pd.DataFrame) else pd.read_csv(verdicts, sep="\t")
    if table.empty or "test" not in table.columns:
        return pd.DataFrame()
    if model is not None and "model" in table.columns:
        table = table[table["model"] == model]
    return table


def figure_y6(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    png: str | Path,
    *,
    title: str,
    verdicts: str | Path | pd.DataFrame | None = None,
    model: str | None = None,
    curves: Mapping[str, str] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Y6: one row per variant, grouped by rate curve and kept set (config order; a group's
    name heads it, its rows by M and bits, light bands alternating), each row named by what
    sets it apart and the bits per entry it spends: left, its test loss minus the uncompressed
    aggregate's (mean and 95% interval over the design's units, or the runs' own values when
    fewer than :data:`MIN_REPLICATES`); right, the verdict of every primary question about
    it, read from ``verdicts`` (the verdict table, :func:`gradcomp.statistics.verdicts.
    table_verdicts`' TSV, or its frame) as it is: a column per reference, a mark per verdict
    (:data:`VERDICT_MARKS`). ``kept_sets``: compressor -> kept set. The height grows with
    the number of variants, the width does not."""
    plots.set_theme()
    data = one_round_data(tables)
    points = _points(data, METRIC[0])
    styles = variant_styles(data, quantizers, curves, specs)
    groups = _y6_groups(points, quantizers, curves, kept_sets)
    table = _read_verdicts(verdicts, model)
    columns = verdict_columns(table, specs) if not table.empty else []
    n = sum(1 + len(keys) for _, keys in groups)
    fig = plt.figure(figsize=(facets.FIG_WIDTH, 2.6 + max(0.16 * n, 5.0)))
    ax, grid = fig.subplots(1, 2, sharey=True, width_ratios=(4.0, 0.45 + 0.33 * len(columns)))
    with_interval, alone, single = _mark_labels(list(points.values()))
    row: dict[tuple[str, int, int], int] = {}
    labels: list[tuple[int, str, str]] = []
    y = 0
    for g, (first, keys) in enumerate(groups):
        heading = curve_name(first, None, specs)
        colour = _readable(styles[keys[-1]].color)
        ax.text(0.01, y, heading, transform=ax.get_yaxis_transform(), ha="left", va="center",
                fontsize=8, fontweight="bold", color=colour)  # fmt: skip
        top = y
        for key in keys:
            y += 1
            row[key] = y
            p = points[key]
            if p.interval:
                ax.errorbar([p.mean], [y], xerr=[[p.mean - p.lo], [p.hi - p.mean]],
                            color=INK, marker="o", capsize=2, ls="none", ms=4,
                            label=with_interval)  # fmt: skip
            elif len(p.units) == 1:
                ax.plot(p.units, [y], ls="none", marker="s", ms=4, color=INK, label=single)
            else:
                ax.plot(p.units, np.full(len(p.units), y), ls="none", marker="o", ms=4,
                        mfc="white", color=INK, label=alone)  # fmt: skip
            several = len({k[2] for k in keys}) > 1
            labels.append((y, _row_label(key, specs, several), colour))
        if g % 2 == 0:  # every other group on a light band
            for a in (ax, grid):
                a.axhspan(top - 0.5, y + 0.5, color="0.93", lw=0, zorder=0, gid=GUIDE)
        y += 1
    ax.axvline(0.0, color="0.5", lw=0.8, gid=GUIDE)
    ax.set_xlabel(METRIC[1])
    ax.grid(axis="y", visible=False)
    ax.set_yticks([at for at, _, _ in labels])
    ax.set_yticklabels([text for _, text, _ in labels], fontsize=8)
    for tick, (_, _, colour) in zip(ax.get_yticklabels(), labels, strict=True):
        tick.set_color(colour)
    ax.set_ylim(y - 0.5, -0.5)
    margin = float(table["margin"].iloc[0]) if "margin" in table.columns else None
    _verdict_grid(grid, table, columns, row, margin, {k: points[k].bits for k in row})
    facets.legend_below(fig, [ax, grid], ncol=2)
    facets.title(fig, title)
    finish(fig, png, replicates=_fewest(list(points.values())))


def _readable(colour: str) -> str:
    """``colour`` for text on white: a light one (the lightest grey, the sand) darkened."""
    import matplotlib.colors as mcolors

    r, g, b = mcolors.to_rgb(colour)
    if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.55:
        return colour
    return mcolors.to_hex((0.55 * r, 0.55 * g, 0.55 * b))


def _y6_groups(points, quantizers, curves, kept_sets):
    """Y6's groups: (heading, variants) per rate curve and kept set, in config order of
    their first compressor; a group's variants by M, then bits."""
    joins = dict(curves or {})
    kept = dict(kept_sets or {})
    keys = list(points)
    order = config_order(pd.DataFrame(keys, columns=["compressor", "rate", "M"]), quantizers)
    groups: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    first: dict[tuple[str, str], str] = {}
    for key in zip(order["compressor"], order["rate"], order["M"], strict=True):
        g = (joins.get(key[0], key[0]), kept.get(key[0], ""))
        groups.setdefault(g, []).append(key)
        first.setdefault(g, key[0])
    return [
        (first[g], sorted(members, key=lambda k: (k[2], points[k].bits)))
        for g, members in groups.items()
    ]


def _row_label(key: tuple[str, int, int], specs, several_M: bool = False) -> str:
    """What sets variant ``key`` apart within its group: its M and rate (levels, target bits,
    rank), from its readers' name less its curve's (:func:`gradcomp.plotting.styles.curve_name`);
    ``several_M``: M named even where the kind's name leaves it out.

    >>> specs = {"g/R1_M2": {"quantizer": "lloyd", "family": "gennorm", "topk": 0.452}}
    >>> _row_label(("g", 1, 2), specs)
    'M=2, 1 bit'
    """
    name, rate, M = key
    full = reader_name(name, rate, M, specs).split(", ")
    head = curve_name(name, None, specs).split(", ")
    parts = [p for p in full[1:] if p not in head]
    extra = full[0][len(head[0]) :].strip() if full[0].startswith(head[0]) else full[0]
    if several_M and not extra:
        extra = f"M={M:g}"
    return ", ".join(([extra] if extra else []) + parts)


#: The colour of Y6's marks (the rows' names carry their curve's colour).
INK = "#222222"
#: A verdict's mark in Y6: (marker, colour; Tol's blue better, red worse, teal equivalent).
VERDICT_MARKS = {
    "better": ("v", SERIES[0]),
    "worse": ("^", SERIES[2]),
    "equivalent": ("D", SERIES[3]),
    "undecided": ("o", GREYS[1]),
}


def _verdict_words(margin: float | None) -> dict[str, str]:
    within = f" within ±{margin:g} nats" if margin is not None and np.isfinite(margin) else ""
    return {
        "better": "verdict: better (less test loss)",
        "worse": "verdict: worse (more test loss)",
        "equivalent": f"verdict: equivalent{within}",
        "undecided": "verdict: undecided",
    }


def _verdict_grid(ax, table, columns, row, margin, bits) -> None:
    """The table right of Y6's panel, a variant's row at ``row`` (variant -> y): the bits per
    entry it spends (``bits``: variant -> bits), then a column per reference of the
    verdicts, a mark per verdict (none: no question asks about that pair)."""
    for key, y in row.items():
        ax.text(0, y, f"{bits[key]:.2g}", ha="center", va="center", fontsize=8, color=INK)
    columns = [(("", 0, ""), "bits per entry\n(coded)"), *columns]
    col = {key: j for j, (key, _) in enumerate(columns) if j}
    words = _verdict_words(margin)
    for r, rate in zip(table.itertuples(index=False), _reference_rates(table), strict=True):
        i = row.get((str(r.test), int(r.rate), int(r.M)))
        j = col.get(_verdict_key(r.reference, r.reference_M, r.match, rate))
        if i is None or j is None:
            continue
        word = str(r.verdict)
        marker, colour = VERDICT_MARKS.get(word, ("s", "0.2"))
        ax.plot([j], [i], ls="none", marker=marker, ms=6 if word != "undecided" else 5,
                color=colour, mfc=colour if word != "undecided" else "white",
                label=words.get(word, f"verdict: {word}"))  # fmt: skip
    ax.set_xlim(-0.5, len(columns) - 0.5)
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([h for _, h in columns], rotation=90, fontsize=8, linespacing=1.0)
    ax.xaxis.tick_top()
    ax.tick_params(left=False, labelleft=False, top=False, bottom=False, labelbottom=False)
    ax.grid(False)
    for j in range(1, len(columns)):
        ax.axvline(j - 0.5, color="0.8", lw=0.6, gid=GUIDE)
    own = any(rate is not None for rate in _reference_rates(table))
    label = "verdict at\nthe same bits"
    if own:  # a column naming the reference's R compares each at its own bits
        label = "verdict at the same\nbits (a column with R:\neach at its own)"
    ax.set_xlabel(label if len(columns) > 1 else "", fontsize=8)


# ---- Y7 ----------------------------------------------------------------------------------

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
    """Y7: rate curves of the one-round study in three figures (:data:`Y7_PARTS`; ``pngs``:
    suffix -> file; the titles name ``model``, the question and ``source``): the test loss
    each configuration adds over the uncompressed aggregate (nats, the verdicts' measure) at
    its measured uplink bits per entry (coded, log axis), a line per curve and M through its
    configurations in order of bits; mean and 95% interval over the design's units where
    there are at least :data:`MIN_REPLICATES`, else the runs' values. Every panel of ``a``
    holds the baseline's curve on its own kept set (grey, means), every panel of ``b`` its
    configurations on every kept set (grey points) and their operational curve (the lower
    convex hull, dotted: the verdicts' ``frontier``); ``c`` colours the kept sets, the
    baseline's kept set included. At most :data:`Y7_PANELS` panels a figure, a legend in
    each. ``kept_sets``: compressor -> kept set; ``specs``: variant label -> spec (readers'
    names). A part without curves draws the baseline and says so."""
    plots.set_theme()
    data = one_round_data(tables)
    data = data[[not is_reference(quantizers.get(c, c)) for c in data["compressor"]]]
    points = _points(data, METRIC[0])
    joins = dict(curves or {})
    kept = {n: (kept_sets or {}).get(n, "") for n in data["compressor"].unique()}
    styles = variant_styles(data, quantizers, joins, specs)
    names = facets.compressors(data, quantizers)
    panels = y7_panels(names, kept, baseline=baseline, curves=joins)
    draw = _Y7(points, styles, joins, kept, baseline, specs, names)
    for suffix, _ in Y7_PARTS:
        title = facets.question_title(f"Y7{suffix}", model, source)
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
        marks = self.mark_handles(drawn, beaten)
        facets.legend_below(fig, [], ncol=2, extra={**shared, **marks})
        facets.title(fig, title)
        finish(fig, png, replicates=_fewest(drawn))

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

    def mark_handles(self, drawn: Sequence[Point], beaten: bool) -> dict[str, Any]:
        """Legend entries for the marks (grey proxies: the colours are the series'): an
        interval, the runs of a configuration with too few for one, a configuration of one
        run, a configuration its own line beats (``beaten``)."""
        out: dict[str, Any] = {}
        with_interval, alone, single = _mark_labels(drawn)
        if any(p.interval for p in drawn):
            out[with_interval] = Line2D([], [], color="0.3", marker="|", ms=8, ls="none")
        if any(not p.interval and len(p.units) > 1 for p in drawn):
            out[alone] = Line2D([], [], color="0.3", marker="x", ms=4, ls="none")
        if any(len(p.units) == 1 for p in drawn):
            out[single] = Line2D([], [], color="0.3", marker="o", ms=4, ls="none")
        if beaten:
            out[BEATEN] = Line2D([], [], color="0.3", marker="o", mfc="white", ms=4, ls="none")
        return out


#: The legend's words for a hollow mark in Y7.
BEATEN = "hollow: another point of its line has fewer bits and less loss"


def _kept_order(kept: str) -> tuple[int, float, str]:
    """Kept sets from the most entries kept to the fewest: dense, then top-K by share."""
    if kept == "dense":
        return (0, 0.0, kept)
    try:
        share = float(kept.rsplit(" ", 1)[-1].rstrip("%"))
    except ValueError:
        return (2, 0.0, kept)
    return (1, -share, kept)
