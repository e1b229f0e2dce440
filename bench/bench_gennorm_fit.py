"""Time gradcomp's GenNorm MLE against scipy.stats.gennorm.fit.

Samples come from a GenNorm with a gradient-like shape (``--beta``, default 0.8) and a small
scale; both fitters run on the same float64 sample, with a free loc and with ``floc=0``.  Both
log-likelihoods are recomputed the same way (sum of scipy's ``gennorm.logpdf``) so that the
difference compares the optima, not the bookkeeping.  Times are the best of ``--repeat``.

    python bench/bench_gennorm_fit.py --sizes 1e5 1e6 1e7 --repeat 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.stats

from gradcomp.distributions import fit_gennorm


def best_time(repeat: int, fn, *args, **kwargs):
    """(result of the last call, best wall time in seconds over ``repeat`` calls)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return out, best


def total_loglik(x: np.ndarray, beta: float, loc: float, scale: float) -> float:
    step = 1 << 20
    return float(
        sum(
            scipy.stats.gennorm.logpdf(x[i : i + step], beta, loc, scale).sum()
            for i in range(0, x.size, step)
        )
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per fitter (best kept)")
    ap.add_argument(
        "--scipy-max-size",
        type=float,
        default=1e6,
        help="skip scipy above this many entries (it takes minutes at 1e7)",
    )
    ap.add_argument("--scipy-repeat", type=int, default=1, help="timed runs of scipy's fit")
    ap.add_argument("--beta", type=float, default=0.8)
    ap.add_argument("--scale", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    header = (
        f"{'size':>10} {'loc':>6} {'ours_s':>9} {'scipy_s':>9} {'speedup':>8} "
        f"{'loglik_ours':>18} {'loglik_scipy':>18} {'ours-scipy':>11} "
        f"{'beta_ours':>9} {'beta_scipy':>10}"
    )
    print(
        f"GenNorm(beta={args.beta}, loc=0, scale={args.scale}) samples; "
        f"best of {args.repeat} (ours), {args.scipy_repeat} (scipy)"
    )
    print(header)
    for size in (int(s) for s in args.sizes):
        x = scipy.stats.gennorm.rvs(args.beta, scale=args.scale, size=size, random_state=rng)
        for floc in (None, 0.0):
            ours, t_ours = best_time(args.repeat, fit_gennorm, x, floc=floc)
            p = ours.params
            ll_ours = total_loglik(x, p["beta"], p["loc"], p["scale"])
            mode = "free" if floc is None else "floc=0"
            if size <= args.scipy_max_size:
                kw = {} if floc is None else {"floc": floc}
                sp, t_sp = best_time(args.scipy_repeat, scipy.stats.gennorm.fit, x, **kw)
                ll_sp = total_loglik(x, *sp)
                print(
                    f"{size:>10} {mode:>6} {t_ours:>9.4f} {t_sp:>9.3f} "
                    f"{t_sp / t_ours:>7.1f}x {ll_ours:>18.6f} {ll_sp:>18.6f} "
                    f"{ll_ours - ll_sp:>+11.2e} {p['beta']:>9.5f} {sp[0]:>10.5f}"
                )
            else:
                print(
                    f"{size:>10} {mode:>6} {t_ours:>9.4f} {'skipped':>9} {'-':>8} "
                    f"{ll_ours:>18.6f} {'skipped':>18} {'-':>11} {p['beta']:>9.5f} "
                    f"{'-':>10}"
                )


if __name__ == "__main__":
    main()
