"""Facets that keep paper Y's figures legible at any number of variants: one panel per
compressor (its rates and M told apart inside the panel by the marks of
:mod:`gradcomp.lossy.styles`), the uncompressed references in every panel, a short legend
per panel and one small legend for what every panel shares. The grid is at most
:data:`MAX_COLS` panels wide, so a figure's width is bounded; it grows downwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from gradcomp.lossy.styles import Style, is_reference

__all__ = ["MAX_COLS", "compressors", "family_legend", "grid", "references", "unlabelled"]

#: Panels per grid row.
MAX_COLS = 4


def compressors(data: pd.DataFrame, quantizers: Mapping[str, str]) -> list[str]:
    """The compressed (non-reference) compressors present in ``data``, in config order
    (``quantizers``: name -> kind); one panel each."""
    present = set(data["compressor"])
    order = [n for n in quantizers if n in present] + sorted(present - set(quantizers))
    return [n for n in order if not is_reference(quantizers.get(n, n))]


def references(data: pd.DataFrame, quantizers: Mapping[str, str]) -> pd.DataFrame:
    """The rows of the uncompressed references (drawn in every panel)."""
    return data[data["compressor"].map(lambda c: is_reference(quantizers.get(c, c)))]


def grid(
    n: int, *, ncols: int = MAX_COLS, width: float = 3.0, height: float = 2.4, **share
) -> tuple[plt.Figure, list[plt.Axes]]:
    """``n`` panels (at least one) in rows of at most ``ncols``, each ``width`` x ``height``
    inches; the unused cells of the last row are removed. ``share``: ``sharex``/``sharey``
    as :func:`matplotlib.pyplot.subplots`. Returns the figure and the ``n`` axes, row by row."""
    n = max(n, 1)
    cols = min(n, ncols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(width * cols, height * rows), squeeze=False, **share
    )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.remove()
    for i, ax in enumerate(flat[:n]):
        ax.tick_params(labelsize=8)
        if i + cols >= n:  # lowest panel of its column: x tick labels even when shared
            ax.tick_params(labelbottom=True)
    return fig, flat[:n]


def unlabelled(style: Style) -> dict[str, Any]:
    """``style.line()`` without a legend entry (the panel's legend names rates and M)."""
    return {**style.line(), "label": f"_{style.label}"}


def family_legend(
    ax: plt.Axes,
    name: str,
    keys: Iterable[tuple[str, int, int]],
    styles: Mapping[tuple[str, int, int], Style],
    *,
    rates: bool = True,
    Ms: bool = True,
    extra: Sequence[Line2D] = (),
    title: str | None = None,
) -> None:
    """Title ``ax`` with compressor ``name`` (or ``title``) in its colour and give it a
    legend that names its marks instead of its variants: one entry per rate R (marker and
    line style) and one per M (shade), at most len(R) + len(M) entries however many variants
    the panel holds (``rates`` / ``Ms`` False: leave that part out, e.g. when it is the x
    axis); a single variant gets its own label. ``extra``: further handles appended. The
    legend sits in one row between the title and the panel, off the data."""
    keys = sorted(set(keys), key=lambda k: (k[1], k[2]))
    full = styles[keys[-1]].color if keys else "0.3"
    ax.set_title(title or name, fontsize=9, color=full)
    handles = []
    rate_values = sorted({k[1] for k in keys})
    m_values = sorted({k[2] for k in keys})
    if len(keys) == 1:
        style = styles[keys[0]]
        handles.append(Line2D([], [], color=style.color, marker=style.marker or "o",
                              ls=style.linestyle, label=style.label))  # fmt: skip
    else:
        if rates and len(rate_values) > 1:
            for r in rate_values:
                style = styles[next(k for k in keys if k[1] == r)]
                handles.append(Line2D([], [], color=full, marker=style.marker,
                                      ls=style.linestyle, label=f"R{r}"))  # fmt: skip
        if Ms and len(m_values) > 1:
            for M in m_values:
                style = styles[next(k for k in keys if k[2] == M)]
                handles.append(Line2D([], [], color=style.color, lw=4, label=f"M{M}"))
    handles += list(extra)
    if handles:
        ax.legend(handles=handles, fontsize=8, ncol=min(len(handles), 4),
                  loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False,
                  handlelength=1.8, borderpad=0.1, labelspacing=0.2, columnspacing=0.8,
                  handletextpad=0.4)  # fmt: skip
        ax.set_title(
            ax.get_title(), fontsize=9, color=full, pad=6 + 12 * -(-len(handles) // 4)
        )  # above the legend's rows
