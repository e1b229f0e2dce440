"""Paper L's figures L1-L5: cached artifacts (fit and coding tables, dumps) in, files out.

Each function reads what it needs, joins the tensor positions
(:mod:`gradcomp.lossless.positions`), selects the rows and hands them to
:mod:`~gradcomp.plotting.paper_l_drawings`. Units: gradient entries as dumped (loss units per
parameter unit), rates in bits per entry.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from gradcomp import names
from gradcomp.artifacts import read_tables
from gradcomp.lossless.dumps import read_dump
from gradcomp.lossless.positions import read_with_positions
from gradcomp.plotting import paper_l_drawings as lplots
from gradcomp.plotting.catalogue import FIGURES


def _position_tensors(fits: pd.DataFrame) -> dict[str, str]:
    at = fits[fits["position"] != ""].drop_duplicates("position")
    return dict(zip(at["position"], at["tensor"], strict=True))


def figure_l1(
    fits_tsv: str | Path,
    positions_tsv: str | Path,
    dump_path: str | Path,
    png: str | Path,
    *,
    model: str,
    kind: str,
    bins: int,
    source: str = "",
) -> None:
    """L1: histograms with the fitted laws' densities of the lower, middle and upper tensor
    at the dump's epoch (the last one by the workflow's choice)."""
    fits = read_with_positions([fits_tsv], [positions_tsv])
    dump = read_dump(dump_path)
    fits = fits[(fits["kind"] == kind) & (fits["epoch"] == dump.epoch)]
    where = _position_tensors(fits)
    samples = {p: dump.tensors[kind][t].numpy().ravel() for p, t in where.items()}
    lplots.plot_histograms(
        samples, fits[fits["position"].isin(list(where))], bins=bins, png_path=png,
        title=_title("L1", model, f"{names.dump(kind)}, epoch {dump.epoch}{_run(fits)}", source),
    )  # fmt: skip


def figure_l2(
    fits_tsv: str | Path,
    positions_tsv: str | Path,
    dump_path: str | Path,
    png: str | Path,
    *,
    model: str,
    kind: str,
    coding_tsv: str | Path | None = None,
    source: str = "",
) -> None:
    """L2: tail probabilities at one epoch (the last one by the workflow's choice); with
    ``coding_tsv`` (the same run's coding table) each panel names the bits per entry of the
    Huffman code designed from each family (FP8 grid, raw scaling, exact accounting),
    shortest first: what the fit's tail costs."""
    fits = read_with_positions([fits_tsv], [positions_tsv])
    dump = read_dump(dump_path)
    fits = fits[(fits["kind"] == kind) & (fits["epoch"] == dump.epoch)]
    where = _position_tensors(fits)
    samples = {p: dump.tensors[kind][t].numpy().ravel() for p, t in where.items()}
    code_bits = None
    if coding_tsv is not None:
        code_bits = _family_code_bits(coding_tsv, where, kind=kind, epoch=dump.epoch)
    lplots.plot_tails(
        samples, fits[fits["position"] != ""], png_path=png, code_bits=code_bits,
        title=_title("L2", model, f"{names.dump(kind)}, epoch {dump.epoch}{_run(fits)}", source),
    )  # fmt: skip


def _family_code_bits(
    coding_tsv: str | Path, where: Mapping[str, str], *, kind: str, epoch: int
) -> dict[str, dict[str, float]]:
    """position -> family -> bits per entry of the Huffman code designed from that family's
    fit (``huffman_<family>``) for the tensor at each position (``where``), at ``epoch`` and
    ``kind``, raw scaling (else the table's first), exact accounting."""
    columns = ["epoch", "kind", "tensor", "scaling", "accounting", "coder", "bits_per_entry"]
    coding = pd.read_csv(coding_tsv, sep="\t", usecols=columns)
    coding = coding[(coding["epoch"] == epoch) & (coding["kind"] == kind)
                    & (coding["accounting"] == "exact")
                    & coding["coder"].str.startswith("huffman_")]  # fmt: skip
    if coding.empty:
        return {}
    scaling = "none" if "none" in set(coding["scaling"]) else coding["scaling"].iloc[0]
    coding = coding[coding["scaling"] == scaling]
    out = {}
    for position, tensor in where.items():
        rows = coding[coding["tensor"] == tensor]
        out[position] = {c.removeprefix("huffman_"): float(b)
                         for c, b in zip(rows["coder"], rows["bits_per_entry"], strict=True)
                         if c.removeprefix("huffman_") in lplots.FAMILY_COLORS}  # fmt: skip
    return out


def figure_l3(
    fits_tsvs: Sequence[str | Path],
    positions_tsv: str | Path,
    png: str | Path,
    *,
    model: str,
    source: str = "",
) -> None:
    """L3: trimmed 2-Wasserstein distance versus epoch per family and tensor position."""
    fits = read_with_positions(fits_tsvs, [positions_tsv])
    lplots.plot_metric_by_epoch(
        fits, metric="w2", ylabel="trimmed W2 (sd units, log)", png_path=png, log_y=True,
        title=_title("L3", model, "", source),
    )  # fmt: skip


def figure_l4(
    fits_tsvs: Sequence[str | Path],
    positions_tsv: str | Path,
    png: str | Path,
    *,
    model: str,
    source: str = "",
) -> None:
    """L4: GenNorm shape and scale versus epoch per tensor position."""
    fits = read_with_positions(fits_tsvs, [positions_tsv])
    lplots.plot_gennorm_parameters(
        fits, png_path=png,
        title=_title("L4", model, "", source),
    )  # fmt: skip


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
        coders = lplots.CODER_COLORS
    colours = lplots.coder_colors(list(dict.fromkeys([*coders, *PAPER_CODERS])), coders)
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
    panels = [p for p in ("all tensors", *lplots.POSITIONS) if p in set(data["panel"])]
    how = (f"bits summed over {n_runs} run{'s' if n_runs != 1 else ''}"
           f"{SCALINGS.get(scaling, f', scaling {scaling}')}")  # fmt: skip
    drawn = set(data["coder"])
    lplots.plot_coded_size(
        data, coders={c: colours[c] for c in PAPER_CODERS if c in drawn}, panels=panels,
        panel_titles=titles, png_path=png,
        title=_title("L5", model, how, source),
    )  # fmt: skip
    if png_b is not None:
        others = [c for c in coders if c not in PAPER_CODERS and c in drawn]
        reference = [L5B_REFERENCE] if L5B_REFERENCE in drawn else []
        lplots.plot_coded_size(
            data, coders={c: colours[c] for c in [*reference, *others]}, panels=panels,
            panel_titles=titles, png_path=png_b,
            title=_title("L5b", model, how, source),
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
        name = (
            position
            if position == "all tensors"
            else lplots.panel(position, rows["tensor"].iloc[0])
        )
        labels[position] = f"{name}\n{zero:.2%} round to zero, {saturated:.2%} saturate"
    return labels


def _run(fits: pd.DataFrame) -> str:
    """The title's ", run r" of the one run ``fits`` holds (nothing for several or none)."""
    runs = set(fits["run"]) if "run" in fits else set()
    return f", run {runs.pop()}" if len(runs) == 1 else ""


def _title(fid: str, model: str, shown: str, source: str, width: int = 100) -> str:
    """A figure's title: ``<fid> <model>:`` and its question from the catalogue
    (:data:`gradcomp.plotting.catalogue.FIGURES`), wrapped at ``width`` characters, then what
    it shows and the data line (:func:`gradcomp.reporting.figure_source_label`), the empty
    ones left out."""
    head = textwrap.fill(f"{fid} {model}: {FIGURES[fid].question}", width)
    return "\n".join(line for line in (head, shown, source) if line)
