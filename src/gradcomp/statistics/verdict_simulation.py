"""Simulated one-round studies with a known truth, to check the verdicts' procedure.

The verdicts (:mod:`gradcomp.statistics.verdicts`) are only worth what their coverage and power
are on data of the real structure, and on the curve shapes that break a reading between
reference points. This module draws per-trajectory tables (one row per variant and
trajectory, :data:`gradcomp.statistics.verdicts.POINT_COLUMNS`) from a model of the one-round
study:

    loss_jc = exact_j + mu_c + lambda_c f_j + sigma_c e_jc

for configuration ``c`` on trajectory ``j`` of warm start ``w(j)``: ``f_j = sqrt(rho) a_w +
sqrt(1 - rho) b_j`` is the trajectory's *sparsification factor* (standard normal; ``rho`` its
share between warm starts), on which every configuration loads by ``lambda_c`` (in the
default run the residuals of one top-K fraction correlate 0.8-1.0); ``e_jc`` is the
configuration's own noise. ``exact_j`` (the uncompressed aggregate's loss) moves every
configuration of a trajectory alike. Accuracy is ``exact acc - loss increase / 2.5`` (the
default run's slope) plus its own noise. Bits per entry are fixed per configuration with a
0.05% jitter.

The truth is a **curve**, not a set of points: each kept set has a true loss-increase curve
in bits (:class:`Shape`: non-increasing; convex, smooth, steep or kinked, or an S), the reference's
configurations sit on it (``mu`` of a :class:`Config` moves one off it, e.g. a dominated
point), and a test configuration's truth is set by its question's ``match``: ``kept_set`` on
its kept set's curve at its bits, ``frontier`` on the reference's operational curve (the lower
hull of its configurations' true means, time sharing), ``exact`` at the uncompressed
aggregate. Every test configuration is then moved by ``shift`` nats; its question's
difference is that shift, which its 95% interval should cover in 95% of the studies.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from gradcomp.statistics.matched_bits import interpolation_weights, lower_hull
from gradcomp.statistics.verdicts import verdicts_from_points

__all__ = [
    "SCENARIOS",
    "Config",
    "Scenario",
    "Shape",
    "TestCurve",
    "default_scenario",
    "dense_scenario",
    "kinked_scenario",
    "replicate",
    "s_scenario",
    "simulate",
    "sparse_scenario",
    "true_loss",
]


@dataclass(frozen=True)
class Shape:
    """A true loss-increase curve of bits per entry ``b`` (nats): ``floor + amplitude *
    2^(-b / halving)`` plus the piecewise-linear curve through ``knots`` ((bits, value)
    pairs; flat past the last, its first slope carried before the first) plus a logistic
    step ``step / (1 + exp((b - centre) / width))``. Non-increasing for amplitude, step >= 0
    and knots whose slopes rise to at most 0; convex without the step, an S with it (concave
    below ``centre``, convex above), as uniform's curve on a small kept set."""

    floor: float = 0.0
    amplitude: float = 0.0
    halving: float = 1.0
    knots: tuple[tuple[float, float], ...] = ()
    step: float = 0.0
    centre: float = 0.0
    width: float = 0.1

    def __post_init__(self) -> None:
        if self.knots:
            b = np.array([k[0] for k in self.knots])
            y = np.array([k[1] for k in self.knots])
            slopes = np.diff(y) / np.diff(b)
            if (np.diff(b) <= 0).any() or (np.diff(slopes) < -1e-12).any() or (slopes > 0).any():
                raise ValueError(f"knots {self.knots} are not convex and non-increasing")

    def __call__(self, bits: float) -> float:
        out = self.floor + self.amplitude * 2.0 ** (-float(bits) / self.halving)
        if self.step:
            out += self.step / (1.0 + np.exp((float(bits) - self.centre) / self.width))
        if self.knots:
            b = np.array([k[0] for k in self.knots])
            y = np.array([k[1] for k in self.knots])
            if bits < b[0] and len(b) > 1:
                out += y[0] + (y[1] - y[0]) / (b[1] - b[0]) * (bits - b[0])
            else:
                out += float(np.interp(bits, b, y))
        return float(out)


@dataclass(frozen=True)
class Config:
    """One configuration: ``rate``, ``kept_set``, ``bits`` per entry, loading ``loading`` on
    the trajectory factor and own noise ``sd`` (nats); ``mu``: its true mean loss increase
    where it is off its kept set's curve (None: on it)."""

    rate: int
    kept_set: str
    bits: float
    loading: float = 0.0
    sd: float = 0.0
    mu: float | None = None


@dataclass(frozen=True)
class TestCurve:
    """A test compressor ``name``, its configurations (each one question) and the
    questions' ``match`` (the truth they are placed on)."""

    name: str
    configs: tuple[Config, ...]
    match: str


@dataclass(frozen=True)
class Scenario:
    """The reference's true curves (kept set -> :class:`Shape`) and configurations (entries:
    compressor name -> configurations, all one curve), the test curves, the factor's
    warm-start share ``rho``, the exact loss's spread and how the questions read the
    reference between its configurations (``interpolation``)."""

    shapes: Mapping[str, Shape]
    reference: Mapping[str, tuple[Config, ...]]
    tests: tuple[TestCurve, ...]
    rho: float = 0.5
    exact_sd: float = 0.07
    acc_slope: float = 2.5
    acc_sd: float = 0.004
    curve: str = "uniform"
    #: how the questions read the reference (None: convex on a kept set, chord on the front)
    interpolation: str | None = None
    kept_sets: dict[str, str] = field(default_factory=dict)

    def labels(self) -> dict[str, str]:
        """Variant label -> kept set, for every configuration."""
        out = {}
        for name, configs in self.reference.items():
            out.update({f"{name}/R{c.rate}_M0": c.kept_set for c in configs})
        for t in self.tests:
            out.update({f"{t.name}/R{c.rate}_M0": c.kept_set for c in t.configs})
        return out

    def curves(self) -> dict[str, str]:
        """Compressor name -> curve (the reference's entries join one)."""
        return {name: self.curve for name in self.reference}

    def questions(self) -> list[dict]:
        """One question per test configuration, one Holm family."""
        return [
            {"test": t.name, "M": 0, "rate": c.rate, "reference": self.curve, "reference_M": 0,
             "match": t.match, "family": "primary",
             "interpolation": self.interpolation
             or ("convex" if t.match == "kept_set" else "chord")}
            for t in self.tests
            for c in t.configs
        ]  # fmt: skip


def _reference_configs(scenario: Scenario) -> list[Config]:
    return [c for configs in scenario.reference.values() for c in configs]


def _mean(scenario: Scenario, c: Config) -> float:
    return c.mu if c.mu is not None else scenario.shapes[c.kept_set](c.bits)


def true_loss(scenario: Scenario, point: Config, match: str) -> float:
    """The reference's true mean loss increase at ``point``'s bits: its kept set's curve
    (``kept_set``), the operational curve of the reference's configurations (``frontier``:
    the lower hull of their true means, linear between its vertices) or 0 (``exact``);
    ValueError where the bits lie outside the front."""
    if match == "exact":
        return 0.0
    if match == "kept_set":
        return scenario.shapes[point.kept_set](point.bits)
    ref = _reference_configs(scenario)
    mus = [_mean(scenario, c) for c in ref]
    front = lower_hull([c.bits for c in ref], mus)
    pool = [(c.bits, m) for c, m, on in zip(ref, mus, front, strict=True) if on]
    top = max(b for b, _ in pool)
    bits = point.bits
    if top < bits <= max(c.bits for c in ref):
        bits = top  # flat past the lowest loss, up to the reference's most bits
    w = interpolation_weights(bits, [b for b, _ in pool])
    if w is None:
        raise ValueError(f"{point} lies outside the reference's front")
    return float(np.dot(w, [m for _, m in pool]))


def simulate(
    scenario: Scenario,
    warm_starts: int,
    seeds: int,
    rng: np.random.Generator,
    *,
    shift: float | Sequence[float] = 0.0,
    model: str = "cnn",
) -> pd.DataFrame:
    """One simulated study: a row per variant and trajectory (``warm_starts`` x ``seeds``)
    with the columns :func:`gradcomp.statistics.verdicts.verdicts_from_points` reads; every test
    configuration sits ``shift`` nats (one value, or one per question in
    :meth:`Scenario.questions` order) off its truth (module doc)."""
    n_q = sum(len(t.configs) for t in scenario.tests)
    shifts = iter(np.broadcast_to(np.asarray(shift, dtype=np.float64), (n_q,)))
    entries = [(name, c, _mean(scenario, c)) for name, cs in scenario.reference.items() for c in cs]
    for t in scenario.tests:
        entries += [(t.name, c, true_loss(scenario, c, t.match) + next(shifts)) for c in t.configs]
    n = warm_starts * seeds
    ws = np.repeat(np.arange(warm_starts), seeds)
    a = rng.standard_normal(warm_starts)[ws]
    f = np.sqrt(scenario.rho) * a + np.sqrt(1 - scenario.rho) * rng.standard_normal(n)
    exact = 1.6 + scenario.exact_sd * rng.standard_normal(n)
    exact_acc = 0.42 - (exact - 1.6) / scenario.acc_slope
    frames = []
    for name, c, mu in entries:
        increase = mu + c.loading * f + c.sd * rng.standard_normal(n)
        acc = exact_acc - increase / scenario.acc_slope + scenario.acc_sd * rng.standard_normal(n)
        frames.append(
            pd.DataFrame(
                {
                    "model": model, "compressor": name, "rate": c.rate, "M": 0,
                    "warm_start": ws, "seed": np.tile(np.arange(seeds), warm_starts),
                    "bits_per_entry": c.bits * (1 + 5e-4 * rng.standard_normal(n)),
                    "test_loss": exact + increase, "test_acc": acc,
                    "exact_loss": exact, "exact_acc": exact_acc,
                }
            )
        )  # fmt: skip
    return pd.concat(frames, ignore_index=True)


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
            curves=curves, kept_sets=labels, margin=margin,
        )  # fmt: skip
        tables.append(t.assign(rep=rep, truth=truth[: len(t)]))
    return pd.concat(tables, ignore_index=True)
