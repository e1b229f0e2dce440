"""Reporting helpers shared by the figures and tables: summaries (mean and sd by group),
Markdown rendering for reading (3 significant digits, shares in percent, intervals), the
table files (TSV at full precision beside the Markdown) and the data-source line of every
figure."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gradcomp.artifacts import write_text, write_tsv


def _any_missing(data: pd.DataFrame, by: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Per group ``by`` (sorted, as pandas groups) and column: whether any member is NaN."""
    return data[list(columns)].isna().groupby([data[k] for k in by], sort=True).any()


def strict_sums(data: pd.DataFrame, by: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Sums of ``columns`` within groups ``by`` (group keys as the index, sorted as pandas
    does), NaN where any member is NaN: pandas' own sum turns an all-NaN group into 0 and
    a part-NaN one into the sum of the rest, a number for a missing one."""
    sums = data.groupby([data[k] for k in by], sort=True)[list(columns)].sum()
    return sums.mask(_any_missing(data, by, columns))


def summarise(data: pd.DataFrame, *, by: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Mean and standard deviation of ``metrics`` within groups ``by``; NaN (shown as
    missing) where any row of the group is, never the statistics of the rest.

    Returns one row per group with ``<metric>_mean`` and ``<metric>_sd``
    columns and ``n`` (rows averaged).
    """
    grouped = data.groupby(list(by), sort=True)[list(metrics)]
    missing = _any_missing(data, by, metrics)
    mean = grouped.mean().mask(missing).add_suffix("_mean")
    sd = grouped.std(ddof=1).mask(missing).add_suffix("_sd")
    count = grouped.size().rename("n")
    out = pd.concat([mean, sd, count], axis=1).reset_index()
    ordered = [*by, *(f"{m}_{s}" for m in metrics for s in ("mean", "sd")), "n"]
    return out[ordered]


#: The most columns a Markdown table may have: wider ones wrap in a terminal and scroll in a
#: browser. What a reader does not need goes to the TSV only.
MAX_MARKDOWN_COLUMNS = 10


def to_markdown(table: pd.DataFrame, *, digits: int = 3, percent: Collection[str] = ()) -> str:
    """Render ``table`` as a GitHub Markdown table for reading (the TSV keeps full precision).

    Column groups become one cell named ``x``: ``x_mean``/``x_lo``/``x_hi`` as ``m [lo, hi]``
    (an interval), ``x_mean``/``x_sd`` as ``m ± s``. Floats get ``digits`` significant
    digits; columns whose name (or group name) contains ``share`` or ``frac``, or is listed
    in ``percent``, are fractions shown as percentages; booleans as ``yes`` / ``no``; NaN as
    ``–``; integers and text unchanged.
    """
    names = set(table.columns)
    columns: list[str] = []
    cells: dict[str, list[str]] = {}
    for col in table.columns:
        base = col[: -len("_mean")] if col.endswith("_mean") else None
        if base is None and col.endswith(("_lo", "_hi", "_sd")):
            if f"{col.rsplit('_', 1)[0]}_mean" in names:
                continue  # shown in its group's cell
        name = base if base is not None else col
        pct = name in percent or "share" in name or "frac" in name

        def fmt(value, pct=pct):
            return _fmt(value, digits, percent=pct)

        if base is not None and {f"{base}_lo", f"{base}_hi"} <= names:
            triples = zip(table[col], table[f"{base}_lo"], table[f"{base}_hi"], strict=True)
            cells[name] = [f"{fmt(m)} [{fmt(lo)}, {fmt(hi)}]" for m, lo, hi in triples]
        elif base is not None and f"{base}_sd" in names:
            pairs = zip(table[col], table[f"{base}_sd"], strict=True)
            cells[name] = [f"{fmt(m)} ± {fmt(s)}" for m, s in pairs]
        else:
            name = col
            cells[name] = [fmt(v) for v in table[col]]
        columns.append(name)
    if len(columns) > MAX_MARKDOWN_COLUMNS:
        raise ValueError(
            f"a Markdown table of {len(columns)} columns ({', '.join(columns)}): at most "
            f"{MAX_MARKDOWN_COLUMNS} are readable; show fewer and keep the rest in the TSV"
        )
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for i in range(len(table)):
        lines.append("| " + " | ".join(cells[c][i] for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _fmt(value, digits: int, *, percent: bool = False) -> str:
    """One Markdown cell: see :func:`to_markdown`."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "–"
        return f"{100 * value:.{digits}g}%" if percent else f"{value:.{digits}g}"
    if percent and isinstance(value, (int, np.integer)):
        return f"{100 * value:.{digits}g}%"
    return str(value)


def write_table(
    table: pd.DataFrame,
    tsv_path: str | Path,
    md_path: str | Path,
    *,
    title: str,
    percent: Collection[str] = (),
    readable: pd.DataFrame | None = None,
) -> None:
    """Write ``table`` as TSV at full precision (:func:`gradcomp.artifacts.write_tsv`) and as
    Markdown for reading (:func:`to_markdown`; ``percent`` as there) under ``# title``:
    ``readable``, a view of at most :data:`MAX_MARKDOWN_COLUMNS` columns, or ``table``."""
    write_tsv(tsv_path, table)
    shown = table if readable is None else readable
    write_text(md_path, f"# {title}\n\n" + to_markdown(shown, percent=percent))


def data_source_label(summary_json: str | Path) -> str:
    """One line naming the data a figure comes from (from prepare_cifar10's summary)."""
    summary = json.loads(Path(summary_json).read_text())
    return (
        f"data: {summary['source']}, {summary['n_train']} train / {summary['n_test']} test images"
    )


def figure_source_label(summary_json: str | Path) -> str:
    """:func:`data_source_label` in a reader's words, for a figure's title: the data and the
    image counts, without the config key that chose the data (a page a reader sees names no
    identifier of the config)."""
    import re

    summary = json.loads(Path(summary_json).read_text())
    source = re.sub(r"\s*\(config key [^)]*\)", "", str(summary["source"]))
    return (
        f"data: {source}, {int(summary['n_train']):,} training / "
        f"{int(summary['n_test']):,} test images"
    )
