"""Paper L's figures over training: L3 (the trimmed 2-Wasserstein distance of each fitted law
per epoch) and L4 (the GenNorm shape and scale per epoch), per tensor position, each run its own
line (a mean and band from :data:`gradcomp.plotting.paper_l_panels.MIN_BAND_RUNS` runs on).

``figure_x`` reads the fit tables and hands the rows to ``draw_x``, which draws and writes the
files with :func:`gradcomp.plotting.common.save_figure` (:mod:`gradcomp.plotting`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from gradcomp import names
from gradcomp.lossless.positions import POSITIONS, read_with_positions
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import FAMILY_COLORS, GREYS, assign
from gradcomp.plotting.paper_l_panels import (
    COLUMN,
    FAMILY_LABELS,
    KIND_COLORS,
    SMALL,
    TITLE_WIDTH,
    band_replicates,
    legend_under,
    panel,
    runs,
    runs_title,
)

__all__ = ["draw_l3", "draw_l4", "figure_l3", "figure_l4"]


def figure_l3(
    fits_tsvs: Sequence[str | Path],
    positions_tsv: str | Path,
    png: str | Path,
    *,
    model: str,
    source: str = "",
) -> None:
    """L3: trimmed 2-Wasserstein distance versus epoch per family and tensor position."""
    fits = read_with_positions(fits_tsvs, [positions_tsv])
    draw_l3(
        fits, metric="w2", ylabel="trimmed W2 (sd units, log)", png_path=png, log_y=True,
        title=question_title("L3", model, "", source, width=TITLE_WIDTH),
    )  # fmt: skip


def figure_l4(
    fits_tsvs: Sequence[str | Path],
    positions_tsv: str | Path,
    png: str | Path,
    *,
    model: str,
    source: str = "",
) -> None:
    """L4: GenNorm shape and scale versus epoch per tensor position."""
    fits = read_with_positions(fits_tsvs, [positions_tsv])
    draw_l4(
        fits, png_path=png,
        title=question_title("L4", model, "", source, width=TITLE_WIDTH),
    )  # fmt: skip


def draw_l3(
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
                n_runs = max(n_runs, runs(
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
    legend_under(fig, axes, title, runs_title(n_runs))
    save_figure(fig, png_path, replicates=band_replicates(n_runs))


def draw_l4(fits: pd.DataFrame, *, title: str, png_path: str | Path) -> None:
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
                n_runs = max(n_runs, runs(
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
    legend_under(fig, axes, title, runs_title(n_runs))
    save_figure(fig, png_path, replicates=band_replicates(n_runs))
