"""A difference to an operational curve: the largest of several linear contrasts, with
simultaneous limits, so that no curve is chosen on the data it is tested with.

The reference's operational curve at ``x`` bits is the lowest loss any of its configurations
reaches with at most ``x`` bits, alone or time-shared with another
(:func:`gradcomp.lossy.matched_bits.frontier_candidates`): ``H(x) = min_p r_p(x)`` over the
candidates ``p`` (single configurations with at most ``x`` bits, pairs that bracket ``x``
read on their chord). The test configuration's difference to it is therefore

    d = y - H(x) = max_p c_p,    c_p = E[y - r_p(x)],

the largest of linear contrasts, each estimable without bias over the design's units.
Choosing the hull on the pooled means and reading the one contrast it picks is a selection:
the minimum of noisy means is low, so ``d`` leans up ("worse"); choosing it on other units
leans it down. Instead, every contrast gets a **simultaneous** interval ``c_p +- q se_p``,
``q`` the 95% quantile of ``max_p |T_p|`` for the contrasts' joint multivariate t
distribution (their unit-level correlation, ``units - 1`` degrees of freedom; Hothorn, Bretz
and Westfall 2008), and then, with probability at least 95%, every ``c_p`` lies in its
interval and so ``d`` lies in ``[max_p (c_p - q se_p), max_p (c_p + q se_p)]``. A contrast
far from the curve never binds either end, and both ends carry the same ``q``, so an
advantage and a deficit of one size are found alike (the verdicts' simulation checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats

__all__ = ["MaxContrastTest", "max_contrast_test", "max_t_quantiles"]

#: Draws of the multivariate t behind every quantile (seeded: a rerun gives the same limits).
DRAWS = 10_000


def max_t_quantiles(unit_matrix: np.ndarray, *, seed: int = 0, draws: int = DRAWS) -> np.ndarray:
    """Sorted draws of ``max_p |T_p|`` for contrasts whose unit-level values are the columns
    of ``unit_matrix`` (units x contrasts): ``T = Z / sqrt(W)``, ``Z`` normal with the
    columns' sample correlation (drawn as centred-unit combinations, so a correlation of
    rank below the contrasts' count is exact), ``W`` chi-square over ``units - 1``.

    >>> rng = np.random.default_rng(0)
    >>> one = max_t_quantiles(rng.normal(size=(12, 1)))
    >>> round(float(np.quantile(one, 0.95)), 1)  # t_{0.975, 11} = 2.20
    2.2
    """
    x = np.asarray(unit_matrix, dtype=np.float64)
    n, k = x.shape
    centred = x - x.mean(axis=0)
    sd = centred.std(axis=0, ddof=1)
    keep = sd > 0
    rng = np.random.default_rng(seed)
    if not keep.any():
        return np.zeros(draws)
    loadings = centred[:, keep] / (sd[keep] * np.sqrt(n - 1))  # Z = g @ loadings
    z = rng.standard_normal((draws, n)) @ loadings
    w = rng.chisquare(n - 1, draws) / (n - 1)
    return np.sort(np.abs(z).max(axis=1) / np.sqrt(w))


@dataclass(frozen=True)
class MaxContrastTest:
    """``d = max_p c_p`` over the design's units (module doc): the plug-in ``mean`` (the
    largest estimated contrast), the simultaneous 95% interval ``lo``-``hi``, ``p`` of d = 0,
    ``se`` and ``df`` of the binding contrast, ``q`` (the simultaneous quantile), the number
    of ``contrasts``, ``units`` and ``design``. :meth:`tost` as for
    :class:`gradcomp.lossy.nested.BoundedTest`; ``bound`` is 0 (no interpolation)."""

    estimates: np.ndarray
    ses: np.ndarray
    maxima: np.ndarray
    df: int
    units: int
    design: str
    level: float = 0.95

    bound = 0.0

    def _quantile(self, level: float) -> float:
        return float(np.quantile(self.maxima, level))

    @property
    def q(self) -> float:
        return self._quantile(self.level)

    @property
    def contrasts(self) -> int:
        return int(self.estimates.size)

    @property
    def mean(self) -> float:
        return float(self.estimates.max()) if self.estimates.size else np.nan

    @property
    def lo(self) -> float:
        return float((self.estimates - self.q * self.ses).max())

    @property
    def hi(self) -> float:
        return float((self.estimates + self.q * self.ses).max())

    @property
    def se(self) -> float:
        return float(self.ses[int(np.argmax(self.estimates))])

    def interval(self, level: float) -> tuple[float, float]:
        """The simultaneous interval of the largest contrast at confidence ``level`` (its
        limits excluding 0 exactly when :attr:`p` < ``1 - level``)."""
        if not self.estimates.size or not np.isfinite(self.estimates).all():
            return (np.nan, np.nan)
        q = self._quantile(level)
        return (float((self.estimates - q * self.ses).max()),
                float((self.estimates + q * self.ses).max()))  # fmt: skip

    def _tail(self, q: float) -> float:
        """P(max |T| >= q) from the draws."""
        return float(1.0 - np.searchsorted(self.maxima, q, side="left") / self.maxima.size)

    @property
    def p(self) -> float:
        """The smallest level at which the simultaneous interval excludes 0: every contrast's
        upper limit below 0 ("better"), or some contrast's lower limit above it ("worse")."""
        if not self.estimates.size or not np.isfinite(self.estimates).all():
            return np.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            below = np.min(-self.estimates / self.ses)  # every c_p + q se_p < 0 for q < it
            above = np.max(self.estimates / self.ses)  # some c_p - q se_p > 0 for q < it
        return min(self._tail(below), self._tail(above))

    def min_detectable(self, alpha: float, power: float = 0.8) -> float:
        """The binding contrast's difference found with probability ``power`` by the
        simultaneous test at level ``alpha``: ``(q_{1-alpha} + t_{power}) se`` (normal-theory
        shift of its t statistic)."""
        if not (np.isfinite(self.se) and self.df >= 1):
            return np.nan
        return float((self._quantile(1 - alpha) + scipy.stats.t.ppf(power, self.df)) * self.se)

    def units_for(self, target: float, alpha: float, power: float = 0.8) -> float:
        """Units (at the design's seeds each) at which :meth:`min_detectable` of the binding
        contrast's unit spread reaches ``target`` nats, its quantile held at this design's."""
        if not (np.isfinite(self.se) and self.units >= 2 and target > 0):
            return np.nan
        sd = self.se * np.sqrt(self.units)
        z = self._quantile(1 - alpha) + scipy.stats.norm.ppf(power)
        return float(max(2, int(np.ceil((z * sd / target) ** 2))))

    def tost(self, margin: float) -> float:
        """The smallest alpha at which the simultaneous ``1 - 2 alpha`` interval lies within
        ``(-margin, margin)``."""
        if not self.estimates.size or not np.isfinite(self.estimates).all() or margin <= 0:
            return np.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            upper = np.min((margin - self.estimates) / self.ses)
            lower = np.max((self.estimates + margin) / self.ses)
        return 0.5 * self._tail(min(upper, lower))


def max_contrast_test(
    values: np.ndarray, warm_starts, *, level: float = 0.95, seed: int = 0
) -> MaxContrastTest:
    """:class:`MaxContrastTest` of per-trajectory contrast values (trajectories x
    contrasts), each column reduced to the design's units as
    :func:`gradcomp.lossy.nested.unit_values` does (warm-start means with two or more warm
    starts, else the trajectories). Any NaN gives NaN statistics."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"values must be trajectories x contrasts, got shape {x.shape}")
    w = np.asarray(warm_starts).ravel()
    if w.shape[0] != x.shape[0]:
        raise ValueError(f"values {x.shape} and warm_starts {w.shape} differ in length")
    groups = np.unique(w)
    if groups.size >= 2:  # as unit_values, every column at once
        units, design = np.stack([x[w == g].mean(axis=0) for g in groups]), "warm starts"
    else:
        units, design = x, "seeds"
    n = units.shape[0]
    if n < 2 or not np.isfinite(units).all():
        nan = np.full(x.shape[1], np.nan)
        return MaxContrastTest(nan, nan, np.array([np.inf]), max(n - 1, 0), n, design, level)
    ses = units.std(axis=0, ddof=1) / np.sqrt(n)
    return MaxContrastTest(
        units.mean(axis=0), ses, max_t_quantiles(units, seed=seed), n - 1, n, design, level
    )
