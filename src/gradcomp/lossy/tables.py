"""Paper Y's tables: T3 (full federated runs) and T4 (the one-round paired study).

T3, per compressor, rate R and M, over seeds: final test accuracy, uplink bits by part and
per-bit accuracy (mean and 95% interval), and the per-bit accuracy's paired difference to
the baseline compressor at the same R (paired by seed). T4, over seeds and rounds of the
one-round study: bits per round, the change of test loss and accuracy against the
uncompressed aggregate, the accuracy the round gains per bit, and paired differences to
the baseline at the same R (see :mod:`gradcomp.lossy.paired`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp import reporting
from gradcomp.compression.rates import RATE_FIELDS
from gradcomp.compression.specs import VARIANT_LABEL
from gradcomp.lossy.paired import paired_summary
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.run_files import run_identity

__all__ = ["one_round_data", "t3_table", "t4_table", "table_t3", "table_t4"]

BIT_FIELDS = tuple(f for f in RATE_FIELDS if f.endswith("_bits"))  # the parts of the uplink
_LABEL = re.compile(rf"^{VARIANT_LABEL}$")
_MODEL = re.compile(r"(?P<model>[^/]+)/one_round/seed\d+\.tsv$")


def t3_table(
    rounds_tsvs: Sequence[str | Path],
    uplink_tsvs: Sequence[str | Path],
    quantizers: dict[str, str],
    *,
    baseline: str,
) -> pd.DataFrame:
    """T3 (see the module doc): one row per model, compressor, rate and M."""
    data = read_rounds(rounds_tsvs, quantizers)
    final = data[data["round"] == data["round"].max()]
    parts = []
    for path in uplink_tsvs:
        uplink = pd.read_csv(path, sep="\t")
        parts.append({**run_identity(path), **uplink[list(BIT_FIELDS)].sum().to_dict()})
    merged = final.merge(pd.DataFrame(parts), on=["model", "compressor", "rate", "M", "seed"])
    return paired_summary(
        merged,
        units=["seed"],
        metrics=["test_acc", "per_bit_acc_coded"],
        paired=["per_bit_acc_coded"],
        baseline=baseline,
        means=["cumulative_bits_coded", "cumulative_bits_fixed", *BIT_FIELDS],
    ).rename(columns={"units": "seeds"})


def one_round_data(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The one-round study's rows of every seed, with model, compressor, rate, M and the
    derived metrics ``gain_per_bit`` ((acc - start acc) / bits of the round, coded),
    ``loss_increase`` (loss - uncompressed aggregate's) and ``acc_change`` (acc -
    uncompressed aggregate's)."""
    frames = []
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        match = _MODEL.search(Path(path).as_posix())
        frame["model"] = match["model"] if match else ""
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    ident = data["compressor"].str.extract(_LABEL)
    data["compressor"] = ident["compressor"]
    data["rate"] = ident["rate"].astype(int)
    data["M"] = ident["M"].astype(int)
    data["gain_per_bit"] = (data["test_acc"] - data["start_acc"]) / data["bits_coded"]
    data["loss_increase"] = data["test_loss"] - data["exact_loss"]
    data["acc_change"] = data["test_acc"] - data["exact_acc"]
    return data


def t4_table(paths: Sequence[str | Path], *, baseline: str) -> pd.DataFrame:
    """T4 (see the module doc): one row per model, compressor, rate and M."""
    return paired_summary(
        one_round_data(paths),
        units=["seed", "round"],
        metrics=["loss_increase", "acc_change", "gain_per_bit"],
        paired=["test_loss", "test_acc", "gain_per_bit"],
        baseline=baseline,
        means=["bits_coded"],
    )


def table_t3(rounds_tsvs, uplink_tsvs, quantizers, tsv, md, *, baseline: str) -> pd.DataFrame:
    """Write T3 as TSV and Markdown."""
    table = t3_table(rounds_tsvs, uplink_tsvs, quantizers, baseline=baseline)
    reporting.write_table(
        table,
        tsv,
        md,
        title="T3: federated runs, final round (bits summed over users and rounds; mean "
        f"[95% interval] over seeds; paired differences to {baseline} at the same R)",
    )
    return table


def table_t4(paths, tsv, md, *, baseline: str) -> pd.DataFrame:
    """Write T4 as TSV and Markdown."""
    table = t4_table(paths, baseline=baseline)
    reporting.write_table(
        table,
        tsv,
        md,
        title="T4: one-round paired study (every compressor on the same updates; mean "
        f"[95% interval] over seeds x rounds; paired differences to {baseline} at the same R)",
    )
    return table
