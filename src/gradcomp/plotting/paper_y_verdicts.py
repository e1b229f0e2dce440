"""Paper Y's figure Y6, from the one-round paired study: one row per variant, the test loss it
adds over the uncompressed aggregate (:mod:`gradcomp.plotting.paper_y_points`), and beside it
what the verdicts decide about it, read from the verdict table as it is.

``figure_y6`` reads the one-round tables and the verdict table and hands them to ``draw_y6``,
which draws and writes the files with :func:`gradcomp.plotting.common.save_figure`
(:mod:`gradcomp.plotting`). Names are readers' names (:mod:`gradcomp.names`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from gradcomp.lossy.paper_y_tables import one_round_data
from gradcomp.plotting import facets
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import GREYS, SERIES
from gradcomp.plotting.paper_y_points import (
    METRIC,
    configuration_points,
    fewest,
    mark_labels,
)
from gradcomp.plotting.styles import GUIDE, curve_name, reader_name, variant_styles

__all__ = ["VERDICT_MARKS", "draw_y6", "figure_y6", "verdict_columns"]


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
    model: str,
    source: str = "",
    verdicts: str | Path | pd.DataFrame | None = None,
    curves: Mapping[str, str] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Y6: one row per variant, grouped by rate curve and kept set (config order; a group's name
    heads it, its rows by M and bits, light bands alternating), each row named by what sets it apart
    and the bits per entry it spends: left, its test loss minus the uncompressed aggregate's (mean
    and 95% interval over the design's units, or the runs' own values when fewer than
    :data:`~gradcomp.plotting.paper_y_points.MIN_REPLICATES`); right, the verdict of every primary
    question about it, read from ``verdicts`` (the verdict table,
    :func:`gradcomp.lossy.verdict_tables.table_verdicts`' TSV, or its frame) as it is: a column per
    reference, a mark per verdict (:data:`VERDICT_MARKS`). ``kept_sets``: compressor -> kept set.
    The title names ``model`` (whose verdicts are read) and ``source`` (the data line). The
    height grows with the number of variants, the width does not."""
    draw_y6(one_round_data(tables), quantizers, png, title=question_title("Y6", model, source),
            verdicts=_read_verdicts(verdicts, model), curves=curves, kept_sets=kept_sets,
            specs=specs)  # fmt: skip


def draw_y6(
    data: pd.DataFrame,
    quantizers: dict[str, str],
    png: str | Path,
    *,
    title: str,
    verdicts: pd.DataFrame,
    curves: Mapping[str, str] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Y6 from the one-round rows ``data`` (:func:`gradcomp.lossy.paper_y_tables.
    one_round_data`'s frame) and the verdict table's rows of its model (empty: no marks), as
    :func:`figure_y6` describes it."""
    set_theme()
    points = configuration_points(data, METRIC[0])
    styles = variant_styles(data, quantizers, curves, specs)
    groups = _y6_groups(points, quantizers, curves, kept_sets)
    columns = verdict_columns(verdicts, specs) if not verdicts.empty else []
    n = sum(1 + len(keys) for _, keys in groups)
    fig = plt.figure(figsize=(facets.FIG_WIDTH, 2.6 + max(0.16 * n, 5.0)))
    ax, grid = fig.subplots(1, 2, sharey=True, width_ratios=(4.0, 0.45 + 0.33 * len(columns)))
    row, labels, y = _variant_rows(ax, grid, groups, points, styles, specs)
    ax.axvline(0.0, color="0.5", lw=0.8, gid=GUIDE)
    ax.set_xlabel(METRIC[1])
    ax.grid(axis="y", visible=False)
    ax.set_yticks([at for at, _, _ in labels])
    ax.set_yticklabels([text for _, text, _ in labels], fontsize=8)
    for tick, (_, _, colour) in zip(ax.get_yticklabels(), labels, strict=True):
        tick.set_color(colour)
    ax.set_ylim(y - 0.5, -0.5)
    margin = float(verdicts["margin"].iloc[0]) if "margin" in verdicts.columns else None
    _verdict_grid(grid, verdicts, columns, row, margin, {k: points[k].bits for k in row})
    facets.legend_below(fig, [ax, grid], ncol=2)
    facets.title(fig, title)
    save_figure(fig, png, replicates=fewest(list(points.values())))


def _variant_rows(ax, grid, groups, points, styles, specs):
    """Y6's rows in ``ax``, a group's name heading it, every other group on a light band
    (across ``grid`` too): (variant -> y, (y, row label, colour) per row, the next free y)."""
    with_interval, alone, single = mark_labels(list(points.values()))
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
    return row, labels, y


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
    order = facets.config_order(pd.DataFrame(keys, columns=["compressor", "rate", "M"]), quantizers)
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
