"""Newton's method for Lloyd's fixed point: the step that makes 256-level designs converge.

Lloyd's update ``y <- T(y)`` (each level to the weighted centroid of its nearest-level cell)
converges linearly, with a rate that tends to 1 as the number of levels grows: at 2^8 levels
10,000 updates do not reach a relative change of 1e-12. Newton's method on ``T(y) - y = 0``
converges quadratically, and its Jacobian is tridiagonal: the centroid
``c_k = m1_k / m0_k`` of cell ``[t_{k-1}, t_k]`` depends on its two thresholds only,

    dc_k / dt_k     = g(t_k) (t_k - c_k) / m0_k,
    dc_k / dt_{k-1} = g(t_{k-1}) (c_k - t_{k-1}) / m0_k,

with ``g(t) = |t|^M f(t)`` the weighted density and ``t_k = (y_k + y_{k+1}) / 2``. The caller
keeps a step only when it does not raise the distortion above that of the plain Lloyd update.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import lapack

__all__ = ["newton_levels"]

_GTSV = lapack.dgtsv


def newton_levels(
    levels: np.ndarray,
    centroids: np.ndarray,
    m0: np.ndarray,
    weighted_density: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray | None:
    """One Newton step for ``T(y) = y``; None when it is not defined (an empty cell).

    ``levels`` (L,) sorted, ``centroids`` (L,) = ``T(levels)``, ``m0`` (L,) the cells'
    weighted masses, ``weighted_density(t)`` the ``g`` above at the (L-1,) midpoints, in the
    same normalisation as ``m0``. Returns the (L,) new levels (not checked for order).
    """
    n = levels.size
    if n < 2 or not (np.all(m0 > 0) and np.all(np.isfinite(centroids))):
        return None
    t = 0.5 * (levels[:-1] + levels[1:])
    with np.errstate(invalid="ignore", over="ignore"):
        g = weighted_density(t)
    # an infinite density at a threshold 0 (dweibull c < 1) only meets symmetric steps,
    # which leave that threshold where it is: its column does not matter there
    g = np.where(np.isfinite(g), g, 0.0)
    upper = np.zeros(n)  # dc_k / dt_k
    lower = np.zeros(n)  # dc_k / dt_{k-1}
    upper[:-1] = g * (t - centroids[:-1]) / m0[:-1]
    lower[1:] = g * (centroids[1:] - t) / m0[1:]
    # (I - J) delta = T(y) - y with J[k, k] = (upper_k + lower_k)/2,
    # J[k, k+1] = upper_k / 2, J[k, k-1] = lower_k / 2: LAPACK's tridiagonal solver, what
    # scipy.linalg.solve_banded((1, 1), ...) calls, without its per-call checks
    rhs = centroids - levels
    diag = 1.0 - 0.5 * (upper + lower)
    sup, sub = -0.5 * upper[:-1], -0.5 * lower[1:]
    if not (np.all(np.isfinite(diag)) and np.all(np.isfinite(sup))
            and np.all(np.isfinite(sub)) and np.all(np.isfinite(rhs))):  # fmt: skip
        return None
    *_, delta, info = _GTSV(sub, diag, sup, rhs)
    if info != 0:
        return None
    return levels + delta
