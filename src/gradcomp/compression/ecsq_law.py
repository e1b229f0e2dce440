"""The entropy-constrained design of a fitted law (:func:`ecsq_for_law`): thresholds on a
lattice of the companded variable ``u = sign(x) |x|^g``, ``g = 1 + M/2``, scored on the law
itself (closed-form cell moments, no discretisation), for paper Y's distortion
``|x|^M (x - y)^2``.

Why a lattice. A narrow cell of width ``du`` in u and probability P costs about
``P du^2 / (12 g^2)`` of distortion and ``-P log2 P`` bits of rate: the Lagrangian
``D + lambda R`` per unit of u is least at one width, whatever the density there. So the
best entropy-coded quantizer has cells of equal width in u (at M = 0 Gish and Pierce's
uniform quantizer; for M = 2 thresholds uniform in ``x |x|``) except where the law changes
within a cell: around zero, and in the far tail.

The family (units of u): thresholds ``-(h + (a + k) Delta)`` and ``h + (b + k) Delta`` for
k = 0, 1, ..., with ``h = tau^g`` the edge of top-K's hole |x| < tau (0 without one). The
cell from ``-(h + a Delta)`` to ``h + b Delta`` holds zero: a = b = 1/2 is the midtread
quantizer, a = b = 0 the midrise one (a threshold at zero), a = b > 1/2 a dead zone, and with
a hole a, b > 0 a zero cell over the hole and the smallest kept values (on a top-K-truncated
Laplacian with M = 2 at 0.81 bits it holds 85% of them). a != b is asymmetric: under M = 2
the values near zero cost almost no distortion wherever they go, and one cell that holds
them with the first positive ones spends less rate (GenNorm beta 2 at one bit: 0.11 bits
less than the best symmetric lattice; the dynamic program over all interval cells in the
tests finds the same shape). The lattice holds while the law has probability above
:data:`TAIL_P` beyond; past that each cell is :data:`GROWTH` times wider than the one before,
to where the ``|x|^(M+2)``-weighted tail is below ``1e-13`` of the whole, and the last cell
is open. In u the distortion per unit of probability is the same in every lattice cell, so
cells k times wider over a tail of probability P add about ``P (k^2 - 1)`` of the
distortion: against the lattice to probability 1e-10 with 2% growth and no level cap, the
rule costs at most 0.002 bits, 0.008 on GenNorm beta 0.7 with M = 2 at 5 bits (6,000
levels where the other has 25,000; :data:`MAX_LEVELS` binds only beyond).

The search: ``Delta`` is fitted so that the rate reaches the target (bracketed, then false
position in ``log Delta``); (a, b) on a grid (a <= b: the law is symmetric and a mirrored
design has the same rate and distortion) are ranked by their distortion at the target, read
off designs whose lattice stops at probability 1e-3 (the same body, fewer cells), the best
three refined by a pattern search (steps 1/8 to 1/128), and of those the exact fit with the
whole lattice of least distortion is the design. The rate is the index entropy, or the mean
length of the Huffman code of the cells' probabilities (what the compressor sends).
Against a dynamic program over interval cells on a 3,000-edge grid, scored on the law
(tests/compression/test_ecsq_law.py), it is within 0.005 bits at 0.5-5 bits for GenNorm beta 0.7,
1, 2 and a top-K-truncated Laplacian, M = 0 and 2.

>>> law = {"beta": 2.0, "loc": 0.0, "scale": 1.0}
>>> q = ecsq_for_law("gennorm", law, M=2.0, rate=1.0)
>>> round(q.rate, 4), round(q.distortion, 4)  # the best symmetric lattice: 0.0933
(1.0, 0.0682)
>>> int(np.sum(q.levels < 0)), int(np.sum(q.levels > 0)) > 10  # no zero level
(12, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gradcomp.compression.ecsq_result import RATE_TOL, ECSQResult, Lengths, code_lengths
from gradcomp.quantization.symmetric_law import SymmetricLaw, _as_law
from gradcomp.quantization.tail_gamma import tail_quantile

__all__ = [
    "GROWTH", "MAX_LEVELS", "TAIL_P", "ecsq_for_law", "law_cells", "lattice_design",
    "lattice_thresholds",
]  # fmt: skip

#: The law's probability beyond the last lattice threshold (relative to what is kept).
TAIL_P = 1e-6
#: The same while the search ranks (a, b): fewer cells, the same body.
_PROXY_TAIL_P = 1e-3
#: Past the lattice, each cell is this many times wider (in u) than the one before.
GROWTH = 1.1
#: The most levels a design has (an alphabet the compressor's code table covers).
MAX_LEVELS = 8191
#: (a, b) grid of the search, in units of Delta (a <= b); with a hole a and b may be
#: negative down to -1 (a first threshold inside the hole).
_GRID = (0.0, 0.06, 0.12, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0)
_HOLE_GRID = (-1.0, -0.5, *_GRID)


def _cell_moments(law: SymmetricLaw, M: float, tau: float, t: np.ndarray) -> np.ndarray:
    """``int x^j |x|^M f`` (j = 0, 1, 2) and the probability of each cell between the sorted
    thresholds ``t`` (K,) of the unit law restricted to ``|x| >= tau`` (normalised): shape
    (4, K + 1). Each cell is cut at zero; a part ``[u, v]`` of ``|x|`` is the difference of
    the integrals from zero (body) or to infinity (tail, where that difference would lose
    its digits), computed once at each threshold."""
    floor = max(tau, 0.0)
    z = np.concatenate([[floor], np.maximum(np.abs(t), floor), [np.inf]])
    orders = np.array([[M], [M + 1.0], [M + 2.0], [0.0]])
    shift = law.log_tail_mass(tau)
    lower = law.half_moment(orders, np.zeros_like(z), z, shift)  # (4, K + 2)
    upper = law.half_moment(orders, z, np.full_like(z, np.inf), shift)
    body = lower[3] < upper[3]  # less than half of one side's mass below z: use `lower`
    k = t.size
    idx = np.arange(1, k + 1)  # z index of each threshold's |t|
    lo_i = np.concatenate([[k + 1], idx])  # the cells' ends, z indices (-inf and inf: k + 1)
    hi_i = np.concatenate([idx, [k + 1]])
    lo_neg = np.concatenate([[True], t < 0])
    hi_pos = np.concatenate([t > 0, [True]])
    zero = np.zeros_like(lo_i)

    def part(u, v):  # int_u^v over |x| for z indices u <= v (as values), (4, K + 1)
        return np.where(body[u], lower[:, v] - lower[:, u], upper[:, u] - upper[:, v])

    # positive part [max(lo, 0), hi] when hi > 0; negative part [max(-hi, 0), -lo] when lo < 0
    pos = np.where(hi_pos, part(np.where(lo_neg, zero, lo_i), hi_i), 0.0)
    neg = np.where(lo_neg, part(np.where(hi_pos, zero, hi_i), lo_i), 0.0)
    out = pos + np.array([[1.0], [-1.0], [1.0], [1.0]]) * neg  # x^1 is odd
    out[[0, 2, 3]] = np.maximum(out[[0, 2, 3]], 0.0)
    return out


def law_cells(
    law: SymmetricLaw, M: float, tau: float, thresholds: np.ndarray, lengths: Lengths = "entropy"
) -> ECSQResult:
    """The quantizer of the cells between ``thresholds`` (sorted, unit law) on the law
    restricted to ``|x| >= tau``: each level its cell's ``|x|^M``-weighted centroid, cells
    without probability dropped (an empty cell's two bounds become one, midway), rate and
    distortion exact (closed-form moments; ``lam`` NaN, no iterations)."""
    t = np.asarray(thresholds, dtype=np.float64)
    lo, hi = np.concatenate([[-np.inf], t]), np.concatenate([t, [np.inf]])
    w, wx, wx2, p = _cell_moments(law.unit, M, tau, t)
    used = p > 0
    w, wx, wx2 = w[used], wx[used], wx2[used]
    with np.errstate(invalid="ignore"):  # the middle of an infinite cell (never weightless)
        mid = np.nan_to_num(0.5 * (lo[used] + hi[used]))
    y = np.where(w > 0, wx / np.where(w > 0, w, 1.0), mid)
    d = float(np.sum(wx2 - 2.0 * y * wx + y * y * w))
    p = p[used] / np.sum(p[used])
    ell = code_lengths(p, lengths) if p.size > 1 else np.zeros(1)
    kept = np.flatnonzero(used)
    inner = np.array([0.5 * (hi[i] + lo[j]) for i, j in zip(kept[:-1], kept[1:], strict=True)])
    return ECSQResult(y, inner, p, ell, max(d, 0.0), float(np.sum(p * ell)), math.nan, float(M), 0)


def _tail_point(law: SymmetricLaw, tau: float, mass: float, tilt: float) -> float:
    """|x| beyond which the law restricted to ``|x| >= tau`` and weighted by ``|x|^tilt``
    has the fraction ``mass`` of its weight (unit law)."""
    alpha = (tilt + law.gamma0 + 1.0) / law.p
    z = tail_quantile(alpha, tau**law.p if tau > 0 else 0.0, np.array([1.0 - mass]))
    return float(z[0]) ** (1.0 / law.p)


def _growth_count(last: float, delta: float, u_max: float) -> int:
    """How many cells growing by :data:`GROWTH` from width ``delta`` reach ``u_max`` from
    ``last``: the k-th threshold is at ``last + delta (g^(k+1) - g) / (g - 1)``."""
    if last >= u_max:
        return 0
    g = GROWTH
    return max(1, math.ceil(math.log1p((u_max - last) * (g - 1.0) / (delta * g)) / math.log(g)))


def _side(start: float, delta: float, u_tail: float, u_max: float, budget: int) -> np.ndarray:
    """One side's thresholds in u (increasing, at most ``budget``): the lattice from
    ``start`` to ``u_tail``, then cells growing by :data:`GROWTH` to ``u_max``; with too
    small a budget the lattice stops earlier (and past ``budget - 1`` grown cells the last
    one is open short of ``u_max``)."""
    n = max(1, int((u_tail - start) / delta) + 1)
    if n + _growth_count(start + delta * (n - 1), delta, u_max) > budget:
        lo, hi = 1, n  # the largest lattice that leaves room for its grown cells
        while lo < hi:
            mid = (lo + hi + 1) // 2
            fits = mid + _growth_count(start + delta * (mid - 1), delta, u_max) <= budget
            lo, hi = (mid, hi) if fits else (lo, mid - 1)
        n = min(lo, budget)
    u = start + delta * np.arange(n, dtype=np.float64)
    k = min(_growth_count(u[-1], delta, u_max), budget - n)
    g = GROWTH
    return np.concatenate([u, u[-1] + delta * (g ** np.arange(2, k + 2) - g) / (g - 1.0)])


def lattice_thresholds(
    delta: float, a: float, b: float, M: float, h: float, u_tail: float, u_max: float,
    max_levels: int,
) -> np.ndarray:  # fmt: skip
    """The family's thresholds in x (module doc), sorted; ``h``, ``u_tail``, ``u_max`` and
    ``delta`` in u, a and b in units of ``delta``, at most ``max_levels - 1`` of them."""
    g = 1.0 + M / 2.0
    budget = max(1, (max_levels - 1) // 2)
    neg = _side(max(h + a * delta, 0.0), delta, u_tail, u_max, budget)
    pos = _side(max(h + b * delta, 0.0), delta, u_tail, u_max, budget)
    return np.unique(np.concatenate([-(neg[::-1] ** (1.0 / g)), pos ** (1.0 / g)]))


class _Search:
    """The rate-fitted family for one law, M, tau, target and code lengths (module doc)."""

    def __init__(
        self, law: SymmetricLaw, M: float, tau: float, rate: float, lengths: Lengths,
        max_levels: int,
    ) -> None:  # fmt: skip
        self.law, self.M, self.tau, self.rate = law, M, tau, rate
        self.lengths, self.max_levels = lengths, max_levels
        g = 1.0 + M / 2.0
        self.h = tau**g
        self.u_full = max(_tail_point(law, tau, TAIL_P, 0.0) ** g, self.h)
        self.u_tail = max(_tail_point(law, tau, _PROXY_TAIL_P, 0.0) ** g, self.h)
        self.u_max = max(_tail_point(law, tau, 1e-13, M + 2.0) ** g, self.u_tail)
        self.widest = math.log(self.u_max) + 8.0
        self.narrowest = math.log(self.u_max) - 40.0
        # warm start: the log Delta of the last estimate, and -dR/dlog Delta there
        self.log_delta, self.slope = math.log(self.u_max) - 2.0, 1.0 / math.log(2.0)
        self.known: dict[tuple[float, float], float] = {}

    def at(self, log_delta: float, a: float, b: float, full: bool = False) -> ECSQResult:
        """The member (a, b, Delta) with the proxy's lattice, or the full one."""
        u_tail = self.u_full if full else self.u_tail
        t = lattice_thresholds(math.exp(log_delta), a, b, self.M, self.h, u_tail, self.u_max,
                               self.max_levels)  # fmt: skip
        return law_cells(self.law, self.M, self.tau, t, self.lengths)

    def estimate(self, a: float, b: float) -> float:
        """log D at the target rate for (a, b): designs whose ``log Delta`` aims at the
        target (secant steps from the last estimate's, false position once bracketed), log D
        read at one within 0.003 bits of the target or interpolated linearly in R between
        two at most 0.1 bits apart around it; the exact fit when six steps find neither (inf
        if nothing fits)."""
        key = (a, b)
        if key not in self.known:
            self.known[key] = self._estimate(a, b)
        return self.known[key]

    def _estimate(self, a: float, b: float) -> float:
        pts: list[tuple[float, float, float]] = []  # (log Delta, R, log D)
        x = self.log_delta
        for _ in range(6):
            got = self.at(x, a, b)
            pts.append((x, got.rate, math.log(max(got.distortion, 1e-300))))
            if len(pts) > 1 and pts[-1][1] != pts[-2][1]:
                slope = (pts[-2][1] - pts[-1][1]) / (pts[-1][0] - pts[-2][0])
                self.slope = min(max(slope, 0.05), 5.0) if math.isfinite(slope) else self.slope
            if abs(got.rate - self.rate) < 0.003:
                self.log_delta = x
                return pts[-1][2]
            below = [p for p in pts if p[1] <= self.rate]
            above = [p for p in pts if p[1] > self.rate]
            if below and above:  # bracketed: the nearest two on either side
                (x0, r0, d0) = max(below, key=lambda p: p[1])
                (x1, r1, d1) = min(above, key=lambda p: p[1])
                w = (self.rate - r0) / (r1 - r0)
                if r1 - r0 <= 0.1:  # close enough for a straight line in (R, log D)
                    self.log_delta = x0 + w * (x1 - x0)
                    return d0 + w * (d1 - d0)
                x = x0 + w * (x1 - x0)
            else:
                x = x + (got.rate - self.rate) / self.slope
            x = min(max(x, self.narrowest), self.widest)
        fitted = self.fit(a, b)
        if fitted is None:
            return math.inf
        self.log_delta = fitted.lam
        return math.log(max(fitted.distortion, 1e-300))

    def fit(self, a: float, b: float, full: bool = False) -> ECSQResult | None:
        """The design of least rate excess at or below the target for (a, b) (the proxy's
        lattice, or the full one), None if the widest lattice still spends more."""
        return _fit_rate(lambda x: self.at(x, a, b, full), self.log_delta, self.rate,
                         self.widest)  # fmt: skip

    def refine(self, arg: tuple[float, float]) -> tuple[float, float]:
        """A pattern search on the estimates from ``arg``, steps 1/8 down to 1/128."""
        floor = (_HOLE_GRID if self.tau > 0 else _GRID)[0]
        best, step = self.estimate(*arg), 0.125
        while step >= 1 / 128:
            for da, db in ((step, 0.0), (-step, 0.0), (0.0, step), (0.0, -step),
                           (step, step), (-step, -step), (step, -step), (-step, step)):  # fmt: skip
                a, b = arg[0] + da, arg[1] + db
                if floor <= a <= b and self.estimate(a, b) < best:
                    arg, best = (a, b), self.estimate(a, b)
                    break
            else:
                step /= 2
        return arg

    def run(self) -> ECSQResult | None:
        """The grid ranked by estimate, its best three refined, and of those the exact fit
        on the full lattice of least distortion."""
        grid = _HOLE_GRID if self.tau > 0 else _GRID
        pairs = [(a, b) for i, a in enumerate(grid) for b in grid[i:]]
        ranked = sorted(pairs, key=lambda ab: self.estimate(*ab))
        refined = {self.refine(ab) for ab in ranked[:3] if math.isfinite(self.estimate(*ab))}
        fits = [f for f in (self.fit(*ab, full=True) for ab in sorted(refined)) if f is not None]
        return min(fits, key=lambda f: f.distortion) if fits else None


def _fit_rate(
    design: Callable[[float], ECSQResult], start: float, rate: float, widest: float
) -> ECSQResult | None:
    """The design at the ``log Delta`` of least rate not above ``rate`` (the rate falls as
    Delta grows): bracketed from ``start`` in doubling steps, then false position (Illinois)
    and bisection until the rate is within 1e-4 bits below the target or the bracket 1e-6
    wide. The result's ``lam`` holds its log Delta."""

    def run(x: float) -> tuple[float, ECSQResult]:
        got = design(x)
        return got.rate - rate, got

    x = start
    f, got = run(x)
    step = 0.5
    if f > RATE_TOL:  # too many bits: widen the cells
        lo, f_lo = x, f
        while True:
            x = min(x + step, widest)
            step *= 2
            f, got = run(x)
            if f <= RATE_TOL:
                hi, f_hi, best = x, f, got
                break
            if x >= widest:
                return None
            lo, f_lo = x, f
    else:
        hi, f_hi, best = x, f, got
        while True:
            x -= step
            step *= 2
            f, got = run(x)
            if f > RATE_TOL:
                lo, f_lo = x, f
                break
            hi, f_hi, best = x, f, got
            if step > 64:  # the rate cannot reach the target (a few cells hold all)
                return _tagged(best, hi)
    side = 0  # Illinois: the end kept twice in a row has its value halved
    for _ in range(60):
        if hi - lo <= 1e-6 or rate - best.rate <= 1e-4:
            break
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        f, got = run(x)
        if f <= RATE_TOL:
            hi, f_hi, best = x, f, got
            f_lo = f_lo / 2 if side == 1 else f_lo
            side = 1
        else:
            lo, f_lo = x, f
            f_hi = f_hi / 2 if side == -1 else f_hi
            side = -1
    return _tagged(best, hi)


def _tagged(got: ECSQResult, log_delta: float) -> ECSQResult:
    return ECSQResult(got.levels, got.thresholds, got.probabilities, got.lengths,
                      got.distortion, got.rate, log_delta, got.M, 0)  # fmt: skip


def lattice_design(
    law: SymmetricLaw,
    M: float,
    rate: float,
    *,
    tau: float = 0.0,
    lengths: Lengths = "entropy",
    max_levels: int = MAX_LEVELS,
) -> ECSQResult | None:
    """The best design of the family (module doc) for the unit law ``law`` restricted to
    ``|x| >= tau`` (unit scale), rate at most ``rate`` bits per value (index entropy, or
    the mean length of the Huffman code of the cells' probabilities), at most
    ``max_levels`` levels; None when no member fits. ``lam`` is NaN."""
    got = _Search(law.unit, float(M), float(tau), float(rate), lengths, max_levels).run()
    if got is None:
        return None
    return ECSQResult(got.levels, got.thresholds, got.probabilities, got.lengths,
                      got.distortion, got.rate, math.nan, got.M, 0)  # fmt: skip


def ecsq_for_law(
    family: str | SymmetricLaw,
    params: dict[str, float] | None,
    *,
    M: float,
    rate: float,
    lengths: Lengths = "entropy",
    tau: float = 0.0,
    max_levels: int = MAX_LEVELS,
) -> ECSQResult:
    """The entropy-constrained design of a fitted symmetric law (scipy names: ``norm``,
    ``laplace``, ``gennorm`` with ``beta``, ``dweibull`` with ``c``; ``loc``, ``scale``)
    restricted to ``|x - loc| >= tau`` (what top-K keeps; units of x), at most ``rate`` bits
    per value (any real number; ``lengths`` as :func:`lattice_design`): the best member of
    the lattice family (module doc), or one level (the weighted centroid) when the rate
    affords no two. Levels and thresholds in units of x; distortion in x^(M+2), exact on the
    law; ``lam`` NaN."""
    law = _as_law(family, params)
    scale, loc, t = law.scale, law.loc, float(tau) / law.scale
    got = lattice_design(law.unit, M, rate, tau=t, lengths=lengths, max_levels=max_levels)
    if got is None or rate <= 0:
        got = law_cells(law.unit, M, t, np.zeros(0), lengths)
    return ECSQResult(got.levels * scale + loc, got.thresholds * scale + loc, got.probabilities,
                      got.lengths, got.distortion * scale ** (M + 2.0), got.rate, math.nan,
                      float(M), 0)  # fmt: skip
