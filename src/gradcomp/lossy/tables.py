"""Paper Y's tables: T3 (full federated runs), T4 (the one-round paired study) and T5 (rate
curves compared by BD-rate).

Every interval is over seeds, the unit of replication (rounds of a seed are averaged first;
:mod:`gradcomp.lossy.paired`); every table declares its family of comparisons and adjusts
their p-values by Holm's method. T3, per compressor, rate R and M: final test accuracy,
uplink bits by part and per-bit accuracy, and the per-bit accuracy's paired difference to
the baseline variant (same R). T4, per variant: measured bits per entry and per round, the
change of test loss and accuracy against the uncompressed aggregate, the accuracy the round
gains per bit, and paired differences to the baseline at the same R for compressors whose
R means the same thing (bits per kept value of the same top-K). T5, per compressor curve
(a compressor and M over its rates): the BD-rate against the baseline's curve
(:mod:`gradcomp.lossy.rate_curves`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gradcomp import reporting
from gradcomp.compression.rates import RATE_FIELDS
from gradcomp.compression.specs import VARIANT_LABEL
from gradcomp.lossy.paired import (
    add_holm,
    family_size,
    paired_summary,
    seed_means,
    t_test,
)
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.rate_curves import bd_rate
from gradcomp.lossy.run_files import run_identity

__all__ = [
    "one_round_data",
    "t3_table",
    "t4_table",
    "t5_table",
    "table_t3",
    "table_t4",
    "table_t5",
]

BIT_FIELDS = tuple(f for f in RATE_FIELDS if f.endswith("_bits"))  # the parts of the uplink
_LABEL = re.compile(rf"^{VARIANT_LABEL}$")
_MODEL = re.compile(r"(?P<model>[^/]+)/one_round/seed\d+\.tsv$")


def t3_table(
    rounds_tsvs: Sequence[str | Path],
    uplink_tsvs: Sequence[str | Path],
    quantizers: dict[str, str],
    *,
    baseline: str,
    pairable: Collection[str] | None = None,
) -> pd.DataFrame:
    """T3 (see the module doc): one row per model, compressor, rate and M; ``pairable``:
    the compressors whose rate means what the baseline's does (None: all)."""
    data = read_rounds(rounds_tsvs, quantizers)
    last = {int(pd.read_csv(path, sep="\t")["round"].max()): path for path in rounds_tsvs}
    if len(last) > 1:  # the global last round would silently drop the shorter runs
        raise ValueError(
            "T3 compares runs at their final round, but the rounds files end at different "
            f"rounds: {', '.join(f'{r} ({path})' for r, path in sorted(last.items()))}"
        )
    final = data[data["round"] == data["round"].max()]
    parts = []
    for path in uplink_tsvs:
        uplink = pd.read_csv(path, sep="\t")
        parts.append({**run_identity(path), **uplink[list(BIT_FIELDS)].sum().to_dict()})
    merged = final.merge(pd.DataFrame(parts), on=["model", "compressor", "rate", "M", "seed"])
    return paired_summary(
        merged,
        metrics=["test_acc", "per_bit_acc_coded"],
        paired=["per_bit_acc_coded"],
        baseline=baseline,
        means=["cumulative_bits_coded", "cumulative_bits_fixed", *BIT_FIELDS],
        pairable=_pairable(pairable),
    )


def one_round_data(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The one-round study's rows of every seed, with model, compressor, rate, M and the
    derived metrics ``gain_per_bit`` ((acc - start acc) / bits of the round, coded),
    ``loss_increase`` (loss - uncompressed aggregate's), ``acc_change`` (acc -
    uncompressed aggregate's) and ``bits_per_entry`` (coded bits / entries sent)."""
    frames = []
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        match = _MODEL.search(Path(path).as_posix())
        if match is None:
            raise ValueError(
                f"{path} is not a one-round study file (.../<model>/one_round/seed<k>.tsv)"
            )
        bad = frame.loc[~frame["compressor"].astype(str).str.fullmatch(_LABEL), "compressor"]
        if len(bad):
            raise ValueError(
                f"{path}: compressor {bad.iloc[0]!r} is not a variant label "
                "{name}/R{rate}_M{M}"
            )
        frame["model"] = match["model"]
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    ident = data["compressor"].str.extract(_LABEL)
    data["compressor"] = ident["compressor"]
    data["rate"] = ident["rate"].astype(int)
    data["M"] = ident["M"].astype(int)
    data["gain_per_bit"] = (data["test_acc"] - data["start_acc"]) / data["bits_coded"]
    data["loss_increase"] = data["test_loss"] - data["exact_loss"]
    data["acc_change"] = data["test_acc"] - data["exact_acc"]
    data["bits_per_entry"] = data["bits_coded"] / data["entries"]
    data["fixed_bits_per_entry"] = data["bits_fixed"] / data["entries"]
    needed = ["test_loss", "test_acc", "bits_coded", "bits_fixed", "exact_loss", "exact_acc",
              "start_acc"]  # fmt: skip
    bad = data[needed].isna().any(axis=1) | ~(data["entries"] > 0)
    if bad.any():
        first = data[bad].iloc[0]
        raise ValueError(
            f"one-round study: {first['compressor']} R{first['rate']} M{first['M']} seed "
            f"{first['seed']} round {first['round']} has a NaN loss, accuracy or bit count, "
            "or no entries"
        )
    return data


def _pairable(names: Collection[str] | None):
    return None if names is None else (lambda name: name in names)


T4_PAIRED = ("test_loss", "test_acc", "gain_per_bit")


def t4_table(
    paths: Sequence[str | Path], *, baseline: str, pairable: Collection[str] | None = None
) -> pd.DataFrame:
    """T4 (see the module doc): one row per model, compressor, rate and M."""
    return paired_summary(
        one_round_data(paths),
        metrics=["bits_per_entry", "loss_increase", "acc_change", "gain_per_bit", "test_acc"],
        paired=list(T4_PAIRED),
        baseline=baseline,
        means=["bits_coded", "fixed_bits_per_entry", "exact_acc", "start_acc"],
        pairable=_pairable(pairable),
    )


def t5_table(
    paths: Sequence[str | Path], *, baseline: str, metric: str = "loss_increase"
) -> pd.DataFrame:
    """T5 (see the module doc): one row per model, compressor and M with ``rates`` (the
    knobs of its curve), ``bits_per_entry_min`` / ``_max`` (the measured bits per entry they
    span), ``bd_rate_mean`` / ``_lo`` / ``_hi`` (percent, over seeds), ``bd_rate_p``,
    ``bd_rate_p_holm`` (Holm over the table) and ``bd_rate_significant``; ``seeds``: seeds
    with a defined BD-rate (NaN where the curves share no loss range on some seed).
    The baseline's curve is that of its M = the curve's M when it has it, else its
    smallest M."""
    per_seed = seed_means(one_round_data(paths), ["bits_coded", "bits_per_entry", metric])
    rows = []
    for (model, name, M), curve in per_seed.groupby(["model", "compressor", "M"], sort=True):
        if name == baseline:
            continue
        base = per_seed[(per_seed["model"] == model) & (per_seed["compressor"] == baseline)]
        if base.empty:
            continue
        base_M = M if M in set(base["M"]) else int(base["M"].min())
        base = base[base["M"] == base_M]
        values = []
        for seed, pts in curve.groupby("seed"):
            ref = base[base["seed"] == seed]
            values.append(
                bd_rate(pts["bits_coded"], pts[metric], ref["bits_coded"], ref[metric])
                if len(ref) >= 2
                else np.nan
            )
        values = np.array(values)
        finite = values[np.isfinite(values)]
        mean, lo, hi, p = t_test(finite) if len(finite) == len(values) else (np.nan,) * 4
        rows.append(
            {
                "model": model,
                "compressor": name,
                "M": int(M),
                "baseline_M": base_M,
                "rates": ",".join(str(r) for r in sorted(curve["rate"].unique())),
                "bits_per_entry_min": float(curve["bits_per_entry"].min()),
                "bits_per_entry_max": float(curve["bits_per_entry"].max()),
                "seeds": int(len(finite)),
                "seeds_total": int(len(values)),
                "bd_rate_mean": mean,
                "bd_rate_lo": lo,
                "bd_rate_hi": hi,
                "bd_rate_p": p,
            }  # fmt: skip
        )
    table = pd.DataFrame(rows)
    return add_holm(table, ["bd_rate"]) if len(table) else table


def table_t3(
    rounds_tsvs, uplink_tsvs, quantizers, tsv, md, *, baseline: str, pairable=None
) -> pd.DataFrame:
    """Write T3 as TSV and Markdown."""
    table = t3_table(rounds_tsvs, uplink_tsvs, quantizers, baseline=baseline, pairable=pairable)
    family = family_size(table, [f"per_bit_acc_coded_vs_{baseline}"])
    reporting.write_table(
        table,
        tsv,
        md,
        title="T3: federated runs, final round (bits summed over users and rounds; mean "
        "[95% Student-t interval] over seeds, the unit of replication; per-bit accuracy "
        f"paired by seed with {baseline} at the same R; family: these {family} differences, "
        "Holm-adjusted p, significant = adjusted p < 0.05)",
    )
    return table


def table_t4(paths, tsv, md, *, baseline: str, pairable=None) -> pd.DataFrame:
    """Write T4 as TSV and Markdown."""
    table = t4_table(paths, baseline=baseline, pairable=pairable)
    family = family_size(table, [f"{m}_vs_{baseline}" for m in T4_PAIRED])
    reporting.write_table(
        table,
        tsv,
        md,
        title="T4: one-round paired study (every compressor on the same updates; per-seed "
        "means over rounds, then mean [95% Student-t interval] over seeds; paired with "
        f"{baseline} at the same R where R means bits per kept value of the same top-K; "
        f"family: these {family} differences, Holm-adjusted p, significant = adjusted "
        "p < 0.05)",
    )
    return table


def table_t5(paths, tsv, md, *, baseline: str) -> pd.DataFrame:
    """Write T5 as TSV and Markdown."""
    table = t5_table(paths, baseline=baseline)
    family = family_size(table, ["bd_rate"]) if len(table) else 0
    reporting.write_table(
        table,
        tsv,
        md,
        title=f"T5: BD-rate against {baseline} (% uplink bits at equal test-loss increase, "
        "one-round study; negative = fewer bits; per seed, then mean [95% Student-t "
        f"interval] over seeds; family: these {family} BD-rates, Holm-adjusted p, "
        "significant = adjusted p < 0.05; NaN: no common loss range)",
    )
    return table
