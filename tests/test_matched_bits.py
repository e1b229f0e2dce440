"""Matching a test curve with a reference at matched bits, against brute-force references:
the lower convex hull and the Pareto front by exhaustive checks of every point (and pair of
points) on random configurations, interpolation weights against numpy's interp, and the
contrasts of both match modes on hand-made curves."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gradcomp.compression.specs import check_spec
from gradcomp.lossy.matched_bits import (
    interpolation_weights,
    kept_set_of,
    lower_hull,
    match_points,
    pareto_front,
    unit_differences,
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


# A reference: top-K 45% at 1.5 (dominated), 2.0, 3.0 bits; top-K 10% at 0.7 and 0.9 bits
REF = {"a1": ("k45", 1.5, 0.20), "a2": ("k45", 2.0, 0.01), "a3": ("k45", 3.0, 0.00),
       "b1": ("k10", 0.7, 0.05), "b2": ("k10", 0.9, 0.06)}  # fmt: skip


def test_kept_set_matching_uses_the_same_kept_set_only():
    """A test point at 1.75 bits on k45 is read halfway between a1 and a2 (never b1, which
    is cheaper and better); one at 3.5 bits lies beyond k45's range and one on k20 has no
    reference: both unmatched with their reason."""
    m = match_points({"t1": ("k45", 1.75), "t2": ("k45", 3.5), "t3": ("k20", 1.0)}, REF,
                     "kept_set")  # fmt: skip
    assert [c.test for c in m.contrasts] == ["t1"]
    assert m.contrasts[0].weights == pytest.approx({"a1": 0.5, "a2": 0.5})
    assert set(m.unmatched) == {"t2", "t3"} and "k20" in m.unmatched["t3"]
    assert "3.5" in m.unmatched["t2"]


def test_frontier_matching_reads_the_operational_curve():
    """The hull of REF is b1 (0.7, 0.05) -> a2 (2.0, 0.01) -> a3 (3.0, 0): a1 (dominated)
    and b2 (above the chord b1-a2) are never used; a point at 1.35 bits is read halfway
    between b1 and a2; past a3, up to the reference's most bits, on a3 itself."""
    m = match_points({"t": ("dense", 1.35)}, REF, "frontier")
    assert m.contrasts[0].weights == pytest.approx({"b1": 0.5, "a2": 0.5})
    assert match_points({"t": ("dense", 3.0)}, REF, "frontier").contrasts[0].weights == {"a3": 1.0}
    assert "t" in match_points({"t": ("dense", 0.5)}, REF, "frontier").unmatched
    with pytest.raises(ValueError, match="match must be"):
        match_points({"t": ("dense", 1.0)}, REF, "hull")


def test_unit_differences_are_the_contrast_per_trajectory():
    m = match_points({"t1": ("k45", 1.75), "t4": ("k10", 0.7)}, REF, "kept_set")
    ref = {k: np.array([v[2], v[2] + 1.0]) for k, v in REF.items()}
    test = {"t1": np.array([0.0, 1.0]), "t4": np.array([0.1, 0.2])}
    expected = np.mean([test["t1"] - (ref["a1"] + ref["a2"]) / 2, test["t4"] - ref["b1"]], 0)
    assert unit_differences(m, test, ref) == pytest.approx(expected)
    empty = match_points({"t3": ("k20", 1.0)}, REF, "kept_set")
    assert np.isnan(unit_differences(empty, {"t3": np.zeros(2)}, ref)).all()
