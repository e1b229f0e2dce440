"""Intervals and paired differences that decide between compressors (tables T3, T4, Y6).

Compressors of one seed share init, data order, splits and noise streams, so a comparison is
*paired*: for every unit (a seed in full federated runs; a seed and round in the one-round
study) the metric of a compressor is compared with the baseline's on the same unit. Each
estimate is a mean over units with a two-sided 95% Student-t interval (``lo``, ``hi``; NaN
with fewer than two units). A paired difference is *significant* when its interval
excludes 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.stats

__all__ = ["VARIANT", "paired_summary", "t_interval"]

#: Columns naming a compressor variant.
VARIANT = ("model", "compressor", "rate", "M")


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean of ``values`` and its two-sided Student-t interval."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, np.nan, np.nan)
    half = scipy.stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return (mean, mean - half, mean + half)


def paired_summary(
    data: pd.DataFrame,
    *,
    units: Sequence[str],
    metrics: Sequence[str],
    paired: Sequence[str],
    baseline: str,
    means: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per variant (:data:`VARIANT`) with, for each of ``metrics``, ``<m>_mean``,
    ``<m>_lo``, ``<m>_hi`` over the units; for each of ``paired``, the difference to the
    ``baseline`` compressor at the same model and rate on the same unit, ``<m>_vs_<baseline>``
    (mean, lo, hi) and ``<m>_vs_<baseline>_significant``; ``means``: plain means; ``units``:
    how many units entered.

    ``data`` has one row per variant and unit (columns :data:`VARIANT`, ``units``, the
    metrics). A variant whose rate the baseline lacks gets NaN differences.
    """
    key = list(VARIANT)
    base = data[data["compressor"] == baseline]
    base = base.set_index(["model", "rate", *units])
    rows = []
    for ident, group in data.groupby(key, sort=True):
        row = dict(zip(key, ident, strict=True))
        row["units"] = len(group)
        for m in means:
            row[m] = float(group[m].mean())
        for m in metrics:
            row[f"{m}_mean"], row[f"{m}_lo"], row[f"{m}_hi"] = t_interval(group[m])
        for m in paired:
            name = f"{m}_vs_{baseline}"
            idx = pd.MultiIndex.from_frame(group[["model", "rate", *units]])
            ref = base[m].reindex(idx).to_numpy() if len(base) else np.full(len(group), np.nan)
            diff = group[m].to_numpy() - ref
            if row["compressor"] == baseline or np.isnan(diff).all():
                diff = np.full(len(group), np.nan)
            row[f"{name}_mean"], row[f"{name}_lo"], row[f"{name}_hi"] = t_interval(diff)
            row[f"{name}_significant"] = bool(
                row[f"{name}_lo"] > 0 or row[f"{name}_hi"] < 0
            )  # NaN compares False
        rows.append(row)
    return pd.DataFrame(rows)
