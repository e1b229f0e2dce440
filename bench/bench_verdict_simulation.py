"""Coverage, false verdicts and power of the verdicts' procedure on simulated studies.

Runs :func:`gradcomp.lossy.verdict_simulation.replicate` (the code that writes verdicts.tsv,
on simulated one-round tables of the default run's structure: a reference with a dominated
point and a gap, noise shared within a top-K group and between warm starts, test curves of
five, three and one configurations) for several designs (warm starts x seeds). Per design
and question: the share of the null studies whose 95% interval covers 0, the share of
"better" / "worse" after Holm, the mean stated min_detectable, and the share of studies
that find ("better") a planted difference of 1x and 2x that min_detectable. The baseline of
the same run is the nominal level: coverage 95%, false verdicts at most 5%, power 80% at 1x.

    python bench/bench_verdict_simulation.py --designs 6x2 12x1 16x1 24x1 --reps 300
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gradcomp.lossy.verdict_simulation import default_scenario, replicate


def design(text: str) -> tuple[int, int]:
    w, s = text.lower().split("x")
    return int(w), int(s)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", nargs="+", type=design,
                    default=[(6, 2), (12, 1), (16, 1), (24, 1)],
                    help="warm starts x seeds, e.g. 16x1")  # fmt: skip
    ap.add_argument("--reps", type=int, default=300, help="null studies per design")
    ap.add_argument("--power-reps", type=int, default=100, help="studies per planted shift")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    scenario = default_scenario()
    order = [q["test"] for q in scenario.questions()]
    print(f"{'design':>7} {'question':>34} {'coverage':>9} {'false':>6} {'min_det':>8} "
          f"{'power 1x':>9} {'power 2x':>9}")  # fmt: skip
    for w, s in args.designs:
        t0 = time.perf_counter()
        null = replicate(scenario, w, s, args.reps, seed=args.seed + 100 * w + s)
        by = null.groupby("question", sort=False)
        covered = (
            ((null["loss_diff_lo"] <= 0) & (null["loss_diff_hi"] >= 0))
            .groupby(null["question"], sort=False)
            .mean()
        )
        false = null["verdict"].isin(["better", "worse"]).groupby(null["question"], sort=False)
        stated = by["min_detectable"].mean()
        shifts = -np.array([stated[next(q for q in stated.index if q.startswith(o + " "))]
                            for o in order])  # fmt: skip
        found = {}
        for factor in (1.0, 2.0):
            t = replicate(
                scenario, w, s, args.power_reps, seed=args.seed + 7 + w, shift=factor * shifts
            )
            found[factor] = (t["verdict"] == "better").groupby(t["question"], sort=False).mean()
        for q in stated.index:
            print(f"{w:>4}x{s:<2} {q[:34]:>34} {covered[q]:>9.3f} {false.mean()[q]:>6.3f} "
                  f"{stated[q]:>8.4f} {found[1.0][q]:>9.3f} {found[2.0][q]:>9.3f}")  # fmt: skip
        any_false = null["verdict"].isin(["better", "worse"]).mean()
        print(
            f"{w:>4}x{s:<2} {'all questions':>34} {covered.min():>9.3f} {any_false:>6.3f}"
            f"   ({args.reps} null studies, {time.perf_counter() - t0:.0f} s)"
        )


if __name__ == "__main__":
    main()
