"""The one-round study's two-level design: warm starts, with seeds nested in each.

A trajectory is one (warm start, seed): the warm start is a model pre-trained from its own
seed (:mod:`gradcomp.lossy.warm_start`), the seed draws the users' data order, splits,
compressor noise and the trajectory's test images. What a reader would vary (the warm
start, the test images) is thus inside the design, not held fixed.

Model: ``y_ws = mu + a_w + e_ws`` with warm-start effects ``a_w ~ (0, sigma_b^2)`` and
within-warm-start noise ``e_ws ~ (0, sigma_w^2)``. The independent units are the warm
starts: the mean of warm start w over its ``S`` seeds has variance ``sigma_b^2 +
sigma_w^2 / S``, so the Student-t interval over the W warm-start means (``W - 1`` degrees
of freedom) is the exact interval of the balanced design, whatever the share of the two
components (it is also the ANOVA interval ``mean +- t sqrt(MS_between / (W S))``). With a
single warm start, the seeds are the units and the interval is conditional on that warm
start (:func:`nested_test` says which through ``design``).

Equivalence: two one-sided t-tests (TOST, Schuirmann 1987) of ``mu <= -margin`` and ``mu >=
margin``; the p-value is the larger one. Power: the smallest true difference a two-sided
t-test at level ``alpha`` detects with probability ``power`` is solved for exactly on the
noncentral t distribution (for few units and small levels the textbook ``(t_{1-alpha/2} +
t_{power}) se`` is off by several percent).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.optimize
import scipy.special
import scipy.stats

__all__ = [
    "VERDICTS",
    "BoundedTest",
    "NestedTest",
    "bounded_test",
    "decide",
    "decided_interval",
    "min_detectable",
    "nested_test",
    "tost_p",
    "unit_values",
    "units_needed",
    "variance_components",
]


def unit_values(values, warm_starts) -> tuple[np.ndarray, str]:
    """(the independent units' values, design): the mean of each warm start's values when
    there are two or more warm starts (design ``"warm starts"``), else the values themselves
    (``"seeds"``). A NaN value makes its warm start's mean NaN."""
    y = np.asarray(values, dtype=np.float64).ravel()
    w = np.asarray(warm_starts).ravel()
    if y.shape != w.shape:
        raise ValueError(f"values {y.shape} and warm_starts {w.shape} differ in shape")
    groups = np.unique(w)
    if len(groups) < 2:
        return y, "seeds"
    return np.array([y[w == g].mean() for g in groups]), "warm starts"


@dataclass(frozen=True)
class NestedTest:
    """Mean, 95% interval, two-sided p of mean = 0, standard error, degrees of freedom,
    number of units and the design (``"warm starts"`` or ``"seeds"``)."""

    mean: float
    lo: float
    hi: float
    p: float
    se: float
    df: int
    units: int
    design: str

    def interval(self, level: float) -> tuple[float, float]:
        """The two-sided Student-t interval at confidence ``level`` (each limit one-sided at
        ``(1 - level) / 2``); NaN without a standard error."""
        if not (np.isfinite(self.mean) and np.isfinite(self.se) and self.df >= 1):
            return (np.nan, np.nan)
        half = _half_width(self.se, self.df, level)
        return (self.mean - half, self.mean + half)


def _half_width(se: float, df: int, level: float) -> float:
    """Half the two-sided Student-t interval at ``level``."""
    return float(scipy.stats.t.ppf(0.5 + level / 2, df)) * se


def nested_test(values, warm_starts, level: float = 0.95) -> NestedTest:
    """The t-interval and test over the design's units (:func:`unit_values`).

    Any NaN gives NaN statistics (a failed unit is never left out silently); fewer than two
    units give a mean without interval.
    """
    u, design = unit_values(values, warm_starts)
    n = int(u.size)
    if n == 0 or not np.isfinite(u).all():
        return NestedTest(np.nan, np.nan, np.nan, np.nan, np.nan, max(n - 1, 0), n, design)
    mean = float(u.mean())
    if n < 2:
        return NestedTest(mean, np.nan, np.nan, np.nan, np.nan, 0, n, design)
    se = float(u.std(ddof=1) / np.sqrt(n))
    half = _half_width(se, n - 1, level)
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        p = float(2 * scipy.stats.t.sf(abs(mean) / se, n - 1))
    return NestedTest(mean, mean - half, mean + half, p, se, n - 1, n, design)


@dataclass(frozen=True)
class BoundedTest:
    """A difference known to lie between two estimable ends (a low end ``low`` and a high end
    ``high``, each a :class:`NestedTest` over the same units; :func:`bounded_test`).

    ``mean``: the middle of the two ends' means; ``bound``: the width between them (what
    not knowing the reference curve between its points costs); ``lo`` / ``hi``: the 95%
    interval (the low end's lower and the high end's upper limit); ``p``: two-sided p of
    difference = 0; ``se`` / ``df``: the larger standard error and the smaller degrees of
    freedom of the two ends."""

    low: NestedTest
    high: NestedTest

    @property
    def mean(self) -> float:
        return 0.5 * (self.low.mean + self.high.mean)

    @property
    def bound(self) -> float:
        return self.high.mean - self.low.mean

    @property
    def lo(self) -> float:
        return self.low.lo

    @property
    def hi(self) -> float:
        return self.high.hi

    @property
    def se(self) -> float:
        return max(self.low.se, self.high.se)

    def interval(self, level: float) -> tuple[float, float]:
        """The low end's lower and the high end's upper limit at ``level`` (each one-sided at
        ``(1 - level) / 2``, as :attr:`p` and :meth:`tost` test them; +inf for a high end at
        infinity)."""
        hi = np.inf if np.isposinf(self.high.mean) else self.high.interval(level)[1]
        return (self.low.interval(level)[0], hi)

    @property
    def df(self) -> int:
        return min(self.low.df, self.high.df)

    @property
    def units(self) -> int:
        return self.low.units

    @property
    def design(self) -> str:
        return self.low.design

    @property
    def p(self) -> float:
        """Twice the smaller one-sided p: of ``high >= 0`` (evidence the difference is
        negative) and of ``low <= 0`` (evidence it is positive). A true difference of 0 puts
        the high end at or above 0 and the low end at or below it, so each one-sided test
        keeps its level alpha / 2; with equal ends this is the two-sided t-test."""
        below = _one_sided(self.high, 0.0, "below")
        above = _one_sided(self.low, 0.0, "above")
        if not (np.isfinite(below) and np.isfinite(above)):
            return np.nan
        return float(min(1.0, 2.0 * min(below, above)))

    def min_detectable(self, alpha: float, power: float = 0.8) -> float:
        """The smallest true difference found with probability ``power`` at level ``alpha``
        either way, wherever the curve lies in the bracket: the bracket's width plus
        :func:`min_detectable` of the larger standard error, measured over ``c4`` (the
        measured one is ``c4`` times the true one on average, 0.98 with 16 units)."""
        return self.bound + min_detectable(self.se / _c4(self.df), self.df, alpha, power)

    def units_for(self, target: float, alpha: float, power: float = 0.8) -> float:
        """:func:`units_needed` to detect ``target`` nats beyond the bracket's width (inf
        where the width alone is as wide), at the standard error :meth:`min_detectable` uses."""
        if not self.bound < target:
            return np.inf
        se = self.se / _c4(self.df)
        return units_needed(se, self.units, target - self.bound, alpha, power)

    def tost(self, margin: float) -> float:
        """TOST p of equivalence within ``(-margin, margin)``: the larger of the one-sided p
        of ``low <= -margin`` and of ``high >= margin`` (:func:`tost_p` with equal ends)."""
        if margin <= 0:
            return np.nan
        p_low = _one_sided(self.low, -margin, "above")
        p_high = _one_sided(self.high, margin, "below")
        if not (np.isfinite(p_low) and np.isfinite(p_high)):
            return np.nan
        return float(max(p_low, p_high))


def _c4(df: int) -> float:
    """E[s] / sigma for a normal sample's standard deviation over ``df`` degrees of freedom."""
    if df < 1:
        return np.nan
    return float(np.sqrt(2.0 / df) * np.exp(scipy.special.gammaln((df + 1) / 2)
                                            - scipy.special.gammaln(df / 2)))  # fmt: skip


def _one_sided(t: NestedTest, null: float, side: str) -> float:
    """One-sided t p-value against ``null`` for a mean ``side`` ("above"/"below") of it; 1
    for an end at infinity, NaN without a standard error."""
    if np.isinf(t.mean):
        return 1.0
    if not (np.isfinite(t.mean) and np.isfinite(t.se) and t.df >= 1):
        return np.nan
    z = t.mean - null
    if t.se == 0:
        return 0.0 if (z > 0 if side == "above" else z < 0) else 1.0
    if side == "above":
        return float(scipy.stats.t.sf(z / t.se, t.df))
    return float(scipy.stats.t.cdf(z / t.se, t.df))


def bounded_test(low_values, high_values, warm_starts, level: float = 0.95) -> BoundedTest:
    """:class:`BoundedTest` of per-trajectory low and high ends (equal arrays for a
    difference known exactly; a high end of +inf where it has no bound), each over the
    design's units (:func:`nested_test`). The interval's two limits are each one-sided at
    ``(1 - level) / 2``, so it covers every value between the two ends' means with at least
    ``level``."""
    low = nested_test(low_values, warm_starts, level)
    high_values = np.asarray(high_values, dtype=np.float64)
    if np.isinf(high_values).any() and np.isfinite(low.mean):
        high = NestedTest(np.inf, np.inf, np.inf, np.nan, low.se, low.df, low.units, low.design)
    else:
        high = nested_test(high_values, warm_starts, level)
    return BoundedTest(low, high)


def tost_p(mean: float, se: float, df: int, margin: float) -> float:
    """TOST p-value of equivalence within ``(-margin, margin)``: the larger of the one-sided
    t-test p-values of ``mu <= -margin`` and ``mu >= margin``; NaN without a standard error."""
    if not (np.isfinite(mean) and np.isfinite(se) and df >= 1) or margin <= 0:
        return np.nan
    if se == 0:
        return 0.0 if abs(mean) < margin else 1.0
    p_low = scipy.stats.t.sf((mean + margin) / se, df)  # H0: mu <= -margin
    p_high = scipy.stats.t.cdf((mean - margin) / se, df)  # H0: mu >= margin
    return float(max(p_low, p_high))


def min_detectable(se: float, df: int, alpha: float, power: float = 0.8) -> float:
    """The smallest true difference a two-sided t-test at level ``alpha`` with standard
    error ``se`` and ``df`` degrees of freedom rejects with probability ``power``: the
    noncentrality ``delta`` solving ``P(|T'| > t_{1-alpha/2}) = power`` for ``T'`` noncentral
    t, times ``se``."""
    if not (np.isfinite(se) and df >= 1):
        return np.nan
    return float(_noncentrality(int(df), float(alpha), float(power)) * se)


@functools.lru_cache(maxsize=4096)
def _noncentrality(df: int, alpha: float, power: float) -> float:
    crit = scipy.stats.t.ppf(1 - alpha / 2, df)

    def shortfall(delta: float) -> float:
        # the far lower tail underflows to NaN in scipy for large delta: it is 0 there
        lower = np.nan_to_num(scipy.stats.nct.cdf(-crit, df, delta))
        return float(scipy.stats.nct.sf(crit, df, delta) + lower - power)

    upper = crit + scipy.stats.norm.ppf(power) + 1.0
    while shortfall(upper) < 0:
        upper *= 2
    return float(scipy.optimize.brentq(shortfall, 0.0, upper, xtol=1e-10))


def units_needed(
    se: float, units: int, target: float, alpha: float, power: float = 0.8, limit: int = 10_000
) -> float:
    """How many units (at the design's seeds per unit) make :func:`min_detectable` at most
    ``target``, for a unit standard deviation ``se sqrt(units)`` measured on ``units`` units;
    NaN without a standard error, ``inf`` beyond ``limit``."""
    if not (np.isfinite(se) and units >= 2 and target > 0):
        return np.nan
    sd = se * np.sqrt(units)

    def detects(n: int) -> bool:
        return min_detectable(sd / np.sqrt(n), n - 1, alpha, power) <= target

    # the normal-theory count is a lower bound (t quantiles exceed normal ones)
    z = scipy.stats.norm.ppf(1 - alpha / 2) + scipy.stats.norm.ppf(power)
    lo = max(2, int((z * sd / target) ** 2))
    if lo >= limit or not detects(limit):
        return np.inf
    hi = lo
    while not detects(hi):
        lo, hi = hi + 1, min(2 * hi, limit)
    while lo < hi:  # detects(hi) holds; the smallest n that detects
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if detects(mid) else (mid + 1, hi)
    return float(lo)


def variance_components(values, warm_starts) -> tuple[float, float]:
    """(sigma_b^2, sigma_w^2): the one-way random-effects ANOVA estimates of the
    between-warm-start and within-warm-start variances (method of moments, sigma_b^2
    truncated at 0; the mean seeds per warm start stands in for S when unbalanced);
    NaN where a component is not identified (one warm start, or one seed each)."""
    y = np.asarray(values, dtype=np.float64).ravel()
    w = np.asarray(warm_starts).ravel()
    groups = [y[w == g] for g in np.unique(w)]
    if not np.isfinite(y).all() or len(groups) < 2:
        return (np.nan, np.nan)
    sizes = np.array([len(g) for g in groups])
    df_within = int((sizes - 1).sum())
    if df_within < 1:
        return (np.nan, np.nan)
    ms_within = sum(((g - g.mean()) ** 2).sum() for g in groups) / df_within
    grand = y.mean()
    ms_between = sum(len(g) * (g.mean() - grand) ** 2 for g in groups) / (len(groups) - 1)
    return (float(max(0.0, (ms_between - ms_within) / sizes.mean())), float(ms_within))


#: The answers a question gets (:func:`decide`).
VERDICTS = ("better", "worse", "equivalent", "undecided")


def decide(mean: float, p_holm: float, tost_holm: float, alpha: float) -> str:
    """One of :data:`VERDICTS` for a difference (test minus reference, lower is better):
    ``equivalent`` if the Holm-adjusted TOST p is below ``alpha``, else ``better`` /
    ``worse`` (by the sign of ``mean``) if the Holm-adjusted two-sided p is, else
    ``undecided``."""
    if np.isfinite(tost_holm) and tost_holm < alpha:
        return "equivalent"
    if np.isfinite(p_holm) and p_holm < alpha:
        return "better" if mean < 0 else "worse"
    return "undecided"


def _adjusted_level(p: float, p_holm: float, alpha: float) -> float:
    """The level a raw p-value is held to after Holm: ``alpha * p / p_holm`` (``p < level``
    exactly when ``p_holm < alpha``)."""
    if not (np.isfinite(p) and np.isfinite(p_holm)):
        return np.nan
    return alpha if p_holm == 0 else alpha * p / p_holm


def decided_interval(row: Mapping[str, Any], alpha: float) -> tuple[float, float]:
    """The interval the row's verdict (:func:`decide`) is decided on, at the family's
    Holm-adjusted level (:func:`_adjusted_level`): for better / worse the two-sided interval
    at ``1 - level`` (it excludes 0), for equivalent the TOST interval at ``1 - 2 level``
    (inside the margin), for undecided the hull of both (it holds 0 and reaches past the
    margin). ``row`` holds the test object under ``_test``; NaN where the test has no
    interval."""
    test, verdict = row["_test"], row["verdict"]
    diff = _adjusted_level(row["p"], row["p_holm"], alpha)
    equiv = _adjusted_level(row["tost_p"], row["tost_p_holm"], alpha)
    two_sided = test.interval(1 - diff) if np.isfinite(diff) else (np.nan, np.nan)
    tost = test.interval(1 - 2 * equiv) if np.isfinite(equiv) else (np.nan, np.nan)
    if verdict == "equivalent":
        return tost
    if verdict in ("better", "worse"):
        return two_sided
    ends = [e for e in (two_sided, tost) if np.isfinite(e).all()]
    if not ends:
        return (np.nan, np.nan)
    return (min(e[0] for e in ends), max(e[1] for e in ends))
