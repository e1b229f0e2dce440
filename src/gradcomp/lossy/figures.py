"""Paper Y's figures: Y1-Y3 from the federated runs' round tables, Y4 and Y5 from a run's
update snapshot (Y6 and Y7, from the one-round paired study, are
:mod:`gradcomp.lossy.figures_paired`).

Per-bit accuracy after round t = (test accuracy at t - test accuracy of the initial model)
/ cumulative uplink bits of all users up to t (Huffman-coded payload). Every variant keeps
its look across figures (:mod:`gradcomp.lossy.styles`); panels are compressors
(:mod:`gradcomp.lossy.facets`: a grid at most four wide, the uncompressed references in
every panel, a legend per panel naming its R and M, one legend outside for the references).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

from gradcomp import plots
from gradcomp.lossy import facets
from gradcomp.lossy.distortion_study import BOUND
from gradcomp.lossy.paired import t_interval
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.lossy.styles import is_reference, legend_outside, variant_styles


def finish(fig: plt.Figure, axes, title: str, png: str | Path) -> None:
    """One legend right of ``axes`` for what every panel shares (the references), the
    title, and the PNG + PDF files."""
    legend_outside(fig, axes, fontsize=8)
    fig.suptitle(title, fontsize=9, y=1.0, va="bottom")  # above the panels' own titles
    plots.save_figure(fig, png)


def config_order(rows: pd.DataFrame, quantizers: dict[str, str]) -> pd.DataFrame:
    """``rows`` in config order of the compressors, then by rate and M."""
    order = {name: i for i, name in enumerate(quantizers)}
    rank = rows["compressor"].map(lambda c: order.get(c, len(order)))
    return rows.assign(_order=rank).sort_values(["_order", "rate", "M"], kind="stable")


def _curves(
    data, quantizers, x, y, *, xlabel, ylabel, title, png, log_x=False, curves=None
) -> None:
    """Mean over seeds of ``y`` against ``x`` per variant: one panel per compressor with its
    rates and M, the references in every panel."""
    plots.set_theme()
    styles = variant_styles(data, quantizers, curves)
    names = facets.compressors(data, quantizers)
    refs = config_order(facets.references(data, quantizers), quantizers)
    fig, axes = facets.grid(len(names), sharex=True, sharey=True)
    for ax, name in zip(axes, names or ["references"], strict=True):
        for key, rows in refs.groupby(["compressor", "rate", "M"], sort=False):
            mean = rows.groupby("round")[[x, y]].mean().sort_index()
            ax.plot(mean[x], mean[y], **styles[key].line())
        own = data[data["compressor"] == name]
        for key, rows in own.groupby(["compressor", "rate", "M"]):
            mean = rows.groupby("round")[[x, y]].mean().sort_index()
            ax.plot(mean[x], mean[y], **facets.unlabelled(styles[key]))
        keys = list(zip(own["compressor"], own["rate"], own["M"], strict=True))
        facets.family_legend(ax, name, keys, styles)
        if log_x:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10, numticks=4))
            ax.xaxis.set_minor_formatter(NullFormatter())  # 2x10^6, 3x10^6, ... overlapped
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.supxlabel(xlabel, fontsize=8)
    fig.supylabel(ylabel, fontsize=8)
    finish(fig, axes, title, png)


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
) -> None:
    """Y1 accuracy vs round, Y2 accuracy vs cumulative uplink bits, Y3 per-bit accuracy
    (means over seeds; ``quantizers``: compressor name -> kind, in config order; ``curves``:
    name -> rate curve, one colour each)."""
    data = read_rounds(rounds_tsvs, quantizers)
    seeds = data["seed"].nunique()
    src = f"\n{source}" if source else ""
    _curves(
        data, quantizers, "round", "test_acc", xlabel="round", ylabel="test accuracy", png=png_y1,
        curves=curves,
        title=f"Y1 {model}: test accuracy per round (mean over {seeds} seeds){src}",
    )  # fmt: skip
    sent = data[data["cumulative_bits_coded"] > 0]
    _curves(
        sent, quantizers, "cumulative_bits_coded", "test_acc", log_x=True, png=png_y2,
        curves=curves,
        xlabel="cumulative uplink bits (all users, coded)", ylabel="test accuracy",
        title=f"Y2 {model}: test accuracy vs uplink bits (mean over {seeds} seeds){src}",
    )  # fmt: skip
    plot_per_bit_vs_m(
        data, quantizers, png_y3, curves=curves,
        title=f"Y3 {model}: per-bit accuracy after the last round "
        f"(mean and 95% interval over {seeds} seeds){src}",
    )  # fmt: skip


#: Y3's unit: accuracy points (percent) per megabit of coded uplink, from accuracy (a
#: fraction) per bit.
POINTS_PER_MBIT = 100.0 * 1e6


def plot_per_bit_vs_m(
    data: pd.DataFrame,
    quantizers: dict[str, str],
    png: str | Path,
    *,
    title: str,
    curves: dict[str, str] | None = None,
) -> None:
    """Y3: the final round's per-bit accuracy of every variant, in accuracy points per
    megabit of coded uplink (all users, all rounds; mean and 95% interval over seeds), one
    row per variant in config order (then R, then M, so a compressor's M sweep reads down its
    rows), the uncompressed references as grey rows and their means as vertical lines."""
    plots.set_theme()
    final = data[data["round"] == data["round"].max()]
    styles = variant_styles(final, quantizers, curves)
    rows = config_order(
        final.groupby(["compressor", "rate", "M"], as_index=False).size(), quantizers
    )
    keys = list(zip(rows["compressor"], rows["rate"], rows["M"], strict=True))
    fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.32 * len(keys)))
    labels = []
    for i, key in enumerate(keys):
        at = final[(final["compressor"] == key[0]) & (final["rate"] == key[1])
                   & (final["M"] == key[2])]  # fmt: skip
        mean, lo, hi = (POINTS_PER_MBIT * v for v in t_interval(at["per_bit_acc_coded"]))
        style = styles[key]
        reference = is_reference(quantizers.get(key[0], key[0]))
        ax.errorbar([mean], [i], xerr=[[mean - lo], [hi - mean]] if np.isfinite(lo) else None,
                    color=style.color, marker=style.marker or "s", capsize=3, ms=5,
                    ls="none")  # fmt: skip
        if reference:
            ax.axvline(mean, color=style.color, lw=0.8, ls=style.linestyle, zorder=0)
        labels.append(style.label)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(labels)
    ax.set_ylim(len(keys) - 0.5, -0.5)
    ax.axvline(0.0, color="0.6", lw=0.8)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("per-bit accuracy: accuracy points gained per Mbit of coded uplink")
    finish(fig, [ax], title, png)


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
        # no bar edges: the theme's white edges would hide bars a pixel or two wide
        ax.hist(before, bins=bins, range=(lo, hi), color="0.6", label="before", log=True, lw=0)
        ax.hist(after, bins=bins, range=(lo, hi), color="C3", alpha=0.6, label="after", log=True,
                lw=0)  # fmt: skip
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("update entry")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-2, 2))
    axes[0, 0].set_ylabel("count")
    finish(fig, axes[0], title, png)


def figure_y5(rd_tsv: str | Path, png: str | Path, *, title: str) -> None:
    """Y5: M-weighted distortion vs the coded bits each quantizer spends (its index
    entropy), with the Blahut-Arimoto bound."""
    from gradcomp.palette import DISTORTION_STUDY_COLORS, assign

    rd = pd.read_csv(rd_tsv, sep="\t")
    points = rd[rd["quantizer"] != BOUND].assign(panel=lambda d: d["M"].map(lambda m: f"M = {m:g}"))
    bound = rd[rd["quantizer"] == BOUND].assign(panel=lambda d: d["M"].map(lambda m: f"M = {m:g}"))
    plots.plot_lines(
        points, x="coded_bits", y="distortion", hue="quantizer", col="panel", png_path=png,
        palette=assign(list(dict.fromkeys(points["quantizer"])), DISTORTION_STUDY_COLORS),
        log_y=True, reference=bound, col_wrap=2,
        xlabel="coded bits per kept entry (index entropy)",
        ylabel="mean |g|^M (g - ĝ)^2", title=title,
    )  # fmt: skip
