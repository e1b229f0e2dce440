"""Paper L's figures of the fitted laws at one epoch: L1 (histograms with each law's density)
and L2 (tail probabilities, with the bits of the Huffman code designed from each law).

Each figure ``X`` as every figure module does it (:mod:`gradcomp.plotting`):
``figure_x`` reads the cached artifacts (fit and coding tables, a dump; tensor positions from
:mod:`gradcomp.lossless.positions`) and hands the rows to ``draw_x``, which draws from data
already loaded and writes the files with :func:`gradcomp.plotting.common.save_figure`. Units:
gradient entries as dumped (loss units per parameter unit), in the plots divided by the
tensor's standard deviation; rates in bits per entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from gradcomp import names
from gradcomp.lossless.dumps import read_dump
from gradcomp.lossless.fit_lossless import fitted_from_row
from gradcomp.lossless.positions import POSITIONS, read_with_positions
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import FAMILY_COLORS, GREYS
from gradcomp.plotting.paper_l_panels import (
    COLUMN,
    FAMILY_LABELS,
    SMALL,
    TITLE_WIDTH,
    legend_under,
    panel,
    position_tensors,
    run_suffix,
)

__all__ = ["draw_l1", "draw_l2", "figure_l1", "figure_l2"]


def figure_l1(
    fits_tsv: str | Path,
    positions_tsv: str | Path,
    dump_path: str | Path,
    png: str | Path,
    *,
    model: str,
    kind: str,
    bins: int,
    source: str = "",
) -> None:
    """L1: histograms with the fitted laws' densities of the lower, middle and upper tensor
    at the dump's epoch (the last one by the workflow's choice)."""
    fits = read_with_positions([fits_tsv], [positions_tsv])
    dump = read_dump(dump_path)
    fits = fits[(fits["kind"] == kind) & (fits["epoch"] == dump.epoch)]
    where = position_tensors(fits)
    samples = {p: dump.tensors[kind][t].numpy().ravel() for p, t in where.items()}
    draw_l1(
        samples, fits[fits["position"].isin(list(where))], bins=bins, png_path=png,
        title=question_title("L1", model, f"{names.dump(kind)}, epoch {dump.epoch}"
                             f"{run_suffix(fits)}", source, width=TITLE_WIDTH),
    )  # fmt: skip


def figure_l2(
    fits_tsv: str | Path,
    positions_tsv: str | Path,
    dump_path: str | Path,
    png: str | Path,
    *,
    model: str,
    kind: str,
    coding_tsv: str | Path | None = None,
    source: str = "",
) -> None:
    """L2: tail probabilities at one epoch (the last one by the workflow's choice); with
    ``coding_tsv`` (the same run's coding table) each panel names the bits per entry of the
    Huffman code designed from each family (FP8 grid, raw scaling, exact accounting),
    shortest first: what the fit's tail costs."""
    fits = read_with_positions([fits_tsv], [positions_tsv])
    dump = read_dump(dump_path)
    fits = fits[(fits["kind"] == kind) & (fits["epoch"] == dump.epoch)]
    where = position_tensors(fits)
    samples = {p: dump.tensors[kind][t].numpy().ravel() for p, t in where.items()}
    code_bits = None
    if coding_tsv is not None:
        code_bits = _family_code_bits(coding_tsv, where, kind=kind, epoch=dump.epoch)
    draw_l2(
        samples, fits[fits["position"] != ""], png_path=png, code_bits=code_bits,
        title=question_title("L2", model, f"{names.dump(kind)}, epoch {dump.epoch}"
                             f"{run_suffix(fits)}", source, width=TITLE_WIDTH),
    )  # fmt: skip


def _family_code_bits(
    coding_tsv: str | Path, where: Mapping[str, str], *, kind: str, epoch: int
) -> dict[str, dict[str, float]]:
    """position -> family -> bits per entry of the Huffman code designed from that family's
    fit (``huffman_<family>``) for the tensor at each position (``where``), at ``epoch`` and
    ``kind``, raw scaling (else the table's first), exact accounting."""
    columns = ["epoch", "kind", "tensor", "scaling", "accounting", "coder", "bits_per_entry"]
    coding = pd.read_csv(coding_tsv, sep="\t", usecols=columns)
    coding = coding[(coding["epoch"] == epoch) & (coding["kind"] == kind)
                    & (coding["accounting"] == "exact")
                    & coding["coder"].str.startswith("huffman_")]  # fmt: skip
    if coding.empty:
        return {}
    scaling = "none" if "none" in set(coding["scaling"]) else coding["scaling"].iloc[0]
    coding = coding[coding["scaling"] == scaling]
    out = {}
    for position, tensor in where.items():
        rows = coding[coding["tensor"] == tensor]
        out[position] = {c.removeprefix("huffman_"): float(b)
                         for c, b in zip(rows["coder"], rows["bits_per_entry"], strict=True)
                         if c.removeprefix("huffman_") in FAMILY_COLORS}  # fmt: skip
    return out


def draw_l1(
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
    legend_under(fig, axes, title)
    save_figure(fig, png_path)


def draw_l2(
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
    legend_under(fig, axes, title)
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
