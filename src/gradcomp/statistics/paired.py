"""Seed-level intervals, paired differences and multiple-comparison control (T3, T4, T5).

The unit of a trajectory is the **seed** (data order, splits, dropout, noise streams), and
in the one-round study the seed is nested in a **warm start** (:mod:`gradcomp.statistics.nested`).
Rounds of one trajectory are not independent draws, so every estimate here first averages a
variant's metric (or its paired difference to the baseline) over the rounds of each
trajectory; then, with two or more warm starts, over the seeds of each warm start, and takes
a two-sided Student-t interval over the warm starts (the exact interval of the balanced
two-level design); with one warm start (or none: the full runs), over the seeds. Compressors
of one trajectory compress the same updates (common random numbers), so a comparison is
*paired* by trajectory.

A table's comparisons form one *family*; their two-sided one-sample t-test p-values are
adjusted by Holm's step-down method (:func:`holm`), and "significant" means an adjusted
p-value below 0.05.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd
import scipy.stats

from gradcomp.statistics.nested import nested_test

__all__ = [
    "ALPHA",
    "VARIANT",
    "add_holm",
    "family_size",
    "holm",
    "paired_summary",
    "pick_baseline",
    "seed_means",
    "seed_verdicts",
    "t_interval",
    "t_test",
    "trajectory_units",
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


def trajectory_units(data: pd.DataFrame) -> tuple[str, ...]:
    """The columns naming one trajectory: ``("warm_start", "seed")`` where the data has warm
    starts (the one-round study), else ``("seed",)``."""
    return ("warm_start", "seed") if "warm_start" in data.columns else ("seed",)


def seed_means(
    data: pd.DataFrame, columns: Sequence[str], *, unit: str | Sequence[str] | None = None
) -> pd.DataFrame:
    """Per variant and trajectory (``unit``: its columns, default
    :func:`trajectory_units`), the mean of ``columns`` over the trajectory's rows (rounds).

    A NaN in any row gives a NaN mean (pandas would skip it), so that a failed round is
    never silently averaged away."""
    units = trajectory_units(data) if unit is None else (unit,) if isinstance(unit, str) else unit
    keys, columns = [*VARIANT, *units], list(columns)
    means = data.groupby(keys, sort=True)[columns].mean()
    has_nan = data[columns].isna().groupby([data[k] for k in keys], sort=True).any()
    return means.mask(has_nan).reset_index()


def pick_baseline(
    variants: pd.DataFrame,
    baseline: str,
    pairable: Callable[[str], bool] | None = None,
    kept_set: Callable[[str, int, int], str] | None = None,
    curves: Mapping[str, str] | None = None,
) -> dict[tuple, tuple | None]:
    """Variant (:data:`VARIANT` tuple) -> the ``baseline`` variant it is paired with: same
    model and rate, the same M when the baseline has it, else the baseline's smallest M at
    that rate; None for the baseline itself, a variant whose rate the baseline lacks, or a
    compressor that ``pairable`` refuses (its rate means something else than the
    baseline's). With ``kept_set`` (a variant's kept set from its name, rate and M), the
    baseline is any entry of the baseline's curve (``curves``: name -> curve) on the variant's
    own kept set, so that a top-K 10% quantizer is paired with the baseline at top-K 10%."""
    curves = dict(curves or {})
    base_curve = curves.get(baseline, baseline)

    def kept(name, rate, M):
        assert kept_set is not None  # called only with kept sets
        return kept_set(name, int(rate), int(M))

    if kept_set is None:
        base = variants[variants["compressor"] == baseline]
    else:
        base = variants[[curves.get(n, n) == base_curve for n in variants["compressor"]]]
    out: dict[tuple, tuple | None] = {}
    for row in variants[list(VARIANT)].drop_duplicates().itertuples(index=False):
        key = tuple(row)
        model, name, rate, M = key
        cands = base[(base["model"] == model) & (base["rate"] == rate)]
        if kept_set is not None and not cands.empty:
            same = [
                kept(n, r, m) == kept(name, rate, M)
                for n, r, m in zip(cands["compressor"], cands["rate"], cands["M"], strict=True)
            ]
            cands = cands[same]  # fmt: skip
        joins = curves.get(name, name) == base_curve if kept_set is not None else name == baseline
        if joins or cands.empty or (pairable is not None and not pairable(name)):
            out[key] = None
            continue
        # the baseline itself where it has this rate on the kept set, before an entry that
        # only joins its curve (e.g. a level count between its powers of two)
        partner = sorted(cands["compressor"], key=lambda n: (n != baseline, n))[0]
        Ms = sorted(cands["M"].unique())
        out[key] = (model, partner, rate, M if M in Ms else Ms[0])
    return out


def paired_summary(
    data: pd.DataFrame,
    *,
    metrics: Sequence[str],
    paired: Sequence[str],
    baseline: str,
    means: Sequence[str] = (),
    pairable: Callable[[str], bool] | None = None,
    kept_set: Callable[[str, int, int], str] | None = None,
    curves: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per variant (:data:`VARIANT`), all intervals over the design's units (see
    the module doc).

    ``data``: one row per variant, trajectory (:func:`trajectory_units`) and (optionally)
    round. Columns of the result: ``trajectories`` (how many entered), ``units`` and
    ``design`` (what the intervals are over: ``warm starts`` or ``seeds``); for each of
    ``metrics``, ``<m>_mean``, ``<m>_lo``, ``<m>_hi``; for each of ``paired``, the
    difference to the paired ``baseline`` variant (:func:`pick_baseline`) on the same
    trajectories, ``<m>_vs_<baseline>_mean`` / ``_lo`` / ``_hi`` / ``_se`` / ``_df`` /
    ``_p`` (raw) / ``_p_holm`` (Holm over every paired difference of the table) /
    ``_significant``; ``means``: plain means over all rows. A variant without a pair gets
    NaN differences. A trajectory that the baseline lacks is an error.
    """
    units = trajectory_units(data)
    unit = units[-1]
    per_seed = seed_means(data, sorted({*metrics, *paired}), unit=units)
    pairs = pick_baseline(per_seed, baseline, pairable, kept_set, curves)
    indexed = per_seed.set_index([*VARIANT, *units]).sort_index()
    rows = []
    for key, group in per_seed.groupby(list(VARIANT), sort=True):
        row = dict(zip(VARIANT, key, strict=True))
        starts = group["warm_start"] if "warm_start" in units else np.zeros(len(group))
        ids = list(group[list(units)].itertuples(index=False, name=None))
        row["trajectories"] = len(ids)
        probe = nested_test(np.zeros(len(group)), starts)
        row["units"], row["design"] = probe.units, probe.design
        full = data
        for col, value in row.items():
            if col in VARIANT:
                full = full[full[col] == value]
        for m in means:
            row[m] = float(full[m].mean())
        for m in metrics:
            t = nested_test(group[m], starts)
            row[f"{m}_mean"], row[f"{m}_lo"], row[f"{m}_hi"] = t.mean, t.lo, t.hi
        partner = pairs.get(tuple(key))
        for m in paired:
            name = f"{m}_vs_{baseline}"
            diff, diff_starts = np.array([]), np.array([])
            if partner is not None:
                ref = indexed[m].reindex([(*partner, *i) for i in ids])
                if ref.isna().any():
                    missing = [
                        i if len(i) > 1 else i[0]
                        for i, v in zip(ids, ref, strict=True)
                        if np.isnan(v)
                    ]
                    raise ValueError(
                        f"{'/'.join(map(str, key))}: the baseline {'/'.join(map(str, partner))}"
                        f" has no {m} for {unit}s {missing}"
                    )
                diff, diff_starts = group[m].to_numpy() - ref.to_numpy(), starts
            t = nested_test(diff, diff_starts)
            row[f"{name}_mean"], row[f"{name}_lo"], row[f"{name}_hi"] = t.mean, t.lo, t.hi
            row[f"{name}_se"], row[f"{name}_df"], row[f"{name}_p"] = t.se, t.df, t.p
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


def seed_verdicts(
    differences: Mapping[str, Sequence[float]], margin: float, alpha: float = ALPHA
) -> dict[str, dict[str, float | str]]:
    """Verdicts of a family of paired comparisons with one difference per seed each.

    ``differences``: comparison -> its per-seed differences (test minus reference, lower is
    better), the seeds independent units. Per comparison: the mean, its Student-t interval
    over the seeds (``lo``, ``hi``), the two-sided p of 0 and its Holm adjustment over the
    family (``p_holm``), the TOST p of equivalence within ``+-margin`` and its Holm adjustment
    (``tost_holm``), the smallest difference the design detects at 80 % power
    (``min_detectable``) and the verdict (:func:`gradcomp.statistics.nested.decide`).
    """
    from gradcomp.statistics.nested import decide, min_detectable, tost_p

    rows: dict[str, dict[str, float | str]] = {}
    for name, values in differences.items():
        x = np.asarray(values, dtype=np.float64)
        mean, lo, hi, p = t_test(x)
        se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size >= 2 else np.nan
        rows[name] = {
            "mean": mean, "lo": lo, "hi": hi, "p": p, "seeds": int(x.size),
            "tost_p": tost_p(mean, se, x.size - 1, margin),
            "min_detectable": min_detectable(se, x.size - 1, alpha),
        }  # fmt: skip
    names = list(rows)
    for key in ("p", "tost_p"):
        adjusted = holm([rows[n][key] for n in names])
        for n, a in zip(names, adjusted, strict=True):
            rows[n][f"{key}_holm" if key == "p" else "tost_holm"] = float(a)
    for row in rows.values():
        row["verdict"] = decide(
            cast(float, row["mean"]),
            cast(float, row["p_holm"]),
            cast(float, row["tost_holm"]),
            alpha,
        )
    return rows
