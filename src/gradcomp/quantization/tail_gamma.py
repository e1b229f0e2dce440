"""The regularised upper incomplete gamma function in log space, for laws far in their tail.

Lloyd designs for the law beyond a top-K threshold ``tau`` need
``Q(a, x) = Gamma(a, x) / Gamma(a)`` at ``x = (tau / s)^p``, which underflows double
precision near ``x = 700`` (``tau`` about 37 standard deviations of a normal); ratios of such
numbers (centroids, conditional moments) are still well defined. :func:`log_gammaincc` gives
``log Q`` everywhere: ``scipy.special.gammaincc`` where ``Q`` is a normal double, else the
continued fraction of ``Gamma(a, x)`` (Legendre's, evaluated by the modified Lentz method),
which converges in a few terms there since ``x >> a``.

:func:`tail_quantile` inverts ``Q`` for the law conditional on ``x >= x0``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["log_gammaincc", "tail_quantile"]

# below this, gammaincc's result loses relative accuracy (subnormals) or underflows
_Q_FLOOR = 1e-280
_TINY = 1e-300


def _log_gammaincc_cf(
    a: np.ndarray, x: np.ndarray, groups: np.ndarray | None = None, n_terms: int = 200
) -> np.ndarray:
    """``log Q(a, x)`` by the continued fraction (valid for x > a + 1), arrays of one shape.

    The fraction stops when every element's last factor is 1 to within 1e-16, and further
    terms can still move a value that had converged; with ``groups`` (non-negative ints, x's
    shape) each group stops on its own rule, so that a group's values are those of a call
    with that group alone (batched Lloyd designs).
    """
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    active = None if groups is None else np.ones(x.shape, dtype=bool)
    for i in range(1, n_terms + 1):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        delta = d * c
        done = np.abs(delta - 1.0) < 1e-16
        if active is None:
            h = h * delta
            if np.all(done):
                break
            continue
        if groups is None:  # unreachable: active is None exactly when groups is
            raise AssertionError("groups is None with per-group stopping")
        h = np.where(active, h * delta, h)
        pending = np.bincount(groups[active & ~done], minlength=int(groups.max()) + 1)
        active &= pending[groups] > 0
        if not np.any(active):
            break
    return -x + a * np.log(x) - special.gammaln(a) + np.log(h)


def log_gammaincc(a, x, groups=None) -> np.ndarray:
    """``log Q(a, x)``, the log of scipy's ``gammaincc``, without underflow (broadcasting).

    ``a > 0``; ``x >= 0`` may be ``inf`` (``-inf`` returned). ``groups``: see
    :func:`_log_gammaincc_cf` (broadcast to the shape of ``a`` and ``x``).
    """
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    q = special.gammaincc(a, x)
    with np.errstate(divide="ignore"):
        out = np.log(q)
    deep = (q < _Q_FLOOR) & np.isfinite(x) & (x > a + 1.0)
    if np.any(deep):
        out = np.array(out, dtype=np.float64, copy=True)
        g = None if groups is None else np.broadcast_to(groups, x.shape)[deep]
        out[deep] = _log_gammaincc_cf(a[deep], x[deep], g)
    return out


def tail_quantile(a: float, x0: float, q) -> np.ndarray:
    """``x`` with ``P(X >= x | X >= x0) = 1 - q`` for ``X ~ Gamma(a)`` (q in [0, 1)).

    Exact inversion (``gammainccinv``) while ``Q(a, x0)`` is a normal double; beyond, the
    excess ``X - x0`` is close to a unit exponential (the density ``x^(a-1) e^-x`` varies as
    ``e^-x`` when ``x >> a``), which is what is returned: good enough for an initial design.
    """
    q = np.asarray(q, dtype=np.float64)
    if x0 <= 0:
        return special.gammaincinv(a, q)
    log_q0 = float(log_gammaincc(a, x0))
    if log_q0 > np.log(_Q_FLOOR):
        x = special.gammainccinv(a, (1.0 - q) * np.exp(log_q0))
        if np.all(np.isfinite(x)):
            return np.maximum(x, x0)
    return x0 - np.log1p(-q)
