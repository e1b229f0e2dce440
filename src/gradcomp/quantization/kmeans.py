"""Lloyd on data: 1-D weighted k-means under the ``|x|^M`` weighted L2 distortion.

The data-optimal counterpart of :func:`gradcomp.quantization.lloyd.lloyd_design`: the same
iteration (levels = weighted centroids of their cells, cells = nearest level), with the
empirical distribution of the entries in place of a fitted law, so it needs no model and
its levels must be sent. It finds a local optimum; started from the quantiles of the
``|x|^M``-tilted empirical distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KMeansResult", "weighted_kmeans"]


@dataclass
class KMeansResult:
    """levels : (L,) sorted, units of x; distortion : mean |x|^M (x - Q(x))^2 over the
    entries (units of x^(M+2)); n_iter; converged."""

    levels: np.ndarray
    distortion: float
    n_iter: int
    converged: bool


def weighted_kmeans(
    x, n_levels: int, M: float, *, tol: float = 1e-10, max_iter: int = 1000
) -> KMeansResult:
    """Weighted k-means of the entries ``x`` (any shape) with weights ``|x|^M``.

    Stops when no level moves by more than ``tol * max|x|``. Cells that lose every entry
    keep their level. Cost: one sort, then O(L log n) per iteration (prefix sums).
    """
    z = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if z.size == 0:
        raise ValueError("weighted_kmeans needs at least one entry")
    if n_levels < 1:
        raise ValueError("n_levels must be >= 1")
    s = float(np.max(np.abs(z))) or 1.0
    z = z / s  # unit scale: weights and sums stay well inside float64's range
    w = np.abs(z) ** M
    c0 = np.concatenate([[0.0], np.cumsum(w)])
    c1 = np.concatenate([[0.0], np.cumsum(w * z)])
    c2 = np.concatenate([[0.0], np.cumsum(w * z * z)])
    if not c0[-1] > 0:
        raise ValueError("all weights are zero (every entry is 0 with M > 0)")
    # init: quantiles (k + 1/2) / L of the weight-tilted empirical distribution
    targets = (np.arange(n_levels) + 0.5) / n_levels * c0[-1]
    y = z[np.minimum(np.searchsorted(c0[1:], targets), z.size - 1)]
    y = np.maximum.accumulate(y)

    def cells(levels):
        cut = np.searchsorted(z, 0.5 * (levels[:-1] + levels[1:]), side="right")
        return np.concatenate([[0], cut]), np.concatenate([cut, [z.size]])

    n_iter, converged = 0, False
    while n_iter < max_iter:
        lo, hi = cells(y)
        mass = c0[hi] - c0[lo]
        with np.errstate(invalid="ignore", divide="ignore"):
            centroid = (c1[hi] - c1[lo]) / mass
        y_new = np.where(mass > 0, centroid, y)
        n_iter += 1
        change = float(np.max(np.abs(y_new - y)))
        y = y_new
        if change <= tol:
            converged = True
            break
    lo, hi = cells(y)
    sq = (c2[hi] - c2[lo]) - 2 * y * (c1[hi] - c1[lo]) + y**2 * (c0[hi] - c0[lo])
    distortion = float(np.sum(sq)) / z.size * s ** (M + 2.0)
    return KMeansResult(np.sort(y) * s, distortion, n_iter, converged)
