"""The entropy-constrained scalar quantizer (ECSQ) under paper Y's M-weighted distortion.

A fixed-rate design (Lloyd-Max, paper Y's GenNorm quantizer) minimises the distortion for a
number of levels; the study counts *coded* bits, and the quantizer that is best per coded bit
minimises the Lagrangian ``D + lambda R`` with ``R`` the index's code length (Chou,
Lookabaugh and Gray 1989, the generalized Lloyd algorithm with an entropy constraint):

- each entry ``x`` goes to the level ``y_i`` that minimises ``|x|^M (x - y_i)^2 + lambda l_i``
  (``l_i``: the code length of index ``i``, ``-log2 P(i)`` for an ideal entropy code, or
  the lengths of the Huffman code of the index probabilities);
- each level is its cell's ``|x|^M``-weighted centroid (as in Lloyd's design);
- the lengths follow the cells' probabilities;

iterated until the Lagrangian stops falling. Cells that lose all their mass are dropped, so
the design chooses its number of levels; at low rate it grows a dead zone around zero
(Sullivan 1996), at high rate (M = 0) its levels are uniform and its rate 0.2546 bits above
R(D) (Gish and Pierce 1968).

The design works on weighted points: data (:func:`ecsq_design` on the entries, equal
weights, as the ``ecsq_data`` compressor does) or a discretised law. Its knob is a target
rate in bits per entry, any real number: ``lambda`` is searched by bisection, and the design
of least distortion whose rate is not above the target is kept. A fitted law's design is
:func:`gradcomp.compression.ecsq_law.ecsq_for_law` (a lattice in the companded variable,
scored on the law itself; these iterations, which stop in local optima, were up to 0.27
bits further from the best under M = 2 at 1-3 bits).

>>> import numpy as np
>>> x = np.random.default_rng(0).laplace(size=20_000)  # a unit Laplacian sample
>>> q = ecsq_design(x, np.full(x.size, 1 / x.size), M=0, rate=1.0)
>>> round(q.rate, 3), round(q.distortion, 2)  # one bit: half the variance of 2 is left
(1.0, 0.52)
>>> zero = int(np.argmin(np.abs(q.levels)))  # the dead zone: about +-1.6 around zero
>>> [round(float(t), 1) for t in q.thresholds[zero - 1 : zero + 1]]
[-1.6, 1.7]
"""

from __future__ import annotations

import math

import numpy as np

from gradcomp.coding.pmf import entropy_bits
from gradcomp.compression.ecsq_result import (
    RATE_TOL,
    ECSQResult,
    Lengths,
    code_lengths,
    m_weights,
)

__all__ = [
    "RATE_TOL", "ECSQResult", "Lengths", "cell_centroids", "cells_of", "code_lengths",
    "ecsq_design", "lagrangian_design", "m_weights",
]  # fmt: skip


def cell_centroids(
    cells: np.ndarray, x: np.ndarray, w: np.ndarray, mass: np.ndarray, q: np.ndarray | None = None
) -> np.ndarray:
    """Each cell's ``w``-weighted mean of ``x`` (points ``x`` with weights ``w``, (K,), in
    cells 0..n-1, n = ``mass.size``; ``q`` (K,) the points' probabilities, None: equal, and
    ``mass`` the cells' summed ``q``); a cell whose weight vanishes (only x = 0 under M > 0)
    gets its plain mean. (n,)."""
    qw, qx = (w, x) if q is None else (q * w, q * x)
    den = np.bincount(cells, weights=qw, minlength=mass.size)
    num = np.bincount(cells, weights=qw * x, minlength=mass.size)
    mean = np.bincount(cells, weights=qx, minlength=mass.size) / mass
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), mean)


def lagrangian_design(
    x: np.ndarray,
    q: np.ndarray,
    M: float,
    lam: float,
    init: np.ndarray,
    *,
    lengths: Lengths = "entropy",
    max_iter: int = 500,
    rtol: float = 1e-10,
    window: int = 6,
) -> ECSQResult:
    """The generalized Lloyd design for ``D + lam R`` on points ``x`` (sorted, (K,)) of
    probabilities ``q`` (K,), from the levels ``init`` (sorted). Each step cannot raise the
    Lagrangian; it stops when the Lagrangian falls by less than ``rtol`` of itself. A point
    chooses among the ``2 window`` levels around it (a cell that should reach further grows
    by that much a step; the test suite checks the result against the search over all)."""
    x = np.asarray(x, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    w = m_weights(x, M)
    y = np.array(init, dtype=np.float64)
    ell = np.full(y.size, math.log2(y.size)) if y.size > 1 else np.zeros(1)
    last = np.inf
    rows = np.arange(x.size)
    offsets = np.arange(-window, window)
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        order = np.argsort(y, kind="stable")
        y, ell = y[order], ell[order]
        near = np.clip(np.searchsorted(y, x)[:, None] + offsets[None, :], 0, y.size - 1)
        cost = w[:, None] * (x[:, None] - y[near]) ** 2 + lam * ell[near]
        a = near[rows, np.argmin(cost, axis=1)]
        p = np.bincount(a, weights=q, minlength=y.size)
        used = np.flatnonzero(p > 0)
        remap = np.full(y.size, -1)
        remap[used] = np.arange(used.size)
        a, p = remap[a], p[used]
        y = cell_centroids(a, x, w, p, q)
        # at lam = 0 the lengths do not steer the cells: they are computed once, at the end
        ell = code_lengths(p, lengths) if used.size > 1 and lam else np.zeros(used.size)
        d = float(np.sum(q * w * (x - y[a]) ** 2))
        total = d + lam * float(np.sum(p * ell))
        if last - total <= rtol * max(abs(total), 1e-300):
            break
        last = total
    if not lam:
        ell = code_lengths(p, lengths) if used.size > 1 else np.zeros(1)
    r = float(np.sum(p * ell))
    order = np.argsort(y, kind="stable")
    y, p, ell = y[order], p[order], ell[order]
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    a = rank[a]
    # the boundaries: midway between the last point of a cell and the first of the next
    ends = np.flatnonzero(np.diff(a) != 0)
    thresholds = 0.5 * (x[ends] + x[ends + 1])
    return ECSQResult(y, thresholds[: y.size - 1], p, ell, d, r, float(lam), float(M), it)


def _uniform_init(x: np.ndarray, q: np.ndarray, rate: float, max_levels: int) -> np.ndarray:
    """Uniform levels (zero one of them) whose cells' entropy is about ``rate`` + 2 bits, so
    that the design has more cells than it keeps; at most ``max_levels`` of them (the outer
    cells then reach to the ends)."""
    span = float(np.max(np.abs(x)))

    def entropy(step: float) -> float:
        k = np.round(x / step).astype(np.int64)
        return entropy_bits(np.bincount(k - k.min(), weights=q))

    lo, hi = span * 1e-6, span
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if entropy(mid) > rate + 2 else (lo, mid)
    n = min(int(span / hi) + 1, 200, (max_levels - 1) // 2)
    return hi * np.arange(-n, n + 1, dtype=np.float64)


def _fixed_rate_init(
    x: np.ndarray, q: np.ndarray, M: float, rate: float, lengths: Lengths, max_levels: int
) -> np.ndarray:
    """The levels of the ``|x|^M``-weighted Lloyd design on the points (lambda = 0) of least
    distortion among those, 2 to ``2^(ceil(rate) + 1)`` levels, whose index code fits
    ``rate`` bits (one level at zero if none does). The entropy of a Lloyd design need not
    grow with its levels (under M > 0 three levels can cost more than four), so every count
    is tried."""
    cdf = np.cumsum(q)
    out, least = np.zeros(1), math.inf
    for n in range(2, min(2 ** (math.ceil(rate) + 1), 128, max_levels) + 1):
        start = x[np.minimum(np.searchsorted(cdf, (np.arange(n) + 0.5) / n), x.size - 1)]
        got = lagrangian_design(x, q, M, 0.0, np.unique(start), lengths=lengths, rtol=1e-12,
                                max_iter=2000)  # fmt: skip
        if got.rate <= rate + RATE_TOL and got.distortion < least:
            out, least = got.levels, got.distortion
    return out


def cells_of(
    x: np.ndarray, q: np.ndarray, M: float, thresholds: np.ndarray, lengths: Lengths = "entropy"
) -> ECSQResult:
    """The quantizer of the cells between ``thresholds`` (sorted) on points ``x`` (sorted)
    of probabilities ``q``: each level its cell's ``|x|^M``-weighted centroid (a cell
    without weight: its plain mean), empty cells dropped (``lam`` NaN, no iterations)."""
    w = m_weights(x, M)
    sums = [np.concatenate([[0.0], np.cumsum(v)]) for v in (q, q * w, q * w * x, q * w * x * x,
                                                           q * x)]  # fmt: skip
    cuts = np.concatenate([[0], np.searchsorted(x, thresholds, side="right"), [x.size]])
    p, W, WX, WX2, X = (np.diff(c[cuts]) for c in sums)
    used = p > 0
    p, W, WX, WX2, X = p[used], W[used], WX[used], WX2[used], X[used]
    heavy = W > 0
    y = np.where(heavy, WX / np.where(heavy, W, 1.0), X / p)
    d = float(np.sum(WX2 - 2 * y * WX + y * y * W))
    inner = thresholds[used[1:] & used[:-1]] if used.all() else _kept_bounds(thresholds, used)
    ell = code_lengths(p, lengths) if p.size > 1 else np.zeros(1)
    return ECSQResult(y, inner, p, ell, max(d, 0.0), float(np.sum(p * ell)), math.nan, float(M), 0)


def _kept_bounds(thresholds: np.ndarray, used: np.ndarray) -> np.ndarray:
    """The thresholds between the non-empty cells: an empty cell's two bounds become one,
    midway (the points it would hold go to the nearer neighbour)."""
    bounds = np.concatenate([[-np.inf], thresholds, [np.inf]])
    kept = np.flatnonzero(used)
    out = [0.5 * (bounds[a + 1] + bounds[b]) if b > a + 1 else bounds[a + 1]
           for a, b in zip(kept[:-1], kept[1:], strict=True)]  # fmt: skip
    return np.asarray(out, dtype=np.float64)


def _uniform_threshold_design(
    x: np.ndarray,
    q: np.ndarray,
    M: float,
    rate: float,
    lengths: Lengths,
    max_levels: int,
    iters: int,
) -> ECSQResult | None:
    """The best design with uniform thresholds (step ``Delta``, a zero cell ``z Delta`` wide
    for z in 1..3: the uniform quantizer with a dead zone, what the entropy-constrained
    design tends to at high rate) and centroid levels whose rate fits, ``Delta`` on a log
    grid (finer with ``iters``); None when none fits. The generalized Lloyd iterations stop
    in local optima at high rate; this family does not."""
    span, hole = float(np.max(np.abs(x))), float(np.min(np.abs(x)))
    if not span > 0:
        return None
    # with a hole around zero (top-K's |x| >= tau) the cells start at its edge, each side
    # its own first cell, split at zero
    budget = (max_levels - 1) // 2 if hole == 0 else max_levels // 2 - 1
    zero = np.zeros(1 if hole > 0 else 0)
    best = None
    # a scan, not a bisection: the rate need not fall as the step grows (the tail's cells,
    # the hole), and 2^-12 apart in log2 step is ~0.01 bits apart at high rate
    steps = span * 2.0 ** -np.linspace(0.0, 14.0, 14 * 2 ** (iters // 8) + 1)
    for z in (1.0, 1.5, 2.0, 3.0):
        for step in steps:
            half = _half_thresholds(hole + z * step / 2, step, span, budget)
            got = cells_of(x, q, M, np.concatenate([-half[::-1], zero, half]), lengths)
            if got.rate <= rate + RATE_TOL and (best is None or got.distortion < best.distortion):
                best = got
    return best


def _half_thresholds(first: float, step: float, span: float, budget: int) -> np.ndarray:
    """At most ``budget`` positive thresholds: ``first + k step`` up to ``span``, the last
    ones doubling instead when the budget cannot reach ``span`` in steps (the tails' cells
    wider, so that few levels cover them; doubling from ``first`` when even that cannot)."""
    n = int((span - first) / step) + 1
    if n <= budget:
        return first + step * np.arange(max(n, 0))
    for inner in range(budget, 0, -1):
        last = first + step * (inner - 1)
        tail = max(0, math.ceil(math.log2(span / last))) if last > 0 else budget
        if inner + tail <= budget:
            return np.concatenate([first + step * np.arange(inner),
                                   last * 2.0 ** np.arange(1, tail + 1)])  # fmt: skip
    return first * 2.0 ** np.arange(budget)  # doubling all the way, the last cell open


def ecsq_design(
    x: np.ndarray,
    q: np.ndarray,
    *,
    M: float,
    rate: float,
    lengths: Lengths = "entropy",
    iters: int = 32,
    max_levels: int = 401,
) -> ECSQResult:
    """The design on points ``x`` with probabilities ``q`` of least distortion among those
    whose rate is not above ``rate`` bits per entry (``lam`` by bisection in log space,
    ``iters`` steps, from two starts) and with at most ``max_levels`` levels (an alphabet
    the coder covers; at least 3). ``x`` need not be sorted; a rate of 0, or points all
    equal, give one level."""
    if max_levels < 3:
        raise ValueError(f"max_levels must be at least 3, got {max_levels}")
    order = np.argsort(x, kind="stable")
    x = np.asarray(x, dtype=np.float64)[order]
    q = np.asarray(q, dtype=np.float64)[order]
    q = q / q.sum()
    if rate <= 0 or x[0] == x[-1]:  # no rate, or one value: one level
        return lagrangian_design(x, q, M, 1.0, x[:1].copy(), lengths=lengths)
    d0 = float(np.sum(q * m_weights(x, M) * x**2))  # the distortion of one level at zero
    # lambda's range reaches down to a typical point's distortion too: with one point far
    # above the others d0 is its alone, and every lambda above the others' scale would
    # merge them into one cell
    each = m_weights(x, M) * x**2
    typical = float(np.median(each[each > 0])) if np.any(each > 0) else d0
    floor = min(d0, typical) if typical < 1e-3 * d0 else d0
    best = lagrangian_design(x, q, M, d0 * 1e3, np.zeros(1), lengths=lengths)
    # two starts: fine uniform cells (the search's own), and the fixed-rate weighted Lloyd
    # design with the most levels whose index entropy fits, from which a small lambda
    # keeps what it has, so that the result is never worse than a fixed-rate design that
    # fits the budget
    starts = (_uniform_init(x, q, rate, max_levels),
              _fixed_rate_init(x, q, M, rate, lengths, max_levels))  # fmt: skip
    for init in starts:
        lo, hi = math.log(floor * 1e-9), math.log(d0 * 1e3)
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            got = lagrangian_design(x, q, M, math.exp(mid), init, lengths=lengths)
            if got.rate <= rate + RATE_TOL:
                hi = mid
                if got.distortion < best.distortion:
                    best = got
            else:
                lo = mid
    uniform = _uniform_threshold_design(x, q, M, rate, lengths, max_levels, iters)
    if uniform is not None and uniform.distortion < best.distortion:
        best = uniform
    return best
