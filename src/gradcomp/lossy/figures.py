"""Paper Y's figures: Y1-Y3 from the federated runs' round tables, Y4 and Y5 from a run's
update snapshot, Y6 and Y7 from the one-round paired study.

Per-bit accuracy after round t = (test accuracy at t - test accuracy of the initial model)
/ cumulative uplink bits of all users up to t (Huffman-coded payload). Every variant keeps
its look across figures (:mod:`gradcomp.lossy.styles`); panels are compressors
(:mod:`gradcomp.lossy.facets`: a grid at most four wide, the uncompressed references in
every panel, a legend per panel naming its R and M, one legend outside for the references);
Y6 is one row per variant.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from gradcomp import plots
from gradcomp.compression.specs import variant_label
from gradcomp.lossy import facets
from gradcomp.lossy.distortion_study import BOUND
from gradcomp.lossy.matched_bits import lower_hull
from gradcomp.lossy.paired import t_interval
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.rate_curves import curve_points, drop_dominated
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.lossy.styles import legend_outside, variant_styles
from gradcomp.lossy.tables import one_round_data, t4_table


def _finish(fig: plt.Figure, axes, title: str, png: str | Path) -> None:
    """One legend right of ``axes`` for what every panel shares (the references), the
    title, and the PNG + PDF files."""
    legend_outside(fig, axes, fontsize=7)
    fig.suptitle(title, fontsize=9, y=1.0, va="bottom")  # above the panels' own titles
    plots.save_figure(fig, png)


def _operational_curve(curves, names) -> list[tuple[float, tuple[float, float]]]:
    """The lower convex hull over every configuration of the compressors ``names`` (mean
    bits, mean loss increase: :func:`gradcomp.lossy.matched_bits.lower_hull`, the verdicts'
    ``frontier``), as (bits, (loss increase, accuracy change)) by bits; [] without points."""
    points = [(t[0], t[2][0], t[3][0]) for (n, _), stats in curves.items() if n in names
              for t in stats]  # fmt: skip
    if not points:
        return []
    bits, loss, acc = (np.array(v) for v in zip(*points, strict=True))
    on = lower_hull(bits, loss)
    order = np.argsort(bits[on], kind="stable")
    return [(b, (lo, ac)) for b, lo, ac in zip(bits[on][order], loss[on][order], acc[on][order],
                                              strict=True)]  # fmt: skip


def _ordered(rows: pd.DataFrame, quantizers: dict[str, str]) -> pd.DataFrame:
    """``rows`` in config order of the compressors, then by rate and M."""
    order = {name: i for i, name in enumerate(quantizers)}
    rank = rows["compressor"].map(lambda c: order.get(c, len(order)))
    return rows.assign(_order=rank).sort_values(["_order", "rate", "M"], kind="stable")


def _curves(data, quantizers, x, y, *, xlabel, ylabel, title, png, log_x=False) -> None:
    """Mean over seeds of ``y`` against ``x`` per variant: one panel per compressor with its
    rates and M, the references in every panel."""
    plots.set_theme()
    styles = variant_styles(data, quantizers)
    names = facets.compressors(data, quantizers)
    refs = _ordered(facets.references(data, quantizers), quantizers)
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
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.supxlabel(xlabel, fontsize=8)
    fig.supylabel(ylabel, fontsize=8)
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
    """Y3: final-round per-bit accuracy (mean and 95% interval over seeds) against M, one
    panel per compressor with several M and a line per rate; the compressors with one M
    share a last panel against the rate R; the references as horizontal lines (and
    interval bands) in every panel."""
    plots.set_theme()
    final = data[data["round"] == data["round"].max()]
    styles = variant_styles(final, quantizers)
    names = facets.compressors(final, quantizers)
    swept = [n for n in names if final.loc[final["compressor"] == n, "M"].nunique() > 1]
    single = [n for n in names if n not in swept]
    refs = _ordered(facets.references(final, quantizers), quantizers)
    fig, axes = facets.grid(len(swept) + bool(single), width=3.2, height=2.6)
    for ax in axes:
        for key, rows in refs.groupby(["compressor", "rate", "M"], sort=False):
            mean, lo, hi = t_interval(rows["per_bit_acc_coded"])
            style = styles[key]
            ax.axhline(mean, color=style.color, ls=style.linestyle, lw=1.1, label=style.label)
            if np.isfinite(lo):
                ax.axhspan(lo, hi, color=style.color, alpha=0.08, lw=0)
    for ax, name in zip(axes, swept, strict=False):
        own = final[final["compressor"] == name]
        for rate, rows in own.groupby("rate"):
            stats = [(M, *t_interval(g["per_bit_acc_coded"])) for M, g in rows.groupby("M")]
            Ms, mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
            style = styles[(name, rate, int(Ms[-1]))]
            err = [mean - lo, hi - mean] if np.isfinite(lo).all() else None
            ax.errorbar(Ms, mean, yerr=err, color=style.color, marker=style.marker,
                        ls=style.linestyle, capsize=2, lw=1.3, ms=4, label="_")  # fmt: skip
        keys = [(name, r, M) for r, M in zip(own["rate"], own["M"], strict=True)]
        facets.family_legend(ax, name, keys, styles, Ms=False)
        ax.set_xlabel("M (distortion weight |g|^M)", fontsize=8)
        ax.set_xticks(sorted(own["M"].unique()))
    if single:
        ax = axes[-1]
        for name in single:
            for M, rows in final[final["compressor"] == name].groupby("M"):
                stats = [(r, *t_interval(g["per_bit_acc_coded"])) for r, g in rows.groupby("rate")]
                rates, mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
                style = styles[(name, int(rates[-1]), M)]
                err = [mean - lo, hi - mean] if np.isfinite(lo).all() else None
                ax.errorbar(
                    rates, mean, yerr=err, color=style.color, marker="o", capsize=2, lw=1.1,
                    ms=3.5, ls="-" if len(rates) > 1 else "none",
                    label="_" + name + (f" M{M}" if M else ""),
                )  # fmt: skip
        handles, labels = _own_handles(ax)
        ax.legend(handles, labels, fontsize=6, ncol=2 if len(handles) > 6 else 1,
                  framealpha=0.8, labelspacing=0.25, columnspacing=0.8)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("R (the compressor's rate knob)", fontsize=8)
        ax.set_title("one M each: against R", fontsize=9)
    fig.supylabel("per-bit accuracy (accuracy gain / bit)", fontsize=8)
    _finish(fig, axes, title, png)


def _own_handles(ax: plt.Axes) -> tuple[list, list[str]]:
    """The error-bar containers of ``ax`` labelled "_name" (kept out of the shared legend)
    and their names."""
    own = [c for c in ax.containers if str(c.get_label()).startswith("_")]
    return own, [str(c.get_label())[1:] for c in own]


def figure_y6(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    png: str | Path,
    *,
    baseline: str,
    title: str,
    pairable=None,
    kept_sets=None,
    curves=None,
) -> None:
    """Y6: the one-round study per variant (mean and 95% interval over the design's units,
    the rounds of a trajectory averaged first), one row per variant grouped by compressor
    (config order, then R and M): the accuracy a round gains per uplink bit (left) and the
    test-loss increase against the uncompressed aggregate (right); ``*``: the paired
    difference to ``baseline`` at the same rate on the same kept set is significant after
    Holm's adjustment over T4's family (``pairable``, ``kept_sets``, ``curves``: as T4's).
    The height grows with the number of variants, the width does not."""
    plots.set_theme()
    data = one_round_data(tables)
    summary = _ordered(
        t4_table(tables, baseline=baseline, pairable=pairable, kept_sets=kept_sets,
                 curves=curves),
        quantizers,
    )  # fmt: skip
    styles = variant_styles(data, quantizers)
    keys = list(zip(summary["compressor"], summary["rate"], summary["M"], strict=True))
    n = len(keys)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 1.4 + 0.16 * n), sharey=True, squeeze=False)
    axes = axes[0]
    metrics = (
        ("gain_per_bit", "gain_per_bit", "round's accuracy gain / bit"),
        ("loss_increase", "test_loss", "test loss - uncompressed aggregate's"),
    )
    groups = summary["compressor"].ne(summary["compressor"].shift()).cumsum().to_numpy()
    for ax, (metric, paired, xlabel) in zip(axes, metrics, strict=True):
        for i, (key, (_, r)) in enumerate(zip(keys, summary.iterrows(), strict=True)):
            style = styles[key]
            mean, lo, hi = r[f"{metric}_mean"], r[f"{metric}_lo"], r[f"{metric}_hi"]
            ax.errorbar(
                [mean], [i], xerr=[[mean - lo], [hi - mean]] if np.isfinite(lo) else None,
                color=style.color, marker=style.marker or "o", capsize=2, ls="none", ms=4,
            )  # fmt: skip
            if bool(r.get(f"{paired}_vs_{baseline}_significant", False)):
                ax.annotate("*", (hi if np.isfinite(hi) else mean, i), xytext=(2, -3),
                            textcoords="offset points", fontsize=9, color=style.color)  # fmt: skip
            if groups[i] % 2 == 0:  # every other compressor on a light band
                ax.axhspan(i - 0.5, i + 0.5, color="0.93", lw=0, zorder=0)
        ax.axvline(0.0, color="0.6", lw=0.8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(range(n))
    # the knob beside the measured bits per entry it spends (coded, mean over seeds)
    bits = summary["bits_per_entry_mean"].to_numpy()
    axes[0].set_yticklabels(
        [f"{styles[k].label} ({b:.2g} b/entry)" for k, b in zip(keys, bits, strict=True)],
        fontsize=7,
    )
    full = {k[0]: styles[k].color for k in sorted(keys, key=lambda k: k[2])}  # largest M
    for label, key in zip(axes[0].get_yticklabels(), keys, strict=True):
        label.set_color(full[key[0]] if full[key[0]] != "#999999" else "0.4")
    axes[0].set_ylim(n - 0.5, -0.5)
    _finish(fig, axes, title, png)


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


def _interval(rows, column: str) -> tuple[float, float, float]:
    """(mean, lo, hi) of ``column`` over the design's units (warm starts where there are
    several, else seeds)."""
    from gradcomp.lossy.nested import nested_test

    t = nested_test(rows[column], rows["warm_start"])
    return t.mean, t.lo, t.hi


def figure_y7(
    tables: Sequence[str | Path],
    quantizers: dict[str, str],
    png: str | Path,
    *,
    title: str,
    baseline: str | None = None,
    curves: dict[str, str] | None = None,
) -> None:
    """Y7: rate curves of the one-round study, a line per compressor and M through its
    rates: the test-loss increase (upper block of panels) and accuracy change (lower block)
    against the uncompressed aggregate, over the measured uplink bits per entry (coded, log
    scale); mean and 95% interval over the design's units (warm starts, each the mean of its
    seeds; :mod:`gradcomp.lossy.nested`). A configuration that another of its own curve beats
    in mean bits and loss increase is drawn hollow, off its line. One panel per compressor
    (its M as shades), with the curve of ``baseline`` (every compressor that joins it
    through ``curves``, dashed), its operational curve (the lower convex hull of all its
    configurations, dotted: what the verdicts' ``frontier`` compares with) and the
    references (grey points) in every panel."""
    from gradcomp.lossy.paired import seed_means

    plots.set_theme()
    data = one_round_data(tables)
    per_seed = seed_means(data, ["bits_per_entry", "loss_increase", "acc_change"])
    joins = dict(curves or {})
    dominated = {lb for labels in drop_dominated(curve_points(per_seed, joins),
                                                 "loss_increase")[1].values()
                 for lb in labels.split(",")}  # fmt: skip
    styles = variant_styles(data, quantizers)
    metrics = (
        ("loss_increase", "test loss - uncompressed aggregate's"),
        ("acc_change", "test accuracy - uncompressed aggregate's"),
    )
    base_curve = joins.get(baseline, baseline)
    base_names = {n for n in data["compressor"].unique() if joins.get(n, n) == base_curve}
    curves = {}  # (name, M) -> bits per entry and (mean, lo, hi) per metric, by bits
    for (name, M), curve in per_seed.groupby(["compressor", "M"]):
        stats = sorted(
            (at["bits_per_entry"].mean(), rate, *(_interval(at, m) for m, _ in metrics))
            for rate, at in curve.groupby("rate")
        )
        curves[(name, int(M))] = stats
    front = _operational_curve(curves, base_names)
    names = facets.compressors(data, quantizers)
    refs = [n for n in dict.fromkeys(_ordered(facets.references(data, quantizers),
                                              quantizers)["compressor"])]  # fmt: skip
    per_block = max(len(names), 1)
    cols = min(per_block, facets.MAX_COLS)
    block_rows = -(-per_block // cols)
    fig, grid = plt.subplots(2 * block_rows, cols, figsize=(3.0 * cols, 2.3 * 2 * block_rows),
                             squeeze=False)  # fmt: skip
    bits = [t[0] for stats in curves.values() for t in stats]
    xlim = (min(bits) / 1.3, max(bits) * 1.3)
    kept = []
    ref_marks = ["o", "s", "^", "D", "v"]

    def draw(ax, name, M, k, ls="-", **kw):
        stats = curves[(name, M)]
        x = np.array([t[0] for t in stats])
        mean, lo, hi = (np.array([t[2 + k][j] for t in stats]) for j in range(3))
        out = np.array([variant_label(name, t[1], M) in dominated for t in stats])
        err = np.array([mean - lo, hi - mean]) if np.isfinite(lo).all() else None
        on = ~out
        ax.errorbar(x[on], mean[on], yerr=None if err is None else err[:, on], capsize=2, ms=4,
                    ls=ls if on.sum() > 1 else "none", **kw)  # fmt: skip
        if out.any():  # dominated within its curve: hollow, off the line
            kw = {**kw, "label": None}
            ax.errorbar(x[out], mean[out], yerr=None if err is None else err[:, out], capsize=2,
                        ms=4, ls="none", mfc="white", **kw)  # fmt: skip

    for k, (_, ylabel) in enumerate(metrics):
        block = grid[k * block_rows : (k + 1) * block_rows].ravel()
        for ax in block[per_block:]:
            ax.remove()
        for ax, name in zip(block, names or ["references"], strict=False):
            for j, ref in enumerate(refs):
                for n, M in [c for c in curves if c[0] == ref]:
                    style = styles[(ref, curves[(n, M)][0][1], M)]
                    draw(ax, n, M, k, color=style.color, marker=ref_marks[j % len(ref_marks)],
                         lw=1.0, label=ref)  # fmt: skip
            if baseline is not None and name not in base_names:
                for n, M in [c for c in curves if c[0] in base_names]:
                    style = styles[(n, curves[(n, M)][0][1], M)]
                    draw(ax, n, M, k, ls="--", color=style.color, marker="", lw=1.0,
                         alpha=0.7, label=f"{baseline} (baseline)")  # fmt: skip
                if front:
                    ax.plot(*zip(*[(b, v[k]) for b, v in front], strict=True), color="0.15",
                            ls=":", lw=1.6, label=f"{baseline}'s operational curve")  # fmt: skip
            keys = []
            for n, M in [c for c in curves if c[0] == name]:
                first = styles[(n, curves[(n, M)][0][1], M)]
                draw(ax, n, M, k, color=first.color, marker=first.marker or "o", lw=1.3)
                keys += [(n, r, M) for _, r, *_ in curves[(n, M)]]
            facets.family_legend(ax, name, keys, styles, rates=False)
            ax.axhline(0.0, color="0.6", lw=0.8)
            ax.set_xscale("log")
            ax.set_xlim(*xlim)
            ax.tick_params(labelsize=7)
            kept.append(ax)
        for ax in block[:per_block:cols]:
            ax.set_ylabel(ylabel, fontsize=7)
    fig.supxlabel("measured uplink bits per entry (coded, all users)", fontsize=8)
    _finish(fig, kept, title, png)
