"""A difference to an operational curve: the largest of several linear contrasts, with
simultaneous limits, so that no curve is chosen on the data it is tested with.

The reference's operational curve at ``x`` bits is the lowest loss any of its configurations
reaches with at most ``x`` bits, alone or time-shared with another
(:func:`gradcomp.statistics.matched_bits.frontier_candidates`): ``H(x) = min_p r_p(x)`` over the
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
far from the curve never binds either end.

An advantage and a deficit of one size are not found alike: a deficit shows against any one
candidate, an advantage must beat every one, a noisy candidate near the curve included. The
stated detectable difference (:meth:`MaxContrastTest.min_detectable`) is therefore solved
for on the contrasts' joint distribution, both ways, the test moved and every candidate's
measured distance below the largest kept: the larger of the two sizes found with the given
power (tests/statistics/test_detectable_power.py checks 80% at it by simulation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

__all__ = ["MaxContrastTest", "max_contrast_test", "max_t_quantiles"]

#: Draws of the multivariate t behind every quantile (seeded: a rerun gives the same limits).
DRAWS = 10_000
#: Draws behind :meth:`MaxContrastTest.min_detectable` (its 20% quantile to about 1%) and
#: behind :meth:`MaxContrastTest.units_for` (a planning number).
POWER_DRAWS, UNITS_DRAWS = 4_000, 1_000
#: Standard errors taken off each candidate's measured distance below the largest contrast
#: when the detectable difference is solved for (:meth:`MaxContrastTest._gaps`).
GAP_SE = 1.0


def _loadings(unit_matrix: np.ndarray) -> np.ndarray:
    """Centred unit-level columns scaled so that ``g @ loadings`` (``g`` standard normal over
    the units) has the columns' sample correlation; a column without spread loads nothing."""
    x = np.asarray(unit_matrix, dtype=np.float64)
    centred = x - x.mean(axis=0)
    sd = centred.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(sd > 0, centred / (sd * np.sqrt(x.shape[0] - 1)), 0.0)
    return cast(np.ndarray, out)


def _draws(loadings: np.ndarray, df: int, seed: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """(Z, sqrt(W)): ``draws`` normal vectors with the contrasts' correlation and the square
    root of a chi-square over ``df``, divided by ``df``."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((draws, loadings.shape[0])) @ loadings
    return z, np.sqrt(rng.chisquare(df, draws) / df)


def _root_w(df: int, seed: int, draws: int) -> np.ndarray:
    """Square roots of chi-square draws over ``df``, divided by ``df``, seeded by both."""
    return np.sqrt(np.random.default_rng((seed, df)).chisquare(df, draws) / df)


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
    loadings = _loadings(unit_matrix)
    if not loadings.any():
        return np.zeros(draws)
    z, root_w = _draws(loadings, loadings.shape[0] - 1, seed, draws)
    return np.sort(np.abs(z).max(axis=1) / root_w)


@dataclass(frozen=True)
class MaxContrastTest:
    """``d = max_p c_p`` over the design's units (module doc): the plug-in ``mean`` (the
    largest estimated contrast), the simultaneous 95% interval ``lo``-``hi``, ``p`` of d = 0,
    ``se`` and ``df`` of the binding contrast, ``q`` (the simultaneous quantile), the number
    of ``contrasts``, ``units`` and ``design``; ``loadings``: the contrasts' unit-level
    correlation as :func:`max_t_quantiles` draws it (for :meth:`min_detectable`). :meth:`tost`
    as for :class:`gradcomp.statistics.nested.BoundedTest`; ``bound`` is 0 (no interpolation)."""

    estimates: np.ndarray
    ses: np.ndarray
    maxima: np.ndarray
    df: int
    units: int
    design: str
    level: float = 0.95
    loadings: np.ndarray | None = None

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

    def _normal_draws(self) -> tuple[np.ndarray, np.ndarray]:
        """(max_p |Z_p|, Z): normal draws with the contrasts' correlation, drawn once (they
        do not depend on the number of units, only the chi-square does)."""
        cached = self.__dict__.get("_cached")
        if cached is None:
            assert self.loadings is not None
            z = _draws(self.loadings, 1, 1, POWER_DRAWS)[0]
            cached = (np.abs(z).max(axis=1), z)
            object.__setattr__(self, "_cached", cached)
        return cached

    def _detectable(self, units: int, alpha: float, power: float, draws: int) -> float:
        """The smallest shift of the test found with probability ``power`` both ways (an
        advantage: every contrast's upper limit below 0; a deficit: one's lower limit above
        it) at level ``alpha``, for ``units`` units at this design's unit spread: each
        contrast ``c_p = d - g_p`` at its distance ``g_p`` below the largest
        (:meth:`_gaps`), its estimate ``c_p + se_p Z_p`` and standard error ``se_p sqrt(W)``
        drawn jointly, W a chi-square over ``units - 1`` divided by it; the first ``draws``
        of each."""
        if self.loadings is None or not np.isfinite(self.ses).all() or units < 2:
            return np.nan
        top, z = self._normal_draws()
        top, z = top[:draws], z[:draws]
        n = top.size
        if units == self.units:
            q = self._quantile(1 - alpha)
        else:
            q = float(np.quantile(top / _root_w(units - 1, 2, n), 1 - alpha))
        root_w = _root_w(units - 1, 3, n)
        ses, gaps = self.ses * np.sqrt(self.units / units), self._gaps()
        # a contrast whose every draw lies above another's highest binds neither minimum
        reach = ses * (np.abs(z).max(axis=0) + q * root_w.max())
        near = gaps - reach <= np.min(gaps + reach)
        ses, gaps, z = ses[near], gaps[near], z[:, near]
        spread = q * root_w[:, None] * ses
        better = np.min(gaps - ses * z - spread, axis=1)  # found iff d < this
        worse = np.min(gaps - ses * z + spread, axis=1)  # found iff d > this
        return float(max(-np.quantile(better, 1 - power), np.quantile(worse, power)))

    def _gaps(self) -> np.ndarray:
        """Each contrast's distance below the largest, less GAP_SE of its standard error
        (at least 0): the largest estimate leans up, so its measured distances lean wide."""
        top = int(np.argmax(self.estimates))
        assert self.loadings is not None
        cov = self.ses[:, None] * self.ses[None, :] * (self.loadings.T @ self.loadings)
        var = np.diag(cov) + cov[top, top] - 2 * cov[:, top]
        gaps = self.estimates[top] - self.estimates - GAP_SE * np.sqrt(np.maximum(var, 0.0))
        return cast(np.ndarray, np.maximum(gaps, 0.0))

    def min_detectable(self, alpha: float, power: float = 0.8) -> float:
        """The difference found with probability ``power`` by the simultaneous test at level
        ``alpha``, an advantage and a deficit alike (:meth:`_detectable`; module doc)."""
        if not (np.isfinite(self.se) and self.df >= 1):
            return np.nan
        return self._detectable(self.units, alpha, power, POWER_DRAWS)

    def units_for(
        self, target: float, alpha: float, power: float = 0.8, limit: int = 10_000
    ) -> float:
        """Units (at the design's seeds each) at which :meth:`min_detectable` reaches
        ``target`` nats, the contrasts' unit spread, correlation and distances held at this
        design's; inf beyond ``limit``. A planning number: from 1,000 draws, to 5%."""
        if not (np.isfinite(self.se) and self.units >= 2 and target > 0):
            return np.nan

        def detects(n: int) -> bool:
            return self._detectable(n, alpha, power, UNITS_DRAWS) <= target

        # the size falls about as 1 / sqrt(units): search up or down from that guess
        here = self._detectable(self.units, alpha, power, UNITS_DRAWS)
        hi = int(np.clip(np.ceil(self.units * (here / target) ** 2), 2, limit))
        lo = hi
        while not detects(hi):
            if hi == limit:
                return np.inf
            lo, hi = hi + 1, min(limit, 2 * hi)
        while lo == hi and lo > 2:  # detects(hi): find one that does not
            lo = max(2, int(0.8 * lo))
            if detects(lo):
                hi = lo
        while hi - lo > 0.05 * lo:  # detects(hi); lo - 1 does not, or lo is 2
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if detects(mid) else (mid + 1, hi)
        return float(hi)

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
    :func:`gradcomp.statistics.nested.unit_values` does (warm-start means with two or more warm
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
    return MaxContrastTest(units.mean(axis=0), ses, max_t_quantiles(units, seed=seed), n - 1, n,
                           design, level, _loadings(units))  # fmt: skip
