"""Panels that keep paper Y's figures legible at any number of variants: every figure is
:data:`FIG_WIDTH` inches wide (8 pt text is 11 px when the PNG is shown 700 px wide) and has
at most :data:`MAX_PANELS` panels, :data:`MAX_COLS` a row; where a figure has more
compressors than panels, neighbouring compressors (config order) share a panel
(:func:`partition`). Legends sit inside a panel where the data leave room, else below the
panels (:func:`legend_below`); axes take most of the figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from gradcomp.plotting.styles import is_reference

__all__ = [
    "FIG_WIDTH",
    "MAX_COLS",
    "MAX_PANELS",
    "compressors",
    "config_order",
    "grid",
    "labelled",
    "legend_below",
    "legend_inside",
    "log_ticks",
    "partition",
    "references",
    "title",
]

#: Every paper-Y figure's width in inches.
FIG_WIDTH = 7.0
#: The most panels a figure has, and per row.
MAX_PANELS = 6
MAX_COLS = 3


def compressors(data: pd.DataFrame, quantizers: Mapping[str, str]) -> list[str]:
    """The compressed (non-reference) compressors present in ``data``, in config order
    (``quantizers``: name -> kind)."""
    present = set(data["compressor"])
    order = [n for n in quantizers if n in present] + sorted(present - set(quantizers))
    return [n for n in order if not is_reference(quantizers.get(n, n))]


def config_order(rows: pd.DataFrame, quantizers: dict[str, str]) -> pd.DataFrame:
    """``rows`` in config order of the compressors, then by rate and M."""
    order = {name: i for i, name in enumerate(quantizers)}
    rank = rows["compressor"].map(lambda c: order.get(c, len(order)))
    return rows.assign(_order=rank).sort_values(["_order", "rate", "M"], kind="stable")


def references(data: pd.DataFrame, quantizers: Mapping[str, str]) -> pd.DataFrame:
    """The rows of the uncompressed references."""
    return data[data["compressor"].map(lambda c: is_reference(quantizers.get(c, c)))]


def partition(sizes: Sequence[int], parts: int = MAX_PANELS) -> list[list[int]]:
    """Indices ``0..len(sizes)-1`` in ``min(parts, len(sizes))`` runs of neighbours, the
    largest run's total size as small as it can be, then the totals as even as they can be
    (one run each when they fit).

    >>> partition([1, 2, 1, 1, 1, 1, 1], 6)
    [[0], [1], [2], [3], [4], [5, 6]]
    >>> partition([1] * 9, 6)
    [[0], [1], [2], [3, 4], [5, 6], [7, 8]]
    """
    n = len(sizes)
    k = min(parts, n)
    total = [0, *np.cumsum(sizes).tolist()]
    inf = (math.inf, math.inf)
    # best[j][i]: (largest run, sum of squares) of the first i items in j runs, and the cut
    best = [[(inf, 0)] * (n + 1) for _ in range(k + 1)]
    best[0][0] = ((0, 0), 0)
    for j in range(1, k + 1):
        for i in range(j, n + 1):
            for c in range(j - 1, i):
                (big, sq), _ = best[j - 1][c]
                run = total[i] - total[c]
                cand = (max(big, run), sq + run * run)
                if cand < best[j][i][0]:
                    best[j][i] = (cand, c)
    runs, i = [], n
    for j in range(k, 0, -1):
        c = best[j][i][1]
        runs.append(list(range(c, i)))
        i = c
    return runs[::-1]


def grid(
    n: int,
    *,
    height: float,
    width: float = FIG_WIDTH,
    ncols: int = MAX_COLS,
    sharex=False,
    sharey=False,
) -> tuple[plt.Figure, list[plt.Axes]]:
    """``n`` panels (1 to :data:`MAX_PANELS`) in rows of at most ``ncols`` (at most
    :data:`MAX_COLS`), in a figure ``width`` x ``height`` inches; the unused cells of the
    last row are removed. Returns the figure and the ``n`` axes, row by row."""
    if not 1 <= n <= MAX_PANELS:
        raise ValueError(f"a paper-Y figure has 1 to {MAX_PANELS} panels, not {n}")
    cols = min(n, ncols, MAX_COLS)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(width, height), squeeze=False, sharex=sharex, sharey=sharey
    )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.remove()
    for i, ax in enumerate(flat[:n]):
        if i + cols >= n:  # lowest panel of its column: x tick labels even when shared
            ax.tick_params(labelbottom=True)
    return fig, flat[:n]


def title(fig: plt.Figure, text: str) -> None:
    """The figure's title (its question, then the data line), above the panels."""
    fig.suptitle(text, fontsize=10)


def labelled(axes: Iterable[plt.Axes]) -> dict[str, Any]:
    """Label -> first artist of that label in ``axes`` (the handles a legend of every drawn
    series needs), in drawing order; artists whose label starts with ``_`` are left out."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    return handles


def legend_below(
    fig: plt.Figure,
    axes: Iterable[plt.Axes],
    *,
    ncol: int = 2,
    extra: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> None:
    """One legend of every labelled series of ``axes`` (and ``extra``: label -> handle)
    centred below the panels."""
    handles = {**labelled(axes), **dict(extra or {})}
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="upper center",
                   bbox_to_anchor=(0.5, 0.0), ncol=min(ncol, len(handles)), frameon=False,
                   fontsize=8, title=title, title_fontsize=8)  # fmt: skip


def legend_inside(ax, *, loc="best", title=None, handles=None) -> None:
    """One legend inside panel ``ax`` of its labelled series (or ``handles``: label -> handle)."""
    handles = handles if handles is not None else labelled([ax])
    ax.legend(list(handles.values()), list(handles), loc=loc, fontsize=8, title=title,
              title_fontsize=8, framealpha=0.9)  # fmt: skip


def _plain(value: float, _pos=None) -> str:
    return f"{value:g}"


def log_ticks(axis, lo: float, hi: float) -> None:
    """A log ``axis`` over [lo, hi] ticked at 1, 2, 5 x 10^k (1, 1.5, 2, 3, 4, 5, 7 x 10^k
    where that gives fewer than three ticks), labelled as plain numbers, no minor labels."""
    lo, hi = sorted((float(lo), float(hi)))
    span = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8)):
        ticks = [m * 10.0**e for e in span for m in mantissas if lo <= m * 10.0**e <= hi]
        if len(ticks) >= 3:
            break
    axis.set_major_locator(FixedLocator([float(f"{t:.6g}") for t in ticks]))
    axis.set_major_formatter(FuncFormatter(_plain))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())
