"""Distortion-rate function of a fitted law under the M-weighted L2 distortion.

The source X follows the centred fitted law (see
:mod:`gradcomp.quantization.symmetric_law`), discretised on about ``grid_size`` cells; the
reproduction alphabet is the same grid; the
distortion is ``d(x, y) = |x|^M (x - y)^2``. For a multiplier ``s >= 0`` (minus the
slope of R(D), in nats per unit of distortion) Blahut-Arimoto iterates

    Q(y|x) = q(y) exp(-s d(x,y)) / Z(x),   Z(x) = sum_y q(y) exp(-s d(x,y)),
    q(y)  <- q(y) c(y),                     c(y) = sum_x p(x) exp(-s d(x,y)) / Z(x),

and returns ``(R, D) = (I(p, Q) in bits, E d)`` of the discretised problem.

Accuracy. Discretisation matters most for heavy tails and large M, and at high rate
(the discretised source's D(R) reaches 0 at its entropy, so the curve then falls
below the continuous one). :func:`distortion_rate_curve` therefore also runs the
sweep on a grid of half the size and reports the relative change (``grid_change``)
and ``reliable = grid_change < 0.05``. Against a 2000-point grid the error of the
default 800-point grid was a quarter of ``grid_change`` or less: within 0.5% up to
6 bits for the normal and GenNorm beta = 0.5 at M = 0, and 1.3% at 3.5 bits, 3% at
4 bits for GenNorm beta = 0.8 at M = 2 (heavy tails and large M need finer grids).

The high-resolution approximation (Linder & Zamir's asymptotic R(D) for locally
quadratic distortions; the Shannon lower bound when M = 0) is also given:

    D_hr(R) = exp(2 h(X) + M E ln|X|) / (2 pi e) * 2^(-2R),

with, for the law of :class:`gradcomp.quantization.symmetric_law.SymmetricLaw` and
a0 = (gamma0 + 1)/p,
h(X) = ln(2 s Gamma(a0) / p) - gamma0 psi(a0) / p + a0 and E ln|X| = ln s + psi(a0)/p
(psi the digamma function). For the GenNorm beta = 0.8, M = 2 it is within 7% of the
BA curve at 4.4 bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse, special

from gradcomp.quantization.symmetric_law import SymmetricLaw

__all__ = [
    "BAResult",
    "blahut_arimoto",
    "weighted_distortion_matrix",
    "discretise",
    "distortion_rate_curve",
    "high_rate_distortion",
]

LN2 = math.log(2.0)
_EXP_CUTOFF = 200.0  # exp(-200) ~ 1e-87: negligible next to a row's largest entry, 1


@dataclass
class BAResult:
    """One Blahut-Arimoto point.

    rate_bits : I(X;Y) in bits per entry; distortion : E d(X,Y) per entry (units of d);
    q_y : (K,) output distribution; s : multiplier; n_iter : iterations; gap_nats :
    final stopping statistic.
    """

    rate_bits: float
    distortion: float
    q_y: np.ndarray
    s: float
    n_iter: int
    gap_nats: float


def weighted_distortion_matrix(x_grid: np.ndarray, y_grid: np.ndarray, M: float) -> np.ndarray:
    """``d[i, k] = |x_i|^M (x_i - y_k)^2``, shape (N, K)."""
    x = np.asarray(x_grid, dtype=np.float64)[:, None]
    y = np.asarray(y_grid, dtype=np.float64)[None, :]
    return np.abs(x) ** M * (x - y) ** 2


def _positive(z: np.ndarray) -> np.ndarray:
    # a row whose outputs all lost their mass would give log 0; 1e-300 keeps it finite
    return np.maximum(z, 1e-300)


def blahut_arimoto(
    p_x: np.ndarray,
    x_grid: np.ndarray,
    y_grid: np.ndarray,
    distortion_matrix: np.ndarray,
    s: float,
    *,
    q_init: np.ndarray | None = None,
    tol: float = 1e-8,
    max_iter: int = 1_000,
    relax: float = 1.5,
) -> BAResult:
    """Blahut-Arimoto for one multiplier ``s >= 0``.

    p_x : (N,) source pmf on ``x_grid`` (N,); y_grid : (K,); distortion_matrix : (N, K).
    q_init : (K,) starting output pmf (default uniform); pass the previous point's
    ``q_y`` to warm-start a sweep.
    Stops when the BA objective ``F(q) = -sum_x p(x) log Z(x)`` (nats; R + s D up to a
    constant) decreases by less than ``tol`` in one iteration, or when the gap
    statistic (module doc) is below ``tol``. ``relax > 1`` over-relaxes the update
    (``q <- q c^relax``, Matz & Duhamel's accelerated BA); it falls back to 1 as soon
    as F would increase.
    """
    p = np.asarray(p_x, dtype=np.float64)
    d = np.asarray(distortion_matrix, dtype=np.float64)
    n, k = len(np.asarray(x_grid)), len(np.asarray(y_grid))
    if p.shape != (n,) or d.shape != (n, k):
        raise ValueError(f"shapes: p_x {p.shape}, distortion {d.shape}, grids ({n}, {k})")
    p = p / p.sum()
    # Shifting each row by its minimum cancels in Q(y|x) and avoids all-zero rows;
    # kernel entries below exp(-_EXP_CUTOFF) are set to exactly 0 (subnormal numbers
    # make the matrix products 10-100x slower, and zeros allow sparse products).
    d_min = d.min(axis=1)
    a = s * (d - d_min[:, None])
    keep = a < _EXP_CUTOFF
    w: Any = np.where(keep, np.exp(-np.where(keep, a, 0.0)), 0.0)  # or a scipy sparse matrix
    if keep.mean() < 0.25:  # high rate: the kernel is banded, sparse products are cheaper
        w = sparse.csr_matrix(w)
    q = np.full(k, 1.0 / k) if q_init is None else np.asarray(q_init, dtype=np.float64).copy()
    q /= q.sum()
    z = _positive(w @ q)
    f_obj = float(-(p @ np.log(z)))
    gap, n_iter, mu = np.inf, 0, float(relax)
    while n_iter < max_iter:
        n_iter += 1
        c = w.T @ (p / z)
        log_c = np.log(np.maximum(c, 1e-300))
        gap = float(np.max(log_c) - q @ log_c)
        q_new = q * c**mu
        q_new /= q_new.sum()
        q_new[q_new < 1e-200] = 0.0
        z_new = _positive(w @ q_new)
        f_new = float(-(p @ np.log(z_new)))
        if f_new > f_obj and mu != 1.0:
            mu = 1.0  # over-relaxation overshot: plain BA steps never increase F
            continue
        q, z, decrease, f_obj = q_new, z_new, f_obj - f_new, f_new
        if decrease < tol or gap < tol:
            break
    wd = w.multiply(d) if sparse.issparse(w) else w * d
    distortion = float(p @ ((wd @ q) / z))
    # log Q(y|x)/q(y) = -s (d - d_min) - log z
    rate_nats = float(-s * distortion + s * (p @ d_min) - p @ np.log(z))
    return BAResult(max(rate_nats, 0.0) / LN2, distortion, q, float(s), n_iter, gap)


def discretise(
    law: SymmetricLaw, M: float, n: int, tau: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """About ``n`` cells of the unit-scale centred law: (points (n',), probabilities (n',)).

    Interior edges: a quarter are quantiles of the Panter-Dite density ``f^(1/3)``
    (where the probability is) and three quarters of ``(|x|^M f)^(1/3)`` (where the
    weighted distortion is); for ``M = 0`` both are the same and all ``n`` come from one.
    Points are the cells' conditional means (closed form). ``tau`` (unit scale): the law
    restricted to ``|x| >= tau`` (what top-K keeps), with ``+-tau`` as edges.
    """
    unit = law.unit

    def edges(m_weight: float, k: int) -> np.ndarray:
        alpha = ((m_weight + law.gamma0) / 3.0 + 1.0) / law.p
        return unit.symmetric_gamma_quantiles(alpha, 3.0, k + 1, tau)[1:-1]

    inner = edges(0.0, n) if M == 0 else np.concatenate([edges(0.0, n // 4), edges(M, n - n // 4)])
    inner = np.unique(np.concatenate([inner, [-tau, tau]] if tau > 0 else [inner]))
    lo = np.concatenate([[-np.inf], inner])
    hi = np.concatenate([inner, [np.inf]])
    m = unit.truncated_cell_moments(lo, hi, 0.0, tau, orders=(0, 1))
    keep = m[0] > 0
    return m[1][keep] / m[0][keep], m[0][keep] / m[0][keep].sum()


def high_rate_distortion(family: str, params: dict[str, float], M: float, rates) -> np.ndarray:
    """High-resolution approximation ``D_hr(R)`` (module doc), units x^(M+2); shape of rates."""
    law = SymmetricLaw.from_family(family, params)
    a0 = (law.gamma0 + 1.0) / law.p
    psi = float(special.digamma(a0))
    h = math.log(2.0 * law.scale / law.p) + special.gammaln(a0) - law.gamma0 * psi / law.p + a0
    e_log = math.log(law.scale) + psi / law.p
    r = np.asarray(rates, dtype=np.float64)
    return math.exp(2.0 * h + M * e_log) / (2.0 * math.pi * math.e) * 2.0 ** (-2.0 * r)


def _problem(
    law: SymmetricLaw, M: float, n: int, tau: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, p = discretise(law, M, n, tau)
    return x, p, weighted_distortion_matrix(x, x, M)


def _slope_points(x, p, d, slopes, tol) -> list[BAResult]:
    floor = 1e-12 / len(x)  # warm starts keep every output alive
    pts, q = [], None
    for s in slopes:
        res = blahut_arimoto(p, x, x, d, s, q_init=q, tol=tol)
        q = np.maximum(res.q_y, floor)
        pts.append(res)
    return pts


def _rate_sweep(x, p, d, M: float, rates: np.ndarray, n_sweep: int, tol: float) -> np.ndarray:
    """BA points at adaptively chosen slopes; log D interpolated at ``rates`` (unit law)."""
    floor = 1e-12 / len(x)
    d0 = float(p @ (np.abs(x) ** (M + 2.0)))  # rate 0: every entry reproduced by 0
    r_target = float(np.max(rates, initial=0.0))
    step = max(r_target, 0.5) / n_sweep
    r_pts, d_pts = [0.0], [d0]
    s, q, log_s_prev = 0.25 / d0, None, None
    for _ in range(4 * n_sweep):
        res = blahut_arimoto(p, x, x, d, s, q_init=q, tol=tol)
        q = np.maximum(res.q_y, floor)
        gain = res.rate_bits - r_pts[-1]
        r_pts.append(res.rate_bits)
        d_pts.append(res.distortion)
        if res.rate_bits > r_target + step:
            break
        if log_s_prev is not None and 0 <= gain < 1e-4 and res.rate_bits > 1.0:
            break  # saturated at the discretised source's entropy
        # next slope: aim for a rate step of `step` bits using the local dR/dlog(s)
        dlog = math.log(2.0)
        if log_s_prev is not None and gain > 1e-6:
            dlog = step * (math.log(s) - log_s_prev) / gain
        log_s_prev = math.log(s)
        s *= math.exp(min(max(dlog, math.log(1.05)), math.log(16.0)))
    r_arr = np.asarray(r_pts)
    order = np.argsort(r_arr, kind="stable")
    d_arr = np.minimum.accumulate(np.asarray(d_pts)[order])
    r_u, first = np.unique(r_arr[order], return_index=True)
    with np.errstate(divide="ignore"):
        log_d = np.log(d_arr[first])
    return np.exp(np.interp(rates, r_u, log_d, right=np.nan))


def distortion_rate_curve(
    family: str,
    params: dict[str, float],
    M: float,
    rates=None,
    *,
    slopes=None,
    grid_size: int = 800,
    n_sweep: int = 30,
    tol: float = 1e-8,
    check_grid: bool = True,
    tau: float = 0.0,
) -> pd.DataFrame:
    """Distortion-rate function D(R) of the fitted law under ``|x|^M (x - y)^2``.

    ``tau`` (units of x): the law restricted to ``|x - loc| >= tau``, what a top-K
    sparsifier with that threshold keeps (the high-rate column is then NaN).

    Give either ``rates`` (bits per entry) or ``slopes`` (multipliers s in units of
    1/distortion of the original scale).

    - ``slopes``: the BA points as computed, one row per slope, sorted by slope;
      columns ``slope, rate_bits, distortion``.
    - ``rates`` (default 0, 0.25, ..., 6): about ``n_sweep`` BA points at adaptively
      chosen slopes (steps of about ``max(rates) / n_sweep`` bits, warm-started);
      ``log D`` is interpolated linearly in R at the requested rates (NaN past the
      largest rate reached). Columns ``rate_bits, distortion, high_rate`` and, with
      ``check_grid``, ``grid_change`` (relative change against a grid of half the
      size) and ``reliable`` (``grid_change < 0.05``).

    Distortion is per entry in units of x^(M+2).
    """
    if rates is not None and slopes is not None:
        raise ValueError("give rates or slopes, not both")
    law = SymmetricLaw.from_family(family, params)
    to_units = law.scale ** (M + 2.0)
    t = float(tau) / law.scale

    if slopes is not None:
        x, p, d = _problem(law, M, grid_size, t)
        pts = _slope_points(x, p, d, np.sort(np.asarray(slopes, dtype=np.float64)) * to_units, tol)
        return pd.DataFrame(
            {
                "slope": [r.s / to_units for r in pts],
                "rate_bits": [r.rate_bits for r in pts],
                "distortion": [r.distortion * to_units for r in pts],
            }
        )

    rates = np.arange(0.0, 6.01, 0.25) if rates is None else np.asarray(rates, dtype=np.float64)
    dist = _rate_sweep(*_problem(law, M, grid_size, t), M, rates, n_sweep, tol)
    high = (
        high_rate_distortion(family, params, M, rates) if t == 0 else np.full(rates.shape, np.nan)
    )
    out = pd.DataFrame({"rate_bits": rates, "distortion": dist * to_units, "high_rate": high})
    if check_grid:
        coarse = _rate_sweep(*_problem(law, M, grid_size // 2, t), M, rates, n_sweep, tol)
        with np.errstate(invalid="ignore", divide="ignore"):
            change = np.abs(dist / coarse - 1.0)
        out["grid_change"] = change
        out["reliable"] = change < 0.05
    return out
