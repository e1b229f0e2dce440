"""BD-rate and the monotone fit of gradcomp.statistics.rate_curves, against hand-computed pairs of
curves, scipy's isotonic regression and a brute force over block partitions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import isotonic_regression

from gradcomp.statistics.rate_curves import bd_rate, monotone_decreasing


def line(a: float, b: float, loss) -> np.ndarray:
    """Bits of the straight line log bits = a - b loss."""
    return np.exp(a - b * np.asarray(loss, dtype=float))


def test_half_the_bits_at_every_loss_is_minus_50_percent():
    """(a) Planted bugs: the ratio taken the other way (+100%), log2 mixed with exp."""
    loss = np.array([0.4, 0.2, 0.1, 0.05])
    ref = np.array([1000.0, 2000.0, 4000.0, 8000.0])
    assert bd_rate(ref / 2, loss, ref, loss) == pytest.approx(-50.0, abs=1e-9)
    assert bd_rate(ref * 2, loss, ref, loss) == pytest.approx(100.0, abs=1e-9)
    assert bd_rate(ref, loss, ref, loss) == pytest.approx(0.0, abs=1e-9)


def test_two_lines_of_different_slopes_over_a_partial_overlap():
    """(b) Reference log bits = 10 - 4 d on d in [0.1, 0.5], test 9.5 - 2 d on [0.2, 0.8]:
    overlap [0.2, 0.5], delta(d) = -0.5 + 2 d, its mean over the overlap -0.5 + 2 x 0.35 =
    0.2, BD-rate 100 (e^0.2 - 1) = 22.14%. Planted bugs: mean over the union of the ranges,
    or over the reference's range (extrapolating the test curve)."""
    d_ref, d_test = np.array([0.1, 0.3, 0.5]), np.array([0.2, 0.5, 0.8])
    got = bd_rate(line(9.5, 2, d_test), d_test, line(10, 4, d_ref), d_ref)
    assert got == pytest.approx(100 * math.expm1(0.2), rel=1e-12)


def test_a_kinked_reference_is_integrated_exactly():
    """Reference through (0.1, 10), (0.3, 9.6), (0.5, 8.0) (log bits), test 9.5 - 2 d on [0.2,
    0.8]. Over [0.2, 0.5]: the reference's integral is 0.1 (9.8 + 9.6) / 2 + 0.2 (9.6 + 8.0)
    / 2 = 2.73, the test's 0.3 (9.1 + 8.5) / 2 = 2.64; mean delta -0.3. Planted bug: the
    trapezoid rule on a uniform 513-point grid that misses the kink (off by 6e-5 points)."""
    d_ref = np.array([0.1, 0.3, 0.5])
    ref = np.exp([10.0, 9.6, 8.0])
    d_test = np.array([0.2, 0.8])
    got = bd_rate(line(9.5, 2, d_test), d_test, ref, d_ref)
    assert got == pytest.approx(100 * math.expm1((2.64 - 2.73) / 0.3), rel=1e-12)


def test_no_overlap_is_nan():
    """(c) Planted bug: extrapolating the curves."""
    d_ref, d_test = np.array([0.1, 0.3]), np.array([0.4, 0.6])
    assert math.isnan(bd_rate(line(9, 2, d_test), d_test, line(10, 4, d_ref), d_ref))
    # a flat or one-point reference has no range to average over
    assert math.isnan(bd_rate([5.0, 6.0], [0.1, 0.2], [10.0], [0.15]))


def test_one_point_test_curve_reads_the_reference_at_its_loss():
    """(d) Reference log bits = 10 - 4 d; a single test point at d = 0.25 with log bits 8.5
    lies 8.5 - 9 = -0.5 from it: 100 (e^-0.5 - 1) = -39.35%. Outside the reference's range:
    NaN. Planted bug: the reference read at its first point instead of the test's loss."""
    d_ref = np.array([0.1, 0.2, 0.3, 0.4])
    ref = line(10, 4, d_ref)
    assert bd_rate([math.exp(8.5)], [0.25], ref, d_ref) == pytest.approx(
        100 * math.expm1(-0.5), rel=1e-12
    )
    assert math.isnan(bd_rate([math.exp(8.5)], [0.45], ref, d_ref))


def test_a_curve_out_of_order_is_first_made_monotone():
    """Reference points (bits 1000, 2000, 4000) with losses (0.3, 0.1, 0.2): the last two are
    out of order (more bits, more loss) and pool to 0.15, a flat stretch read at its fewest
    bits (2000). So the reference is the segment (0.15, log 2000) - (0.3, log 1000), and a
    test curve with half those bits at those losses gives -50%. Planted bug: no monotone fit
    (np.interp on an unsorted curve)."""
    ref_bits, ref_loss = np.array([1000.0, 2000.0, 4000.0]), np.array([0.3, 0.1, 0.2])
    test_bits, test_loss = np.array([500.0, 1000.0]), np.array([0.3, 0.15])
    assert bd_rate(test_bits, test_loss, ref_bits, ref_loss) == pytest.approx(-50.0, abs=1e-9)


def test_bad_curves_are_refused():
    """Planted bug: a NaN loss passed on to np.interp (silently NaN or garbage)."""
    with pytest.raises(ValueError, match="finite positive"):
        bd_rate([1.0, 2.0], [0.1, np.nan], [1.0, 2.0], [0.2, 0.1])
    with pytest.raises(ValueError, match="finite positive"):
        bd_rate([0.0, 2.0], [0.2, 0.1], [1.0, 2.0], [0.2, 0.1])
    with pytest.raises(ValueError, match="matching"):
        bd_rate([1.0, 2.0], [0.1], [1.0, 2.0], [0.2, 0.1])


def brute_force_decreasing(y: np.ndarray) -> np.ndarray:
    """The least-squares non-increasing fit by enumeration: the optimum is constant on
    contiguous blocks at the block means, so try every split into blocks whose means do not
    increase and keep the smallest squared error."""
    n = len(y)
    best, best_err = None, np.inf
    for cuts in itertools.product((False, True), repeat=n - 1):
        edges = [0, *[i + 1 for i, c in enumerate(cuts) if c], n]
        means = [y[a:b].mean() for a, b in itertools.pairwise(edges)]
        if any(m2 > m1 + 1e-12 for m1, m2 in itertools.pairwise(means)):
            continue
        fit = np.concatenate([np.full(b - a, m) for (a, b), m in
                              zip(itertools.pairwise(edges), means, strict=True)])  # fmt: skip
        err = float(((fit - y) ** 2).sum())
        if err < best_err - 1e-12:
            best, best_err = fit, err
    return best


def test_pav_is_the_least_squares_non_increasing_fit():
    """(e) Against enumeration of block partitions and scipy.optimize.isotonic_regression.
    Planted bug: merging on ``>`` (a non-decreasing fit) or merging only once per value."""
    rng = np.random.default_rng(4)
    for _ in range(60):
        y = rng.integers(0, 6, size=int(rng.integers(1, 8))).astype(float)
        fit = monotone_decreasing(y)
        assert fit == pytest.approx(brute_force_decreasing(y), abs=1e-12), y
        assert fit == pytest.approx(isotonic_regression(y, increasing=False).x, abs=1e-12), y
    assert monotone_decreasing([3.0, 1.0, 2.0, 0.0]) == pytest.approx([3.0, 1.5, 1.5, 0.0])
