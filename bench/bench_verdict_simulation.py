"""Coverage, false verdicts and power of the verdicts' procedure on simulated studies.

Runs :func:`gradcomp.statistics.verdict_simulation.replicate` (the code that writes verdicts.tsv)
on the scenarios of :data:`gradcomp.statistics.verdict_simulation.SCENARIOS`: the default run's
structure (uniform over five kept sets with a kink, quantizers on two kept sets, dense
compressors against the front, one configuration against the uncompressed aggregate) and
the curve shapes that break a chord (sparse, steep, kinked, dense), for several numbers of
warm starts. Per scenario, design and question:

- ``cover``: the share of studies on the truth (no difference) whose 95% interval covers it;
- ``false``: the share of those called better or worse after Holm;
- ``cover_off`` / ``equiv_off``: 1.5 margins off the truth (worse and better in turn over
  the questions), the interval's coverage and the share called equivalent;
- ``power -`` / ``power +``: the share called better at a true advantage, worse at a true
  deficit, of the size ``--power-shift`` (default: the mean min_detectable stated under the
  null), each from ``--power-reps`` studies.

The nominal levels are the baseline of the same run: coverage 95%, false verdicts at most 5%,
power 80% at the stated min_detectable. ``--interpolation chord`` answers with the chord read
as the curve (the procedure before the bracket), to show what it misses.

    python bench/bench_verdict_simulation.py --scenarios default --designs 16 40 --reps 1000
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from gradcomp.statistics.verdict_simulation import SCENARIOS, replicate

MARGIN = 0.004


def rates(t, column_test):
    return column_test.groupby(t["question"], sort=False).mean()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    ap.add_argument("--designs", nargs="+", type=int, default=[16, 40], help="warm starts")
    ap.add_argument("--reps", type=int, default=300, help="studies per condition")
    ap.add_argument("--power-reps", type=int, default=0, help="studies per planted shift")
    ap.add_argument("--power-shift", type=float, default=None,
                    help="nats (default: the null's mean min_detectable per question)")  # fmt: skip
    ap.add_argument("--interpolation", choices=["convex", "chord"], default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(
        f"{'scenario':>8} {'W':>3} {'question':>58} {'cover':>6} {'false':>6} "
        f"{'cover_off':>9} {'equiv_off':>9} {'min_det':>8} {'power -':>8} {'power +':>8}"
    )
    for name in args.scenarios:
        scenario = SCENARIOS[name]()
        if args.interpolation:
            scenario = replace(scenario, interpolation=args.interpolation)
        n = len(scenario.questions())
        signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        for w in args.designs:
            t0 = time.perf_counter()
            seed = args.seed + 1000 * w + len(name)
            null = replicate(scenario, w, 1, args.reps, seed=seed, margin=MARGIN)
            off = replicate(scenario, w, 1, args.reps, seed=seed + 1, shift=1.5 * MARGIN * signs,
                            margin=MARGIN)  # fmt: skip
            inside = (null["loss_diff_lo"] <= null["truth"]) & (
                null["loss_diff_hi"] >= null["truth"]
            )
            inside_off = (off["loss_diff_lo"] <= off["truth"]) & (
                off["loss_diff_hi"] >= off["truth"]
            )
            cover, cover_off = rates(null, inside), rates(off, inside_off)
            false = rates(null, null["verdict"].isin(["better", "worse"]))
            equiv = rates(off, off["verdict"] == "equivalent")
            stated = null.groupby("question", sort=False)["min_detectable"].mean()
            shift = (np.full(n, args.power_shift) if args.power_shift is not None
                     else np.nan_to_num(stated.to_numpy(), posinf=0.0))  # fmt: skip
            minus = plus = None
            if args.power_reps:
                b = replicate(scenario, w, 1, args.power_reps, seed=seed + 2, shift=-shift,
                              margin=MARGIN)  # fmt: skip
                d = replicate(scenario, w, 1, args.power_reps, seed=seed + 3, shift=shift,
                              margin=MARGIN)  # fmt: skip
                minus, plus = rates(b, b["verdict"] == "better"), rates(d, d["verdict"] == "worse")
            for q in cover.index:
                power = ("" if minus is None
                         else f"{minus[q]:>8.3f} {plus[q]:>8.3f}")  # fmt: skip
                print(
                    f"{name:>8} {w:>3} {q[:58]:>58} {cover[q]:>6.3f} {false[q]:>6.3f} "
                    f"{cover_off[q]:>9.3f} {equiv[q]:>9.3f} {stated[q]:>8.4f} {power}"
                )
            print(
                f"{name:>8} {w:>3} {'(' + str(args.reps) + ' studies per condition)':>58} "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
