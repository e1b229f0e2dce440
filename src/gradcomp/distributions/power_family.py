"""Profile likelihood in the shape for the power families (GenNorm and double Weibull).

For a given shape ``theta`` and location the scale has a closed form,
``scale**theta = k(theta) * mean(|x - loc|**theta)``.  Putting it back leaves a profile
log-likelihood in ``theta`` alone, which depends on the data only through the weighted moments
of ``log|x - loc|`` with weights ``|x - loc|**theta``.  One stored array of ``log|x - loc|``
and a few vectorised, streamed passes over it (safeguarded Newton from a moment-ratio start)
give the exact MLE of the shape at a fixed location (:func:`profile_fit`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import optimize, special

from gradcomp.distributions.checks import GradientDataError

SHAPE_BOUNDS: tuple[float, float] = (0.05, 20.0)
"""Range the shape (gennorm ``beta``, dweibull ``c``) is kept in; a fit may end on a bound."""

CHUNK = 1 << 16  # entries per block in the streamed passes (fits in L2 cache)
_LOG_ZERO = -1e100  # stands for log(0): exp(theta * _LOG_ZERO) == 0 and 0 * _LOG_ZERO == 0

_sum = np.add.reduce  # ndarray.sum without the Python-level wrapper (called per block)


def blocks(n: int) -> Iterable[slice]:
    return (slice(i, min(i + CHUNK, n)) for i in range(0, n, CHUNK))


def mean_abs_power(a: np.ndarray, loc: float, p: float) -> float:
    """``mean(|a - loc|**p)`` in float64, streamed (no full-size temporary)."""
    buf = np.empty(min(a.size, CHUNK))
    total = 0.0
    for sl in blocks(a.size):
        d = buf[: sl.stop - sl.start]
        np.subtract(a[sl], loc, out=d)
        np.abs(d, out=d)
        if p == 2.0:
            np.multiply(d, d, out=d)
        elif p != 1.0:
            np.power(d, p, out=d)
        total += _sum(d)
    return total / a.size


# --------------------------------------------------------------------------------------------
# Power families: profile likelihood in the shape
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Moments:
    """Weighted moments of ``L = log|x - loc|`` with weights ``w = |x - loc|**theta``.

    ``log_mean_pow = log(mean(w))``; ``mean_log_w = sum(w L) / sum(w)``;
    ``var_log_w`` the matching weighted variance; ``mean_log = mean(L)`` (NaN unless asked).
    """

    log_mean_pow: float
    mean_log_w: float
    var_log_w: float
    mean_log: float = math.nan


class AbsDeviations:
    """Streamed passes over ``|x - loc|`` of all entries, for the power families.

    :meth:`set_loc` stores ``log|x - loc|`` in one float64 buffer of ``x.size`` entries, which
    :meth:`moments` then reads once per shape; :meth:`moments_and_score` does one pass at a
    new loc without storing.  Logs are taken of ``|x - loc| / max|x - loc|`` (so the weights
    ``exp(theta * L)`` are at most 1 and nothing overflows), with ``log 0`` replaced by
    :data:`_LOG_ZERO` (an entry equal to loc gets weight exactly 0).
    """

    def __init__(self, a: np.ndarray, *, with_mean_log: bool = False):
        self.a, self.n = a, a.size
        self.with_mean_log = with_mean_log
        self.xmin, self.xmax = float(a.min()), float(a.max())
        self.logs: np.ndarray | None = None  # allocated on first set_loc
        self.loc = math.nan
        self.log_ymax = math.nan
        m = min(self.n, CHUNK)
        self._w, self._t, self._d, self._l = (np.empty(m) for _ in range(4))

    def _log_ymax(self, loc: float) -> float:
        return math.log(max(self.xmax - loc, loc - self.xmin))

    def _logs_into(self, sl: slice, loc: float, out: np.ndarray, d: np.ndarray | None) -> None:
        """``out = log(|x - loc| / ymax)`` on block ``sl``; ``d = x - loc`` if given."""
        d = out if d is None else d
        np.subtract(self.a[sl], loc, out=d)
        np.abs(d, out=out)
        np.multiply(out, math.exp(-self._log_ymax(loc)), out=out)
        with np.errstate(divide="ignore"):
            np.log(out, out=out)
        np.maximum(out, _LOG_ZERO, out=out)

    def set_loc(self, loc: float) -> None:
        if self.logs is None:
            self.logs = np.empty(self.n)
        self.loc, self.log_ymax = loc, self._log_ymax(loc)
        for sl in blocks(self.n):
            self._logs_into(sl, loc, self.logs[sl], None)

    def n_at_loc(self, loc: float) -> int:
        """Number of entries exactly equal to ``loc``."""
        return int(np.count_nonzero(self.a == loc))

    def _accumulate(
        self, logs: np.ndarray, theta: float, sums: np.ndarray, d: np.ndarray | None = None
    ) -> None:
        """Add sum w, sum w L, sum w L^2, sum L [, sum w / d] of one block to ``sums``."""
        w, t = self._w[: logs.size], self._t[: logs.size]
        np.multiply(logs, theta, out=w)
        np.exp(w, out=w)
        sums[0] += _sum(w)
        np.multiply(w, logs, out=t)
        sums[1] += _sum(t)
        np.multiply(t, logs, out=t)
        sums[2] += _sum(t)
        if self.with_mean_log:
            sums[3] += _sum(logs)
        if d is not None:
            with np.errstate(invalid="ignore"):
                np.divide(w, d, out=t)
            s = _sum(t)
            if not math.isfinite(s):  # 0/0 at entries equal to loc, whose weight is 0
                s = _sum(w / np.where(d == 0, 1.0, d))
            sums[4] += s

    def _moments(self, theta: float, sums: np.ndarray, log_ymax: float) -> Moments:
        s0, s1, s2, sl = sums[:4]
        m1 = s1 / s0
        return Moments(
            log_mean_pow=theta * log_ymax + math.log(s0 / self.n),
            mean_log_w=log_ymax + m1,
            var_log_w=max(s2 / s0 - m1 * m1, 0.0),
            mean_log=log_ymax + sl / self.n if self.with_mean_log else math.nan,
        )

    def moments(self, theta: float) -> Moments:
        """Moments at the stored loc (see :meth:`set_loc`)."""
        sums = np.zeros(4)
        for sl in blocks(self.n):
            self._accumulate(cast(np.ndarray, self.logs)[sl], theta, sums)
        return self._moments(theta, sums, self.log_ymax)

    def moments_and_score(
        self, loc: float, theta: float, with_score: bool = True
    ) -> tuple[Moments, float]:
        """Moments at ``loc`` and ``sum(w / (x - loc)) / sum(w)`` in one pass, not stored.

        The second number (NaN without ``with_score``) times ``n`` is the derivative in loc
        of GenNorm's profile log-likelihood at fixed shape, ``-(n/theta) log sum|x - loc|**theta``.
        """
        sums = np.zeros(5)
        log_ymax = self._log_ymax(loc)
        for sl in blocks(self.n):
            k = sl.stop - sl.start
            logs, d = self._l[:k], self._d[:k]
            self._logs_into(sl, loc, logs, d)
            self._accumulate(logs, theta, sums, d if with_score else None)
        return self._moments(theta, sums, log_ymax), sums[4] / sums[0] if with_score else math.nan

    def abs_moment_ratio(self) -> float:
        """``mean|x - loc| / sqrt(mean (x - loc)**2)`` at the stored loc."""
        s1 = s2 = 0.0
        for sl in blocks(self.n):
            w = self._w[: sl.stop - sl.start]
            np.exp(cast(np.ndarray, self.logs)[sl], out=w)
            s1 += _sum(w)
            s2 += _sum(np.multiply(w, w, out=w))
        return (s1 / self.n) / math.sqrt(s2 / self.n)


@dataclass(frozen=True)
class PowerFamily:
    """What distinguishes GenNorm from double Weibull in the shared profile machinery.

    Attributes:
        name, shape: scipy family and shape keyword.
        abs_moment_ratio: ``E|Z| / sqrt(E Z**2)`` as a function of the shape (increasing).
        derivs: ``(theta, moments) -> (l1, l2)``, first and second derivative in the shape of
            the profile log-likelihood per entry.
        log_scale: ``(theta, moments) -> log(scale)``, the closed-form scale MLE.
        loglik: ``(theta, moments) -> profile log-likelihood per entry``.
        needs_mean_log: whether ``derivs``/``loglik`` use ``moments.mean_log``.
        loc_information: ``theta -> Fisher information of loc per entry at unit scale`` (inf
            where it diverges), or None if a free loc is not searched (then: the median).
    """

    name: str
    shape: str
    abs_moment_ratio: Callable[[float], float]
    derivs: Callable[[float, Moments], tuple[float, float]]
    log_scale: Callable[[float, Moments], float]
    loglik: Callable[[float, Moments], float]
    needs_mean_log: bool
    loc_information: Callable[[float], float] | None


def gennorm_log_scale(b: float, m: Moments) -> float:
    # scale**beta = beta * mean|x - loc|**beta
    return (math.log(b) + m.log_mean_pow) / b


def gennorm_loglik(b: float, m: Moments) -> float:
    # sum |z|**beta = n / beta at the closed-form scale
    return math.log(b / 2) - special.gammaln(1 / b) - 1 / b - gennorm_log_scale(b, m)


def _gennorm_derivs(b: float, m: Moments) -> tuple[float, float]:
    # g = beta**2 * dl/dbeta: Varanasi & Aazhang's likelihood equation, times beta
    g = b + special.digamma(1 / b) + math.log(b) + m.log_mean_pow - b * m.mean_log_w
    dg = 1 + 1 / b - special.polygamma(1, 1 / b) / b**2 - b * m.var_log_w
    return g / b**2, dg / b**2 - 2 * g / b**3


def _gennorm_loc_information(b: float) -> float:
    return b * b * math.gamma(2 - 1 / b) / math.gamma(1 / b) if b > 0.5 else math.inf


def _dweibull_log_scale(c: float, m: Moments) -> float:
    # scale**c = mean|x - loc|**c
    return m.log_mean_pow / c


def _dweibull_loglik(c: float, m: Moments) -> float:
    ls = _dweibull_log_scale(c, m)
    return math.log(c / 2) - ls - 1 + (c - 1) * (m.mean_log - ls)


def _dweibull_derivs(c: float, m: Moments) -> tuple[float, float]:
    return 1 / c + m.mean_log - m.mean_log_w, -1 / c**2 - m.var_log_w


GENNORM = PowerFamily(
    name="gennorm",
    shape="beta",
    abs_moment_ratio=lambda b: math.exp(
        special.gammaln(2 / b) - 0.5 * (special.gammaln(1 / b) + special.gammaln(3 / b))
    ),
    derivs=_gennorm_derivs,
    log_scale=gennorm_log_scale,
    loglik=gennorm_loglik,
    needs_mean_log=False,
    loc_information=_gennorm_loc_information,
)
DWEIBULL = PowerFamily(
    name="dweibull",
    shape="c",
    abs_moment_ratio=lambda c: math.exp(
        special.gammaln(1 + 1 / c) - 0.5 * special.gammaln(1 + 2 / c)
    ),
    derivs=_dweibull_derivs,
    log_scale=_dweibull_log_scale,
    loglik=_dweibull_loglik,
    needs_mean_log=True,
    loc_information=None,
)


def _shape_from_ratio(fam: PowerFamily, r: float) -> float:
    """Invert ``fam.abs_moment_ratio`` (method-of-moments start for the shape)."""
    lo, hi = SHAPE_BOUNDS
    f = fam.abs_moment_ratio
    if r <= f(lo):
        return lo
    if r >= f(hi):
        return hi
    return optimize.brentq(lambda t: f(t) - r, lo, hi, xtol=1e-6)


@dataclass(frozen=True)
class ShapeFit:
    """Profile fit at one loc: shape, moments there, total log-likelihood (nats).

    ``gain`` is the further increase one more Newton step in the shape would bring (>= 0) and
    ``next_theta`` that step's shape.
    """

    loc: float
    theta: float
    moments: Moments
    loglik: float
    gain: float
    next_theta: float


def newton_step(fam: PowerFamily, theta: float, m: Moments, n: int, loc: float) -> ShapeFit:
    """The profile fit at ``theta`` and its Newton step in the shape (NaN if not concave)."""
    l1, l2 = fam.derivs(theta, m)
    nxt, gain = math.nan, 0.0
    if l2 < 0:
        nxt = min(max(theta - l1 / l2, SHAPE_BOUNDS[0]), SHAPE_BOUNDS[1])
        step = nxt - theta
        gain = max(n * (l1 * step + 0.5 * l2 * step * step), 0.0)
    return ShapeFit(loc, theta, m, n * fam.loglik(theta, m), gain, nxt)


def _solve_shape(dev: AbsDeviations, fam: PowerFamily, theta: float, xtol: float) -> ShapeFit:
    """Maximise the profile log-likelihood in the shape at the stored loc (safeguarded Newton).

    Newton steps on ``dl/dtheta`` are kept inside the bracket that the signs of the derivative
    so far have established (else bisection, in log scale) and inside :data:`SHAPE_BOUNDS`.
    Stops when the next step is below ``xtol * theta``; the result is the last shape
    evaluated, so shape, moments and log-likelihood agree exactly.
    """
    lo, hi = SHAPE_BOUNDS
    theta = min(max(theta, lo), hi)
    for _ in range(200):
        fit = newton_step(fam, theta, dev.moments(theta), dev.n, dev.loc)
        if fam.derivs(theta, fit.moments)[0] > 0:
            lo = theta
        else:
            hi = theta
        cand = fit.next_theta
        if not lo <= cand <= hi:  # also NaN
            cand = math.sqrt(lo * hi)
        if abs(cand - theta) <= xtol * theta:
            break
        theta = cand
    return fit


def profile_fit(
    fam: PowerFamily,
    dev: AbsDeviations,
    loc: float,
    theta0: float | None,
    xtol: float,
    label: str,
) -> ShapeFit:
    """Shape MLE at ``loc``; ``theta0=None`` starts from the moment-ratio estimate."""
    if fam.needs_mean_log and (k := dev.n_at_loc(loc)):
        # double Weibull's density at loc is 0 (c > 1) or infinite (c < 1): no MLE exists
        raise GradientDataError(
            f"{label}: {k} of {dev.n} entries equal loc={loc!r}; the {fam.name} likelihood "
            "is unbounded there (fit gennorm, or drop those entries)"
        )
    if loc != dev.loc:
        dev.set_loc(loc)
    if theta0 is None:
        theta0 = _shape_from_ratio(fam, dev.abs_moment_ratio())
    return _solve_shape(dev, fam, theta0, xtol)
