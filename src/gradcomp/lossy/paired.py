"""Seed-level intervals, paired differences and multiple-comparison control (T3, T4, T5).

The unit of replication is the **seed**: one trajectory (data order, splits, dropout, noise
streams). Rounds of one seed share that trajectory and are not independent draws, so every
estimate here first averages a variant's metric (or its paired difference to the baseline)
over the rounds of each seed, then takes a two-sided Student-t interval over the seeds
(``n - 1`` degrees of freedom; NaN with fewer than two seeds). Compressors of one seed
compress the same updates (common random numbers), so a comparison is *paired* by seed.

A table's comparisons form one *family*; their two-sided one-sample t-test p-values are
adjusted by Holm's step-down method (:func:`holm`), and "significant" means an adjusted
p-value below 0.05.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import scipy.stats

__all__ = [
    "ALPHA",
    "VARIANT",
    "add_holm",
    "family_size",
    "holm",
    "paired_summary",
    "pick_baseline",
    "seed_means",
    "t_interval",
    "t_test",
]

#: Columns naming a compressor variant.
VARIANT = ("model", "compressor", "rate", "M")
#: Family-wise error rate of a table's comparisons.
ALPHA = 0.05


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean of ``values`` and its two-sided Student-t interval.

    NaN values are not dropped: any NaN gives a NaN mean and interval, so that a unit
    that failed is never silently left out of a count.
    """
    mean, lo, hi, _ = t_test(values, level)
    return mean, lo, hi


def t_test(values, level: float = 0.95) -> tuple[float, float, float, float]:
    """(mean, lo, hi, p): :func:`t_interval` and the two-sided p-value of mean = 0.

    A zero spread gives p = 0 for a non-zero mean and p = 1 for a zero mean.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0 or not np.isfinite(x).all():
        return (np.nan, np.nan, np.nan, np.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, np.nan, np.nan, np.nan)
    se = x.std(ddof=1) / np.sqrt(x.size)
    half = scipy.stats.t.ppf(0.5 + level / 2, x.size - 1) * se
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        p = float(2 * scipy.stats.t.sf(abs(mean) / se, x.size - 1))
    return (mean, mean - half, mean + half, p)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order; NaN stays NaN and is not counted).

    With m p-values sorted ascending, ``p_(i)`` becomes ``max_{j <= i} min(1, (m - j + 1)
    p_(j))``; rejecting adjusted values below alpha controls the family-wise error rate.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(adjusted)
    return out


def seed_means(data: pd.DataFrame, columns: Sequence[str], *, unit: str = "seed") -> pd.DataFrame:
    """Per variant and ``unit``, the mean of ``columns`` over the unit's rows (rounds).

    A NaN in any row gives a NaN mean (pandas would skip it), so that a failed round is
    never silently averaged away."""
    keys, columns = [*VARIANT, unit], list(columns)
    means = data.groupby(keys, sort=True)[columns].mean()
    has_nan = data[columns].isna().groupby([data[k] for k in keys], sort=True).any()
    return means.mask(has_nan).reset_index()


def pick_baseline(
    variants: pd.DataFrame, baseline: str, pairable: Callable[[str], bool] | None = None
) -> dict[tuple, tuple | None]:
    """Variant (:data:`VARIANT` tuple) -> the ``baseline`` compressor's variant it is paired
    with: same model and rate, the same M when the baseline has it, else the baseline's
    smallest M at that rate; None for the baseline itself, a variant whose rate the
    baseline lacks, or a compressor that ``pairable`` refuses (its rate means something
    else than the baseline's)."""
    base = variants[variants["compressor"] == baseline]
    out: dict[tuple, tuple | None] = {}
    for row in variants[list(VARIANT)].drop_duplicates().itertuples(index=False):
        key = tuple(row)
        model, name, rate, M = key
        cands = base[(base["model"] == model) & (base["rate"] == rate)]
        if name == baseline or cands.empty or (pairable is not None and not pairable(name)):
            out[key] = None
            continue
        Ms = sorted(cands["M"].unique())
        out[key] = (model, baseline, rate, M if M in Ms else Ms[0])
    return out


def paired_summary(
    data: pd.DataFrame,
    *,
    metrics: Sequence[str],
    paired: Sequence[str],
    baseline: str,
    means: Sequence[str] = (),
    pairable: Callable[[str], bool] | None = None,
    unit: str = "seed",
) -> pd.DataFrame:
    """One row per variant (:data:`VARIANT`), all intervals over seeds (see the module doc).

    ``data``: one row per variant, seed and (optionally) round. Columns of the result:
    ``seeds`` (how many seeds entered); for each of ``metrics``, ``<m>_mean``, ``<m>_lo``,
    ``<m>_hi``; for each of ``paired``, the difference to the paired ``baseline`` variant
    (:func:`pick_baseline`) on the same seeds, ``<m>_vs_<baseline>_mean`` / ``_lo`` / ``_hi``
    / ``_p`` (raw) / ``_p_holm`` (Holm over every paired difference of the table) /
    ``_significant``; ``means``: plain means over all rows. A variant without a pair gets
    NaN differences. A seed that the baseline lacks is an error.
    """
    per_seed = seed_means(data, sorted({*metrics, *paired}), unit=unit)
    pairs = pick_baseline(per_seed, baseline, pairable)
    indexed = per_seed.set_index([*VARIANT, unit]).sort_index()
    rows = []
    for key, group in per_seed.groupby(list(VARIANT), sort=True):
        row = dict(zip(VARIANT, key, strict=True))
        row["seeds"] = int(group[unit].nunique())
        full = data
        for col, value in row.items():
            if col in VARIANT:
                full = full[full[col] == value]
        for m in means:
            row[m] = float(full[m].mean())
        for m in metrics:
            row[f"{m}_mean"], row[f"{m}_lo"], row[f"{m}_hi"] = t_interval(group[m])
        partner = pairs.get(tuple(key))
        for m in paired:
            name = f"{m}_vs_{baseline}"
            diff = np.array([])
            if partner is not None:
                ref = indexed[m].reindex([(*partner, s) for s in group[unit]])
                if ref.isna().any():
                    missing = [s for s, v in zip(group[unit], ref, strict=True) if np.isnan(v)]
                    raise ValueError(
                        f"{'/'.join(map(str, key))}: the baseline {'/'.join(map(str, partner))}"
                        f" has no {m} for {unit}s {missing}"
                    )
                diff = group[m].to_numpy() - ref.to_numpy()
            (
                row[f"{name}_mean"],
                row[f"{name}_lo"],
                row[f"{name}_hi"],
                row[f"{name}_p"],
            ) = t_test(diff)
        rows.append(row)
    table = pd.DataFrame(rows)
    return add_holm(table, [f"{m}_vs_{baseline}" for m in paired])


def add_holm(table: pd.DataFrame, comparisons: Sequence[str]) -> pd.DataFrame:
    """Add ``<c>_p_holm`` and ``<c>_significant`` for every comparison column prefix ``c``
    (``<c>_p`` holds raw p-values); the family is all of them together."""
    table = table.copy()
    if table.empty:
        return table
    raw = np.concatenate([table[f"{c}_p"].to_numpy(dtype=np.float64) for c in comparisons])
    adjusted = holm(raw).reshape(len(comparisons), len(table))
    for c, adj in zip(comparisons, adjusted, strict=True):
        table[f"{c}_p_holm"] = adj
        table[f"{c}_significant"] = adj < ALPHA  # NaN compares False
    return table


def family_size(table: pd.DataFrame, comparisons: Sequence[str]) -> int:
    """How many tests the table's Holm family holds (finite raw p-values)."""
    return int(sum(np.isfinite(table[f"{c}_p"].to_numpy(dtype=float)).sum() for c in comparisons))
