"""Simulated one-round studies with a known truth, to check the verdicts' procedure.

The verdicts (:mod:`gradcomp.lossy.verdicts`) are only worth what their coverage and power
are on data of the real structure. This module draws per-trajectory tables (one row per
variant and trajectory, :data:`gradcomp.lossy.verdicts.POINT_COLUMNS`) from a model of the
default run's one-round study:

    loss_jc = exact_j + mu_c + lambda_c f_j + sigma_c e_jc

for configuration ``c`` on trajectory ``j`` of warm start ``w(j)``: ``f_j = sqrt(rho) a_w +
sqrt(1 - rho) b_j`` is the trajectory's *sparsification factor* (standard normal; ``rho`` its
share between warm starts), on which every configuration loads by ``lambda_c`` (a top-K
group's loading: in the default run the residuals of one top-K fraction correlate 0.8-1.0,
and the 10% and 2% groups with each other and with the dense low-rank compressor at 0.96 and
more); ``e_jc`` is the configuration's own noise (uniform R1 at top-K 45.2% has 0.13 nats of
it). ``exact_j`` (the uncompressed aggregate's loss) moves every configuration of a
trajectory alike. Accuracy is ``exact acc - loss increase / 2.5`` (the default run's slope)
plus its own noise. Bits per entry are fixed per configuration with a 0.05% jitter.

A test curve's truth is set relative to the reference (``truth``): ``kept_set`` puts each test
configuration on the reference's curve of its kept set (linear in bits between the
reference configurations that bracket it), ``frontier`` on the reference's true undominated
front; then every test configuration is moved by ``shift`` nats. Under ``shift = 0`` the
difference a question estimates is 0, so its 95% interval should cover 0 in 95% of the
studies; under a shift it should be found with the power the verdict table states.

:func:`default_scenario` is the default run's structure (the reference's means, loadings and
own noise as measured on the development machine's one-round study, the reference non-monotone
with a dominated point and a gap of 0.8 in log bits), with test curves of five, three and one
configurations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from gradcomp.lossy.matched_bits import interpolation_weights, lower_hull
from gradcomp.lossy.verdicts import verdicts_from_points

__all__ = [
    "Config", "Scenario", "TestCurve", "default_scenario", "replicate", "simulate", "true_loss",
]  # fmt: skip


@dataclass(frozen=True)
class Config:
    """One configuration: ``rate``, ``kept_set``, ``bits`` per entry, mean loss increase
    ``mu`` (nats), loading ``loading`` on the trajectory factor and own noise ``sd`` (nats)."""

    rate: int
    kept_set: str
    bits: float
    mu: float = 0.0
    loading: float = 0.0
    sd: float = 0.0


@dataclass(frozen=True)
class TestCurve:
    """A test curve ``name``, its configurations (``mu`` is ignored: set by ``truth``) and
    the question's ``match`` (the truth it is placed on)."""

    name: str
    configs: tuple[Config, ...]
    match: str


@dataclass(frozen=True)
class Scenario:
    """A reference curve (entries: compressor name -> its configurations, all one curve),
    test curves, the factor's warm-start share ``rho`` and the exact loss's spread."""

    reference: Mapping[str, tuple[Config, ...]]
    tests: tuple[TestCurve, ...]
    rho: float = 0.5
    exact_sd: float = 0.07
    acc_slope: float = 2.5
    acc_sd: float = 0.004
    curve: str = "uniform"
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
        return [
            {"test": t.name, "M": 0, "reference": self.curve, "reference_M": 0,
             "match": t.match}
            for t in self.tests
        ]  # fmt: skip


def _reference_configs(scenario: Scenario) -> list[Config]:
    return [c for configs in scenario.reference.values() for c in configs]


def true_loss(scenario: Scenario, point: Config, match: str) -> float:
    """The reference's true mean loss increase at ``point``'s bits: on its kept set's
    reference configurations (``kept_set``) or on the reference's true front (``frontier``);
    ValueError where the bits lie outside."""
    ref = _reference_configs(scenario)
    if match == "kept_set":
        pool = [c for c in ref if c.kept_set == point.kept_set]
    else:
        front = lower_hull([c.bits for c in ref], [c.mu for c in ref])
        pool = [c for c, on in zip(ref, front, strict=True) if on]
    w = interpolation_weights(point.bits, [c.bits for c in pool])
    if w is None:
        raise ValueError(f"{point} lies outside the reference's {match} curve")
    return float(np.dot(w, [c.mu for c in pool]))


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
    with the columns :func:`gradcomp.lossy.verdicts.verdicts_from_points` reads; every test
    curve's configurations sit ``shift`` nats (one value, or one per test curve) off its
    truth (module doc)."""
    shifts = np.broadcast_to(np.asarray(shift, dtype=np.float64), (len(scenario.tests),))
    entries = [(name, c, c.mu) for name, configs in scenario.reference.items() for c in configs]
    for t, s in zip(scenario.tests, shifts, strict=True):
        entries += [(t.name, c, true_loss(scenario, c, t.match) + s) for c in t.configs]
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
                }
            )
        )  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def _configs(kept_set: str, rows: Sequence[tuple]) -> tuple[Config, ...]:
    return tuple(Config(r, kept_set, *rest) for r, *rest in rows)


def default_scenario() -> Scenario:
    """The default run's structure (module doc): uniform at top-K 45.2% (R1-R4), 10% (R1, R2,
    R4) and 2% (R1, R2), with the measured bits, means, loadings and own noise (nats; the
    development machine's one-round study of 6 warm starts x 2 seeds); R1 at 45.2% is
    dominated by R1 at 10% and sits above a gap from 0.84 to 1.58 bits. Test curves: a
    five-configuration quantizer on 45.2% and 10% (kept-set truth), a three-configuration
    dense compressor and a one-configuration dense compressor in the gap (frontier truth)."""
    k45, k10, k2, dense = "top-K 45.2%", "top-K 10%", "top-K 2%", "dense"
    # (rate, bits per entry, mean loss increase, loading, own noise)
    reference = {
        "uniform": _configs(k45, [(1, 1.578, 0.155, 0.0, 0.126), (2, 1.804, 0.002, 0.010, 0.008),
                                  (3, 2.124, 0.001, 0.010, 0.008),
                                  (4, 2.363, 0.002, 0.010, 0.006)]),
        "uniformk10": _configs(k10, [(1, 0.702, 0.019, 0.026, 0.010),
                                     (2, 0.756, 0.039, 0.062, 0.010),
                                     (4, 0.842, 0.033, 0.055, 0.008)]),
        "uniformk2": _configs(k2, [(1, 0.256, 0.052, 0.078, 0.006),
                                   (2, 0.270, 0.058, 0.084, 0.006)]),
    }  # fmt: skip
    quantizer = _configs(k45, [(1, 1.579, 0, 0.008, 0.005), (2, 1.899, 0, 0.009, 0.004),
                               (4, 2.30, 0, 0.010, 0.003)])  # fmt: skip
    quantizer += _configs(k10, [(5, 0.702, 0, 0.055, 0.004), (6, 0.776, 0, 0.056, 0.004)])
    dense3 = _configs(dense, [(2, 0.629, 0, 0.02, 0.025), (3, 1.045, 0, 0.01, 0.014),
                              (4, 1.614, 0, 0.005, 0.007)])  # fmt: skip
    tests = (
        TestCurve("quantizer", quantizer, "kept_set"),
        TestCurve("dense3", dense3, "frontier"),
        TestCurve("dense1", _configs(dense, [(1, 1.211, 0, 0.02, 0.025)]), "frontier"),
    )
    return Scenario(reference=reference, tests=tests)


def with_reference(scenario: Scenario, **entries: tuple[Config, ...]) -> Scenario:
    """The scenario with reference entries added or replaced (e.g. more rate points)."""
    return replace(scenario, reference={**scenario.reference, **entries})


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
    verdicts.tsv (:func:`~gradcomp.lossy.verdicts.verdicts_from_points`); their verdict
    tables stacked, with the study's index in column ``rep``."""
    rng = np.random.default_rng(seed)
    questions, curves, labels = scenario.questions(), scenario.curves(), scenario.labels()
    tables = []
    for rep in range(reps):
        t = verdicts_from_points(
            simulate(scenario, warm_starts, seeds, rng, shift=shift), questions=questions,
            curves=curves, kept_sets=labels, margin=margin,
        )  # fmt: skip
        tables.append(t.assign(rep=rep))
    return pd.concat(tables, ignore_index=True)
