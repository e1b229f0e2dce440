"""How far the entropy-constrained design of a fitted law is from the best entropy-coded
quantizer, in bits: for GenNorm beta 0.7, 1, 2 (unit scale) and a top-K-truncated Laplacian
(GenNorm beta 1 restricted to |x| >= tau = -ln 0.452: the 45.2% largest magnitudes kept, as
tests/ecsq_brute_force.py defines it), M = 0 and 2, target rates 0.5-5 bits.

Per (law, M, rate): ``design_bits`` and ``design_distortion``, the rate (index entropy) and
M-weighted distortion of :func:`gradcomp.compression.ecsq_law.ecsq_for_law` with
``lengths="entropy"``; ``dp_bits``, the rate of the best entropy-constrained quantizer at
that distortion, from a brute-force Lagrangian dynamic program over interval cells whose
ends lie on a fine grid (about 3,000 edges), every cell scored on the continuous law with
closed-form truncated gamma moments from scipy (the reference lives in
tests/ecsq_brute_force.py, shared with tests/compression/test_ecsq_law.py, and imports nothing
of the library's); ``dp_span``, how many bits apart the two DP vertices around that distortion
are; ``gap = design_bits - dp_bits``; and ``rd_bits``, R(D) at that distortion, read off
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
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from gradcomp.compression.ecsq_law import ecsq_for_law
from gradcomp.quantization.rate_distortion import distortion_rate_curve

# the brute-force reference, shared with tests/compression/test_ecsq_law.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from ecsq_brute_force import LAWS, Law, dp_rate, dp_span, dp_vertices  # noqa: E402


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
