"""The entropy-constrained scalar quantizer (gradcomp.compression.ecsq) against references
computed here independently: closed-form Laplacian cell moments searched by brute force over
thresholds (low rate, small alphabets), the Gaussian's R(D) and Gish and Pierce's high-rate
gap, and the fixed-rate Lloyd design at the same coded bits on the same law."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradcomp.compression.ecsq import ecsq_design, lagrangian_design
from gradcomp.compression.ecsq_law import ecsq_for_law
from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.rate_distortion import discretise
from gradcomp.quantization.symmetric_law import SymmetricLaw

#: Gish and Pierce: an entropy-coded uniform quantizer at high rate spends
#: 0.5 log2(2 pi e / 12) bits more than R(D) for mean squared error.
GISH_PIERCE = 0.5 * math.log2(2 * math.pi * math.e / 12)
#: bits: how far one discretised cell crossing a threshold moves an index entropy (3,000 cells)
GRAIN = 2e-3


def entropy_bits(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-np.sum(p * np.log2(p)))


def laplace_dead_zone(t1: float, t2: float) -> tuple[float, float]:
    """(rate in bits, mean squared error) of the symmetric 5-level quantizer of a unit
    Laplacian (density e^-|x| / 2) with thresholds +-t1, +-t2 (0 < t1 < t2) and each level its
    cell's mean, from closed forms: the Laplacian is memoryless past a threshold, so the outer
    cell's mean is t2 + 1 and its variance 1; the inner cells' moments by integration."""

    def mass(a, b):  # P(a < x < b) for 0 <= a < b, one side
        return 0.5 * (math.exp(-a) - math.exp(-b))

    def m1(a, b):  # integral of x e^-x / 2 over (a, b)
        return 0.5 * ((a + 1) * math.exp(-a) - (b + 1) * math.exp(-b))

    def m2(a, b):  # integral of x^2 e^-x / 2 over (a, b)
        f = lambda z: (z * z + 2 * z + 2) * math.exp(-z)  # noqa: E731
        return 0.5 * (f(a) - f(b))

    p0 = 2 * mass(0, t1)
    p1 = mass(t1, t2)
    p2 = 0.5 * math.exp(-t2)
    d = 2 * m2(0, t1)  # the zero level
    if p1 > 0:
        c1 = m1(t1, t2) / p1
        d += 2 * (m2(t1, t2) - c1 * m1(t1, t2))
    d += 2 * p2 * 1.0  # the outer cell: variance 1 about t2 + 1
    return entropy_bits(np.array([p0, p1, p1, p2, p2])), d


@pytest.fixture(scope="module")
def laplace_points():
    law = SymmetricLaw.from_family("laplace", {"loc": 0.0, "scale": 1.0})
    return discretise(law, 0.0, 6000)


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.4, 0.7, 1.0])
def test_low_rate_laplacian_beats_every_dead_zone_quantizer_found_by_brute_force(
    laplace_points, rate
) -> None:
    """At M = 0 on a unit Laplacian, no symmetric 5-level quantizer (brute force over both
    thresholds, closed-form moments) reaches a lower distortion at the same or fewer bits
    than the design, and the design has a dead zone: its zero cell is wider than the step
    between its next levels (Sullivan 1996). Planted bugs it catches: lengths left out of
    the assignment (a fixed-rate Lloyd), the centroid taken unweighted by the cell's mass."""
    x, p = laplace_points
    got = ecsq_design(x, p, M=0.0, rate=rate)
    best = math.inf
    for t1 in np.linspace(0.05, 6.0, 240):
        for t2 in np.linspace(t1 + 0.05, t1 + 8.0, 160):
            r, d = laplace_dead_zone(t1, t2)
            if r <= got.rate + 1e-9:
                best = min(best, d)
    assert got.distortion <= best * (1 + 2e-3), (got.distortion, best)
    zero = int(np.argmin(np.abs(got.levels)))
    assert abs(got.levels[zero]) < 1e-3  # a point on a boundary may fall to either side
    dead = got.thresholds[zero] - got.thresholds[zero - 1]
    step = got.levels[zero + 2] - got.levels[zero + 1]
    assert dead > step


def test_high_rate_gap_to_the_gaussian_rd_is_gish_and_pierces() -> None:
    """On a unit normal at 5 bits, M = 0: the design's rate exceeds R(D) = 0.5 log2(1 / D) by
    0.2546 bits (within 0.01), and its levels are uniformly spaced in the body."""
    got = ecsq_for_law("norm", {"loc": 0.0, "scale": 1.0}, M=0.0, rate=5.0)
    gap = got.rate - 0.5 * math.log2(1.0 / got.distortion)
    assert abs(gap - GISH_PIERCE) < 0.01, gap
    body = got.levels[np.abs(got.levels) < 2.0]
    steps = np.diff(body)
    assert steps.std() < 0.03 * steps.mean()  # uniform up to the discretised law's grain


def lloyd_on_points(x, q, levels, thresholds, M):
    """(index entropy in bits, M-weighted distortion) of a fixed quantizer on points."""
    a = np.searchsorted(thresholds, x)
    p = np.bincount(a, weights=q, minlength=levels.size)
    return entropy_bits(p), float(np.sum(q * np.abs(x) ** M * (x - levels[a]) ** 2))


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.7, 1.0, 2.0])
@pytest.mark.parametrize("M", [0.0, 2.0])
@pytest.mark.parametrize("n_levels", [2, 4, 8])
def test_never_above_the_fixed_rate_lloyd_at_the_same_coded_bits(beta, M, n_levels) -> None:
    """For a grid of GenNorm shapes, M and level counts: the fixed-rate Lloyd design's index
    entropy is its coded rate; the entropy-constrained design at that rate has no larger
    M-weighted distortion (both measured here on the same discretised law). "The same rate"
    up to the discretised law's grain: moving one of its 3,000 cells across a threshold
    moves an entropy by up to GRAIN bits, so the design gets that much more."""
    law = SymmetricLaw.from_family("gennorm", {"beta": beta, "loc": 0.0, "scale": 1.0})
    x, q = discretise(law, M, 3000)
    fixed = lloyd_design(law, None, n_levels, M)
    rate, distortion = lloyd_on_points(x, q, fixed.levels, fixed.thresholds, M)
    got = ecsq_design(x, q, M=M, rate=rate + GRAIN)
    assert got.rate <= rate + GRAIN + 1e-9
    assert got.distortion <= distortion * (1 + 1e-5), (got.distortion, distortion)


@pytest.mark.slow
def test_the_window_search_is_the_search_over_every_level(laplace_points) -> None:
    """Choosing among the levels around a point gives the design the search over all levels
    gives (planted bug: a window of one level each side, which froze the dead zone)."""
    x, p = laplace_points
    init = 0.3 * np.arange(-40, 41, dtype=np.float64)
    for M, lam in ((0.0, 0.5), (2.0, 2.0)):
        near = lagrangian_design(x, p, M, lam, init)
        full = lagrangian_design(x, p, M, lam, init, window=init.size)
        np.testing.assert_allclose(near.levels, full.levels, rtol=1e-9, atol=1e-12)
        assert near.distortion == pytest.approx(full.distortion, rel=1e-9)


@pytest.mark.slow
def test_huffman_lengths_spend_whole_bits_and_the_rate_counts_them() -> None:
    """With Huffman code lengths the rate is the mean of whole-bit lengths (at least the
    index entropy), and the target is still not exceeded."""
    x = np.random.default_rng(1).laplace(size=5000)
    q = np.full(x.size, 1.0 / x.size)
    got = ecsq_design(x, q, M=0.0, rate=1.5, lengths="huffman")
    assert np.all(got.lengths == np.round(got.lengths))
    assert got.rate <= 1.5 + 1e-9
    assert got.rate >= entropy_bits(got.probabilities) - 1e-9


@pytest.mark.slow
def test_the_gap_to_the_blahut_arimoto_limit_orders_the_designs() -> None:
    """Against the project's Blahut-Arimoto D(R) of a unit normal (M = 0), checked here
    against the closed form 2^(-2R): the entropy-constrained design at 4 bits is Gish and
    Pierce's 0.25 bits from the limit, and the 16-level fixed-rate Lloyd design, entropy-coded,
    further (planted bug in rd_gap: the bits gap read at the quantizer's rate instead of its
    distortion, which gives 0)."""
    from gradcomp.quantization.rate_distortion import distortion_rate_curve
    from gradcomp.quantization.rd_gap import rd_gap

    params = {"loc": 0.0, "scale": 1.0}
    curve = distortion_rate_curve("norm", params, 0.0, rates=np.arange(0.0, 6.01, 0.25),
                                  check_grid=False)  # fmt: skip
    closed = 2.0 ** (-2 * curve["rate_bits"])
    assert np.allclose(curve["distortion"], closed, rtol=0.02)
    ecsq = ecsq_for_law("norm", params, M=0.0, rate=4.0)
    gap = rd_gap(ecsq.rate, ecsq.distortion, curve)
    assert abs(gap.bits - GISH_PIERCE) < 0.02, gap
    assert gap.db == pytest.approx(20 * math.log10(2) * gap.bits, rel=0.05)  # 6.02 dB a bit
    law = SymmetricLaw.from_family("norm", params)
    x, q = discretise(law, 0.0, 6000)
    fixed = lloyd_design("norm", params, 16, 0.0)
    scale = law.scale  # discretise's points are the unit law's
    rate, distortion = lloyd_on_points(x * scale, q, fixed.levels, fixed.thresholds, 0.0)
    assert rd_gap(rate, distortion, curve).bits > gap.bits + 0.02
