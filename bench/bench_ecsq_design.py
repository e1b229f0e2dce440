"""How far the entropy-constrained design of a fitted law is from the best entropy-coded
quantizer, in bits: for GenNorm beta 0.7, 1, 2 (unit scale) and a top-K-truncated Laplacian
(GenNorm beta 1 restricted to |x| >= tau = -ln 0.452: the 45.2% largest magnitudes kept, as
tests/test_ecsq_law.py defines it), M = 0 and 2, target rates 0.5-5 bits.

Per (law, M, rate): ``design_bits`` and ``design_distortion``, the rate (index entropy) and
M-weighted distortion of :func:`gradcomp.quantization.ecsq_law.ecsq_for_law` with
``lengths="entropy"``; ``dp_bits``, the rate of the best entropy-constrained quantizer at
that distortion, from a brute-force Lagrangian dynamic program over interval cells whose
ends lie on a fine grid (about 3,000 edges), every cell scored on the continuous law with
closed-form truncated gamma moments from scipy (the approach of tests/test_ecsq_law.py,
written again here: nothing of the library's); ``dp_span``, how many bits apart the two DP
vertices around that distortion are; ``gap = design_bits - dp_bits``; and ``rd_bits``,
R(D) at that distortion, read off
:func:`gradcomp.quantization.rate_distortion.distortion_rate_curve` (D(R) on a 0.01-bit
grid, inverted by linear interpolation in log D), with ``rd_change`` its ``grid_change`` at
the nearest rate (relative change of D against a grid of half the size).

Reading the gap. Where ``dp_span`` is over 0.15 bits (the Lagrangian skips a stretch of the
operational curve that is not convex, or its multipliers are too sparse) ``dp_bits`` is the
rate of the vertex that reaches the distortion, an upper bound, and the gap reads low; where
no vertex reaches it (the grid too coarse for the design's thousands of cells: GenNorm beta
0.7, M = 2 at 5 bits) ``dp_bits`` is inf. The DP's thresholds lie on its grid and the
design's do not, so the gap may be a few thousandths of a bit below zero. After the table:
the largest difference between the design's own rate and distortion and the same quantizer
scored here on the law, and CPU seconds per part (about 5 minutes in all, mostly R(D)).

    python bench/bench_ecsq_design.py
    python bench/bench_ecsq_design.py --laws gennorm2 topk-laplace --M 2 --rates 0.5 1
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special, stats
from threadpoolctl import threadpool_limits

from gradcomp.quantization.ecsq_law import ecsq_for_law
from gradcomp.quantization.rate_distortion import distortion_rate_curve

#: top-K keeps the 45.2% largest magnitudes of a unit Laplacian: |x| >= -ln 0.452
TAU = -math.log(0.452)
#: name -> (scipy family, params, beta, tau), as in tests/test_ecsq_law.py
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
    """Candidate thresholds: per side ``lattice`` evenly spaced in |x|^(1 + M/2) up to where
    the |x|^(M+2)-weighted law has 1e-9 of its weight beyond, and ``body`` evenly spaced in
    |x| over where the law has all but 1e-4; zero; +-tau with a hole."""
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


def dp_vertices(law: Law, M: float, n_lam: int, lattice: int, body: int) -> np.ndarray:
    """(R, D) of the DP's optimal partitions for ``n_lam`` multipliers from 2e-5 to 3 times
    E|X|^(M+2), sorted by R: vertices of the lower convex hull of the operational curve."""
    dp = CellDP(law, M, grid_edges(law, M, lattice, body))
    d0 = float(law.cum(M, 2, np.inf))
    points = {dp.solve(lam) for lam in d0 * np.geomspace(2e-5, 3.0, n_lam)}
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


def rd_reader(family: str, params: dict, M: float, tau: float, top: float, grid_size: int):
    """R(D) of the law: a function of D giving (R in bits, grid_change at the nearest rate),
    from D(R) on a 0.01-bit grid to ``top`` bits (NaN past what the sweep reached)."""
    df = distortion_rate_curve(family, params, M, rates=np.arange(0.0, top + 1e-9, 0.01),
                               grid_size=grid_size, tau=tau)  # fmt: skip
    df = df[np.isfinite(df["distortion"]) & (df["distortion"] > 0)]
    r, log_d = df["rate_bits"].to_numpy(), np.log(df["distortion"].to_numpy())
    change = df["grid_change"].to_numpy()

    def read(distortion: float) -> tuple[float, float]:
        x = math.log(distortion)
        if not log_d[-1] <= x <= log_d[0]:
            return math.nan, math.nan
        rate = float(np.interp(x, log_d[::-1], r[::-1]))
        return rate, float(change[int(np.argmin(np.abs(r - rate)))])

    return read


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--laws", nargs="+", choices=list(LAWS), default=list(LAWS))
    ap.add_argument("--M", type=float, nargs="+", default=[0.0, 2.0])
    ap.add_argument("--rates", type=float, nargs="+", default=[0.5, 1.0, 2.0, 3.0, 4.0, 5.0])
    ap.add_argument("--dp-lattice", type=int, default=1200,
                    help="DP edges per side evenly spaced in |x|^(1 + M/2)")  # fmt: skip
    ap.add_argument("--dp-body", type=int, default=300,
                    help="DP edges per side evenly spaced in |x| over the body")  # fmt: skip
    ap.add_argument("--dp-multipliers", type=int, default=70)
    ap.add_argument("--rd-grid", type=int, default=800, help="distortion_rate_curve grid_size")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads")
    args = ap.parse_args(argv)

    print(f"{'law':<13} {'M':>3} {'rate':>4} {'design_bits':>11} {'design_distortion':>17} "
          f"{'dp_bits':>8} {'dp_span':>7} {'gap':>8} {'rd_bits':>8} {'rd_change':>9}")  # fmt: skip
    seconds = {"design": 0.0, "dp": 0.0, "rd": 0.0}
    worst_bits = worst_dist = 0.0
    with threadpool_limits(args.threads):
        for name in args.laws:
            family, extra, beta, tau = LAWS[name]
            params = {"loc": 0.0, "scale": 1.0, **extra}
            law = Law(beta, tau)
            for M in args.M:
                t0 = time.process_time()
                vertices = dp_vertices(law, M, args.dp_multipliers, args.dp_lattice,
                                       args.dp_body)  # fmt: skip
                t1 = time.process_time()
                rd = rd_reader(family, params, M, tau, max(args.rates) + 0.2, args.rd_grid)
                t2 = time.process_time()
                seconds["dp"] += t1 - t0
                seconds["rd"] += t2 - t1
                for rate in args.rates:
                    t0 = time.process_time()
                    got = ecsq_for_law(family, params, M=M, rate=rate, lengths="entropy", tau=tau)
                    seconds["design"] += time.process_time() - t0
                    bits, dist = got.rate, got.distortion
                    h, d = law.score(M, got.thresholds, got.levels)
                    worst_bits = max(worst_bits, abs(h - bits))
                    worst_dist = max(worst_dist, abs(d / dist - 1.0))
                    dp, span = dp_rate(vertices, dist), dp_span(vertices, dist)
                    rd_bits, change = rd(dist)
                    print(f"{name:<13} {M:>3g} {rate:>4g} {bits:>11.4f} {dist:>17.6g} "
                          f"{dp:>8.4f} {span:>7.3f} {bits - dp:>8.4f} {rd_bits:>8.4f} "
                          f"{change:>9.2%}")  # fmt: skip
    print(f"design vs scored here on the law: rate within {worst_bits:.1e} bits, distortion "
          f"within {worst_dist:.1e} relative")  # fmt: skip
    print("CPU seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))


if __name__ == "__main__":
    main()
