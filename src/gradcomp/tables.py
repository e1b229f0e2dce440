"""Summary tables (T1..T3) as TSV plus a Markdown rendering of the same numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp.atomic import write_text

T2_METRICS = ("loglik_per_entry", "aic", "ks", "w2", "tail_log10_err")


def summarise(data: pd.DataFrame, *, by: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Mean and standard deviation of ``metrics`` within groups ``by``.

    Returns one row per group with ``<metric>_mean`` and ``<metric>_sd``
    columns and ``n`` (rows averaged).
    """
    grouped = data.groupby(list(by), sort=True)[list(metrics)]
    mean = grouped.mean().add_suffix("_mean")
    sd = grouped.std(ddof=1).add_suffix("_sd")
    count = grouped.size().rename("n")
    out = pd.concat([mean, sd, count], axis=1).reset_index()
    ordered = [*by, *(f"{m}_{s}" for m in metrics for s in ("mean", "sd")), "n"]
    return out[ordered]


def fit_quality_table(fits: pd.DataFrame) -> pd.DataFrame:
    """T2: fit quality per family, model, dump kind and tensor position.

    Mean and sd over epochs and runs of :data:`T2_METRICS`, on the tensors
    that carry a position (lower / middle / upper).
    """
    at_positions = fits[fits["position"].fillna("") != ""]
    table = summarise(at_positions, by=("model", "kind", "position", "family"), metrics=T2_METRICS)
    return table


def to_markdown(table: pd.DataFrame, *, digits: int = 4) -> str:
    """Render ``table`` as a GitHub Markdown table; ``x_mean``/``x_sd`` pairs become ``m ± s``."""
    columns: list[str] = []
    cells: dict[str, list[str]] = {}
    for col in table.columns:
        if col.endswith("_sd") and col[:-3] + "_mean" in table.columns:
            continue
        if col.endswith("_mean") and col[:-5] + "_sd" in table.columns:
            name = col[:-5]
            cells[name] = [
                f"{_fmt(m, digits)} ± {_fmt(s, digits)}"
                for m, s in zip(table[col], table[name + "_sd"], strict=True)
            ]
        else:
            name = col
            cells[name] = [_fmt(v, digits) for v in table[col]]
        columns.append(name)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for i in range(len(table)):
        lines.append("| " + " | ".join(cells[c][i] for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _fmt(value, digits: int) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.{digits}g}"
    return str(value)


def write_table(
    table: pd.DataFrame, tsv_path: str | Path, md_path: str | Path, *, title: str
) -> None:
    """Write ``table`` as TSV and Markdown (temporary files renamed into place)."""
    for path, text in (
        (Path(tsv_path), table.to_csv(sep="\t", index=False)),
        (Path(md_path), f"# {title}\n\n" + to_markdown(table)),
    ):
        write_text(path, text)


def coding_rate_table(coding: pd.DataFrame) -> pd.DataFrame:
    """T1: bits per entry per coder, model and accounting, and ratios to 32 and 8 bits.

    Within each run the bits of every coded tensor and epoch are added and
    divided by the entries coded; the table gives the mean and sd of that
    rate over runs.
    """
    keys = ["model", "accounting", "coder"]
    per_run = (
        coding.groupby([*keys, "run"], sort=False)[["total_bits", "numel"]].sum().reset_index()
    )
    per_run["bits_per_entry"] = per_run["total_bits"] / per_run["numel"]
    per_run["ratio_to_32bit"] = per_run["bits_per_entry"] / 32.0
    per_run["ratio_to_8bit"] = per_run["bits_per_entry"] / 8.0
    table = summarise(
        per_run, by=keys, metrics=("bits_per_entry", "ratio_to_32bit", "ratio_to_8bit")
    ).rename(columns={"n": "runs"})
    return table.sort_values(["model", "accounting", "bits_per_entry_mean"], kind="stable")
