"""A brute-force reference for the entropy-constrained design of a fitted law
(gradcomp.compression.ecsq_law), shared by tests/compression/test_ecsq_law.py and
bench/bench_ecsq_design.py: a Lagrangian dynamic program over interval cells whose ends lie
on a fine grid, every cell scored on the continuous law with closed-form truncated gamma
moments from scipy. It imports nothing of the library's: it is the independent reference.
A helper module, not a test file (pytest collects test_*.py only); the tests import it as
they import conftest (tests/ is on sys.path), the bench puts tests/ on sys.path first."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

#: top-K keeps the 45.2% largest magnitudes of a unit Laplacian: |x| >= -ln 0.452
TAU = -math.log(0.452)
#: name -> (scipy family, params, beta, tau): GenNorm beta 0.7, 1, 2 and the top-K Laplacian
LAWS = {
    "gennorm0.7": ("gennorm", {"beta": 0.7}, 0.7, 0.0),
    "gennorm1": ("gennorm", {"beta": 1.0}, 1.0, 0.0),
    "gennorm2": ("gennorm", {"beta": 2.0}, 2.0, 0.0),
    "topk-laplace": ("laplace", {}, 1.0, TAU),
}


class Law:
    """exp(-|x|^beta) (unit GenNorm; beta 1: the unit Laplacian) restricted to |x| >= tau and
    renormalised; its moments from the regularised incomplete gamma function: for t >= 0,
    int_0^t x^n f = Gamma((n + 1)/beta) / (2 Gamma(1/beta)) P((n + 1)/beta, t^beta)."""

    def __init__(self, beta: float, tau: float = 0.0):
        self.beta, self.tau = beta, tau
        self.kept = special.gammaincc(1.0 / beta, tau**beta)

    def half(self, n: float, t) -> np.ndarray:
        """int over tau <= x <= max(t, tau) of x^n f(x), kept law."""
        a = (n + 1.0) / self.beta
        c = special.gamma(a) / (2.0 * special.gamma(1.0 / self.beta) * self.kept)
        t = np.maximum(np.asarray(t, dtype=np.float64), self.tau)
        return c * (special.gammainc(a, t**self.beta) - special.gammainc(a, self.tau**self.beta))

    def cum(self, M: float, j: int, e) -> np.ndarray:
        """int_{-inf}^e |x|^M x^j f(x) dx (e may be +-inf)."""
        e = np.asarray(e, dtype=np.float64)
        total = self.half(M + j, np.inf)
        neg = (-1) ** j * (total - self.half(M + j, np.where(e < 0, -e, 0.0)))
        pos = (-1) ** j * total + self.half(M + j, np.where(e > 0, e, 0.0))
        return np.where(e <= 0, neg, pos)

    def score(self, M: float, thresholds, levels) -> tuple[float, float]:
        """(index entropy in bits, M-weighted distortion) of a quantizer."""
        e = np.concatenate([[-np.inf], thresholds, [np.inf]])
        p = np.diff(self.cum(0.0, 0, e))
        w, wx, wx2 = (np.diff(self.cum(M, j, e)) for j in (0, 1, 2))
        p = p[p > 0]
        return float(-np.sum(p * np.log2(p))), float(np.sum(wx2 - 2 * levels * wx + levels**2 * w))


def grid_edges(law: Law, M: float, lattice: int = 1200, body: int = 300) -> np.ndarray:
    """Candidate thresholds (about 3,000 by default): per side ``lattice`` evenly spaced in
    |x|^(1 + M/2) up to where the |x|^(M+2)-weighted law has 1e-9 of its weight beyond, and
    ``body`` evenly spaced in |x| over where the law has all but 1e-4; zero; +-tau with a
    hole."""
    g = 1.0 + M / 2.0
    top = stats.gamma.isf(1e-9, (M + 3.0) / law.beta) ** (1.0 / law.beta)
    far = stats.gamma.isf(1e-4, 1.0 / law.beta) ** (1.0 / law.beta)
    grid = np.linspace(0.0, top**g, lattice) ** (1.0 / g)
    half = np.unique(np.concatenate([grid, np.linspace(0.0, min(far, top), body), [law.tau]]))
    half = half[half > law.tau] if law.tau > 0 else half[half > 0]
    return np.concatenate([-half[::-1], [-law.tau] if law.tau > 0 else [], [0.0],
                           [law.tau] if law.tau > 0 else [], half])  # fmt: skip


class CellDP:
    """min over interval partitions with ends on ``edges`` of D + lam H: J(j) = min over
    i < j of J(i) + D(i, j) + lam h(P(i, j)), cell (e_i, e_j) with its weighted centroid,
    h(P) = -P log2 P; e_0 = -inf, e_N = inf."""

    def __init__(self, law: Law, M: float, edges: np.ndarray):
        e = np.concatenate([[-np.inf], edges, [np.inf]])
        c = [law.cum(0.0, 0, e)] + [law.cum(M, j, e) for j in (0, 1, 2)]
        # rows j, columns i: the cell (e_i, e_j), contiguous for the recursion's row reads
        p, w, wx, wx2 = (ci[:, None] - ci[None, :] for ci in c)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = wx2 - np.where(w > 0, wx**2 / w, 0.0)
            h = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
        lower = np.tril(np.ones(p.shape, dtype=bool), -1)
        self.d = np.where(lower, np.maximum(d, 0.0), np.inf)
        self.h = np.where(lower, h, 0.0)

    def solve(self, lam: float) -> tuple[float, float]:
        """(H, D) of the optimal partition for ``lam``."""
        cost = self.d + lam * self.h
        n = cost.shape[0]
        best, arg = np.full(n, np.inf), np.zeros(n, dtype=np.int64)
        best[0] = 0.0
        for j in range(1, n):
            v = best[:j] + cost[j, :j]
            arg[j] = int(np.argmin(v))
            best[j] = v[arg[j]]
        cuts = [n - 1]
        while cuts[-1] > 0:
            cuts.append(int(arg[cuts[-1]]))
        pairs = list(zip(cuts[1:], cuts[:-1], strict=True))
        return sum(self.h[j, i] for i, j in pairs), sum(self.d[j, i] for i, j in pairs)


def dp_vertices(
    law: Law, M: float, multipliers: int = 70, lattice: int = 1200, body: int = 300
) -> np.ndarray:
    """(R, D) of the DP's optimal partitions (edges from :func:`grid_edges` with ``lattice``
    and ``body``) for ``multipliers`` multipliers from 2e-5 to 3 times E|X|^(M+2), sorted by
    R: vertices of the lower convex hull of the operational curve."""
    dp = CellDP(law, M, grid_edges(law, M, lattice, body))
    d0 = float(law.cum(M, 2, np.inf))
    points = {dp.solve(lam) for lam in d0 * np.geomspace(2e-5, 3.0, multipliers)}
    return np.array(sorted(points))


def dp_rate(vertices: np.ndarray, distortion: float) -> float:
    """The DP's rate at ``distortion``: on the chord between the two vertices around it when
    they are at most 0.15 bits apart, else (a stretch the Lagrangian skips: the operational
    curve is not convex there, and no one partition lies on the chord) the rate of the
    vertex that reaches it; inf when no vertex does."""
    r, d = vertices[:, 0], vertices[:, 1]
    below = np.flatnonzero(d <= distortion)
    if below.size == 0:
        return math.inf
    k = below[0]
    if k == 0 or r[k] - r[k - 1] > 0.15:
        return float(r[k])
    return float(r[k - 1] + (d[k - 1] - distortion) / (d[k - 1] - d[k]) * (r[k] - r[k - 1]))


def dp_span(vertices: np.ndarray, distortion: float) -> float:
    """How many bits apart the two DP vertices around ``distortion`` are (NaN when no vertex
    reaches it, 0 at or above the first): over 0.15 :func:`dp_rate` is the upper vertex's
    rate, an upper bound on the DP's."""
    r, d = vertices[:, 0], vertices[:, 1]
    below = np.flatnonzero(d <= distortion)
    if below.size == 0:
        return math.nan
    k = below[0]
    return 0.0 if k == 0 else float(r[k] - r[k - 1])
