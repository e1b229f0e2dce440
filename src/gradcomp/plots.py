"""Figures of both papers, drawn with seaborn from cached tables and dumps.

Each ``plot_*`` function takes data already loaded (pandas tables, numpy
arrays), draws one figure and writes it with :func:`save_figure` as PNG and
PDF next to each other. Figure IDs follow DESIGN.md (L1..L5, Y1..Y5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from gradcomp.atomic import atomic_path  # noqa: E402
from gradcomp.fit_table import POSITIONS, fitted_from_row  # noqa: E402

FAMILY_COLORS = {"norm": "C0", "laplace": "C2", "gennorm": "C3", "dweibull": "C4"}
FAMILY_LABELS = {
    "norm": "Norm",
    "laplace": "Laplace",
    "gennorm": "GenNorm",
    "dweibull": "double Weibull",
}


def save_figure(fig: plt.Figure, png_path: str | Path) -> None:
    """Write ``fig`` as ``png_path`` and the same name with ``.pdf``; close it.

    Both files are written under temporary names and renamed into place, so
    an interrupted run leaves no half-written figure.
    """
    png = Path(png_path)
    fig.tight_layout()
    for path in (png, png.with_suffix(".pdf")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=130, bbox_inches="tight")
    plt.close(fig)


def set_theme() -> None:
    """The seaborn look shared by every figure."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=0.9)


def plot_histograms(
    samples: Mapping[tuple[str, int], np.ndarray],
    fits: pd.DataFrame,
    *,
    title: str,
    png_path: str | Path,
    bins: int = 120,
) -> None:
    """L1: histogram of tensor entries with fitted pdfs, linear and log density.

    ``samples[(position, epoch)]`` holds the entries (1-D float array);
    ``fits`` the fit-table rows of those tensors and epochs. One row of
    panels per position, for each epoch a linear and a log-density panel.
    """
    set_theme()
    epochs = sorted({e for _, e in samples})
    positions = [p for p in POSITIONS if any(k[0] == p for k in samples)]
    fig, axes = plt.subplots(
        len(positions),
        2 * len(epochs),
        figsize=(3.0 * 2 * len(epochs), 2.6 * len(positions)),
        squeeze=False,
    )
    for i, position in enumerate(positions):
        for j, epoch in enumerate(epochs):
            values = np.asarray(samples[(position, epoch)], dtype=np.float64)
            lo, hi = np.quantile(values, [0.0005, 0.9995])
            grid = np.linspace(lo, hi, 400)
            rows = fits[(fits["position"] == position) & (fits["epoch"] == epoch)]
            tensor = rows["tensor"].iloc[0] if len(rows) else position
            for k, log_scale in enumerate((False, True)):
                ax = axes[i, 2 * j + k]
                ax.hist(values, bins=bins, range=(lo, hi), density=True, color="0.75", label="data")
                for _, row in rows.iterrows():
                    pdf = fitted_from_row(row).pdf(grid)
                    ax.plot(
                        grid,
                        pdf,
                        color=FAMILY_COLORS.get(row["family"]),
                        lw=1.1,
                        label=FAMILY_LABELS.get(row["family"], row["family"]),
                    )
                if log_scale:
                    ax.set_yscale("log")
                    ax.set_ylim(bottom=max(1.0 / (len(values) * (hi - lo) / bins), 1e-12))
                ax.set_title(
                    f"{tensor}, epoch {epoch}" + (" (log)" if log_scale else ""), fontsize=8
                )
                ax.ticklabel_format(axis="x", style="sci", scilimits=(-2, 2))
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title)
    save_figure(fig, png_path)


def plot_tails(
    samples: Mapping[str, np.ndarray],
    fits: pd.DataFrame,
    *,
    title: str,
    png_path: str | Path,
) -> None:
    """L2: tail probability ``P(|g| > t)`` of data and fitted models, log-log.

    ``samples[position]`` holds one tensor's entries; ``fits`` its fit rows.
    """
    set_theme()
    positions = [p for p in POSITIONS if p in samples]
    fig, axes = plt.subplots(1, len(positions), figsize=(4.0 * len(positions), 3.4), squeeze=False)
    for ax, position in zip(axes[0], positions, strict=True):
        mag = np.sort(np.abs(np.asarray(samples[position], dtype=np.float64)))
        n = mag.size
        empirical = 1.0 - np.arange(1, n + 1) / n
        keep = (mag > 0) & (empirical > 0)
        ax.loglog(mag[keep], empirical[keep], color="k", lw=1.6, label="data")
        t = np.geomspace(max(mag[keep].min(), mag.max() * 1e-4), mag.max() * 1.5, 300)
        rows = fits[fits["position"] == position]
        for _, row in rows.iterrows():
            fitted = fitted_from_row(row)
            model = fitted.sf(t) + fitted.cdf(-t)
            ax.loglog(
                t,
                model,
                color=FAMILY_COLORS.get(row["family"]),
                lw=1.1,
                ls="--",
                label=FAMILY_LABELS.get(row["family"], row["family"]),
            )
        ax.set_ylim(0.3 / n, 1.5)
        ax.set_xlabel("t")
        ax.set_ylabel("P(|g| > t)")
        tensor = rows["tensor"].iloc[0] if len(rows) else position
        ax.set_title(f"{position}: {tensor}", fontsize=9)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title)
    save_figure(fig, png_path)


def plot_metric_by_epoch(
    fits: pd.DataFrame,
    *,
    metric: str,
    ylabel: str,
    title: str,
    png_path: str | Path,
    log_y: bool = False,
) -> None:
    """L3: a goodness-of-fit ``metric`` versus epoch, one line per family.

    Panels: dump kinds (rows) by tensor positions (columns); lines show the
    mean over runs with a band of one standard deviation.
    """
    set_theme()
    data = fits[fits["position"] != ""].copy()
    data["family"] = data["family"].map(lambda f: FAMILY_LABELS.get(f, f))
    grid = sns.relplot(
        data=data, x="epoch", y=metric, hue="family", row="kind", col="position",
        col_order=[p for p in POSITIONS if p in set(data["position"])],
        kind="line", errorbar="sd", marker="o", height=2.6, aspect=1.25,
        facet_kws={"sharey": False},
    )  # fmt: skip
    grid.set_axis_labels("epoch", ylabel)
    grid.set_titles("{row_name} | {col_name}")
    if log_y:
        grid.set(yscale="log")
    grid.figure.suptitle(title, y=1.02)
    save_figure(grid.figure, png_path)


def plot_gennorm_parameters(fits: pd.DataFrame, *, title: str, png_path: str | Path) -> None:
    """L4: GenNorm ``beta`` and ``scale`` versus epoch per tensor position (mean, sd over runs)."""
    set_theme()
    data = fits[(fits["family"] == "gennorm") & (fits["position"] != "")]
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.4))
    order = [p for p in POSITIONS if p in set(data["position"])]
    for ax, param in zip(axes, ("beta", "scale"), strict=True):
        sns.lineplot(
            data=data,
            x="epoch",
            y=param,
            hue="position",
            hue_order=order,
            style="kind",
            errorbar="sd",
            marker="o",
            ax=ax,
        )
        ax.set_ylabel(f"GenNorm {param}")
    axes[1].set_yscale("log")
    axes[0].axhline(2.0, color="0.5", lw=0.8, ls=":")
    axes[0].text(data["epoch"].min(), 2.0, " Norm (beta = 2)", va="bottom", fontsize=7, color="0.4")
    axes[0].axhline(1.0, color="0.5", lw=0.8, ls=":")
    axes[0].text(
        data["epoch"].min(), 1.0, " Laplace (beta = 1)", va="bottom", fontsize=7, color="0.4"
    )
    fig.suptitle(title)
    save_figure(fig, png_path)


def plot_lines(
    data: pd.DataFrame,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    png_path: str | Path,
    xlabel: str,
    ylabel: str,
    col: str | None = None,
    style: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    hue_order: Sequence[str] | None = None,
    reference: pd.DataFrame | None = None,
    col_wrap: int | None = None,
) -> None:
    """A generic line figure (mean and sd band over repeated rows) used by L5 and Y1-Y3, Y5.

    ``reference`` (optional, same ``x``/``y``/``col`` columns) is drawn as a
    black line in every panel, e.g. a rate-distortion bound.
    """
    set_theme()
    grid = sns.relplot(
        data=data, x=x, y=y, hue=hue, col=col, style=style, kind="line", errorbar="sd",
        marker="o", height=3.0, aspect=1.3, hue_order=hue_order, col_wrap=col_wrap,
        facet_kws={"sharey": False},
    )  # fmt: skip
    if reference is not None:
        for name, ax in grid.axes_dict.items() if col else [(None, grid.ax)]:
            ref = reference if col is None else reference[reference[col] == name]
            ax.plot(ref[x], ref[y], color="k", lw=1.2, label="bound")
    grid.set_axis_labels(xlabel, ylabel)
    if col:
        grid.set_titles("{col_name}")
    if log_x:
        grid.set(xscale="log")
    if log_y:
        grid.set(yscale="log")
    grid.figure.suptitle(title, y=1.02)
    save_figure(grid.figure, png_path)
