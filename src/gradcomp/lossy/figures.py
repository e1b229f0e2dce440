"""Paper Y's figures: Y1-Y3 from the federated runs' round tables, Y4 and Y5 from a run's
update snapshot, Y6 and Y7 from the one-round paired study.

Per-bit accuracy after round t = (test accuracy at t - test accuracy of the initial model)
/ cumulative uplink bits of all users up to t (Huffman-coded payload). Every variant keeps
its look across figures (:mod:`gradcomp.lossy.styles`); panels are rates R, with the
uncompressed references in every panel; legends sit outside the axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from gradcomp import plots
from gradcomp.lossy.distortion_study import BOUND
from gradcomp.lossy.paired import t_interval
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.lossy.styles import is_reference, legend_outside, variant_styles
from gradcomp.lossy.tables import one_round_data, t4_table


def _rate_panels(data: pd.DataFrame, quantizers: dict[str, str]) -> list[int]:
    """The rates that get a panel: those of the compressed variants (all rates if none)."""
    compressed = data[~data["compressor"].map(lambda c: is_reference(quantizers.get(c, c)))]
    return sorted((compressed if len(compressed) else data)["rate"].unique())


def _in_panel(data: pd.DataFrame, rate: int, quantizers: dict[str, str]) -> pd.DataFrame:
    """The rows shown in the panel of ``rate`` (the references in every panel), in config
    order of the compressors, then by rate and M."""
    ref = data["compressor"].map(lambda c: is_reference(quantizers.get(c, c)))
    order = {name: i for i, name in enumerate(quantizers)}
    at = data[ref | (data["rate"] == rate)]
    rank = at["compressor"].map(lambda c: order.get(c, len(order)))
    return at.assign(_order=rank).sort_values(["_order", "rate", "M"], kind="stable")


def _panels(n: int, *, width: float = 3.6, height: float = 3.0):
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False, sharey=True)
    return fig, axes[0]


def _finish(fig: plt.Figure, axes, title: str, png: str | Path) -> None:
    """One legend right of ``axes``, the title, and the PNG + PDF files."""
    legend_outside(fig, axes, fontsize=7)
    fig.suptitle(title, fontsize=9)
    plots.save_figure(fig, png)


def _curves(data, quantizers, x, y, *, xlabel, ylabel, title, png, log_x=False) -> None:
    """Mean over seeds of ``y`` against ``x`` per variant, one panel per rate."""
    plots.set_theme()
    styles = variant_styles(data, quantizers)
    rates = _rate_panels(data, quantizers)
    fig, axes = _panels(len(rates))
    for ax, rate in zip(axes, rates, strict=True):
        at = _in_panel(data, rate, quantizers)
        for key, rows in at.groupby(["compressor", "rate", "M"], sort=False):
            mean = rows.groupby("round")[[x, y]].mean().sort_index()
            ax.plot(mean[x], mean[y], **styles[key].line())
        ax.set_title(f"R = {rate}", fontsize=9)
        ax.set_xlabel(xlabel)
        if log_x:
            ax.set_xscale("log")
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel(ylabel)
    _finish(fig, axes, title, png)


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
    """Y1 accuracy vs round, Y2 accuracy vs cumulative uplink bits, Y3 per-bit accuracy vs M
    (means over seeds; ``quantizers``: compressor name -> kind, in config order)."""
    data = read_rounds(rounds_tsvs, quantizers)
    seeds = data["seed"].nunique()
    src = f"\n{source}" if source else ""
    _curves(
        data, quantizers, "round", "test_acc", xlabel="round", ylabel="test accuracy", png=png_y1,
        title=f"Y1 {model}: test accuracy per round (mean over {seeds} seeds){src}",
    )  # fmt: skip
    sent = data[data["cumulative_bits_coded"] > 0]
    _curves(
        sent, quantizers, "cumulative_bits_coded", "test_acc", log_x=True, png=png_y2,
        xlabel="cumulative uplink bits (all users, coded)", ylabel="test accuracy",
        title=f"Y2 {model}: test accuracy vs uplink bits (mean over {seeds} seeds){src}",
    )  # fmt: skip
    plot_per_bit_vs_m(
        data, quantizers, png_y3,
        title=f"Y3 {model}: per-bit accuracy after the last round "
        f"(mean and 95% interval over {seeds} seeds){src}",
    )  # fmt: skip


def plot_per_bit_vs_m(
    data: pd.DataFrame, quantizers: dict[str, str], png: str | Path, *, title: str
) -> None:
    """Y3: final-round per-bit accuracy vs M for the compressors with several M, one panel
    per rate; the others at that rate (and the references) as horizontal lines."""
    plots.set_theme()
    final = data[data["round"] == data["round"].max()]
    styles = variant_styles(final, quantizers)
    rates = _rate_panels(final, quantizers)
    fig, axes = _panels(len(rates), width=3.8, height=3.2)
    for ax, rate in zip(axes, rates, strict=True):
        at = _in_panel(final, rate, quantizers)
        sweep = at.groupby("compressor")["M"].nunique()
        for name in sweep[sweep > 1].index:
            rows = at[at["compressor"] == name]
            stats = [(M, *t_interval(g["per_bit_acc_coded"])) for M, g in rows.groupby("M")]
            Ms, mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
            style = styles[(name, rate, int(Ms[-1]))]
            ax.errorbar(
                Ms, mean, yerr=[mean - lo, hi - mean], color=style.color, marker=style.marker,
                ls=style.linestyle, capsize=2, lw=1.3, ms=4, label=f"{name} R{rate} (vs M)",
            )  # fmt: skip
        for key, rows in at[~at["compressor"].isin(sweep[sweep > 1].index)].groupby(
            ["compressor", "rate", "M"], sort=False
        ):
            mean, lo, hi = t_interval(rows["per_bit_acc_coded"])
            style = styles[key]
            ax.axhline(
                mean, color=style.color, ls=style.linestyle or "-", lw=1.1, label=style.label
            )
            if np.isfinite(lo):
                ax.axhspan(lo, hi, color=style.color, alpha=0.08, lw=0)
        ax.set_title(f"R = {rate}", fontsize=9)
        ax.set_xlabel("M (distortion weight |g|^M)")
    axes[0].set_ylabel("per-bit accuracy (accuracy gain / bit)")
    _finish(fig, axes, title, png)


def figure_y6(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    png: str | Path,
    *,
    baseline: str,
    title: str,
    pairable=None,
) -> None:
    """Y6: the one-round study per variant (mean and 95% interval over seeds, the rounds of
    a seed averaged first): the accuracy a round gains per uplink bit (top) and the
    test-loss increase against the uncompressed aggregate (bottom); ``*``: the paired
    difference to ``baseline`` at the same rate is significant after Holm's adjustment
    over T4's family (``pairable``: the compressors paired with it, see T4)."""
    plots.set_theme()
    data = one_round_data(tables)
    summary = t4_table(tables, baseline=baseline, pairable=pairable)
    summary = summary.set_index(["compressor", "rate", "M"])
    styles = variant_styles(data, quantizers)
    rates = _rate_panels(data, quantizers)
    fig, axes = plt.subplots(
        2, len(rates), figsize=(3.8 * len(rates), 5.6), squeeze=False, sharey="row"
    )
    metrics = (
        ("gain_per_bit", "gain_per_bit", "round's accuracy gain / bit"),
        ("loss_increase", "test_loss", "test loss - uncompressed aggregate's"),
    )
    for col, rate in enumerate(rates):
        at = _in_panel(summary.reset_index(), rate, quantizers)
        at = at.set_index(["compressor", "rate", "M"])
        for row, (metric, paired, ylabel) in enumerate(metrics):
            ax = axes[row, col]
            for i, (key, r) in enumerate(at.iterrows()):
                style = styles[key]
                mean, lo, hi = r[f"{metric}_mean"], r[f"{metric}_lo"], r[f"{metric}_hi"]
                ax.errorbar(
                    [i], [mean], yerr=[[mean - lo], [hi - mean]] if np.isfinite(lo) else None,
                    color=style.color, marker=style.marker or "o", capsize=2, ls="none",
                    ms=5, label=style.label,
                )  # fmt: skip
                if bool(r.get(f"{paired}_vs_{baseline}_significant", False)):
                    ax.annotate("*", (i, hi if np.isfinite(hi) else mean), ha="center",
                                va="bottom", fontsize=10, color=style.color)  # fmt: skip
            ax.set_xticks(range(len(at)))
            ax.set_xticklabels([styles[k].label for k in at.index], rotation=60, ha="right",
                               fontsize=6)  # fmt: skip
            if row == 0:
                ax.set_title(f"R = {rate}", fontsize=9)
            if col == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            ax.axhline(0.0, color="0.6", lw=0.8)
    _finish(fig, axes[0], title, png)


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
    _finish(fig, axes[0], title, png)


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


def figure_y7(
    tables: Sequence[str | Path], quantizers: dict[str, str], png: str | Path, *, title: str
) -> None:
    """Y7: rate curves of the one-round study, one line per compressor and M through its
    rates: the test-loss increase (left) and accuracy change (right) against the
    uncompressed aggregate, over the measured uplink bits per entry (coded, log scale);
    mean and 95% interval over seeds (rounds of a seed averaged first)."""
    from gradcomp.lossy.paired import seed_means

    plots.set_theme()
    data = one_round_data(tables)
    per_seed = seed_means(data, ["bits_per_entry", "loss_increase", "acc_change"])
    styles = variant_styles(data, quantizers)
    order = {name: i for i, name in enumerate(quantizers)}
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8), squeeze=False)
    axes = axes[0]
    metrics = (
        ("loss_increase", "test loss - uncompressed aggregate's"),
        ("acc_change", "test accuracy - uncompressed aggregate's"),
    )
    curves = sorted(
        per_seed.groupby(["compressor", "M"]), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])
    )
    for (name, M), curve in curves:
        first = styles[(name, int(curve["rate"].min()), M)]
        label = f"{name}" + (f" M{M}" if curve["M"].ne(0).any() or name == "gennorm" else "")
        stats = []
        for _, at in curve.groupby("rate"):
            stats.append(
                (at["bits_per_entry"].mean(), *(t_interval(at[m])[0:3] for m, _ in metrics))
            )
        stats.sort(key=lambda t: t[0])
        x = np.array([t[0] for t in stats])
        for k, (ax, (_, ylabel)) in enumerate(zip(axes, metrics, strict=True)):
            mean = np.array([t[1 + k][0] for t in stats])
            lo = np.array([t[1 + k][1] for t in stats])
            hi = np.array([t[1 + k][2] for t in stats])
            err = [mean - lo, hi - mean] if np.isfinite(lo).all() else None
            ax.errorbar(
                x, mean, yerr=err, color=first.color, marker=first.marker or "o",
                ls="-" if len(x) > 1 else "none", lw=1.2, ms=4, capsize=2, label=label,
            )  # fmt: skip
            ax.set_ylabel(ylabel, fontsize=8)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("measured uplink bits per entry (coded, all users)")
        ax.axhline(0.0, color="0.6", lw=0.8)
    _finish(fig, axes, title, png)
