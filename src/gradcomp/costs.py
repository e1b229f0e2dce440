"""What a run cost: Snakemake's per-job benchmark files gathered into one table.

Every heavy rule writes ``results/benchmarks/<rule>/<wildcards...>.tsv`` (Snakemake's
``benchmark:`` directive: one row with ``s``, wall seconds, and ``max_rss``, peak resident
memory in MB, among others). :func:`cost_table` sums them per rule and model, so that a run
on a few images says what the same jobs will cost at another scale.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pandas as pd

from gradcomp import reporting

__all__ = ["COLUMNS", "cost_table", "read_benchmarks", "table_costs"]

#: Columns of the cost table (seconds: wall time; MB: peak resident memory).
COLUMNS = [
    "rule", "model", "jobs", "images", "seconds_mean", "seconds_max", "seconds_total",
    "cpu_seconds_total", "MB_max",
]  # fmt: skip


def read_benchmarks(root: str | Path, models: Collection[str]) -> pd.DataFrame:
    """One row per benchmark file under ``root``: ``rule`` (the first folder), ``model`` (the
    first later path part, file stem included, that is one of ``models``; "" if none, e.g.
    prepare_cifar10), ``job`` (the path below the rule, without ``.tsv``), ``seconds``,
    ``cpu_seconds`` and ``MB`` (peak RSS). Raises ValueError naming a file without
    Snakemake's ``s`` and ``max_rss`` columns, or with a non-finite value in them."""
    rows = []
    for path in sorted(Path(root).rglob("*.tsv")):
        parts = path.relative_to(root).with_suffix("").parts
        bench = pd.read_csv(path, sep="\t")
        if not {"s", "max_rss"} <= set(bench.columns) or bench.empty:
            raise ValueError(f"{path}: not a Snakemake benchmark file (needs columns s, max_rss)")
        seconds = pd.to_numeric(bench["s"], errors="coerce")
        mb = pd.to_numeric(bench["max_rss"], errors="coerce")
        if not (seconds.notna().all() and mb.notna().all()):
            raise ValueError(f"{path}: s or max_rss is not a number ({bench.iloc[0].to_dict()})")
        cpu = pd.to_numeric(bench.get("cpu_time", pd.Series([float("nan")])), errors="coerce")
        rows.append(
            {
                "rule": parts[0],
                "model": next((p for p in parts[1:] if p in models), ""),
                "job": "/".join(parts[1:]),
                # a job benchmarked with repeats has one row per repeat: its mean
                "seconds": float(seconds.mean()),
                "cpu_seconds": float(cpu.mean()),
                "MB": float(mb.max()),
            }
        )
    columns = ["rule", "model", "job", "seconds", "cpu_seconds", "MB"]
    return pd.DataFrame(rows, columns=columns)


def cost_table(root: str | Path, models: Collection[str], *, images: int) -> pd.DataFrame:
    """Per rule and model: jobs, ``images`` (training images of the run's data, the scale
    the costs were measured at), mean, largest and summed wall seconds, summed CPU seconds
    and the largest peak memory (MB); a last row ``all`` sums every job. Raises ValueError
    if ``root`` holds no benchmark file."""
    runs = read_benchmarks(root, models)
    if runs.empty:
        raise ValueError(f"no benchmark file under {root}: run the workflow's heavy rules first")
    grouped = runs.groupby(["rule", "model"], sort=True)
    table = pd.DataFrame(
        {
            "jobs": grouped.size(),
            "seconds_mean": grouped["seconds"].mean(),
            "seconds_max": grouped["seconds"].max(),
            "seconds_total": grouped["seconds"].sum(),
            "cpu_seconds_total": reporting.strict_sums(runs, ["rule", "model"], ["cpu_seconds"])[
                "cpu_seconds"
            ],
            "MB_max": grouped["MB"].max(),
        }
    ).reset_index()
    total = {
        "rule": "all", "model": "", "jobs": len(runs), "seconds_mean": runs["seconds"].mean(),
        "seconds_max": runs["seconds"].max(), "seconds_total": runs["seconds"].sum(),
        "cpu_seconds_total": runs["cpu_seconds"].sum(skipna=False), "MB_max": runs["MB"].max(),
    }  # fmt: skip
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    table["images"] = int(images)
    return table[COLUMNS]


def table_costs(
    root: str | Path,
    tsv_path: str | Path,
    md_path: str | Path,
    *,
    models: Collection[str],
    images: int,
    title: str = "What each rule cost (wall seconds, peak memory)",
) -> pd.DataFrame:
    """:func:`cost_table` written as TSV + Markdown; returns it."""
    table = cost_table(root, models, images=images)
    reporting.write_table(table, tsv_path, md_path, title=title)
    return table
