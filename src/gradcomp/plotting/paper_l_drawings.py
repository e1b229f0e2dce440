"""Paper L's drawings, one question each: histograms with the fitted laws' densities (L1),
tails (L2), a fit metric per epoch (L3), the GenNorm parameters per epoch (L4) and the coded
size per epoch (L5, L5b). Each takes data already loaded and writes one figure with
:func:`gradcomp.plotting.common.save_figure`, its legend right of the panels.

Sized to be read as a PNG 700 px wide: at most 6 panels, no text under 8.8 pt on a figure at
most 10 inches wide (8.6 px at 700 px), every drawn series in the legend (reference lines
marked ``gid="guide"``). With fewer than :data:`MIN_BAND_RUNS` runs each run is drawn as its
own line; from that many on, the mean with a band of one standard deviation. Names are the
readers' (:mod:`gradcomp.names`); a law has the same colour in every L figure
(:data:`FAMILY_COLORS`, in L5 the Huffman code designed from it): :mod:`gradcomp.plotting.palette`
defines every colour, this module draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist

from gradcomp import names
from gradcomp.lossless.fit_lossless import fitted_from_row
from gradcomp.lossless.positions import POSITIONS
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import (  # noqa: F401 (the L figures' colours, re-exported)
    BOUND_OF,
    CODER_COLORS,
    FAMILY_COLORS,
    GREYS,
    L5_CODERS,
    SERIES,
    assign,
    coder_colors,
    is_bound,
)

#: A law's name in the L figures' legends (:func:`gradcomp.names.law`).
FAMILY_LABELS = {family: names.law(family) for family in FAMILY_COLORS}
#: L4's dump kinds, in colours no law uses.
KIND_COLORS = dict(
    zip(names.DUMPS, [c for c in SERIES if c not in FAMILY_COLORS.values()], strict=False)
)
#: The fewest runs summarised by a mean and a band; with fewer each run is its own line.
MIN_BAND_RUNS = 5
#: The smallest type on any L figure (points; the theme's tick labels).
SMALL = 8.8
#: The width of a figure's column of panels (inches): three make a figure under 9 inches
#: wide, whose smallest type is 9.5 px or more at 700 px; its height gives the panels the
#: area the standard asks (55% of the figure and more).
COLUMN = 2.9


def _runs(
    ax: plt.Axes, frame: pd.DataFrame, *, x: str, y: str, color: str, label: str, **line
) -> int:
    """``frame``'s ``y`` against ``x`` per run: each run a line of its own (fewer than
    :data:`MIN_BAND_RUNS` runs), else their mean with a band of one sd. Every artist carries
    ``label`` (the legend keeps the first). Returns the number of runs."""
    runs = sorted(frame["run"].unique())
    if len(runs) < MIN_BAND_RUNS:
        for run in runs:
            rows = frame[frame["run"] == run].sort_values(x)
            ax.plot(rows[x], rows[y], color=color, label=label, **line)
        return len(runs)
    stats = frame.groupby(x)[y].agg(["mean", "std"]).reset_index()
    ax.plot(stats[x], stats["mean"], color=color, label=label, **line)
    ax.fill_between(stats[x], stats["mean"] - stats["std"], stats["mean"] + stats["std"],
                    color=color, alpha=0.2, lw=0, label=label)  # fmt: skip
    return len(runs)


def _band_replicates(n_runs: int) -> int | None:
    """What :func:`~gradcomp.plotting.common.save_figure` is told: the runs behind the bands
    :func:`_runs` drew (None: it drew each run, no band)."""
    return n_runs if n_runs >= MIN_BAND_RUNS else None


def _runs_title(n_runs: int) -> str:
    """The legend's title saying what a line is."""
    if n_runs < MIN_BAND_RUNS:
        return f"one line per run ({n_runs} run{'s' if n_runs != 1 else ''})"
    return f"mean ± sd over {n_runs} runs"


def _finish(
    fig: plt.Figure, axes, title: str, legend_title: str | None = None, ncol: int | None = None
) -> None:
    """The figure's title and one legend under the panels, in ``ncol`` columns
    (default: one row): each label once, from the labelled artists of ``axes`` in order of
    first appearance. Under the panels it takes height, not the width the panels need to be
    read at 700 px; :func:`~gradcomp.plotting.common.save_figure` keeps it
    (``bbox_inches="tight"``)."""
    handles: dict[str, Artist] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.suptitle(title, fontsize=10)
    if not handles:
        return
    fig.tight_layout()  # the panels placed, the legend goes under the lowest x label
    bottom = min(ax.get_tightbbox().y0 for ax in np.ravel(axes)) / fig.bbox.height
    fig.legend(list(handles.values()), list(handles), loc="upper center",
               bbox_to_anchor=(0.5, bottom), ncol=ncol or len(handles), frameon=False,
               title=legend_title, title_fontsize=SMALL, fontsize=SMALL)  # fmt: skip


def panel(position: str, tensor: str) -> str:
    """A panel's title: where the tensor sits, as a reader says it, and its name."""
    where = names.POSITIONS.get(position, position)
    return f"{where}: {tensor}" if tensor and tensor != position else where


def plot_histograms(
    samples: Mapping[str, np.ndarray],
    fits: pd.DataFrame,
    *,
    title: str,
    png_path: str | Path,
    bins: int = 120,
) -> None:
    """L1: the histogram of one tensor's non-zero entries per position (columns) with each
    fitted law's density, linear (top row, the central 99.9% of the entries) and log (bottom
    row, every entry). Entries in units of the tensor's standard deviation (in the x label,
    with the share of exact zeros, the atom p0 beside the laws: bars and curves both add up
    to 1 - p0).

    ``samples[position]`` holds the entries (1-D float array) at one epoch; ``fits`` the
    fit-table rows of those tensors at that epoch.
    """
    set_theme()
    positions = [p for p in POSITIONS if p in samples]
    fig, axes = plt.subplots(2, len(positions), figsize=(COLUMN * len(positions), 8.8),
                             squeeze=False)  # fmt: skip
    for j, position in enumerate(positions):
        values = np.asarray(samples[position], dtype=np.float64)
        sd = float(values.std()) or 1.0
        z = values / sd
        rows = fits[fits["position"] == position]
        tensor = rows["tensor"].iloc[0] if len(rows) else position
        nonzero = z[z != 0]
        zeros = (
            f"; {1 - nonzero.size / z.size:.0%} zeros, not drawn" if nonzero.size < z.size else ""
        )
        central = np.quantile(z, [0.0005, 0.9995])
        ranges = [(float(central[0]), float(central[1])), (float(z.min()), float(z.max()))]
        for i, (lo, hi) in enumerate(ranges):
            ax = axes[i, j]
            # the non-zero entries, each weighing 1 / (n x bin width): their bars add up to
            # 1 - (share of exact zeros), as the fitted laws' curves, (1 - p0) f, do
            width = (hi - lo) / bins
            heights, _, _ = ax.hist(nonzero, bins=bins, range=(lo, hi), histtype="stepfilled",
                                    weights=np.full(nonzero.size, 1.0 / (z.size * width)),
                                    color="0.72", label="data (histogram)")  # fmt: skip
            grid = np.linspace(lo, hi, 600)
            for _, row in rows.iterrows():
                # the density of entry / sd: sd * f(sd * u), f with its zero atom's weight
                pdf = sd * fitted_from_row(row).pdf(grid * sd)
                ax.plot(grid, pdf, color=FAMILY_COLORS.get(row["family"]), lw=1.4,
                        label=f"{FAMILY_LABELS.get(row['family'], row['family'])} fit")  # fmt: skip
            ax.set_xlim(lo, hi)
            ax.set_xlabel("entry / sd" if i == 0 else f"entry / sd  (sd = {sd:.2g}{zeros})")
            # the data set the height: a law whose density is infinite at zero (GenNorm
            # below shape 1, double Weibull below c = 1) runs off the top, not the bars down
            top = float(np.max(heights))
            if i == 1:
                ax.set_yscale("log")
                ax.set_ylim(0.5 / (z.size * width), 4.0 * top)
            else:
                ax.set_ylim(0.0, 1.25 * top)
        axes[0, j].set_title(panel(position, tensor))
    axes[0, 0].set_ylabel("density (per sd)")
    axes[1, 0].set_ylabel("density (per sd), log")
    _finish(fig, axes, title)
    save_figure(fig, png_path)


def plot_tails(
    samples: Mapping[str, np.ndarray],
    fits: pd.DataFrame,
    *,
    title: str,
    png_path: str | Path,
    code_bits: Mapping[str, Mapping[str, float]] | None = None,
) -> None:
    """L2: tail probability ``P(|g| > x)`` of the data and of each fitted law, on a log
    axis, against ``x`` in units of the tensor's standard deviation (linear): a normal tail
    bends down as a parabola, a Laplace tail falls as a straight line.

    ``samples[position]`` holds one tensor's entries; ``fits`` its fit rows;
    ``code_bits[position][family]`` (optional) the bits per entry of the Huffman code
    designed from each law, written in the corner of the panel its lines leave freer, shortest
    first.
    """
    set_theme()
    positions = [p for p in POSITIONS if p in samples]
    fig, axes = plt.subplots(1, len(positions), figsize=(COLUMN * len(positions), 5.8),
                             sharey=True, squeeze=False)  # fmt: skip
    n_max = max(np.asarray(samples[p]).size for p in positions)
    for ax, position in zip(axes[0], positions, strict=True):
        values = np.asarray(samples[position], dtype=np.float64)
        sd = float(values.std()) or 1.0
        mag = np.sort(np.abs(values)) / sd
        n = mag.size
        # P(|g| > mag[i]) = (n - 1 - i) / n of the data, at counts above evenly spaced on the
        # log axis (a few thousand points draw it; a paper-scale tensor has millions)
        above = np.unique(np.geomspace(1, max(n - 1, 1), 4000).astype(np.int64))
        ax.plot(mag[n - 1 - above], above / n, color=GREYS[0], lw=1.8, label="data")
        x = np.linspace(0.0, mag[-1] * 1.05, 400)
        rows = fits[fits["position"] == position]
        for _, row in rows.iterrows():
            fitted = fitted_from_row(row)
            model = fitted.sf(x * sd) + fitted.cdf(-x * sd)
            ax.plot(x, model, color=FAMILY_COLORS.get(row["family"]), lw=1.3, ls="--",
                    label=f"{FAMILY_LABELS.get(row['family'], row['family'])} fit")  # fmt: skip
        ax.set_yscale("log")
        ax.set_ylim(0.3 / n_max, 1.5)
        ax.set_xlim(0.0, mag[-1] * 1.05)
        ax.set_xlabel("x = |entry| / sd of the tensor")
        tensor = rows["tensor"].iloc[0] if len(rows) else position
        ax.set_title(panel(position, tensor))
        bits = (code_bits or {}).get(position) or {}
        if bits:
            lines = [f"{FAMILY_LABELS.get(f, f)} {b:.3f}"
                     for f, b in sorted(bits.items(), key=lambda kv: kv[1])]  # fmt: skip
            text = "Huffman code from\neach fit, bits/entry:\n" + "\n".join(lines)
            corner = _free_corner(ax)
            ax.text(*corner, text, transform=ax.transAxes, fontsize=SMALL, linespacing=1.15,
                    bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5},
                    ha="right" if corner[0] > 0.5 else "left",
                    va="top" if corner[1] > 0.5 else "bottom")  # fmt: skip
    axes[0, 0].set_ylabel("P(|entry| > x), log")
    _finish(fig, axes, title)
    save_figure(fig, png_path)


def _free_corner(ax: plt.Axes) -> tuple[float, float]:
    """The upper right or the lower left corner of ``ax`` (axes coordinates of the corner),
    whichever fewer points of its lines fall near: where a note covers the least data."""
    ax.figure.canvas.draw()
    to_axes = ax.transAxes.inverted()
    lines = [to_axes.transform(ax.transData.transform(line.get_xydata()))
             for line in ax.get_lines()]  # fmt: skip
    points = np.concatenate(lines) if lines else np.empty((0, 2))
    points = points[np.isfinite(points).all(axis=1)]
    upper_right = ((points[:, 0] > 0.5) & (points[:, 1] > 0.55)).sum()
    lower_left = ((points[:, 0] < 0.5) & (points[:, 1] < 0.45)).sum()
    return (0.97, 0.97) if upper_right <= lower_left else (0.03, 0.03)


def plot_metric_by_epoch(
    fits: pd.DataFrame,
    *,
    metric: str,
    ylabel: str,
    title: str,
    png_path: str | Path,
    log_y: bool = False,
) -> None:
    """L3: a goodness-of-fit ``metric`` versus epoch, one colour per law.

    Panels: dump kinds (rows) by tensor positions (columns); each run its own line (mean
    and one sd from :data:`MIN_BAND_RUNS` runs on).
    """
    set_theme()
    data = fits[fits["position"] != ""]
    families = [f for f in FAMILY_COLORS if f in set(data["family"])]
    kinds = [k for k in (*names.DUMPS, *sorted(set(data["kind"]) - set(names.DUMPS)))
             if k in set(data["kind"])]  # fmt: skip
    positions = [p for p in POSITIONS if p in set(data["position"])]
    fig, axes = plt.subplots(len(kinds), len(positions), sharex=True, sharey="row",
                             figsize=(COLUMN * len(positions), 1.2 + 3.3 * len(kinds)),
                             squeeze=False)  # fmt: skip
    n_runs = 0
    for i, kind in enumerate(kinds):
        for j, position in enumerate(positions):
            ax = axes[i, j]
            at = data[(data["kind"] == kind) & (data["position"] == position)]
            for family in families:
                n_runs = max(n_runs, _runs(
                    ax, at[at["family"] == family], x="epoch", y=metric,
                    color=FAMILY_COLORS[family], label=FAMILY_LABELS[family], marker="o",
                    ms=3.5, lw=1.2,
                ))  # fmt: skip
            if log_y:
                ax.set_yscale("log")
            if i == 0:
                tensor = at["tensor"].iloc[0] if len(at) else position
                ax.set_title(panel(position, tensor))
            if i == len(kinds) - 1:
                ax.set_xlabel("epoch")
        axes[i, 0].set_ylabel(f"{names.dump(kind)}:\n{ylabel}")
    _finish(fig, axes, title, _runs_title(n_runs))
    save_figure(fig, png_path, replicates=_band_replicates(n_runs))


def plot_gennorm_parameters(fits: pd.DataFrame, *, title: str, png_path: str | Path) -> None:
    """L4: GenNorm shape ``beta`` (top row; dotted guides at 1, Laplace, and 2, normal) and
    scale (bottom row, log axis) versus epoch per tensor position (columns), one colour per
    dump kind; each run its own line (mean and one sd from :data:`MIN_BAND_RUNS` runs on)."""
    set_theme()
    data = fits[(fits["family"] == "gennorm") & (fits["position"] != "")]
    positions = [p for p in POSITIONS if p in set(data["position"])]
    kinds = [k for k in names.DUMPS if k in set(data["kind"])]
    kinds += sorted(set(data["kind"]) - set(kinds))
    colors = assign(kinds, KIND_COLORS)
    fig, axes = plt.subplots(2, len(positions), sharex=True, sharey="row",
                             figsize=(COLUMN * len(positions), 7.8), squeeze=False)  # fmt: skip
    n_runs = 0
    for j, position in enumerate(positions):
        at = data[data["position"] == position]
        for i, param in enumerate(("beta", "scale")):
            ax = axes[i, j]
            for kind in kinds:
                n_runs = max(n_runs, _runs(
                    ax, at[at["kind"] == kind], x="epoch", y=param, color=colors[kind],
                    label=names.dump(kind), marker="o", ms=3.5, lw=1.2,
                ))  # fmt: skip
        beta_ax = axes[0, j]
        for value, law in ((2.0, "normal"), (1.0, "Laplace")):
            beta_ax.axhline(value, color=GREYS[1], lw=0.9, ls=":", gid="guide")
            if j == 0:
                beta_ax.text(0.02, value, f"{law} (β = {value:g})", va="bottom",
                             transform=beta_ax.get_yaxis_transform(), fontsize=SMALL,
                             color=GREYS[1], gid="guide",
                             bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none",
                                   "pad": 1.0})  # fmt: skip
        axes[1, j].set_yscale("log")
        axes[1, j].set_xlabel("epoch")
        tensor = at["tensor"].iloc[0] if len(at) else position
        beta_ax.set_title(panel(position, tensor))
    betas = data["beta"].to_numpy(dtype=float)
    low, high = min(np.nanmin(betas, initial=0.9), 0.9), max(np.nanmax(betas, initial=2.25), 2.25)
    axes[0, 0].set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
    axes[0, 0].set_ylabel("GenNorm shape β")
    axes[1, 0].set_ylabel("GenNorm scale\n(gradient units, log)")
    _finish(fig, axes, title, _runs_title(n_runs))
    save_figure(fig, png_path, replicates=_band_replicates(n_runs))


def plot_coded_size(
    data: pd.DataFrame,
    *,
    coders: Mapping[str, str],
    panels: Sequence[str],
    panel_titles: Mapping[str, str],
    title: str,
    png_path: str | Path,
) -> None:
    """L5 and L5b: coded size as a fraction of 8-bit FP8 (``data["size / FP8"]``) versus
    epoch, one line per coder (``coders``: name -> colour, in legend order) in every panel
    (``data["panel"]``, in the order ``panels``, titled by ``panel_titles``). Codes solid
    with dots, bounds (:func:`is_bound`) dashed; each named as a reader names it
    (:func:`gradcomp.names.coder`)."""
    set_theme()
    ncols = 2 if len(panels) > 1 else 1
    nrows = -(-len(panels) // ncols)
    size = (1.5 * COLUMN * ncols, 1.2 + 3.5 * nrows)
    fig, axes = plt.subplots(nrows, ncols, sharex=True, sharey=True, figsize=size, squeeze=False)
    for ax, key in zip(axes.flat, panels, strict=False):
        at = data[data["panel"] == key]
        for name, color in coders.items():
            rows = at[at["coder"] == name].sort_values("epoch")
            if rows.empty:
                continue
            style = {"ls": "--", "lw": 1.4} if is_bound(name) else {"marker": "o", "ms": 3.5}
            ax.plot(rows["epoch"], rows["size / FP8"], color=color, label=names.coder(name),
                    **style)  # fmt: skip
        ax.set_title(panel_titles.get(key, key))
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("epoch")
    for ax in axes[:, 0]:
        ax.set_ylabel("coded size / FP8 size")
    shown = [ax for ax in axes.flat if ax.get_visible()]
    _finish(fig, shown, title, ncol=len(coders) if len(coders) <= 5 else 4)
    save_figure(fig, png_path)
