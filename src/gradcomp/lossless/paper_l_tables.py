"""Paper L's tables: T1 (bits per entry by coder) and T2 (fit quality by family)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gradcomp import reporting
from gradcomp.lossless.positions import read_with_positions
from gradcomp.quantization.grids import SCALINGS

T2_METRICS = ("loglik_per_entry", "aic", "ks", "w2", "tail_log10_err")


def table_t1(coding_tsvs: Sequence[str | Path], tsv: str | Path, md: str | Path) -> pd.DataFrame:
    """T1: bits per entry per coder and model, by scaling and accounting, with the shares of
    entries the grid rounds to zero and saturates."""
    # one run's table at a time: a whole-model coding.tsv of a paper-scale run holds ~10^6
    # rows, and T1 needs only its per-run sums (the same sums, in the same order)
    per_run = [
        _per_run_sums(pd.read_csv(p, sep="\t", usecols=lambda c: c in T1_COLUMNS))
        for p in coding_tsvs
    ]
    table = _rates(_per_run_sums(pd.concat(per_run, ignore_index=True)))
    reporting.write_table(
        table, tsv, md,
        title="T1: bits per entry by coder (mean ± sd over runs; side information included; "
        "zero_share / saturated_share: entries the grid rounds to zero / saturates; "
        "length: stream = decoded bitstreams, counts = exact sizes from the symbol counts, "
        "bound = a size with no decoder here (a reference compressor's output, an ideal code "
        "length; a row without a size says why after its length, and shows –, never 0); "
        "ratio_to_32bit and exact_zero_share in T1.tsv)",
        readable=_t1_readable(table),
    )  # fmt: skip
    return table


def _t1_readable(table: pd.DataFrame) -> pd.DataFrame:
    """T1's Markdown view: the reason a size is missing joined to its ``length``."""
    out = table.drop(columns=[f"{c}_{s}" for c in ("ratio_to_32bit", "exact_zero_share")
                              for s in ("mean", "sd")] + ["missing"])  # fmt: skip
    out["length"] = [f"{n}: missing, {m}" if m else n
                     for n, m in zip(table["length"], table["missing"], strict=True)]  # fmt: skip
    return out


def table_t2(
    fits_tsvs: Sequence[str | Path],
    positions_tsvs: Sequence[str | Path],
    tsv: str | Path,
    md: str | Path,
) -> pd.DataFrame:
    """T2: fit quality per family, model, kind and tensor position."""
    table = fit_quality_table(read_with_positions(fits_tsvs, positions_tsvs))
    reporting.write_table(
        table, tsv, md, title="T2: fit quality per family (mean ± sd over epochs and runs)"
    )
    return table


def fit_quality_table(fits: pd.DataFrame) -> pd.DataFrame:
    """T2: fit quality per family, model, dump kind and tensor position.

    Mean and sd over epochs and runs of :data:`T2_METRICS`, on the tensors
    that carry a position (lower / middle / upper).
    """
    at_positions = fits[fits["position"].fillna("") != ""]
    table = reporting.summarise(
        at_positions, by=("model", "kind", "position", "family"), metrics=T2_METRICS
    )
    return table


T1_KEYS = ("model", "scaling", "accounting", "coder")
T1_COLUMNS = (
    *T1_KEYS, "run", "length", "total_bits", "numel", "n_nonzero", "n_exact_zero", "n_saturated"
)  # fmt: skip
T1_METRICS = (
    "bits_per_entry", "ratio_to_32bit", "ratio_to_8bit", "zero_share", "exact_zero_share",
    "saturated_share",
)  # fmt: skip


def coding_rate_table(coding: pd.DataFrame) -> pd.DataFrame:
    """T1: bits per entry per coder, model, scaling and accounting, ratios to 32 and 8 bits,
    and the shares of entries on the zero level (exact zeros included), exactly zero before
    quantization, and saturated.

    Within each run the bits and counts of every coded tensor and epoch are added and
    divided by the entries coded; the table gives the mean and sd over runs. Column
    ``length``: how the rows' sizes were obtained (``coding.tsv``'s ``length``: stream,
    counts or bound), the values of its tensors joined with ``+`` (e.g. ``counts+stream``
    for a coder whose stream was written for the sampled and dumped tensors only).
    """
    return _rates(_per_run_sums(coding))


def _per_run_sums(coding: pd.DataFrame) -> pd.DataFrame:
    """Bits and entry counts added over the tensors and epochs of each run and T1 row."""
    if "n_zero" not in coding:  # already per-run sums: summed again (a run in two files)
        coding = coding.assign(n_zero=coding["numel"] - coding["n_nonzero"])
    counts = ["total_bits", "numel", "n_zero", "n_exact_zero", "n_saturated"]
    keys = [*T1_KEYS, "run"]
    sums = reporting.strict_sums(coding, keys, counts)  # a NaN size stays missing, never 0
    if "length" in coding:
        sums["length"] = coding.groupby(keys, sort=True)["length"].agg(_joined)
    return sums.reset_index()


def _joined(lengths: pd.Series) -> str:
    """The distinct values of ``length`` cells (each possibly already joined), sorted, by +."""
    return "+".join(sorted({part for cell in lengths.astype(str) for part in cell.split("+")}))


def _missing_reason(coder: str) -> str:
    """Why a T1 row has no size: the coder's own reason where it gives one."""
    from gradcomp.coding.registry import builtin_specs

    spec = builtin_specs().get(coder)
    why = getattr(spec.cls, "unavailable", lambda: None)() if spec is not None else None
    return why or "a size in coding.tsv is NaN"


def _rates(per_run: pd.DataFrame) -> pd.DataFrame:
    """T1 from :func:`_per_run_sums`: the rates and shares of each run, mean and sd."""
    keys = list(T1_KEYS)
    per_run["bits_per_entry"] = per_run["total_bits"] / per_run["numel"]
    per_run["ratio_to_32bit"] = per_run["bits_per_entry"] / 32.0
    per_run["ratio_to_8bit"] = per_run["bits_per_entry"] / 8.0
    for share, count in (
        ("zero_share", "n_zero"),
        ("exact_zero_share", "n_exact_zero"),
        ("saturated_share", "n_saturated"),
    ):
        per_run[share] = per_run[count] / per_run["numel"]
    table = reporting.summarise(per_run, by=keys, metrics=T1_METRICS).rename(columns={"n": "runs"})
    if "length" in per_run:
        lengths = per_run.groupby(keys, sort=False)["length"].agg(_joined).reset_index()
        table = table.merge(lengths, on=keys, how="left")
        table = table[[*keys, "length", *(c for c in table.columns if c not in [*keys, "length"])]]
    sizes = zip(table["coder"], table["bits_per_entry_mean"], strict=True)
    table["missing"] = [_missing_reason(c) if not np.isfinite(b) else "" for c, b in sizes]
    order = table["scaling"].map({name: i for i, name in enumerate(SCALINGS)})
    return (
        table.assign(scaling_order=order)
        .sort_values(["model", "scaling_order", "accounting", "bits_per_entry_mean"], kind="stable")
        .drop(columns="scaling_order")
    )
