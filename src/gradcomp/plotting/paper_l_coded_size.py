"""Paper L's headline figure L5 and its companion L5b: the coded size of the FP8-quantized
gradient as a fraction of its 8-bit FP8 size, per epoch, one line per coder.

``figure_l5`` reads the runs' coding tables and hands the summed rows to ``draw_l5``, which
draws one figure and writes it with :func:`gradcomp.plotting.common.save_figure`
(:mod:`gradcomp.plotting`). Bits are added over tensors and runs before they are divided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from gradcomp import names
from gradcomp.artifacts import read_tables
from gradcomp.lossless.positions import POSITIONS
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.common import save_figure, set_theme
from gradcomp.plotting.palette import CODER_COLORS, coder_colors, is_bound
from gradcomp.plotting.paper_l_panels import COLUMN, TITLE_WIDTH, legend_under, panel

__all__ = ["L5B_REFERENCE", "PAPER_CODERS", "draw_l5", "figure_l5"]

#: Paper L's headline coders, L5's lines: LZ78 and the Huffman codes designed from the
#: GenNorm and the normal fit.
PAPER_CODERS = ("lz78", "huffman_gennorm", "huffman_norm")
#: The coders' reference in L5b: the paper's best code.
L5B_REFERENCE = "huffman_gennorm"
#: How a scaling of the entries before the FP8 grid is named in L5's title.
SCALINGS = {"none": "", "amax": ", each tensor scaled by a power of two"}


def figure_l5(
    coding_tsvs: Sequence[str | Path],
    positions_tsv: str | Path,
    png: str | Path,
    png_b: str | Path | None = None,
    *,
    model: str,
    coders: Mapping[str, str] | None = None,
    source: str = "",
) -> None:
    """L5 (``png``): the coded size of the FP8-quantized gradient as a fraction of its 8-bit
    FP8 size versus epoch for paper L's three coders (:data:`PAPER_CODERS`), as paper L's
    headline figure; L5b (``png_b``, optional): every other coder of ``coders`` beside the
    GenNorm Huffman code. Exact accounting, raw gradient (scaling ``none``, else the first
    scaling in the tables).

    ``coders``: name -> colour of the lines drawn, in order (the workflow passes the
    configured coders with ``figure`` set); default the built-ins drawn by default. The
    paper's coders are drawn in L5 whether or not ``coders`` names them.

    Panels: all coded tensors together (bits added over tensors), then the lower, middle and
    upper tensor; lines: bits added over runs (as paper L sums its runs) over their FP8
    bits. Each panel's title gives the share of entries the grid rounds to zero and the
    share it saturates, over its runs and epochs.
    """
    if coders is None:
        coders = CODER_COLORS
    colours = coder_colors(list(dict.fromkeys([*coders, *PAPER_CODERS])), coders)
    positions = read_tables([positions_tsv])[["model", "tensor", "position"]]
    # one run's coding.tsv at a time (a paper-scale run's has ~10^6 rows): its lines and
    # the entry counts of the panel titles, for every scaling
    wanted = list(dict.fromkeys([*PAPER_CODERS, *coders]))
    parts = [_l5_parts(path, positions, wanted) for path in coding_tsvs]
    lines = pd.concat([p[0] for p in parts], ignore_index=True)
    scaling = "none" if "none" in set(lines["scaling"]) else str(lines["scaling"].iloc[0])
    data = lines[lines["scaling"] == scaling]
    n_runs = data["run"].nunique()
    data = data.groupby(["position", "epoch", "coder"], as_index=False)[
        ["total_bits", "numel"]
    ].sum()
    data["size / FP8"] = data["total_bits"] / (8.0 * data["numel"])
    data = data.rename(columns={"position": "panel"})
    counts = pd.concat([p[1] for p in parts], ignore_index=True)
    titles = _range_labels(counts[counts["scaling"] == scaling])
    panels = [p for p in ("all tensors", *POSITIONS) if p in set(data["panel"])]
    how = (f"bits summed over {n_runs} run{'s' if n_runs != 1 else ''}"
           f"{SCALINGS.get(scaling, f', scaling {scaling}')}")  # fmt: skip
    drawn = set(data["coder"])
    draw_l5(
        data, coders={c: colours[c] for c in PAPER_CODERS if c in drawn}, panels=panels,
        panel_titles=titles, png_path=png,
        title=question_title("L5", model, how, source, width=TITLE_WIDTH),
    )  # fmt: skip
    if png_b is not None:
        others = [c for c in coders if c not in PAPER_CODERS and c in drawn]
        reference = [L5B_REFERENCE] if L5B_REFERENCE in drawn else []
        draw_l5(
            data, coders={c: colours[c] for c in [*reference, *others]}, panels=panels,
            panel_titles=titles, png_path=png_b,
            title=question_title("L5b", model, how, source, width=TITLE_WIDTH),
        )  # fmt: skip


L5_COLUMNS = (
    "model", "run", "epoch", "kind", "tensor", "scaling", "accounting", "coder", "total_bits",
    "numel", "n_nonzero", "n_saturated",
)  # fmt: skip


def _l5_parts(
    path: str | Path, positions: pd.DataFrame, coders: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One coding.tsv reduced to L5's lines (exact accounting, ``coders``): the rows of the
    tensors at a position and the bits added over all coded tensors per (scaling, run,
    epoch, coder); and, per scaling and panel, the entries, non-zero and saturated entries
    of its tensors and epochs (one row per coding of a tensor)."""
    coding = pd.read_csv(path, sep="\t", usecols=L5_COLUMNS)
    coding = coding[(coding["accounting"] == "exact") & coding["coder"].isin(coders)]
    coding = coding.merge(positions, on=["model", "tensor"], how="left")
    coding["position"] = coding["position"].fillna("")
    keys = ["scaling", "run", "epoch", "coder"]
    everything = coding.groupby(keys, as_index=False)[["total_bits", "numel"]].sum()
    everything["position"] = everything["tensor"] = "all tensors"
    at = coding[coding["position"] != ""][[*keys, "position", "tensor", "total_bits", "numel"]]
    tensors = coding.drop_duplicates(["scaling", "run", "epoch", "kind", "tensor"])
    panels = pd.concat([tensors.assign(position="all tensors"), tensors[tensors["position"] != ""]])
    counts = panels.groupby(["scaling", "position"], as_index=False, sort=False).agg(
        tensor=("tensor", "first"), numel=("numel", "sum"), n_nonzero=("n_nonzero", "sum"),
        n_saturated=("n_saturated", "sum"),
    )  # fmt: skip
    return pd.concat([at, everything], ignore_index=True), counts


def _range_labels(counts: pd.DataFrame) -> dict[str, str]:
    """Panel title per position (and "all tensors"): the tensor and the shares of its
    entries on the zero level (exact zeros included) and saturated, over runs and epochs
    (``counts``: :func:`_l5_parts`'s counts of one scaling, any number of runs)."""
    labels = {}
    for position, rows in counts.groupby("position", sort=False):
        numel = rows["numel"].sum()
        zero = (numel - rows["n_nonzero"].sum()) / numel
        saturated = rows["n_saturated"].sum() / numel
        name = position if position == "all tensors" else panel(position, rows["tensor"].iloc[0])
        labels[position] = f"{name}\n{zero:.2%} round to zero, {saturated:.2%} saturate"
    return labels


def draw_l5(
    data: pd.DataFrame,
    *,
    coders: Mapping[str, str],
    panels: Sequence[str],
    panel_titles: Mapping[str, str],
    title: str,
    png_path: str | Path,
) -> None:
    """L5 and L5b: coded size as a fraction of 8-bit FP8 (``data["size / FP8"]``) versus
    epoch, one line per coder (``coders``: name -> colour, in legend order) in every panel
    (``data["panel"]``, in the order ``panels``, titled by ``panel_titles``). Codes solid
    with dots, bounds (:func:`is_bound`) dashed; each named as a reader names it
    (:func:`gradcomp.names.coder`)."""
    set_theme()
    ncols = 2 if len(panels) > 1 else 1
    nrows = -(-len(panels) // ncols)
    size = (1.5 * COLUMN * ncols, 1.2 + 3.5 * nrows)
    fig, axes = plt.subplots(nrows, ncols, sharex=True, sharey=True, figsize=size, squeeze=False)
    for ax, key in zip(axes.flat, panels, strict=False):
        at = data[data["panel"] == key]
        for name, color in coders.items():
            rows = at[at["coder"] == name].sort_values("epoch")
            if rows.empty:
                continue
            style = {"ls": "--", "lw": 1.4} if is_bound(name) else {"marker": "o", "ms": 3.5}
            ax.plot(rows["epoch"], rows["size / FP8"], color=color, label=names.coder(name),
                    **style)  # fmt: skip
        ax.set_title(panel_titles.get(key, key))
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("epoch")
    for ax in axes[:, 0]:
        ax.set_ylabel("coded size / FP8 size")
    shown = [ax for ax in axes.flat if ax.get_visible()]
    legend_under(fig, shown, title, ncol=len(coders) if len(coders) <= 5 else 4)
    save_figure(fig, png_path)
