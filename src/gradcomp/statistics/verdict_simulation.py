"""Simulated one-round studies with a known truth, to check the verdicts' procedure.

The verdicts (:mod:`gradcomp.statistics.verdicts`) are only worth what their coverage and power
are on data of the real structure, and on the curve shapes that break a reading between
reference points. :func:`replicate` answers studies drawn from the model of
:mod:`gradcomp.statistics.simulated_study` by the code that writes verdicts.tsv.

Scenarios (:data:`SCENARIOS`): :func:`default_scenario` (the default run's structure: a
reference over five kept sets with a +0.1-nat kink at 1 bit per kept value, quantizer
configurations on two kept sets, dense compressors against the front, one test against the
uncompressed aggregate), :func:`sparse_scenario` (three reference points over 2 in log2
bits on a convex curve, gentle or steep), :func:`kinked_scenario` (a +0.1 step between the
first two reference points, like uniform's R1), :func:`dense_scenario` (a point every
0.2 in log2 bits) and :func:`s_scenario` (an S, and tests within 0.1% of a reference
point, down the kink's slope too; ``s_precise`` with a fifth of the noise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from gradcomp.statistics.simulated_study import (
    Config,
    Scenario,
    Shape,
    TestCurve,
    label,
    simulate,
)
from gradcomp.statistics.verdicts import verdicts_from_points

__all__ = [
    "SCENARIOS",
    "default_scenario",
    "dense_scenario",
    "kinked_scenario",
    "replicate",
    "s_scenario",
    "sparse_scenario",
]


def _configs(kept_set: str, rows: Sequence[tuple]) -> tuple[Config, ...]:
    return tuple(Config(r, kept_set, *rest) for r, *rest in rows)


K45, K20, K10, K5, K2, DENSE = (
    "top-K 45.2%", "top-K 20%", "top-K 10%", "top-K 5%", "top-K 2%", "dense",
)  # fmt: skip


def default_scenario() -> Scenario:
    """The default run's structure (module doc), from the development machine's one-round
    study (bits per entry, mean loss increases, loadings and own noise in nats): uniform at
    top-K 45.2% with 2 to 64 levels (1.58-3.19 bits; +0.17 at two levels, a kink to +0.004
    at three, flat after), 20% (R1, R2, R4), 10% (R1, R2, R4), 5% and 2% (R1, R2). Test
    configurations: a quantizer at 1, 2 and 4 bits per kept value on 45.2% and at 1 and 2 on
    10% (kept-set truth), three dense configurations and one in a gap of the front
    (frontier truth), and the quantizer's 1-bit configuration against the uncompressed
    aggregate."""
    shapes = {
        K45: Shape(knots=((1.58, 0.17), (1.70, 0.004), (2.4, 0.0), (3.2, 0.0))),
        K20: Shape(knots=((1.07, 0.037), (1.17, 0.006), (1.37, 0.005))),
        K10: Shape(knots=((0.70, 0.014), (0.76, 0.0125), (0.85, 0.012))),
        K5: Shape(knots=((0.46, 0.025), (0.49, 0.024))),
        K2: Shape(knots=((0.26, 0.034), (0.28, 0.033))),
    }
    # (rate, bits per entry, loading, own noise)
    reference = {
        "uniform": _configs(K45, [(1, 1.583, 0.0, 0.18), (2, 1.807, 0.018, 0.02),
                                  (3, 2.118, 0.018, 0.012), (4, 2.370, 0.018, 0.01),
                                  (5, 2.764, 0.018, 0.01), (6, 3.192, 0.018, 0.01)]),
        "uniformq3": _configs(K45, [(2, 1.70, 0.018, 0.03)]),
        "uniformq5": _configs(K45, [(3, 1.90, 0.018, 0.015)]),
        "uniformq6": _configs(K45, [(3, 1.97, 0.018, 0.015)]),
        "uniformq7": _configs(K45, [(3, 2.04, 0.018, 0.013)]),
        "uniformk20": _configs(K20, [(1, 1.069, 0.05, 0.03), (2, 1.171, 0.06, 0.02),
                                     (4, 1.370, 0.06, 0.02)]),
        "uniformk10": _configs(K10, [(1, 0.709, 0.09, 0.01), (2, 0.763, 0.1, 0.01),
                                     (4, 0.846, 0.1, 0.008)]),
        "uniformk5": _configs(K5, [(1, 0.462, 0.1, 0.01), (2, 0.491, 0.11, 0.01)]),
        "uniformk2": _configs(K2, [(1, 0.262, 0.12, 0.006), (2, 0.276, 0.13, 0.006)]),
    }  # fmt: skip
    quantizer = _configs(K45, [(1, 1.5832, 0.018, 0.008), (2, 1.904, 0.018, 0.01),
                               (4, 2.659, 0.018, 0.01)])  # fmt: skip
    quantizerk10 = _configs(K10, [(1, 0.710, 0.1, 0.005), (2, 0.783, 0.1, 0.005)])
    dense3 = _configs(DENSE, [(2, 0.636, 0.02, 0.006), (3, 1.054, 0.02, 0.01),
                              (4, 1.622, 0.02, 0.005)])  # fmt: skip
    tests = (
        TestCurve("quantizer", quantizer, "kept_set"),
        TestCurve("quantizerk10", quantizerk10, "kept_set"),
        TestCurve("dense3", dense3, "frontier"),
        TestCurve("dense1", _configs(DENSE, [(1, 1.217, 0.03, 0.05)]), "frontier"),
        TestCurve("lossless", _configs(K45, [(1, 1.583, 0.018, 0.008)]), "exact"),
    )
    return Scenario(shapes=shapes, reference=reference, tests=tests)


def sparse_scenario(steep: bool = False) -> Scenario:
    """Three reference points over 2 in log2 bits (1, 2 and 4 bits per entry) on one kept
    set, on a convex curve ``0.12 * 2^(-b / 0.7)`` that the chord misses by 0.0033 nats
    (0.8 margins) half-way in log2 bits (``steep``: ``0.27 * 2^(-b / 0.6)``, by 0.0065-0.0082);
    test configurations at 1.41 and 2.83 bits (half-way in log2 bits), 1.2 and 3.4."""
    amplitude, halving = (0.27, 0.6) if steep else (0.12, 0.7)
    shapes = {K45: Shape(floor=0.0, amplitude=amplitude, halving=halving)}
    reference = {"uniform": _configs(K45, [(1, 1.0, 0.02, 0.01), (2, 2.0, 0.02, 0.01),
                                           (4, 4.0, 0.02, 0.01)])}  # fmt: skip
    test = _configs(K45, [(5, 1.41, 0.02, 0.005), (6, 2.83, 0.02, 0.005),
                          (7, 1.2, 0.02, 0.005), (8, 3.4, 0.02, 0.005)])  # fmt: skip
    return Scenario(shapes=shapes, reference=reference,
                    tests=(TestCurve("quantizer", test, "kept_set"),))  # fmt: skip


def kinked_scenario() -> Scenario:
    """A +0.1-nat step like uniform's R1 at top-K 45.2%: +0.1 at 1.58 bits, a kink to
    +0.004 at 1.62, then gently down to 0 at 2.4; reference points at 1.58, 1.80, 2.12 and
    2.36 bits; test configurations inside the step (1.70) and past it (1.95, 2.25)."""
    shapes = {K45: Shape(knots=((1.58, 0.1), (1.62, 0.004), (2.4, 0.0)))}
    reference = {
        "uniform": _configs(
            K45,
            [
                (1, 1.58, 0.02, 0.12),
                (2, 1.80, 0.02, 0.01),
                (3, 2.12, 0.02, 0.01),
                (4, 2.36, 0.02, 0.01),
            ],
        )
    }
    test = _configs(K45, [(5, 1.70, 0.02, 0.005), (6, 1.95, 0.02, 0.005),
                          (7, 2.25, 0.02, 0.005)])  # fmt: skip
    return Scenario(shapes=shapes, reference=reference,
                    tests=(TestCurve("quantizer", test, "kept_set"),))  # fmt: skip


def dense_scenario() -> Scenario:
    """The steep sparse curve with a reference point every 0.2 in log2 bits from 1 to 4
    bits per entry, the same test configurations."""
    sparse = sparse_scenario(steep=True)
    bits = 2.0 ** np.arange(0.0, 2.01, 0.2)
    reference = {"uniform": tuple(Config(i + 1, K45, float(b), 0.02, 0.01)
                                  for i, b in enumerate(bits))}  # fmt: skip
    return replace(sparse, reference=reference)


def s_scenario(precise: bool = False) -> Scenario:
    """Shapes a bracket for one bend misses, and tests at a reference's bits but for 0.1%.
    Top-K 10%: an S, a 0.08-nat logistic step centred at 1.5 bits per entry (width 0.05),
    reference points every 0.2 from 1 to 2 bits; tests between them (1.3, 1.45, 1.55, 1.7:
    the chord and the secants beside it coincide at 1.45 and 1.55, 0.0033 nats below the
    curve) and 0.05% off 1.4 and 1.6. Top-K 45.2%: the default run's kink (-1.4 nats per
    bit past 1.58 bits), reference points at 1.583, 1.70, 1.807 and 2.118, a test 0.06%
    above the first (0.0013 nats down the kink). Own noise 0.01 nats per
    trajectory (``precise``: 0.002), half that for the tests."""
    sd = 0.002 if precise else 0.01
    shapes = {
        K10: Shape(step=0.08, centre=1.5, width=0.05),
        K45: default_scenario().shapes[K45],
    }
    reference = {
        "uniform": _configs(K10, [(i + 1, 1.0 + 0.2 * i, 0.02, sd) for i in range(6)]),
        "uniformk45": _configs(K45, [(r, b, 0.02, sd) for r, b in
                                     ((1, 1.583), (2, 1.70), (3, 1.807), (4, 2.118))]),
    }  # fmt: skip
    near = [(5 + i, b, 0.02, sd / 2) for i, b in enumerate(
        (1.3, 1.45, 1.55, 1.7, 1.4 * 1.0005, 1.6 * 0.9995))]  # fmt: skip
    tests = (
        TestCurve("quantizer", _configs(K10, near), "kept_set"),
        TestCurve("quantizerk45", _configs(K45, [(1, 1.583 * 1.0006, 0.02, sd / 2)]), "kept_set"),
    )
    return Scenario(shapes=shapes, reference=reference, tests=tests)


#: Scenario name -> builder, for the tests and the benchmark.
SCENARIOS = {
    "default": default_scenario,
    "sparse": sparse_scenario,
    "steep": lambda: sparse_scenario(steep=True),
    "kinked": kinked_scenario,
    "dense": dense_scenario,
    "s": s_scenario,
    "s_precise": lambda: s_scenario(precise=True),
}


def replicate(
    scenario: Scenario,
    warm_starts: int,
    seeds: int,
    reps: int,
    *,
    seed: int,
    shift: float | Sequence[float] = 0.0,
    margin: float = 0.004,
) -> pd.DataFrame:
    """``reps`` simulated studies (:func:`simulate`), each answered by the code that writes
    verdicts.tsv (:func:`~gradcomp.statistics.verdicts.verdicts_from_points`); their verdict
    tables stacked, with the study's index in column ``rep`` and each question's planted
    difference in ``truth``."""
    rng = np.random.default_rng(seed)
    questions, curves, labels = scenario.questions(), scenario.curves(), scenario.labels()
    truth = np.broadcast_to(np.asarray(shift, dtype=np.float64), (len(questions),))
    tables = []
    for rep in range(reps):
        t = verdicts_from_points(
            simulate(scenario, warm_starts, seeds, rng, shift=shift), questions=questions,
            curves=curves, kept_sets=labels, margin=margin, label=label,
        )  # fmt: skip
        tables.append(t.assign(rep=rep, truth=truth[: len(t)]))
    return pd.concat(tables, ignore_index=True)
