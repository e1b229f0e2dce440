"""Time the closed-form Lloyd design against the same iteration with scipy.integrate.quad.

Both runs use :func:`gradcomp.quantization.lloyd.lloyd_design` with the same law, init and stopping
rule; only the cell moments differ (``moments="closed_form"`` vs ``"quad"``). Reported per
M: wall time of each (closed form: best of ``--repeat``; quad: one run), the speed-up,
the iteration counts and the largest relative difference between the two level sets.
Target: at least 100x faster, levels equal to 1e-8 relative.

    python bench/bench_lloyd.py --beta 0.8 --levels 16 --M 0 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gradcomp.quantization.lloyd import lloyd_design


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beta", type=float, default=0.8, help="GenNorm shape")
    ap.add_argument("--levels", type=int, default=16)
    ap.add_argument("--M", type=float, nargs="+", default=[0.0, 2.0])
    ap.add_argument("--tol", type=float, default=1e-12)
    ap.add_argument("--repeat", type=int, default=5, help="closed-form runs (best kept)")
    args = ap.parse_args(argv)
    params = {"beta": args.beta, "loc": 0.0, "scale": 1.0}

    print(f"GenNorm beta={args.beta}, {args.levels} levels, tol={args.tol}")
    print(
        f"{'M':>4} {'closed [s]':>11} {'quad [s]':>9} {'speed-up':>9} "
        f"{'iters':>11} {'max rel diff':>13} {'distortion':>12}"
    )
    for M in args.M:
        best = float("inf")
        for _ in range(args.repeat):
            fast, t_fast = timed(lloyd_design, "gennorm", params, args.levels, M, tol=args.tol)
            best = min(best, t_fast)
        slow, t_slow = timed(
            lloyd_design, "gennorm", params, args.levels, M, tol=args.tol, moments="quad"
        )
        rel = np.max(np.abs(slow.levels - fast.levels) / np.abs(fast.levels))
        print(
            f"{M:>4g} {best:>11.4f} {t_slow:>9.2f} {t_slow / best:>8.0f}x "
            f"{fast.n_iter:>5d}/{slow.n_iter:<5d} {rel:>13.2e} {fast.distortion:>12.6g}"
        )


if __name__ == "__main__":
    main()
