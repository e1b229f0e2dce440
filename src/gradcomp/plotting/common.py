"""Plotting shared by both papers: the theme, atomic PNG + PDF output and a generic line
figure (mean and sd band over repeated rows). Paper-specific drawings live in
:mod:`gradcomp.plotting.paper_l_drawings` and :mod:`gradcomp.plotting.paper_y`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from gradcomp.artifacts import atomic_path  # noqa: E402
from gradcomp.plotting import standard as figure_standard  # noqa: E402

#: Resolution of every PNG (pixels per inch).
DPI = 130


def save_figure(fig: plt.Figure, png_path: str | Path, *, replicates: int | None = None) -> None:
    """Write ``fig`` as ``png_path`` and the same name with ``.pdf``; close it.

    The PNG carries the figure's measured row of the figure standard
    (:func:`gradcomp.plotting.standard.measure`, read back by
    :func:`gradcomp.plotting.standard.read_png_row`). ``replicates``: the fewest independent
    replicates (seeds, runs, warm starts) behind any band or interval the figure draws;
    None when it draws none. Both files are written under temporary names and renamed into
    place, so an interrupted run leaves no half-written figure.
    """
    from PIL import Image, PngImagePlugin

    png = Path(png_path)
    fig.tight_layout()
    with atomic_path(png) as tmp:
        fig.savefig(tmp, dpi=DPI, bbox_inches="tight")
        with Image.open(tmp) as saved:
            image, chunks = saved.copy(), dict(getattr(saved, "text", {}))
        row = figure_standard.measure(fig, *image.size, dpi=DPI, replicates=replicates)
        info = PngImagePlugin.PngInfo()
        for key, value in {**chunks, figure_standard.PNG_KEY: json.dumps(row)}.items():
            info.add_text(key, value)
        image.save(tmp, format="png", pnginfo=info, dpi=(DPI, DPI))
    with atomic_path(png.with_suffix(".pdf")) as tmp:
        fig.savefig(tmp, dpi=DPI, bbox_inches="tight")
    plt.close(fig)


def set_theme() -> None:
    """The seaborn look shared by every figure."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.0)


def legend_outside(
    where: plt.Figure | sns.FacetGrid,
    axes: plt.Axes | Iterable[plt.Axes] | None = None,
    *,
    ncol: int = 1,
    fontsize: float | None = None,
) -> None:
    """One legend right of the panels, where it covers no data: the one definition of legend
    placement for every figure of both papers.

    ``where``: a seaborn grid (its legend is moved there; ``axes`` unused) or a figure (one
    legend made from the labelled artists of ``axes``, one Axes or several, each label once,
    in order of first appearance; nothing when no artist has a label). Panel legends, if any,
    should be removed first. :func:`save_figure` keeps it in the saved files
    (``bbox_inches="tight"``).
    """
    place: dict[str, Any] = {"loc": "center left", "bbox_to_anchor": (1.0, 0.5), "frameon": False}
    if fontsize is not None:
        place["fontsize"] = fontsize
    if isinstance(where, sns.FacetGrid):
        if where.legend is not None:
            sns.move_legend(where, **place)
        return
    if axes is None:
        raise TypeError("legend_outside: a figure needs the axes whose artists it labels")
    handles: dict[str, matplotlib.artist.Artist] = {}
    # numpy's stub takes no array of Axes (an object array)
    for ax in [axes] if isinstance(axes, plt.Axes) else list(np.ravel(axes)):  # type: ignore[call-overload]
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if handles:
        where.legend(list(handles.values()), list(handles), ncol=ncol, **place)


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
    palette: Mapping[str, str] | None = None,
    style_order: Sequence[str] | None = None,
) -> None:
    """A generic line figure (mean and sd band over repeated rows) used by L5 and Y1-Y3, Y5.

    ``reference`` (optional, same ``x``/``y``/``col`` columns) is drawn as a
    black line in every panel, e.g. a rate-distortion bound. ``palette`` maps hue
    values to colours, ``style_order`` orders ``style``'s values (the first solid, the next
    dashed); the legend sits outside the panels.
    """
    set_theme()
    grid = sns.relplot(
        data=data, x=x, y=y, hue=hue, col=col, style=style, kind="line", errorbar="sd",
        marker="o", height=3.0, aspect=1.3, hue_order=hue_order, col_wrap=col_wrap,
        palette=palette, style_order=style_order, facet_kws={"sharey": False},
    )  # fmt: skip
    legend_outside(grid)
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
    keys = [k for k in (hue, col, style, x) if k is not None]
    save_figure(grid.figure, png_path, replicates=int(data.groupby(keys).size().min()))
