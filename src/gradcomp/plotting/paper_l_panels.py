"""What paper L's figures share: a panel per tensor position, titled by where the tensor sits
(:func:`panel`); each run its own line, or a mean and band from :data:`MIN_BAND_RUNS` runs on
(:func:`runs`); one legend under the panels (:func:`legend_under`); a law's name and colour
the same in every L figure (:data:`FAMILY_LABELS`, :mod:`gradcomp.plotting.palette`).

Sized to be read as a PNG 700 px wide: at most 6 panels, no text under 8.8 pt (:data:`SMALL`)
on a figure at most 10 inches wide (8.6 px at 700 px), every drawn series in the legend
(reference lines marked ``gid="guide"``). Names are the readers' (:mod:`gradcomp.names`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist

from gradcomp import names
from gradcomp.plotting.palette import FAMILY_COLORS, SERIES

#: A law's name in the L figures' legends (:func:`gradcomp.names.law`).
FAMILY_LABELS = {family: names.law(family) for family in FAMILY_COLORS}
#: L4's dump kinds, in colours no law uses.
KIND_COLORS = dict(
    zip(names.DUMPS, [c for c in SERIES if c not in FAMILY_COLORS.values()], strict=False)
)
#: The fewest runs summarised by a mean and a band; with fewer each run is its own line.
MIN_BAND_RUNS = 5
#: The smallest type on any L figure (points; the theme's tick labels).
SMALL = 8.8
#: The width of a figure's column of panels (inches): three make a figure under 9 inches
#: wide, whose smallest type is 9.5 px or more at 700 px; its height gives the panels the
#: area the standard asks (55% of the figure and more).
COLUMN = 2.9
#: How wide a title's question line runs (characters) before it wraps.
TITLE_WIDTH = 100


def runs(
    ax: plt.Axes, frame: pd.DataFrame, *, x: str, y: str, color: str, label: str, **line
) -> int:
    """``frame``'s ``y`` against ``x`` per run: each run a line of its own (fewer than
    :data:`MIN_BAND_RUNS` runs), else their mean with a band of one sd. Every artist carries
    ``label`` (the legend keeps the first). Returns the number of runs."""
    run_ids = sorted(frame["run"].unique())
    if len(run_ids) < MIN_BAND_RUNS:
        for run in run_ids:
            rows = frame[frame["run"] == run].sort_values(x)
            ax.plot(rows[x], rows[y], color=color, label=label, **line)
        return len(run_ids)
    stats = frame.groupby(x)[y].agg(["mean", "std"]).reset_index()
    ax.plot(stats[x], stats["mean"], color=color, label=label, **line)
    ax.fill_between(stats[x], stats["mean"] - stats["std"], stats["mean"] + stats["std"],
                    color=color, alpha=0.2, lw=0, label=label)  # fmt: skip
    return len(run_ids)


def band_replicates(n_runs: int) -> int | None:
    """What :func:`~gradcomp.plotting.common.save_figure` is told: the runs behind the bands
    :func:`runs` drew (None: it drew each run, no band)."""
    return n_runs if n_runs >= MIN_BAND_RUNS else None


def runs_title(n_runs: int) -> str:
    """The legend's title saying what a line is."""
    if n_runs < MIN_BAND_RUNS:
        return f"one line per run ({n_runs} run{'s' if n_runs != 1 else ''})"
    return f"mean ± sd over {n_runs} runs"


def legend_under(
    fig: plt.Figure, axes, title: str, legend_title: str | None = None, ncol: int | None = None
) -> None:
    """The figure's title and one legend under the panels, in ``ncol`` columns
    (default: one row): each label once, from the labelled artists of ``axes`` in order of
    first appearance. Under the panels it takes height, not the width the panels need to be
    read at 700 px; :func:`~gradcomp.plotting.common.save_figure` keeps it
    (``bbox_inches="tight"``)."""
    handles: dict[str, Artist] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.suptitle(title, fontsize=10)
    if not handles:
        return
    fig.tight_layout()  # the panels placed, the legend goes under the lowest x label
    bottom = min(ax.get_tightbbox().y0 for ax in np.ravel(axes)) / fig.bbox.height
    fig.legend(list(handles.values()), list(handles), loc="upper center",
               bbox_to_anchor=(0.5, bottom), ncol=ncol or len(handles), frameon=False,
               title=legend_title, title_fontsize=SMALL, fontsize=SMALL)  # fmt: skip


def panel(position: str, tensor: str) -> str:
    """A panel's title: where the tensor sits, as a reader says it, and its name."""
    where = names.POSITIONS.get(position, position)
    return f"{where}: {tensor}" if tensor and tensor != position else where


def position_tensors(fits: pd.DataFrame) -> dict[str, str]:
    """Position -> the tensor at that position, of the fit-table rows ``fits``."""
    at = fits[fits["position"] != ""].drop_duplicates("position")
    return dict(zip(at["position"], at["tensor"], strict=True))


def run_suffix(fits: pd.DataFrame) -> str:
    """The title's ", run r" of the one run ``fits`` holds (nothing for several or none)."""
    runs = set(fits["run"]) if "run" in fits else set()
    return f", run {runs.pop()}" if len(runs) == 1 else ""
