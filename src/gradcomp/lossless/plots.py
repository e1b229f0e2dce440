"""Paper L's drawings: histograms with fitted pdfs (L1), tails (L2), a fit metric per epoch
(L3) and the GenNorm parameters per epoch (L4). Each takes data already loaded and writes
one figure with :func:`gradcomp.plots.save_figure`, its legend outside the panels. A family
has the same colour in every L figure (:data:`FAMILY_COLORS`; in L5 the Huffman code
designed from it): :mod:`gradcomp.palette` defines every colour, this module draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from gradcomp.lossless.fit_lossless import fitted_from_row
from gradcomp.lossless.positions import POSITIONS
from gradcomp.palette import (  # noqa: F401 (the L figures' colours, re-exported)
    BOUND_OF,
    CODER_COLORS,
    FAMILY_COLORS,
    L5_CODERS,
    SERIES,
    coder_colors,
    is_bound,
)
from gradcomp.plots import legend_outside, save_figure, set_theme

FAMILY_LABELS = {
    "norm": "Norm",
    "laplace": "Laplace",
    "gennorm": "GenNorm",
    "dweibull": "double Weibull",
}
#: L4's tensor positions, in colours no family uses.
POSITION_COLORS = dict(
    zip(POSITIONS, [c for c in SERIES if c not in FAMILY_COLORS.values()], strict=False)
)


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
    for ax in axes[-1]:
        ax.set_xlabel("gradient entry")
    for ax in axes[:, 0]:
        ax.set_ylabel("density")
    for ax in axes[:, 1]:
        ax.set_ylabel("density (log)")
    legend_outside(fig, axes[0, 0])
    fig.suptitle(title)
    save_figure(fig, png_path)


def plot_tails(
    samples: Mapping[str, np.ndarray],
    fits: pd.DataFrame,
    *,
    title: str,
    png_path: str | Path,
    code_bits: Mapping[str, Mapping[str, float]] | None = None,
) -> None:
    """L2: tail probability ``P(|g| > t)`` of data and fitted models, log-log.

    ``samples[position]`` holds one tensor's entries; ``fits`` its fit rows;
    ``code_bits[position][family]`` (optional) the bits per entry of the code designed from
    each family, written under the panel's title with the shortest marked.
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
        ax.set_xlabel("t (gradient magnitude)")
        ax.set_ylabel("P(|g| > t)")
        tensor = rows["tensor"].iloc[0] if len(rows) else position
        panel = f"{position}: {tensor}"
        bits = (code_bits or {}).get(position) or {}
        if bits:
            best = min(bits, key=lambda f: bits[f])
            panel += "\nHuffman code from the fit, bits/entry:\n" + ", ".join(
                f"{FAMILY_LABELS.get(f, f)} {b:.3f}" + (" (best)" if f == best else "")
                for f, b in sorted(bits.items(), key=lambda kv: kv[1])
            )
        ax.set_title(panel, fontsize=9)
    legend_outside(fig, axes[0, 0])
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
    families = [f for f in FAMILY_COLORS if f in set(data["family"])]
    data["family"] = data["family"].map(lambda f: FAMILY_LABELS.get(f, f))
    grid = sns.relplot(
        data=data, x="epoch", y=metric, hue="family", row="kind", col="position",
        col_order=[p for p in POSITIONS if p in set(data["position"])],
        hue_order=[FAMILY_LABELS[f] for f in families],
        palette={FAMILY_LABELS[f]: FAMILY_COLORS[f] for f in families},
        kind="line", errorbar="sd", marker="o", height=2.6, aspect=1.25,
        facet_kws={"sharey": False},
    )  # fmt: skip
    legend_outside(grid)
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
            palette=POSITION_COLORS,
            style="kind",
            errorbar="sd",
            marker="o",
            ax=ax,
        )
        ax.set_ylabel(
            {"beta": "GenNorm beta (shape)", "scale": "GenNorm scale (gradient units)"}[param]
        )
        ax.get_legend().remove()
    legend_outside(fig, axes[0])
    axes[1].set_yscale("log")
    axes[0].axhline(2.0, color="0.5", lw=0.8, ls=":")
    axes[0].text(data["epoch"].min(), 2.0, " Norm (beta = 2)", va="bottom", fontsize=8, color="0.4")
    axes[0].axhline(1.0, color="0.5", lw=0.8, ls=":")
    axes[0].text(
        data["epoch"].min(), 1.0, " Laplace (beta = 1)", va="bottom", fontsize=8, color="0.4"
    )
    fig.suptitle(title)
    save_figure(fig, png_path)
