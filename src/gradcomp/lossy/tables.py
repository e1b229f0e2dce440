"""Paper Y's table T3: final accuracy, uplink bits by part and per-bit accuracy per compressor."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp import reporting
from gradcomp.compression.rates import RATE_FIELDS
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.run_files import run_identity

BIT_FIELDS = tuple(f for f in RATE_FIELDS if f.endswith("_bits"))  # the parts of the uplink


def t3_table(
    rounds_tsvs: Sequence[str | Path], uplink_tsvs: Sequence[str | Path], quantizers: dict[str, str]
) -> pd.DataFrame:
    """T3: final accuracy, uplink bits by part and per-bit accuracy per compressor, R and M."""
    data = read_rounds(rounds_tsvs, quantizers)
    final = data[data["round"] == data["round"].max()]
    parts = []
    for path in uplink_tsvs:
        uplink = pd.read_csv(path, sep="\t")
        totals = uplink[list(BIT_FIELDS)].sum()
        parts.append({**run_identity(path), **totals.to_dict()})
    merged = final.merge(pd.DataFrame(parts), on=["model", "compressor", "rate", "M", "seed"])
    metrics = [
        "test_acc",
        "cumulative_bits_coded",
        "cumulative_bits_fixed",
        *BIT_FIELDS,
        "per_bit_acc_coded",
        "per_bit_acc_fixed",
    ]
    table = reporting.summarise(merged, by=("model", "compressor", "rate", "M"), metrics=metrics)
    return table.rename(columns={"n": "seeds"})


def table_t3(rounds_tsvs, uplink_tsvs, quantizers, tsv, md) -> pd.DataFrame:
    """Write T3 as TSV and Markdown."""
    table = t3_table(rounds_tsvs, uplink_tsvs, quantizers)
    reporting.write_table(
        table, tsv, md, title="T3: federated runs (final round; bits summed over users and rounds)"
    )
    return table
