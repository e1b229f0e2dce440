"""Paper Y's figures from the one-round paired study: Y6 (one row per variant, paired
differences to the baseline) and Y7 (rate curves, a line per compressor and M).

Every interval is over the design's units (warm starts where there are several, else seeds;
:mod:`gradcomp.lossy.nested`); styles and panels as in :mod:`gradcomp.lossy.figures`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from gradcomp import plots
from gradcomp.compression.specs import variant_label
from gradcomp.lossy import facets
from gradcomp.lossy.figures import config_order, finish
from gradcomp.lossy.matched_bits import lower_hull
from gradcomp.lossy.rate_curves import curve_points, drop_dominated
from gradcomp.lossy.styles import variant_styles
from gradcomp.lossy.tables import one_round_data, t4_table

__all__ = ["figure_y6", "figure_y7"]


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
    summary = config_order(
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
    finish(fig, axes, title, png)


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
    (its M as shades; the entries that join the baseline's curve all in the baseline's), with
    the curve of ``baseline`` (every compressor that joins it
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
    # the entries that join the baseline's curve are drawn in its panel, not in their own
    names = [
        n for n in facets.compressors(data, quantizers) if n == baseline or n not in base_names
    ]
    refs = [n for n in dict.fromkeys(config_order(facets.references(data, quantizers),
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
            own = base_names if name == baseline else {name}
            for n, M in [c for c in curves if c[0] in own]:
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
    finish(fig, kept, title, png)
