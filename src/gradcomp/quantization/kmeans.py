"""Lloyd on data: 1-D weighted k-means under the ``|x|^M`` weighted L2 distortion.

The data-optimal counterpart of :func:`gradcomp.quantization.lloyd.lloyd_design`: the same
iteration (levels = weighted centroids of their cells, cells = nearest level), with the
empirical distribution of the entries in place of a fitted law, so it needs no model and
its levels must be sent. It finds a local optimum: started from the quantiles of the
``|x|^M``-tilted empirical distribution and from the plain quantiles, the better kept.
"""

from __future__ import annotations

import math
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
    keep their level. Cost: one sort, then O(L log n) per iteration (prefix sums), for each
    of the two starts (module doc); the distortion (``inf`` where it overflows float64) is
    summed entry by entry, O(n) per start.

    Robust to outliers: one entry far above the others draws every quantile of the
    weight-tilted distribution onto itself, so the plain quantiles start too and the design
    of least distortion is kept; the prefix sums run outward from zero, so that a cell of
    small entries is not summed as the difference of two sums that hold a huge one.
    """
    z = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if z.size == 0:
        raise ValueError("weighted_kmeans needs at least one entry")
    if n_levels < 1:
        raise ValueError("n_levels must be >= 1")
    if not (math.isfinite(M) and M >= 0):
        raise ValueError(f"weight exponent M must be a finite number >= 0, got {M!r}")
    if not np.all(np.isfinite(z)):
        raise ValueError("weighted_kmeans needs finite entries")
    s = float(np.max(np.abs(z))) or 1.0
    z = z / s  # unit scale: weights and sums stay well inside float64's range
    w = np.abs(z) ** M
    if not np.sum(w) > 0:
        raise ValueError("all weights are zero (every entry is 0 with M > 0)")
    c0, c1 = _anchored(z, w), _anchored(z, w * z)

    def cells(levels):
        cut = np.searchsorted(z, 0.5 * (levels[:-1] + levels[1:]), side="right")
        return np.concatenate([[0], cut]), np.concatenate([cut, [z.size]])

    def iterate(y):
        n_iter, converged = 0, False
        while n_iter < max_iter:
            lo, hi = cells(y)
            mass = c0[hi] - c0[lo]
            with np.errstate(invalid="ignore", divide="ignore"):
                centroid = (c1[hi] - c1[lo]) / mass
            y_new = np.where(mass > 0, centroid, y)
            n_iter += 1
            change = float(np.max(np.abs(y_new - y)))
            y = np.sort(y_new)
            if change <= tol:
                converged = True
                break
        lo, hi = cells(y)
        sizes = hi - lo
        error = float(np.sum(w * (z - np.repeat(y, sizes)) ** 2))
        return error, y, n_iter, converged

    # starts: quantiles (k + 1/2) / L of the weight-tilted empirical distribution, and of
    # the plain one (what an outlier cannot draw onto itself)
    best: tuple[float, np.ndarray, int, bool] | None = None
    for cum in (np.cumsum(w), np.arange(1.0, z.size + 1.0)):
        targets = (np.arange(n_levels) + 0.5) / n_levels * cum[-1]
        y0 = np.maximum.accumulate(z[np.minimum(np.searchsorted(cum, targets), z.size - 1)])
        got = iterate(y0)
        if best is None or got[0] < best[0]:
            best = got
    assert best is not None  # two starts
    error, y, n_iter, converged = best
    with np.errstate(over="ignore"):
        distortion = float(np.float64(error / z.size) * np.float64(s) ** (M + 2.0))
    return KMeansResult(np.sort(y) * s, distortion, n_iter, converged)


def _anchored(z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Prefix sums (n + 1,) of ``v`` over the sorted ``z``, anchored at zero: entry i is the
    sum of ``v`` over z[p:i] for i >= p (p: the first entry >= 0), minus the sum over z[i:p]
    below; a cell's sum is still ``S[hi] - S[lo]``, and the sums a cell of small entries
    takes the difference of hold only entries between it and zero."""
    p = int(np.searchsorted(z, 0.0, side="left"))
    below = -np.cumsum(v[:p][::-1])[::-1]  # minus the sum over z[i:p], i < p
    above = np.cumsum(v[p:])
    return np.concatenate([below, [0.0], above])
