"""Goodness of fit as paper L measures it: a trimmed 2-Wasserstein distance between
standardised data and the equally standardised model (:func:`trimmed_w2`), the
Kolmogorov-Smirnov statistic and tail probabilities ``P(|g| > t)``.

Every metric is that of the fitted mixture ``p0 * delta_0 + (1 - p0) * F`` (see
:class:`~gradcomp.distributions.fitting.FittedDistribution`) on all entries, zeros included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from gradcomp.distributions.checks import check_gradient
from gradcomp.distributions.fitting import FittedDistribution

if TYPE_CHECKING:  # pandas is in the workflow extra: imported where a table is built
    import pandas as pd

__all__ = [
    "TAIL_LEVELS",
    "goodness_of_fit",
    "ks_statistic",
    "tail_probabilities",
    "total_loglik",
    "trimmed_w2",
]

TAIL_LEVELS: tuple[float, ...] = (1e-2, 1e-3, 1e-4, 1e-5)
"""Tail levels p of :func:`tail_probabilities` (thresholds at the 1 - p quantiles of ``|x|``)."""

KS_MAX_ENTRIES = 1_000_000
""":func:`ks_statistic` uses a fixed-seed subsample (without replacement) of this many entries."""

_SEED = 0


def total_loglik(fitted: FittedDistribution, a: np.ndarray) -> float:
    """Log-likelihood (nats, float64) of the entries ``a`` under the fitted mixture: each
    exact zero counts ``log p0`` and every other entry ``log((1 - p0) f(x))`` (with
    ``p0 = 0`` every entry counts ``log f(x)``)."""
    frozen, step = fitted.frozen(), 1 << 20
    total = 0.0
    if fitted.p0 > 0:
        zeros = a == 0
        n_zeros = int(np.count_nonzero(zeros))
        total += n_zeros * math.log(fitted.p0) + (a.size - n_zeros) * math.log1p(-fitted.p0)
        a = a[~zeros]
    for i in range(0, a.size, step):
        total += float(np.sum(frozen.logpdf(a[i : i + step]), dtype=np.float64))
    return total


# --------------------------------------------------------------------------------------------


def trimmed_w2(fitted: FittedDistribution, x: Any, *, n: int = 3000, seed: int = 0) -> float:
    """Trimmed 2-Wasserstein distance between standardised data and the fitted model (paper L).

    The data are standardised by their own mean and standard deviation (all entries,
    ``ddof=0``), and the model by the same affine map.  ``n`` entries are drawn with
    ``numpy.random.default_rng(seed)`` (without replacement, or with replacement if ``x`` has
    fewer than ``n`` entries) and sorted.  They are paired with the model quantiles at the
    evenly spaced levels ``i / (n - 1)``, ``i = 0 .. n-1`` (``numpy.linspace(0, 1, n)``,
    i.e. the order statistic ``i`` of ``n`` is matched with level ``i/(n-1)``); the first and
    last pairs are dropped, which removes the infinite model quantiles at levels 0 and 1.

    Returns:
        ``sqrt(mean((q_data - q_model)**2))`` over the ``n - 2`` kept pairs, in units of the
        data's standard deviation.
    """
    a = check_gradient(x)
    if n < 3:
        raise ValueError("n must be at least 3")
    mean, std = float(np.mean(a)), float(np.std(a))
    rng = np.random.default_rng(seed)
    idx = rng.choice(a.size, size=n, replace=a.size < n)
    q_data = np.sort((a[idx] - mean) / std)[1:-1]
    levels = np.linspace(0.0, 1.0, n)[1:-1]
    q_model = (np.asarray(fitted.ppf(levels), dtype=np.float64) - mean) / std
    return float(np.sqrt(np.mean((q_data - q_model) ** 2)))


def ks_statistic(fitted: FittedDistribution, x: Any) -> float:
    """Kolmogorov-Smirnov statistic ``sup |F_empirical - F_model|`` (dimensionless), with the
    model's jump at an atom compared on both sides.

    Computed exactly on the sorted entries; inputs with more than :data:`KS_MAX_ENTRIES`
    entries are first subsampled to that many, without replacement, with a fixed seed.
    """
    a = check_gradient(x)
    if a.size > KS_MAX_ENTRIES:
        rng = np.random.default_rng(_SEED)
        a = a[rng.choice(a.size, size=KS_MAX_ENTRIES, replace=False)]
    s = np.sort(a)
    F = np.asarray(fitted.cdf(s), dtype=np.float64)
    F_left = F - fitted.p0 * (s == 0)  # the model's P(X < s): the atom's jump is at 0
    m = s.size
    d_plus = np.max(np.arange(1, m + 1) / m - F)
    d_minus = np.max(F_left - np.arange(m) / m)
    return float(max(d_plus, d_minus))


def tail_probabilities(
    fitted: FittedDistribution, x: Any, levels: Iterable[float] = (1e-2, 1e-3, 1e-4, 1e-5)
) -> pd.DataFrame:
    """Empirical and model tail probabilities of the magnitude ``|g|``.

    For each level ``p``, the threshold ``t`` is the empirical ``1 - p`` quantile of ``|x|``
    (numpy's default linear interpolation); ``empirical = #{|x| > t} / n`` and
    ``model = (1 - p0) (S(t) + F(-t))`` of the continuous part (``t >= 0``, so the atom at
    zero never counts; computed in log space, so tiny model masses stay finite in
    ``abs_log10_error``).

    Returns:
        DataFrame, one row per level, columns ``level``, ``threshold`` (data units),
        ``empirical``, ``model``, ``abs_log10_error`` = ``|log10(model / empirical)|``
        (NaN where no entry exceeds ``t``).
    """
    import pandas as pd

    a = check_gradient(x)
    lv = np.asarray(list(levels), dtype=np.float64)
    mag = np.abs(a)
    thresholds = np.quantile(mag, 1.0 - lv)
    empirical = np.array([np.count_nonzero(mag > t) for t in thresholds]) / a.size
    fz = fitted.frozen()
    log_model = math.log1p(-fitted.p0) + np.logaddexp(fz.logsf(thresholds), fz.logcdf(-thresholds))
    with np.errstate(divide="ignore"):
        err = np.abs(log_model / math.log(10) - np.log10(empirical))
    err[empirical == 0] = np.nan
    return pd.DataFrame(
        {
            "level": lv,
            "threshold": thresholds,
            "empirical": empirical,
            "model": np.exp(log_model),
            "abs_log10_error": err,
        }
    )


def goodness_of_fit(fitted: FittedDistribution, x: Any, *, seed: int = 0) -> dict[str, float]:
    """All goodness-of-fit numbers of ``fitted`` on the entries ``x``.

    Returns:
        ``loglik_per_entry`` (nats), ``aic``, ``bic`` (from the log-likelihood of ``x`` and
        ``fitted.n_params``), ``ks`` (:func:`ks_statistic`), ``w2`` (:func:`trimmed_w2` with
        ``seed``), ``tail_log10_err`` (mean ``abs_log10_error`` of
        :func:`tail_probabilities` over the levels with empirical mass; NaN if none) and
        ``tail_err_<level>`` (that error at each of :data:`TAIL_LEVELS`, NaN without mass).
    """
    a = check_gradient(x)
    loglik = total_loglik(fitted, a)
    per_level = tail_probabilities(fitted, a)["abs_log10_error"]
    tails = per_level.dropna()
    k = fitted.n_params
    return {
        "loglik_per_entry": loglik / a.size,
        "aic": 2.0 * k - 2.0 * loglik,
        "bic": k * math.log(a.size) - 2.0 * loglik,
        "ks": ks_statistic(fitted, a),
        "w2": trimmed_w2(fitted, a, seed=seed),
        "tail_log10_err": float(tails.mean()) if len(tails) else math.nan,
        **{f"tail_err_{lv:g}": float(e) for lv, e in zip(TAIL_LEVELS, per_level, strict=True)},
    }
