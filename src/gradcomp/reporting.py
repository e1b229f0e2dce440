"""Reporting helpers shared by the figures and tables: summaries (mean and sd by group),
Markdown rendering, table files and the data-source line of every figure."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gradcomp.artifacts import write_text


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


def to_markdown(table: pd.DataFrame, *, digits: int = 4) -> str:
    """Render ``table`` as a GitHub Markdown table.

    Column groups become one cell: ``x_mean``/``x_sd`` as ``m ± s``, ``x_mean``/``x_lo``/
    ``x_hi`` as ``m [lo, hi]``; booleans as ``yes`` or empty.
    """
    columns: list[str] = []
    cells: dict[str, list[str]] = {}
    grouped = set()
    for col in table.columns:
        if not col.endswith("_mean"):
            continue
        name = col[: -len("_mean")]
        if {f"{name}_lo", f"{name}_hi"} <= set(table.columns):
            grouped |= {f"{name}_lo", f"{name}_hi"}
        elif f"{name}_sd" in table.columns:
            grouped.add(f"{name}_sd")
    for col in table.columns:
        if col in grouped:
            continue
        name = col[: -len("_mean")] if col.endswith("_mean") else col
        if col.endswith("_mean") and f"{name}_lo" in grouped:
            cells[name] = [
                f"{_fmt(m, digits)} [{_fmt(lo, digits)}, {_fmt(hi, digits)}]"
                for m, lo, hi in zip(
                    table[col], table[f"{name}_lo"], table[f"{name}_hi"], strict=True
                )
            ]
        elif col.endswith("_mean") and f"{name}_sd" in grouped:
            cells[name] = [
                f"{_fmt(m, digits)} ± {_fmt(s, digits)}"
                for m, s in zip(table[col], table[f"{name}_sd"], strict=True)
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
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
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


def data_source_label(summary_json: str | Path) -> str:
    """One line naming the data a figure comes from (from prepare_cifar10's summary)."""
    summary = json.loads(Path(summary_json).read_text())
    return (
        f"data: {summary['source']}, {summary['n_train']} train / {summary['n_test']} test images"
    )
