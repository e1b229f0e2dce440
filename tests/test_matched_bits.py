"""Matching a test curve with a reference at matched bits, against brute-force references:
the lower convex hull and the Pareto front by exhaustive checks of every point (and pair of
points) on random configurations, interpolation weights against numpy's interp, the convex
bracket on random convex curves (maxima of lines) and by hand, and the out-of-sample front
against a brute-force hull of the other units' means."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gradcomp.compression.specs import check_spec
from gradcomp.lossy.matched_bits import (
    AT_RTOL,
    bracket_differences,
    convex_bracket,
    frontier_candidates,
    interpolation_weights,
    kept_set_of,
    lower_hull,
    pareto_front,
)


def brute_hull(b, y):
    """On the operational curve iff no point has fewer-or-equal bits and lower loss unless it
    is this point's equal, no mixture of two others at this point's bits is strictly lower,
    and no point with fewer bits reaches a loss as low (the curve ends at the lowest loss)."""
    out = []
    for i in range(len(b)):
        beaten = any(
            (b[j] <= b[i] and y[j] < y[i]) or (b[j] < b[i] and y[j] <= y[i]) for j in range(len(b))
        )
        for j, k in itertools.permutations(range(len(b)), 2):
            if b[j] < b[i] < b[k]:
                lam = (b[i] - b[j]) / (b[k] - b[j])
                if (1 - lam) * y[j] + lam * y[k] < y[i] - 1e-12:
                    beaten = True
        out.append(not beaten)
    return np.array(out)


def brute_pareto(b, y):
    return np.array([
        not any((b[j] <= b[i] and y[j] <= y[i]) and (b[j] < b[i] or y[j] < y[i])
                for j in range(len(b)))
        for i in range(len(b))
    ])  # fmt: skip


def test_lower_hull_and_pareto_front_equal_brute_force():
    """600 random sets of 1-9 configurations (ties in bits and loss included). Planted bugs
    that fail it: the chord test's > turned into >= (collinear points dropped); the curve
    not stopped at the lowest loss; Pareto's strictness dropped (ties dominating each other)."""
    rng = np.random.default_rng(0)
    for _ in range(600):
        n = int(rng.integers(1, 10))
        b = np.round(rng.uniform(0.2, 3.0, n), 1)
        y = np.round(rng.uniform(0.0, 0.2, n), 2)
        assert (lower_hull(b, y) == brute_hull(b, y)).all(), (b, y)
        assert (pareto_front(b, y) == brute_pareto(b, y)).all(), (b, y)
        assert not (lower_hull(b, y) & ~pareto_front(b, y)).any()  # the hull is undominated


def test_interpolation_weights_give_numpys_interp():
    rng = np.random.default_rng(1)
    for _ in range(300):
        xs = np.sort(rng.choice(np.linspace(0.1, 3.0, 30), int(rng.integers(1, 6)), False))
        vals = rng.normal(size=xs.size)
        x = float(rng.uniform(xs[0], xs[-1]))
        w = interpolation_weights(x, xs[::-1])
        assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
        assert w @ vals[::-1] == pytest.approx(np.interp(x, xs, vals))
    # beyond an end by at most 1%: the end itself; farther: None
    assert list(interpolation_weights(1.009, [0.5, 1.0])) == [0.0, 1.0]
    assert interpolation_weights(1.02, [0.5, 1.0]) is None
    assert interpolation_weights(0.49, [0.5, 1.0]) is None
    assert interpolation_weights(1.0, []) is None


def test_kept_set_of_names_the_sparsifier_and_fraction():
    assert kept_set_of(check_spec({"quantizer": "uniform", "rate": 2, "topk": 0.452})) == (
        "top-K 45.2%"
    )
    assert kept_set_of(check_spec({"quantizer": "qsgd", "rate": 2, "sparsifier": "none"})) == (
        "dense"
    )
    assert kept_set_of(check_spec({"compressor": "powersgd", "rate": 1})) == "dense"
    rk = check_spec({"quantizer": "uniform", "rate": 2, "sparsifier": "randomk", "topk": 0.1})
    assert kept_set_of(rk) == "random-K 10%"
    budget = check_spec({"quantizer": "uniform", "rate": 4, "topk_budget_percent": 40})
    assert kept_set_of(budget) == "top-K 10%"  # the fraction actually kept


def convex_samples(rng):
    """A random convex non-increasing function and its values at 3-8 sorted bits: a
    maximum of lines with negative slopes (any convex curve is one), drawn afresh."""
    slopes = -rng.exponential(0.3, int(rng.integers(2, 7)))
    cuts = rng.uniform(0.0, 0.5, slopes.size)

    def f(x):
        return np.max(cuts + slopes * (np.asarray(x, dtype=float)[..., None] - 1.0), axis=-1)

    xs = np.sort(rng.choice(np.linspace(0.2, 4.0, 77), int(rng.integers(3, 9)), replace=False))
    return f, xs


def value(weights, f, bits):
    return sum(w * f(bits[k]) for k, w in weights.items())


def test_convex_bracket_holds_every_convex_curve_between_its_ends():
    """2,000 random convex curves (maxima of random lines) read at random bits inside their
    configurations' range: the chord is never below the curve, the secant bound never above
    it, and a straight line is read exactly by both. Planted bugs that fail it: the
    neighbouring secants' mixing weights swapped (lam on the left side); the left secant's
    extension taken from j+1 instead of j; the chord's weights swapped."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        f, xs = convex_samples(rng)
        bits = {f"c{i}": float(x) for i, x in enumerate(xs)}
        x = float(rng.uniform(xs[0], xs[-1]))
        if (np.abs(xs - x) <= AT_RTOL * xs).any():
            continue  # read at that configuration (the test below)
        b = convex_bracket(x, bits)
        assert sum(b.upper.values()) == pytest.approx(1.0) and min(b.upper.values()) >= 0
        assert value(b.upper, f, bits) >= f(x) - 1e-12
        assert value(b.lower, f, bits) <= f(x) + 1e-12
        assert sum(b.lower.values()) == pytest.approx(1.0)
        line = convex_bracket(x, bits)
        for weights in (line.upper, line.lower):
            assert sum(w * (0.3 - 0.1 * bits[k]) for k, w in weights.items()) == pytest.approx(
                0.3 - 0.1 * x
            )


def test_convex_bracket_gap_is_the_measured_bend():
    """Between j and j+1 with neighbours on both sides the bracket's width is
    lam (1 - lam) h (s_{j+1} - s_{j-1}) (by hand: slopes -0.4, -0.1, -0.02 of a curve through
    (1, 0.5), (1.5, 0.3), (2.5, 0.2), (3.5, 0.18), read at 1.75, lam 0.25, h 1.0: width 0.25 *
    0.75 * 1.0 * (-0.02 + 0.4) = 0.07125); on x^2 it shrinks as h^2 when the points get
    dense."""
    pts = {"a": 1.0, "b": 1.5, "c": 2.5, "d": 3.5}
    loss = {"a": 0.5, "b": 0.3, "c": 0.2, "d": 0.18}
    b = convex_bracket(1.75, pts)
    upper = sum(w * loss[k] for k, w in b.upper.items())
    lower = sum(w * loss[k] for k, w in b.lower.items())
    assert upper == pytest.approx(0.275)
    assert upper - lower == pytest.approx(0.07125)
    assert b.step_log2 == pytest.approx(np.log2(2.5 / 1.5))
    widths = []
    for h in (0.5, 0.25, 0.125):
        xs = np.arange(1.0, 3.0 + h / 2, h)
        bits = {f"c{i}": float(v) for i, v in enumerate(xs)}
        x = 2.0 + h / 3
        b = convex_bracket(x, bits)
        sq = {k: v**2 for k, v in bits.items()}
        widths.append(sum(w * sq[k] for k, w in b.upper.items())
                      - sum(w * sq[k] for k, w in b.lower.items()))  # fmt: skip
    assert widths[0] / widths[1] == pytest.approx(4.0, rel=0.05)
    assert widths[1] / widths[2] == pytest.approx(4.0, rel=0.05)


def test_convex_bracket_ends_points_and_chord_switch():
    """At a configuration's bits (within 0.1%) both ends are that configuration; below the
    fewest bits or beyond 1% past the most: None; just past the most: the last
    configuration above, the last secant carried on below; only two configurations: no
    lower bound; ``chord``: both ends the chord; equal bits share their weight; a neighbour
    nearer than the bracket's step is passed over (planted bug: the adjacent one always)."""
    bits = {"a": 1.0, "b": 2.0, "c": 3.0}
    at = convex_bracket(2.0005, bits)
    assert at.upper == at.lower == {"b": 1.0} and at.step_log2 == 0.0
    assert convex_bracket(0.99, bits) is None and convex_bracket(3.05, bits) is None
    past = convex_bracket(3.02, bits)
    assert past.upper == {"c": 1.0} and past.lower == pytest.approx({"c": 1.02, "b": -0.02})
    assert convex_bracket(1.5, {"a": 1.0, "b": 2.0}).lower is None
    chord = convex_bracket(1.5, bits, interpolation="chord")
    assert chord.upper == chord.lower == pytest.approx({"a": 0.5, "b": 0.5})
    twins = convex_bracket(1.5, {"a": 1.0, "a2": 1.0, "b": 2.0})
    assert twins.upper == pytest.approx({"a": 0.25, "a2": 0.25, "b": 0.5})
    # a neighbour much nearer than the bracket's step is passed over for one a step away
    near = convex_bracket(1.5, {"a": 1.0, "b": 2.0, "c": 2.05, "d": 3.0})
    assert near.lower == pytest.approx({"b": 1.5, "d": -0.5})
    with pytest.raises(ValueError, match="interpolation must be"):
        convex_bracket(1.5, bits, interpolation="spline")


def test_frontier_candidates_reach_the_operational_curve():
    """600 random reference sets: the lowest true loss over the candidates at x equals the
    lower hull of the points read at x (flat past its lowest loss), by brute force over
    every pair's mixture; a candidate's weights sum to 1 and spend x bits (or fewer, alone).
    Planted bugs that fail it: pairs not bracketing x; the single configurations left out."""
    rng = np.random.default_rng(4)
    for _ in range(600):
        n = int(rng.integers(1, 8))
        b = np.round(rng.uniform(0.2, 3.0, n), 2)
        y = np.round(rng.uniform(0.0, 0.2, n), 3)
        bits = {f"c{i}": float(v) for i, v in enumerate(b)}
        x = float(rng.uniform(b.min(), b.max()))
        if (np.abs(b - x) <= AT_RTOL * x).any():
            continue  # read at that configuration
        cands = frontier_candidates(x, bits)
        best = min(sum(w * y[int(k[1:])] for k, w in c.items()) for c in cands)
        brute = min([y[i] for i in range(n) if b[i] <= x]
                    + [y[i] + (y[j] - y[i]) * (x - b[i]) / (b[j] - b[i])
                       for i in range(n) for j in range(n) if b[i] < x < b[j]])  # fmt: skip
        assert best == pytest.approx(brute, abs=1e-12)
        for c in cands:
            assert sum(c.values()) == pytest.approx(1.0)
            assert sum(w * bits[k] for k, w in c.items()) <= x * (1 + 1e-3) + 1e-12
    assert frontier_candidates(0.1, {"a": 1.0}) is None
    assert frontier_candidates(1.02, {"a": 1.0}) is None


def test_bracket_differences_are_the_two_ends_per_trajectory():
    b = convex_bracket(1.5, {"r1": 1.0, "r2": 2.0, "r3": 3.0})
    ref = {"r1": np.array([0.3, 0.4]), "r2": np.array([0.1, 0.2]), "r3": np.array([0.05, 0.1])}
    low, high = bracket_differences(np.array([0.2, 0.3]), ref, b)
    assert low == pytest.approx([0.2 - 0.2, 0.3 - 0.3])
    assert high == pytest.approx([0.2 - (1.5 * 0.1 - 0.5 * 0.05), 0.3 - (1.5 * 0.2 - 0.5 * 0.1)])
    low, high = bracket_differences(
        np.array([0.2]), ref, convex_bracket(1.5, {"r1": 1.0, "r2": 2.0})
    )
    assert np.isinf(high).all()
