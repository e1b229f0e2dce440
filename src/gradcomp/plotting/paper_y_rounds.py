"""Paper Y's figures of the federated runs, from their round tables: Y1 (test accuracy per
round), Y2 (accuracy against the cumulative uplink bits) and Y3 (per-bit accuracy per round).
Each asks one question (its title), has at most six panels (:mod:`gradcomp.plotting.facets`)
and names every series in a legend by its readers' name (:mod:`gradcomp.names`).

Per-bit accuracy after round t = (test accuracy at t - test accuracy of the initial model)
/ cumulative uplink bits of all users up to t (coded uplink). The full runs have few seeds
(two by default), too few for an interval: every seed is drawn as its own line, in its
variant's look (:mod:`gradcomp.plotting.styles`).

``figures_y1_y3`` reads the round tables and hands them to ``draw_y1_y3``, which draws and
writes each figure with :func:`gradcomp.plotting.common.save_figure` (:mod:`gradcomp.plotting`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from gradcomp.lossy.per_bit import read_rounds
from gradcomp.plotting import facets
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.styles import GUIDE, curve_name, is_reference, reader_name, variant_styles

__all__ = ["POINTS_PER_MBIT", "draw_y1_y3", "figures_y1_y3"]

#: Y3's unit: accuracy points (percent) per megabit of coded uplink, from accuracy (a
#: fraction) per bit.
POINTS_PER_MBIT = 100.0 * 1e6
#: A legend holds at most this many entries inside a panel; more go below the panels.
INSIDE_LEGEND = 6


def _keys(data: pd.DataFrame, quantizers: dict[str, str]) -> list[tuple[str, int, int]]:
    """The variants of ``data`` in config order (then R, then M)."""
    rows = facets.config_order(data.groupby(["compressor", "rate", "M"], as_index=False).size(),
                        quantizers)  # fmt: skip
    return list(zip(rows["compressor"], rows["rate"], rows["M"], strict=True))


def _seed_lines(ax, data, keys, styles, x, y, *, scale=1.0) -> None:
    """One line per seed of every variant ``keys`` (its look, its readers' name; the seeds
    of one variant share both)."""
    for key in keys:
        own = data[(data["compressor"] == key[0]) & (data["rate"] == key[1])
                   & (data["M"] == key[2])]  # fmt: skip
        style = styles[key]
        for _, rows in own.groupby("seed"):
            rows = rows.sort_values("round")
            ax.plot(rows[x], scale * rows[y], color=style.color, marker=style.marker or "o",
                    ls=style.linestyle, lw=1.2, ms=4, label=style.label)  # fmt: skip


#: The most compressed variants Y1-Y3 draw in one panel, each named in the legend; with more,
#: a panel per rate curve (neighbours sharing one past six panels), named by M and rate.
ONE_PANEL = 8


def _run_panels(keys, quantizers, curves) -> list[list[tuple[str, int, int]]]:
    """The variants of each Y1-Y3 panel: all in one, or the references in every panel and
    the rate curves (config order) spread over at most six."""
    refs = [k for k in keys if is_reference(quantizers.get(k[0], k[0]))]
    others = [k for k in keys if k not in refs]
    if len(others) <= ONE_PANEL:
        return [keys]
    joins = dict(curves or {})
    groups: dict[str, list[tuple[str, int, int]]] = {}
    for k in others:
        groups.setdefault(joins.get(k[0], k[0]), []).append(k)
    members = list(groups.values())
    runs = facets.partition([len(g) for g in members])
    return [refs + [k for i in run for k in members[i]] for run in runs]


def _compact_legend(ax, keys, styles, quantizers, specs, loc) -> None:
    """A panel's legend naming its marks, not its variants: a colour per curve and M (just
    M where the panel's title names its one curve), a marker per rate (the references are
    in the figure's legend)."""
    own = [k for k in keys if not is_reference(quantizers.get(k[0], k[0]))]
    families = list(dict.fromkeys(curve_name(k[0], None, specs, kept=False) for k in own))
    if len(families) == 1:
        ax.set_title(families[0], fontsize=9)
    handles: dict[str, Any] = {}
    colours: dict[str, str] = {}
    for k in own:
        name = curve_name(k[0], k[2], specs, kept=False)
        short = (name[len(families[0]) :].strip(" ,") if len(families) == 1 else name) or name
        if colours.setdefault(short, styles[k].color) != styles[k].color:
            short = f"{short} M={k[2]:g}"  # a kind whose name leaves its M out
        handles.setdefault(short, Line2D([], [], color=styles[k].color, lw=3))
    for k in own:
        style, word = styles[k], _rate_word(k, specs)
        if word:  # a compressor of one rate, no word for it: its colour names it
            handles.setdefault(word, Line2D([], [], color="0.35", lw=1.0,
                               marker=style.marker or "o", ls=style.linestyle, ms=4))  # fmt: skip
    ax.legend(list(handles.values()), list(handles), loc=loc, fontsize=8, framealpha=0.9,
              ncol=2 if len(handles) > 4 else 1, handlelength=1.6, columnspacing=0.8)  # fmt: skip


def _rate_word(key, specs) -> str:
    """What a variant's rate is called (``2 bits``, ``3 levels``, ``rank 2``; empty for a
    kind whose name has no rate: TernGrad, scaled sign, float8)."""
    name, rate, M = key
    full = reader_name(name, rate, M, specs).split(", ")
    curve = curve_name(name, M, specs).split(", ")
    return ", ".join(p for p in full if p not in curve)


def _runs_figure(data, keys, styles, png, *, x, y, scale, xlabel, ylabel, title, lines,
                 quantizers, curves, specs, log_x=False, zero=False, loc="best",
                 height=4.4) -> None:  # fmt: skip
    """One of Y1-Y3: a line per seed of every variant against ``x``, in one panel (a
    legend entry per variant) or in a panel per rate curve (:func:`_run_panels`)."""
    panels = _run_panels(keys, quantizers, curves)
    if len(panels) == 1:
        fig, ax = plt.subplots(figsize=(facets.FIG_WIDTH, height))
        axes = [ax]
    else:
        rows = -(-len(panels) // 2)
        fig, axes = facets.grid(len(panels), height=1.8 + 3.4 * rows, ncols=2, sharex=True,
                                sharey=True)  # fmt: skip
    for ax, own in zip(axes, panels, strict=True):
        _seed_lines(ax, data, own, styles, x, y, scale=scale)
        if zero:
            ax.axhline(0.0, color="0.6", lw=0.8, gid=GUIDE)
        if log_x:
            ax.set_xscale("log")
        else:
            _round_axis(ax, data)
    if log_x:
        lo, hi = data[x].min() / 1.15, data[x].max() * 1.15
        axes[0].set_xlim(lo, hi)
        facets.log_ticks(axes[0].xaxis, lo, hi)
    if len(panels) == 1:
        axes[0].set_xlabel(xlabel)
        axes[0].set_ylabel(ylabel)
        if len(facets.labelled(axes)) <= INSIDE_LEGEND:
            facets.legend_inside(axes[0], loc=loc, title=lines)
        else:
            facets.legend_below(fig, axes, ncol=2, title=lines)
    else:
        fig.supxlabel(xlabel, fontsize=9)
        fig.supylabel(ylabel, fontsize=9)
        for ax, own in zip(axes, panels, strict=True):
            _compact_legend(ax, own, styles, quantizers, specs, loc)
        refs = {styles[k].label: Line2D([], [], color=styles[k].color, ls=styles[k].linestyle)
                for k in panels[0] if is_reference(quantizers.get(k[0], k[0]))}  # fmt: skip
        facets.legend_below(fig, [], ncol=3, extra=refs, title=lines)
    facets.title(fig, title)
    save_figure(fig, png)


def figures_y1_y3(
    rounds_tsvs: Sequence[str | Path],
    quantizers: dict[str, str],
    png_y1: str | Path,
    png_y2: str | Path,
    png_y3: str | Path,
    *,
    model: str,
    source: str = "",
    curves: dict[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
    reference: str | None = None,
) -> None:
    """Y1 accuracy per round (and its difference to ``reference``'s run of the same seed),
    Y2 accuracy against the cumulative uplink bits, Y3 per-bit accuracy per round; a line per
    seed. ``quantizers``: compressor name -> kind, in config order; ``curves``: name -> rate
    curve (one colour each); ``specs``: variant label -> spec (readers' names)."""
    draw_y1_y3(read_rounds(rounds_tsvs, quantizers), quantizers, png_y1, png_y2, png_y3,
               model=model, source=source, curves=curves, specs=specs,
               reference=reference)  # fmt: skip


def draw_y1_y3(
    data: pd.DataFrame,
    quantizers: dict[str, str],
    png_y1: str | Path,
    png_y2: str | Path,
    png_y3: str | Path,
    *,
    model: str,
    source: str = "",
    curves: dict[str, str] | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
    reference: str | None = None,
) -> None:
    """Y1, Y2 and Y3 from the runs' rounds (:func:`gradcomp.lossy.per_bit.read_rounds`'
    frame), as :func:`figures_y1_y3` describes them."""
    seeds = data["seed"].nunique()
    styles = variant_styles(data, quantizers, curves, specs)
    keys = _keys(data, quantizers)
    lines = f"one line per seed, {seeds} seed{'s' if seeds != 1 else ''}"
    common = dict(lines=lines, quantizers=quantizers, curves=curves, specs=specs)
    set_theme()
    if len(_run_panels(keys, quantizers, curves)) == 1:
        _draw_y1(data, keys, styles, png_y1, reference=reference, lines=lines,
                  title=question_title("Y1", model, source))  # fmt: skip
    else:
        _runs_figure(data, keys, styles, png_y1, x="round", y="test_acc", scale=100.0,
                     xlabel="federated round (0: the initial model)",
                     ylabel="test accuracy (%)", loc="lower right",
                     title=question_title("Y1", model, source), **common)  # fmt: skip
    sent = data[data["cumulative_bits_coded"] > 0].assign(
        mbit=lambda d: d["cumulative_bits_coded"] / 1e6
    )
    _runs_figure(sent, keys, styles, png_y2, x="mbit", y="test_acc", scale=100.0, log_x=True,
                 xlabel="cumulative uplink of all users (Mbit, coded; log scale)",
                 ylabel="test accuracy (%)", loc="best",
                 title=question_title("Y2", model, source), **common)  # fmt: skip
    _runs_figure(data[data["round"] > 0], keys, styles, png_y3, x="round",
                 y="per_bit_acc_coded", scale=POINTS_PER_MBIT, zero=True,
                 xlabel="after federated round",
                 ylabel="per-bit accuracy (accuracy points per Mbit)",
                 loc="upper right", height=4.2,
                 title=question_title("Y3", model, source), **common)  # fmt: skip


def _round_axis(ax, data) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(data["round"].min() - 0.2, data["round"].max() + 0.2)


def _draw_y1(data, keys, styles, png, *, reference, lines, title) -> None:
    """Y1 with every variant in one panel: test accuracy per round; below, each run's
    accuracy minus ``reference``'s run of the same seed (the runs of one seed share their
    start and data order) where ``reference`` has runs."""
    ref_keys = [k for k in keys if k[0] == reference]
    paired = bool(ref_keys) and len(keys) > 1
    if paired:
        fig, (top, low) = plt.subplots(2, 1, figsize=(facets.FIG_WIDTH, 5.6), sharex=True,
                                       height_ratios=(3, 2))  # fmt: skip
    else:
        fig, top = plt.subplots(figsize=(facets.FIG_WIDTH, 4.2))
    _seed_lines(top, data, keys, styles, "round", "test_acc", scale=100.0)
    top.set_ylabel("test accuracy (%)")
    _round_axis(top, data)
    axes = [top]
    if paired:
        ref = data[(data["compressor"] == ref_keys[0][0]) & (data["rate"] == ref_keys[0][1])
                   & (data["M"] == ref_keys[0][2])]  # fmt: skip
        base = ref.set_index(["seed", "round"])["test_acc"]
        diff = data[~data["compressor"].eq(ref_keys[0][0])].copy()
        at = pd.MultiIndex.from_frame(diff[["seed", "round"]])
        diff["diff"] = diff["test_acc"].to_numpy() - base.reindex(at).to_numpy()
        _seed_lines(low, diff, [k for k in keys if k != ref_keys[0]], styles, "round", "diff",
                    scale=100.0)  # fmt: skip
        low.axhline(0.0, color=styles[ref_keys[0]].color, lw=1.0, ls=":", gid=GUIDE)
        low.set_ylabel(f"minus {styles[ref_keys[0]].label}\n(accuracy points, same seed)")
        axes.append(low)
    axes[-1].set_xlabel("federated round (0: the initial model)")
    if len(facets.labelled([top])) <= INSIDE_LEGEND:
        facets.legend_inside(top, loc="lower right", title=lines)
    else:
        facets.legend_below(fig, axes, ncol=2, title=lines)
    facets.title(fig, title)
    save_figure(fig, png)
