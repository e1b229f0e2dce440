"""Paper Y's figures (Y1-Y5) from the federated runs' cached tables and update snapshots.

A run's identity (model, compressor, rate R, M, seed) is read from its path,
``results/lossy/{model}/{compressor}/R{rate}_M{m}/seed{seed}/rounds.tsv``.
Per-bit accuracy after round t = (test accuracy at t - test accuracy of the
initial model) / cumulative uplink bits of all users up to t; "coded" uses the
Huffman-coded payload, "fixed" R bits per kept entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from gradcomp import plots
from gradcomp.lossy.distortion_study import BOUND
from gradcomp.lossy.per_bit import REFERENCE, read_rounds
from gradcomp.lossy.run_files import read_snapshot


def _by_rate_panels(data: pd.DataFrame) -> pd.DataFrame:
    """Duplicate the reference runs (none, float16) into every rate panel."""
    rates = sorted(data.loc[~data["quantizer"].isin(REFERENCE), "rate"].unique())
    quantized = data[~data["quantizer"].isin(REFERENCE)].copy()
    quantized["panel"] = quantized["rate"].map(lambda r: f"R = {r} bits")
    refs = [data[data["quantizer"].isin(REFERENCE)].assign(panel=f"R = {r} bits") for r in rates]
    return pd.concat([quantized, *refs], ignore_index=True) if rates else data.assign(panel="all")


def figures_y1_y3(
    rounds_tsvs: Sequence[str | Path],
    quantizers: dict[str, str],
    png_y1: str | Path,
    png_y2: str | Path,
    png_y3: str | Path,
    *,
    model: str,
    source: str = "",
) -> None:
    """Y1 accuracy vs round, Y2 accuracy vs cumulative uplink bits, Y3 per-bit accuracy vs M."""
    data = read_rounds(rounds_tsvs, quantizers)
    seeds = data["seed"].nunique()
    note = f" (mean ± sd over {seeds} seeds)" if seeds > 1 else ""
    src = f"\n{source}" if source else ""
    panels = _by_rate_panels(data)
    plots.plot_lines(
        panels, x="round", y="test_acc", hue="variant", col="panel", png_path=png_y1,
        xlabel="round", ylabel="test accuracy",
        title=f"Y1 {model}: test accuracy per round{note}{src}",
    )  # fmt: skip
    # seeds send slightly different bit counts: average x and y per round, one line each
    sent = (
        panels[panels["cumulative_bits_coded"] > 0]
        .groupby(["panel", "variant", "round"], as_index=False)[
            ["cumulative_bits_coded", "test_acc"]
        ]
        .mean()
    )
    plots.plot_lines(
        sent, x="cumulative_bits_coded", y="test_acc", hue="variant", col="panel", png_path=png_y2,
        log_x=True, xlabel="cumulative uplink bits (all users, Huffman-coded payload)",
        ylabel="test accuracy",
        title=f"Y2 {model}: test accuracy vs uplink bits (mean over {seeds} seeds){src}",
    )  # fmt: skip
    plot_per_bit_vs_m(
        data, png_y3, title=f"Y3 {model}: per-bit accuracy after the last round{note}{src}"
    )


def plot_per_bit_vs_m(data: pd.DataFrame, png: str | Path, *, title: str) -> None:
    """Y3: final-round per-bit accuracy of the Lloyd quantizers vs M, one panel per rate,
    with the other compressors at the same rate as horizontal reference lines."""
    plots.set_theme()
    final = data[data["round"] == data["round"].max()]
    rates = sorted(final.loc[~final["quantizer"].isin(REFERENCE), "rate"].unique())
    fig, axes = plt.subplots(
        1, max(len(rates), 1), figsize=(4.2 * max(len(rates), 1), 3.6), squeeze=False
    )
    for ax, rate in zip(axes[0], rates, strict=False):
        at_rate = final[(final["rate"] == rate) | final["quantizer"].isin(REFERENCE)]
        lloyd = at_rate[at_rate["quantizer"] == "lloyd"]
        sweep = lloyd.groupby("compressor")["M"].nunique()
        for i, compressor in enumerate(sweep.index):
            rows = lloyd[lloyd["compressor"] == compressor]
            if sweep[compressor] > 1:
                sns.lineplot(
                    data=rows,
                    x="M",
                    y="per_bit_acc_coded",
                    marker="o",
                    errorbar="sd",
                    ax=ax,
                    label=f"{compressor} (lloyd)",
                    color=f"C{i}",
                )
        flat = at_rate[~at_rate["compressor"].isin(sweep[sweep > 1].index)]
        for j, (variant, rows) in enumerate(flat.groupby("variant")):
            ax.axhline(
                rows["per_bit_acc_coded"].mean(),
                ls="--",
                lw=1,
                color=f"C{j + len(sweep)}",
                label=variant,
            )
        ax.set_title(f"R = {rate} bits per kept entry", fontsize=9)
        ax.set_xlabel("M (distortion weight |g|^M)")
        ax.set_ylabel("per-bit accuracy (accuracy gain / bit)")
        ax.legend(fontsize=6)
    fig.suptitle(title)
    plots.save_figure(fig, png)


def figure_y4(
    snapshot: str | Path, png: str | Path, *, tensors: Sequence[str], bins: int, title: str
) -> None:
    """Y4: update entries before and after compression for ``tensors`` (user 0, last round).

    "before" shows the entries the compressor kept (its sparsifier's selection), "after"
    their reconstructions. Raises ValueError naming a tensor the snapshot does not hold.
    """
    plots.set_theme()
    snap = read_snapshot(snapshot)
    missing = [n for n in tensors if n not in snap["before"]]
    if missing:
        raise ValueError(
            f"figures.y4.tensors: {missing} not in the update of {snapshot} "
            f"(names look like {', '.join(list(snap['before'])[:4])}, ...)"
        )
    fig, axes = plt.subplots(1, len(tensors), figsize=(4.0 * len(tensors), 3.4), squeeze=False)
    for ax, name in zip(axes[0], tensors, strict=True):
        kept = snap["kept"][name].numpy().ravel()
        before = snap["before"][name].double().numpy().ravel()[kept]
        after = snap["after"][name].double().numpy().ravel()[kept]
        lo, hi = np.quantile(before, [0.0005, 0.9995])
        lo, hi = min(lo, after.min()), max(hi, after.max())
        ax.hist(before, bins=bins, range=(lo, hi), color="0.6", label="before", log=True)
        ax.hist(after, bins=bins, range=(lo, hi), color="C3", alpha=0.6, label="after", log=True)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("update entry")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-2, 2))
    axes[0, 0].set_ylabel("count")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title)
    plots.save_figure(fig, png)


def figure_y5(rd_tsv: str | Path, png: str | Path, *, title: str) -> None:
    """Y5: M-weighted distortion vs rate per quantizer, with the Blahut-Arimoto bound."""
    rd = pd.read_csv(rd_tsv, sep="\t")
    points = rd[rd["quantizer"] != BOUND].assign(panel=lambda d: d["M"].map(lambda m: f"M = {m:g}"))
    bound = rd[rd["quantizer"] == BOUND].assign(panel=lambda d: d["M"].map(lambda m: f"M = {m:g}"))
    plots.plot_lines(
        points, x="rate_bits", y="distortion", hue="quantizer", col="panel", png_path=png,
        log_y=True, reference=bound, col_wrap=2, xlabel="rate R (bits per kept entry)",
        ylabel="mean |g|^M (g - ĝ)^2", title=title,
    )  # fmt: skip
