"""Paper Y's figures of what quantizing does to one update's entries: Y4 (histograms of the
kept entries before and after compression, from a run's update snapshot) and Y5 (each
quantizer's M-weighted distortion above the rate-distortion bound, from the distortion study).

``figure_x`` reads the cached artifact and hands its data to ``draw_x``, which draws and
writes the files with :func:`gradcomp.plotting.common.save_figure` (:mod:`gradcomp.plotting`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from gradcomp import names
from gradcomp.lossy.distortion_study import BOUND, DESIGN_NAMES
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.plotting import facets
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import DISTORTION_STUDY_COLORS, MARKERS, assign

__all__ = ["Y5_NAMES", "draw_y4", "draw_y5", "figure_y4", "figure_y5", "tensor_name"]

log = logging.getLogger(__name__)


def tensor_name(name: str) -> str:
    """A model tensor as a reader names it: ``conv2.weight`` -> ``conv2 weights``."""
    layer, _, part = name.rpartition(".")
    words = {"weight": "weights", "bias": "biases"}
    return f"{layer} {words[part]}" if layer and part in words else name


def figure_y4(
    snapshot: str | Path,
    png: str | Path,
    *,
    run: Mapping[str, Any],
    bins: int,
    model: str,
    source: str = "",
) -> None:
    """Y4: update entries before and after compression for ``run["tensors"]`` (user 0, last
    round; the first :data:`gradcomp.plotting.facets.MAX_PANELS`), stacked full-width panels.

    ``run``: the run the snapshot is of (``tensors``, and its variant: ``spec``, ``rate``,
    ``M``). "before" shows the entries the compressor kept (its sparsifier's selection),
    "after" their reconstructions; the title names ``model``, the variant
    (:func:`gradcomp.names.variant`) and ``source`` (the data line). Raises ValueError naming
    a tensor the snapshot does not hold.
    """
    tensors: Sequence[str] = list(run["tensors"])
    snap = read_snapshot(snapshot)
    missing = [n for n in tensors if n not in snap["before"]]
    if missing:
        raise ValueError(
            f"figures.y4.tensors: {missing} not in the update of {snapshot} "
            f"(names look like {', '.join(list(snap['before'])[:4])}, ...)"
        )
    if len(tensors) > facets.MAX_PANELS:
        log.warning("Y4 shows the first %d of figures.y4.tensors", facets.MAX_PANELS)
        tensors = list(tensors)[: facets.MAX_PANELS]
    entries = {}
    for name in tensors:
        kept = snap["kept"][name].numpy().ravel()
        entries[name] = (snap["before"][name].double().numpy().ravel()[kept],
                         snap["after"][name].double().numpy().ravel()[kept])  # fmt: skip
    shown = (
        f"user 0's update at the last round, {names.variant(run['spec'], run['rate'], run['M'])}"
    )
    draw_y4(entries, png, bins=bins, title=question_title("Y4", model, shown, source))


def draw_y4(
    entries: Mapping[str, tuple[np.ndarray, np.ndarray]],
    png: str | Path,
    *,
    bins: int,
    title: str,
) -> None:
    """Y4 from ``entries``: tensor name -> (its kept entries before compression, their
    reconstructions), a panel each, in order."""
    set_theme()
    n = len(entries)
    # stacked, full width: the bins stay wide enough to see at 700 px
    fig, axes = facets.grid(n, height=1.5 + 2.1 * n if n <= 3 else 1.5 + 2.1 * -(-n // 2),
                            ncols=1 if n <= 3 else 2)  # fmt: skip
    for ax, (name, (before, after)) in zip(axes, entries.items(), strict=True):
        lo, hi = np.quantile(before, [0.0005, 0.9995])
        lo, hi = min(lo, after.min()), max(hi, after.max())
        exp = math.floor(math.log10(max(abs(lo), abs(hi), 1e-30)))
        scale = 10.0**-exp
        # no bar edges: the theme's white edges would hide bars a pixel or two wide
        ax.hist(before * scale, bins=bins, range=(lo * scale, hi * scale), color="0.55",
                label="kept entries, before", log=True, lw=0)  # fmt: skip
        ax.hist(after * scale, bins=bins, range=(lo * scale, hi * scale), color="#CC3311",
                alpha=0.75, label="after quantization", log=True, lw=0)  # fmt: skip
        ax.text(0.01, 0.95, f"{tensor_name(name)}, entry ×10$^{{{exp}}}$", fontsize=9,
                transform=ax.transAxes, ha="left", va="top")  # fmt: skip
        ax.xaxis.set_major_locator(MaxNLocator(9))
        ax.set_ylim(top=ax.get_ylim()[1] * 6)  # room for the name and legend above the bars
    fig.supxlabel("update entry (in the power of ten each panel names)", fontsize=9)
    fig.supylabel("entries per bin (log scale)", fontsize=9)
    facets.legend_inside(axes[0], loc="upper right")
    facets.title(fig, title)
    save_figure(fig, png)


#: Y5's quantizers (:func:`gradcomp.lossy.distortion_study.study_quantizers`) and its bound,
#: as a reader names them.
Y5_NAMES = {
    **DESIGN_NAMES,
    BOUND: f"bound: R(D) of the fitted {names.law('gennorm')}",
}


def figure_y5(
    rd_tsv: str | Path, png: str | Path, *, model: str, tensor: str, source: str = ""
) -> None:
    """Y5: how far above the rate-distortion bound each quantizer's M-weighted distortion
    lies, in dB at the coded bits it spends (its index entropy; ``gap_db`` of the distortion
    study: its distortion over the bound's D(R) at those bits), one panel per M (of more
    than two, M = 0 and 2; T6 holds every M) on one scale, the bound (the Blahut-Arimoto
    curve of the fitted GenNorm) the 0 dB line.
    Points beyond the bound's resolved range (no ``gap_db``) are left out."""
    shown = f"the kept entries of one update's {tensor_name(tensor)}"
    draw_y5(pd.read_csv(rd_tsv, sep="\t"), png, title=question_title("Y5", model, shown, source))


def draw_y5(rd: pd.DataFrame, png: str | Path, *, title: str) -> None:
    """Y5 from the distortion study's rows ``rd`` (its TSV's columns)."""
    set_theme()
    points = rd[(rd["quantizer"] != BOUND) & rd["gap_db"].notna()]
    bound = rd[rd["quantizer"] == BOUND]
    quantizers = list(dict.fromkeys(points["quantizer"]))
    colours = assign(quantizers, DISTORTION_STUDY_COLORS)
    Ms = sorted(rd["M"].unique())
    if len(Ms) > 2:  # panels wide enough to read: mean squared error and the paper's M
        Ms = [Ms[0], 2 if 2 in Ms else Ms[1]]
    rows = -(-len(Ms) // facets.MAX_COLS)
    fig, axes = facets.grid(len(Ms), height=1.6 + 4.1 * rows, sharex=True, sharey=True)
    for ax, M in zip(axes, Ms, strict=True):
        for i, q in enumerate(quantizers):
            own = points[(points["quantizer"] == q) & (points["M"] == M)].sort_values("rate_bits")
            ax.plot(own["coded_bits"], own["gap_db"], color=colours[q],
                    marker=MARKERS[i % len(MARKERS)], ms=4, lw=1.2,
                    label=Y5_NAMES.get(q, q))  # fmt: skip
        at = bound[bound["M"] == M]
        span = (at["coded_bits"].min(), at["coded_bits"].max()) if len(at) else (0.0, 0.0)
        ax.plot(span, (0.0, 0.0), color="k", lw=1.6, label=Y5_NAMES[BOUND])
        ax.text(0.03, 0.97, f"M = {M:g}" + (" (mean squared error)" if M == 0 else ""),
                transform=ax.transAxes, ha="left", va="top", fontsize=9)  # fmt: skip
    fig.supxlabel("coded bits per kept entry (index entropy)", fontsize=9)
    fig.supylabel("M-weighted distortion above the bound at the same bits (dB)", fontsize=9)
    top = float(points["gap_db"].max()) if len(points) else 1.0
    axes[0].set_ylim(-0.05 * top, 2.0 * top)  # the legend above the curves
    handles = facets.labelled(axes)
    axes[-1].legend(list(handles.values()), list(handles), loc="upper right", fontsize=8,
                    framealpha=0.9, bbox_to_anchor=(1.0, 0.91))  # fmt: skip
    facets.title(fig, title)
    save_figure(fig, png)
