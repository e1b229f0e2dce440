"""Matching a test curve with a reference at matched bits, against brute-force references:
the lower convex hull and the Pareto front by exhaustive checks of every point (and pair of
points) on random configurations, interpolation weights against numpy's interp, the
bracket's readings on random convex curves (maxima of lines) and S curves (one reflected)
and by hand, the reading the reference's points support, and the front's candidates
against a brute-force hull."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gradcomp.compression.specs import check_spec
from gradcomp.statistics.bracket_choice import bend_shown, choose, difference_ends
from gradcomp.statistics.matched_bits import (
    AT_RTOL,
    bracket_at,
    combine,
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


def s_curve(f, t):
    """``f`` left of ``t``, its point reflection through ``(t, f(t))`` right of it: convex
    then concave for a convex ``f``, bending once."""

    def g(x):
        x = np.asarray(x, dtype=float)
        return np.where(x <= t, f(np.minimum(x, t)), 2 * f(t) - f(2 * t - np.maximum(x, t)))

    return g


def interior(rng, xs):
    """Bits inside the configurations' range, not within AT_RTOL of one (None: try again)."""
    x = float(rng.uniform(xs[0], xs[-1]))
    return None if (np.abs(xs - x) <= AT_RTOL * xs).any() else x


def test_convex_reading_holds_every_convex_curve_between_its_ends():
    """2,000 random convex curves (maxima of random lines) read at random bits inside their
    configurations' range: the chord is never below the curve, the secant bound never above
    it, and a straight line is read exactly by every reading but the monotone one. Planted
    bugs that fail it: the neighbouring secants' mixing weights swapped (lam on the left
    side); the left secant's extension taken from j+1 instead of j; the chord's weights
    swapped."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        f, xs = convex_samples(rng)
        bits = {f"c{i}": float(x) for i, x in enumerate(xs)}
        x = interior(rng, xs)
        if x is None:
            continue  # read at that configuration (the test below)
        chord, lower = bracket_at(x, bits).readings["convex"]
        assert sum(chord.values()) == pytest.approx(1.0) and min(chord.values()) >= 0
        assert value(chord, f, bits) >= f(x) - 1e-12
        assert value(lower, f, bits) <= f(x) + 1e-12
        assert sum(lower.values()) == pytest.approx(1.0)
        for kind, reading in bracket_at(x, bits).readings.items():
            for weights in reading if kind != "monotone" else ():
                assert sum(w * (0.3 - 0.1 * bits[k]) for k, w in weights.items()) == (
                    pytest.approx(0.3 - 0.1 * x)
                )


@pytest.mark.slow
def test_either_bend_reading_holds_every_s_curve():
    """2,000 random S curves (a convex curve reflected at a random point inside the span,
    either way up) read where a neighbour lies on each side: the curve lies between the
    lowest and the highest of the chord and the two secants; the convex reading misses some
    of them (what the bend check guards against). Planted bug that fails it: the mixed
    secant bound in place of the two."""
    rng = np.random.default_rng(1)
    missed = checked = 0
    while checked < 2000:
        f, xs = convex_samples(rng)
        g = s_curve(f, float(rng.uniform(xs[0], xs[-1])))
        if rng.random() < 0.5:
            g = (lambda h: lambda x: -h(x))(g)
        bits = {f"c{i}": float(x) for i, x in enumerate(xs)}
        x = interior(rng, xs)
        if x is None or "either bend" not in bracket_at(x, bits).readings:
            continue
        checked += 1
        b = bracket_at(x, bits)
        ends = [value(w, g, bits) for w in b.readings["either bend"]]
        assert min(ends) - 1e-12 <= g(x) <= max(ends) + 1e-12
        convex = [value(w, g, bits) for w in b.readings["convex"]]
        missed += not (min(convex) - 1e-12 <= g(x) <= max(convex) + 1e-12)
    assert missed > 100


def test_convex_reading_gap_is_the_measured_bend():
    """Between j and j+1 with neighbours on both sides the bracket's width is
    lam (1 - lam) h (s_{j+1} - s_{j-1}) (by hand: slopes -0.4, -0.1, -0.02 of a curve through
    (1, 0.5), (1.5, 0.3), (2.5, 0.2), (3.5, 0.18), read at 1.75, lam 0.25, h 1.0: width 0.25 *
    0.75 * 1.0 * (-0.02 + 0.4) = 0.07125); on x^2 it shrinks as h^2 when the points get
    dense. The second differences are the changes of slope: 0.3 and 0.08 over these points."""
    pts = {"a": 1.0, "b": 1.5, "c": 2.5, "d": 3.5}
    loss = {"a": 0.5, "b": 0.3, "c": 0.2, "d": 0.18}
    b = bracket_at(1.75, pts)
    upper, lower = (sum(w * loss[k] for k, w in c.items()) for c in b.readings["convex"])
    assert upper == pytest.approx(0.275)
    assert upper - lower == pytest.approx(0.07125)
    assert b.step_log2 == pytest.approx(np.log2(2.5 / 1.5))
    assert [sum(w * loss[k] for k, w in d.items()) for d in b.bends] == pytest.approx([0.3, 0.08])
    widths = []
    for h in (0.5, 0.25, 0.125):
        xs = np.arange(1.0, 3.0 + h / 2, h)
        bits = {f"c{i}": float(v) for i, v in enumerate(xs)}
        chord, lower = bracket_at(2.0 + h / 3, bits).readings["convex"]
        widths.append(value(chord, np.square, bits) - value(lower, np.square, bits))
    assert widths[0] / widths[1] == pytest.approx(4.0, rel=0.05)
    assert widths[1] / widths[2] == pytest.approx(4.0, rel=0.05)


def test_bracket_at_points_ends_and_chord_switch():
    """At a configuration's exact bits: that configuration; within 0.1% of it, or up to 1%
    past the last: its value plus and minus the offset times each neighbouring secant's
    slope (the nearest neighbour at least 1% away); with no neighbour there, or farther out,
    None; two configurations: only the monotone reading; ``chord``: the chord alone; equal
    bits share their weight; a neighbour nearer than half the bracket's step is passed over
    (planted bug: the adjacent one always)."""
    bits = {"a": 1.0, "b": 2.0, "c": 3.0}
    assert bracket_at(2.0, bits).readings == {"point": ({"b": 1.0},)}
    near = bracket_at(2.001, bits)
    assert list(near.readings) == ["slope"] and near.bends == () and near.step_log2 == 0.0
    loss = {"a": 0.5, "b": 0.3, "c": 0.25}
    assert sorted(sum(w * loss[k] for k, w in c.items()) for c in near.readings["slope"]) == (
        pytest.approx([0.3 - 0.0002, 0.3 - 0.00005, 0.3 + 0.00005, 0.3 + 0.0002])
    )
    assert bracket_at(0.9995, bits).readings["slope"] == (
        pytest.approx({"a": 1.0005, "b": -0.0005}),
        pytest.approx({"a": 0.9995, "b": 0.0005}),
    )
    assert bracket_at(0.99, bits) is None and bracket_at(3.05, bits) is None
    assert bracket_at(1.0005, {"a": 1.0}) is None and bracket_at(1.0, {"a": 1.0}) is not None
    past = bracket_at(3.02, bits).readings["slope"]
    assert past == (pytest.approx({"c": 1.02, "b": -0.02}), pytest.approx({"c": 0.98, "b": 0.02}))
    two = bracket_at(1.5, {"a": 1.0, "b": 2.0})
    assert two.readings == {"monotone": ({"a": 1.0}, {"b": 1.0})} and two.bends == ()
    chord = bracket_at(1.5, bits, interpolation="chord").readings
    assert chord == {"chord": (pytest.approx({"a": 0.5, "b": 0.5}),)}
    twins = bracket_at(1.5, {"a": 1.0, "a2": 1.0, "b": 2.0, "c": 3.0}).readings["convex"][0]
    assert twins == pytest.approx({"a": 0.25, "a2": 0.25, "b": 0.5})
    near = bracket_at(1.5, {"a": 1.0, "b": 2.0, "c": 2.05, "d": 3.0})
    assert near.readings["convex"][1] == pytest.approx({"b": 1.5, "d": -0.5})
    with pytest.raises(ValueError, match="interpolation must be"):
        bracket_at(1.5, bits, interpolation="spline")


def test_the_reading_follows_the_bend_the_points_show():
    """Noise-free points: a straight reference is read convex (both bends hold, width 0), a
    convex one convex, a concave one concave, an S (slopes -0.1, -0.4, -0.1) either bend, and
    with one neighbour only by its one bend. With noise far above the bend no sign is shown:
    either bend, or monotone with one neighbour. Planted
    bugs that fail it: a bend taken as shown from its mean alone; a single shown second
    difference taken for all."""
    bits = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    units = np.arange(8)
    shared = np.random.default_rng(0).normal(0.0, 0.05, 8)

    def values(ys, noise=0.0):
        rng = np.random.default_rng(1)
        return {k: y + shared + noise * rng.normal(size=8) for k, y in zip(bits, ys, strict=True)}

    b = bracket_at(2.5, bits)
    for ys, kind in (
        ((0.4, 0.3, 0.2, 0.1), "convex"),
        ((0.6, 0.3, 0.2, 0.15), "convex"),
        ((0.4, 0.35, 0.2, 0.0), "concave"),
        ((0.6, 0.5, 0.1, 0.0), "either bend"),
    ):
        assert choose(b, values(ys), units)[0] == kind, ys
    assert choose(bracket_at(1.5, bits), values((0.6, 0.5, 0.1, 0.0)), units)[0] == "concave"
    noisy = values((0.6, 0.3, 0.2, 0.15), noise=1.0)
    assert bend_shown(b.bends[0], noisy, units) == set()
    assert choose(b, noisy, units)[0] == "either bend"
    assert choose(bracket_at(1.5, bits), noisy, units)[0] == "monotone"
    # the ends: the test minus the highest and minus the lowest reading, by their means
    ref = values((0.6, 0.5, 0.1, 0.0))
    low, high = difference_ends(np.full(8, 0.3), ref, choose(b, ref, units)[1])
    readings = [combine(w, ref).mean() for w in b.readings["either bend"]]
    assert (low.mean(), high.mean()) == pytest.approx((0.3 - max(readings), 0.3 - min(readings)))


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


def test_frontier_candidates_count_no_configuration_past_the_budget():
    """A configuration 0.05% past the budget is no candidate alone (it spends more): it is
    reached by time sharing with one below; the fewest bits less 0.05% is not matched."""
    cands = frontier_candidates(1.0, {"a": 0.5, "b": 1.0005})
    assert cands == [{"a": 1.0}, pytest.approx({"a": 0.001, "b": 0.999}, rel=1e-3)]
    assert frontier_candidates(0.9995, {"a": 1.0, "b": 2.0}) is None
