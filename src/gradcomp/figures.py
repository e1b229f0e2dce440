"""Figure and table builders: cached artifacts (TSV tables, dumps) in, files out.

These are the functions the workflow's plotting scripts call; each reads what
it needs, selects the rows, and hands them to :mod:`gradcomp.plots` or
:mod:`gradcomp.tables`. Units: gradient entries as dumped (loss units per
parameter unit), rates in bits per entry.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp import plots, tables
from gradcomp.dumps import read_dump


def read_tables(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Concatenate TSV tables (e.g. every run's fits.tsv)."""
    frames = [pd.read_csv(p, sep="\t", keep_default_na=True) for p in paths]
    data = pd.concat(frames, ignore_index=True)
    if "position" in data:
        data["position"] = data["position"].fillna("")
    return data


def _position_tensors(fits: pd.DataFrame) -> dict[str, str]:
    at = fits[fits["position"] != ""].drop_duplicates("position")
    return dict(zip(at["position"], at["tensor"], strict=True))


def figure_l1(
    fits_tsv: str | Path,
    dump_paths: Sequence[str | Path],
    png: str | Path,
    *,
    model: str,
    kind: str,
    bins: int,
    source: str = "",
) -> None:
    """L1: histograms with fitted pdfs, for the tensor positions at the dumped epochs given."""
    fits = read_tables([fits_tsv])
    fits = fits[fits["kind"] == kind]
    where = _position_tensors(fits)
    samples = {}
    epochs = []
    for path in dump_paths:
        dump = read_dump(path)
        epochs.append(dump.epoch)
        for position, tensor in where.items():
            samples[(position, dump.epoch)] = dump.tensors[kind][tensor].numpy().ravel()
    rows = fits[fits["epoch"].isin(epochs) & fits["position"].isin(list(where))]
    plots.plot_histograms(
        samples, rows, bins=bins, png_path=png,
        title=f"L1 {model}: {kind} gradient entries and ML fits{_source(source)}",
    )  # fmt: skip


def figure_l2(
    fits_tsv: str | Path,
    dump_path: str | Path,
    png: str | Path,
    *,
    model: str,
    kind: str,
    source: str = "",
) -> None:
    """L2: tail probabilities at one epoch (the last one by the workflow's choice)."""
    fits = read_tables([fits_tsv])
    dump = read_dump(dump_path)
    fits = fits[(fits["kind"] == kind) & (fits["epoch"] == dump.epoch)]
    where = _position_tensors(fits)
    samples = {p: dump.tensors[kind][t].numpy().ravel() for p, t in where.items()}
    plots.plot_tails(
        samples, fits[fits["position"] != ""], png_path=png,
        title=f"L2 {model}: tail P(|g| > t), epoch {dump.epoch}, {kind}{_source(source)}",
    )  # fmt: skip


def figure_l3(
    fits_tsvs: Sequence[str | Path], png: str | Path, *, model: str, source: str = ""
) -> None:
    """L3: trimmed 2-Wasserstein distance versus epoch per family and tensor position."""
    fits = read_tables(fits_tsvs)
    plots.plot_metric_by_epoch(
        fits, metric="w2", ylabel="trimmed W2 (std units)", png_path=png, log_y=True,
        title=f"L3 {model}: trimmed W2 of each fit (mean ± sd over {fits['run'].nunique()} runs)"
        f"{_source(source)}",
    )  # fmt: skip


def figure_l4(
    fits_tsvs: Sequence[str | Path], png: str | Path, *, model: str, source: str = ""
) -> None:
    """L4: GenNorm shape and scale versus epoch per tensor position."""
    fits = read_tables(fits_tsvs)
    plots.plot_gennorm_parameters(
        fits, png_path=png,
        title=f"L4 {model}: GenNorm beta and scale (mean ± sd over {fits['run'].nunique()} runs)"
        f"{_source(source)}",
    )  # fmt: skip


def table_t2(fits_tsvs: Sequence[str | Path], tsv: str | Path, md: str | Path) -> pd.DataFrame:
    """T2: fit quality per family, model, kind and tensor position."""
    table = tables.fit_quality_table(read_tables(fits_tsvs))
    tables.write_table(
        table, tsv, md, title="T2: fit quality per family (mean ± sd over epochs and runs)"
    )
    return table


L5_CODERS = (
    "lz78", "zstd", "huffman_norm", "huffman_laplace", "huffman_gennorm",
    "huffman_empirical", "entropy",
)  # fmt: skip


def figure_l5(
    coding_tsvs: Sequence[str | Path], png: str | Path, *, model: str, source: str = ""
) -> None:
    """L5: compressed size / 8-bit FP8 versus epoch per coder (exact accounting).

    Panels: the lower, middle and upper tensor and all coded tensors together
    (bits added over tensors); lines: mean over runs, band: one sd.
    """
    coding = read_tables(coding_tsvs)
    coding = coding[(coding["accounting"] == "exact") & coding["coder"].isin(L5_CODERS)]
    keys = ["run", "epoch", "coder"]
    everything = coding.groupby(keys, as_index=False)[["total_bits", "numel"]].sum()
    everything["position"] = "all tensors"
    parts = [
        coding[coding["position"] != ""][[*keys, "position", "total_bits", "numel"]],
        everything,
    ]
    data = pd.concat(parts, ignore_index=True)
    data["size / FP8"] = data["total_bits"] / (8.0 * data["numel"])
    plots.plot_lines(
        data, x="epoch", y="size / FP8", hue="coder", col="position", png_path=png,
        hue_order=[c for c in L5_CODERS if c in set(data["coder"])], col_wrap=2,
        xlabel="epoch", ylabel="compressed size / 8-bit FP8",
        title=f"L5 {model}: lossless coding of FP8-quantized gradients "
        f"(mean ± sd over {coding['run'].nunique()} runs){_source(source)}",
    )  # fmt: skip


def table_t1(coding_tsvs: Sequence[str | Path], tsv: str | Path, md: str | Path) -> pd.DataFrame:
    """T1: bits per entry per coder and model, exact and slip accounting."""
    table = tables.coding_rate_table(read_tables(coding_tsvs))
    tables.write_table(
        table, tsv, md,
        title="T1: bits per entry by coder (mean ± sd over runs; side information included)",
    )  # fmt: skip
    return table


def _source(source: str) -> str:
    return f"\n{source}" if source else ""


def data_source_label(summary_json: str | Path) -> str:
    """One line naming the data a figure comes from (from prepare_cifar10's summary)."""
    summary = json.loads(Path(summary_json).read_text())
    return (
        f"data: {summary['source']}, {summary['n_train']} train / {summary['n_test']} test images"
    )
