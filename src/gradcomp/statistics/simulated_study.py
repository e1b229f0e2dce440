"""A model of the one-round study with a known truth, to simulate studies from.

It draws per-trajectory tables (one row per variant and trajectory,
:data:`gradcomp.statistics.verdicts.POINT_COLUMNS`) from

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

Variants are labelled ``name/R{rate}_M0`` (:func:`label`, the keys of :meth:`Scenario.labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gradcomp.statistics.matched_bits import interpolation_weights, lower_hull

__all__ = ["Config", "Scenario", "Shape", "TestCurve", "label", "simulate", "true_loss"]


def label(name: str, rate: int, M: int) -> str:
    """A simulated variant's label (the study's form)."""
    return f"{name}/R{rate}_M{M}"


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
            out.update({label(name, c.rate, 0): c.kept_set for c in configs})
        for t in self.tests:
            out.update({label(t.name, c.rate, 0): c.kept_set for c in t.configs})
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
