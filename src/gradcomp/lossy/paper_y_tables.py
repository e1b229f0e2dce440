"""Paper Y's tables: T3 (full federated runs) and T4 (the one-round paired study); T5 (rate
curves compared by BD-rate) is :mod:`gradcomp.lossy.bd_rate_table`.

Every interval is over seeds, the unit of replication (rounds of a seed are averaged first;
:mod:`gradcomp.statistics.paired`); every table declares its family of comparisons and adjusts
their p-values by Holm's method. T3, per compressor, rate R and M: final test accuracy,
uplink bits by part and per-bit accuracy, and the per-bit accuracy's paired difference to
the baseline variant (same R). T4, per variant: measured bits per entry and per round, the
change of test loss and accuracy against the uncompressed aggregate, the accuracy the round
gains per bit, and paired differences to the baseline at the same R for compressors whose
R means the same thing (bits per kept value of the same top-K).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gradcomp import reporting
from gradcomp.compression.rates import RATE_FIELDS
from gradcomp.compression.specs import variant_label
from gradcomp.lossy.per_bit import read_rounds
from gradcomp.lossy.run_files import RUN_IDENTITY
from gradcomp.statistics.paired import (
    family_size,
    paired_summary,
)

__all__ = [
    "one_round_data",
    "t3_table",
    "t4_table",
    "table_t3",
    "table_t4",
]

BIT_FIELDS = tuple(f for f in RATE_FIELDS if f.endswith("_bits"))  # the parts of the uplink
#: The identity columns of a one-round study table (its trajectory and variant).
ONE_ROUND_IDENTITY = ("model", "warm_start", "seed", "compressor", "rate", "M")


def t3_table(
    rounds_tsvs: Sequence[str | Path],
    uplink_tsvs: Sequence[str | Path],
    quantizers: dict[str, str],
    *,
    baseline: str,
    pairable: Collection[str] | None = None,
    kept_sets: Mapping[str, str] | None = None,
    curves: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """T3 (see the module doc): one row per model, compressor, rate and M; ``pairable``:
    the compressors whose rate means what the baseline's does (None: all); ``kept_sets`` and
    ``curves``: pair on the same kept set (:func:`gradcomp.statistics.paired.pick_baseline`)."""
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
        ident = uplink[list(RUN_IDENTITY)].drop_duplicates()
        if len(ident) != 1:
            raise ValueError(f"{path}: not the uplink table of one run ({len(ident)} identities)")
        sums = reporting.strict_sums(uplink.assign(run=0), ["run"], BIT_FIELDS).iloc[0]
        parts.append({**ident.iloc[0].to_dict(), **sums.to_dict()})
    merged = final.merge(pd.DataFrame(parts), on=list(RUN_IDENTITY))
    return paired_summary(
        merged,
        metrics=["test_acc", "per_bit_acc_coded"],
        paired=["per_bit_acc_coded"],
        baseline=baseline,
        means=["cumulative_bits_coded", "cumulative_bits_fixed", *BIT_FIELDS],
        pairable=_pairable(pairable),
        kept_set=_kept_set(kept_sets),
        curves=curves,
    )


def sent_bits_only(data: pd.DataFrame) -> pd.DataFrame:
    """The rows whose bits are bytes a receiver decodes (``bits_source`` not ``ideal``: the
    Gaussian channel's rate is its mutual information, no bitstream carries it), for the
    comparisons at matched bits (T5, the verdicts)."""
    if "bits_source" not in data.columns:
        return data
    return data[data["bits_source"] != "ideal"]


def one_round_data(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The one-round study's rows of every seed, with model, compressor, rate, M and the
    derived metrics ``gain_per_bit`` ((acc - start acc) / bits of the round, coded),
    ``loss_increase`` (loss - uncompressed aggregate's), ``acc_change`` (acc -
    uncompressed aggregate's) and ``bits_per_entry`` (coded bits / entries sent)."""
    frames = []
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        missing = set(ONE_ROUND_IDENTITY) - set(frame.columns)
        if missing:
            raise ValueError(
                f"{path} is not a one-round study table (no {', '.join(sorted(missing))} column)"
            )
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
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


def _kept_set(kept_sets: Mapping[str, str] | None):
    """A variant's kept set from its name, rate and M, read from the study's variant label ->
    kept set (None: no kept sets)."""
    return None if kept_sets is None else (lambda n, r, m: kept_sets[variant_label(n, r, m)])


#: T4's paired differences (the per-bit gain is shown, not tested: its difference is
#: significant whenever the bits differ, whatever the accuracy does)
T4_PAIRED = ("test_loss", "test_acc")


def t4_table(
    paths: Sequence[str | Path],
    *,
    baseline: str,
    pairable: Collection[str] | None = None,
    margin: float | None = None,
    alpha: float = 0.05,
    kept_sets: Mapping[str, str] | None = None,
    curves: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """T4 (see the module doc): one row per model, compressor, rate and M. With ``margin``
    (nats), the test-loss difference to the baseline also gets a TOST p of equivalence
    within +-margin (``test_loss_vs_<baseline>_tost_p``, Holm over the table's rows as
    ``_tost_p_holm``) and a ``verdict`` (:func:`gradcomp.statistics.nested.decide`): a pair
    whose both sides equal the uncompressed aggregate within the margin is "equivalent", not
    "undecided". With ``kept_sets`` and ``curves`` a variant is paired with the baseline's
    curve on its own kept set (:func:`gradcomp.statistics.paired.pick_baseline`)."""
    from gradcomp.statistics.nested import decide, tost_p
    from gradcomp.statistics.paired import holm

    table = paired_summary(
        one_round_data(paths),
        metrics=["bits_per_entry", "loss_increase", "acc_change", "gain_per_bit", "test_acc"],
        paired=list(T4_PAIRED),
        baseline=baseline,
        means=["bits_coded", "fixed_bits_per_entry", "exact_acc", "start_acc"],
        pairable=_pairable(pairable),
        kept_set=_kept_set(kept_sets),
        curves=curves,
    )
    if margin is None or table.empty:
        return table
    c = f"test_loss_vs_{baseline}"
    table[f"{c}_tost_p"] = [
        tost_p(m, se, df, margin)
        for m, se, df in zip(table[f"{c}_mean"], table[f"{c}_se"], table[f"{c}_df"], strict=True)
    ]
    table[f"{c}_tost_p_holm"] = holm(table[f"{c}_tost_p"])
    table["verdict"] = [
        decide(m, p, t, alpha) if np.isfinite(m) else ""
        for m, p, t in zip(
            table[f"{c}_mean"], table[f"{c}_p_holm"], table[f"{c}_tost_p_holm"], strict=True
        )
    ]
    return table


def _variant_and_units(table: pd.DataFrame) -> pd.DataFrame:
    """The first two columns of T3's and T4's Markdown views: ``model name/R{rate}_M{M}`` and
    the units of the interval (``3 seeds``, ``6 warm starts``)."""
    return pd.DataFrame(
        {
            "variant": [
                f"{m} {n}/R{r}_M{M}"
                for m, n, r, M in zip(
                    table["model"], table["compressor"], table["rate"], table["M"], strict=True
                )
            ],
            "units": [f"{u} {d}" for u, d in zip(table["units"], table["design"], strict=True)],
        }
    )


def _t3_readable(table: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """T3's Markdown view: ten columns at most; the bits by part, the standard errors and
    degrees of freedom stay in the TSV."""
    c = f"per_bit_acc_coded_vs_{baseline}"
    out = _variant_and_units(table)
    out["cumulative_bits_coded"] = table["cumulative_bits_coded"].to_numpy()
    for col in ("test_acc", "per_bit_acc_coded", c):
        for part in ("mean", "lo", "hi"):
            out[f"{col}_{part}"] = table[f"{col}_{part}"].to_numpy()
    for col in (f"{c}_p_holm", f"{c}_significant"):
        out[col] = table[col].to_numpy()
    return out


def _t4_readable(table: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """T4's Markdown view: ten columns at most, the rest stays in the TSV."""
    c = f"test_loss_vs_{baseline}"
    out = _variant_and_units(table)
    for col in ("bits_per_entry", "loss_increase", "acc_change", c):
        for part in ("mean", "lo", "hi"):
            out[f"{col}_{part}"] = table[f"{col}_{part}"]
    out[f"{c}_p_holm"] = table[f"{c}_p_holm"]
    if "verdict" in table:
        out[f"{c}_tost_p_holm"] = table[f"{c}_tost_p_holm"]
        out["verdict"] = table["verdict"]
    return out


def table_t3(
    rounds_tsvs, uplink_tsvs, quantizers, tsv, md, *, baseline: str, pairable=None,
    kept_sets=None, curves=None,
) -> pd.DataFrame:  # fmt: skip
    """Write T3 as TSV and Markdown."""
    table = t3_table(rounds_tsvs, uplink_tsvs, quantizers, baseline=baseline, pairable=pairable,
                     kept_sets=kept_sets, curves=curves)  # fmt: skip
    family = family_size(table, [f"per_bit_acc_coded_vs_{baseline}"])
    reporting.write_table(
        table,
        tsv,
        md,
        title="T3: federated runs, final round (bits summed over users and rounds; mean "
        "[95% Student-t interval] over seeds, the unit of replication; per-bit accuracy "
        f"paired by seed with {baseline}'s curve at the same R on the same kept set; family: "
        f"these {family} differences, "
        "Holm-adjusted p, significant = adjusted p < 0.05; the bits by part and every other "
        "column in T3.tsv)",
        readable=_t3_readable(table, baseline) if "model" in table.columns else None,
    )
    return table


def table_t4(
    paths, tsv, md, *, baseline: str, pairable=None, margin=None, alpha: float = 0.05,
    kept_sets=None, curves=None,
) -> pd.DataFrame:  # fmt: skip
    """Write T4 as TSV (every column) and Markdown (:func:`_t4_readable`)."""
    table = t4_table(paths, baseline=baseline, pairable=pairable, margin=margin, alpha=alpha,
                     kept_sets=kept_sets, curves=curves)  # fmt: skip
    family = family_size(table, [f"{m}_vs_{baseline}" for m in T4_PAIRED])
    equivalence = (
        ""
        if margin is None
        else f"; TOST of |test-loss difference| >= {margin:g} nats, Holm over the rows; "
        "verdict: equivalent, else better / worse (lower / higher loss), else undecided"
    )
    title = (
        "T4: one-round paired study (every compressor on the same updates; per-trajectory "
        "means over rounds, then mean [95% Student-t interval] over the units: warm starts, "
        "each the mean of its nested seeds, or the seeds of the first warm start for the "
        f"variants run there only; paired with {baseline}'s curve at the same R on the same "
        f"kept set (top-K fraction) where R means bits per kept value; family: these {family} "
        "differences, Holm-"
        f"adjusted p, significant = adjusted p < {alpha:g}{equivalence}; every column in "
        "T4.tsv)"
    )
    reporting.write_table(table, tsv, md, title=title, readable=_t4_readable(table, baseline))
    return table
