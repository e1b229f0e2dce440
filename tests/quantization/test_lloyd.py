import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.minmax_levels import uniform_minmax_levels
from gradcomp.quantization.nearest_level import NearestLevels
from gradcomp.quantization.symmetric_law import (
    SymmetricLaw,
    expected_distortion,
    partial_moments,
    reference_partial_moments_quad,
)

NORM = {"loc": 0.0, "scale": 1.0}
LAWS = [
    ("norm", {"loc": 0.0, "scale": 1.7}),
    ("laplace", {"loc": 0.0, "scale": 0.5}),
    ("gennorm", {"beta": 0.8, "loc": 0.0, "scale": 2.0}),
    ("gennorm", {"beta": 2.5, "loc": 0.0, "scale": 1.0}),
    ("dweibull", {"c": 0.7, "loc": 0.0, "scale": 1.3}),
    ("dweibull", {"c": 1.6, "loc": 0.0, "scale": 1.0}),
]


@pytest.mark.parametrize(
    "n_levels, levels, mse",
    [
        (2, [0.7979], 0.3634),
        (4, [0.4528, 1.510], 0.1175),
        (8, [0.2451, 0.7560, 1.344, 2.152], 0.03455),
    ],
)
def test_gaussian_m0_reproduces_lloyd_max(n_levels, levels, mse):
    res = lloyd_design("norm", NORM, n_levels, 0)
    assert res.converged
    np.testing.assert_allclose(res.levels[n_levels // 2 :], levels, atol=6e-4)
    assert res.distortion == pytest.approx(mse, abs=6e-5)


# Optimum quantizers of the unit-variance Laplace law (Paez & Glisson 1972, corrected by
# Adams & Giesler 1978): positive output levels; N = 2 is E|X| = 1/sqrt(2), MSE 1/2.
@pytest.mark.parametrize(
    "n_levels, levels",
    [(2, [0.7071]), (4, [0.4198, 1.8340]), (8, [0.2334, 0.8330, 1.6725, 3.0867])],
)
def test_laplace_m0_reproduces_published_levels(n_levels, levels):
    law = stats.laplace(scale=1 / np.sqrt(2))
    res = lloyd_design("laplace", {"loc": 0.0, "scale": 1 / np.sqrt(2)}, n_levels, 0)
    np.testing.assert_allclose(res.levels[n_levels // 2 :], levels, atol=6e-4)
    assert res.distortion == pytest.approx(quad_distortion(law, res.levels, 0), rel=1e-8)
    if n_levels == 2:
        assert res.distortion == pytest.approx(0.5, rel=1e-10)


def quad_cell(fn, a: float, b: float, split: float) -> float:
    """int_a^b fn by scipy quad, split at ``split`` (the weight's kink / the density's peak)."""
    pieces = [(a, min(b, split)), (max(a, split), b)]
    return sum(
        integrate.quad(fn, u, v, epsabs=0.0, epsrel=1e-11, limit=200)[0] for u, v in pieces if u < v
    )


def quad_distortion(law, levels, M, thresholds=None, loc=0.0) -> float:
    """E |X - loc|^M (X - Q(X))^2 by quadrature of the scipy density, cell by cell."""
    levels = np.asarray(levels, dtype=float)
    t = 0.5 * (levels[1:] + levels[:-1]) if thresholds is None else np.asarray(thresholds)
    edges = np.concatenate([[-np.inf], t, [np.inf]])
    return sum(
        quad_cell(lambda x, y=y: abs(x - loc) ** M * (x - y) ** 2 * law.pdf(x), a, b, loc)
        for y, a, b in zip(levels, edges[:-1], edges[1:], strict=True)
    )


LLOYD_CASES = [
    ("gennorm", {"beta": 0.8, "loc": 0.0, "scale": 1.0}, 8, 2),
    ("gennorm", {"beta": 1.5, "loc": 0.0, "scale": 0.3}, 4, 1),
    ("dweibull", {"c": 1.4, "loc": 0.0, "scale": 1.0}, 8, 3),
    ("norm", {"loc": 0.0, "scale": 1.0}, 8, 0.5),
]


@pytest.mark.slow
@pytest.mark.parametrize("family, params, n_levels, M", LLOYD_CASES)
def test_lloyd_design_against_scipy_quadrature(family, params, n_levels, M):
    law = getattr(stats, family)(**params)
    res = lloyd_design(family, params, n_levels, M)
    # its distortion is the quadrature of the scipy density at its levels
    assert res.distortion == pytest.approx(quad_distortion(law, res.levels, M), rel=1e-7)
    # nearest-level cells, and every level is the |x|^M-weighted centroid of its cell
    edges = np.concatenate([[-np.inf], res.thresholds, [np.inf]])
    for y, a, b in zip(res.levels, edges[:-1], edges[1:], strict=True):
        mass = quad_cell(lambda x: abs(x) ** M * law.pdf(x), a, b, 0.0)
        first = quad_cell(lambda x: x * abs(x) ** M * law.pdf(x), a, b, 0.0)
        assert y == pytest.approx(first / mass, rel=1e-7, abs=1e-12)
    # a local minimum: moving any one level (with its cells) costs distortion
    base = quad_distortion(law, res.levels, M)
    for k in range(n_levels // 2, n_levels):
        for step in (-0.02, 0.02):
            moved = res.levels.copy()
            moved[k] += step * params["scale"]
            moved[n_levels - 1 - k] = -moved[k]
            assert quad_distortion(law, np.sort(moved), M) > base


@pytest.mark.parametrize(
    "family, params, M",
    [
        ("gennorm", {"beta": 0.6, "loc": 0.2, "scale": 0.5}, 2),
        ("dweibull", {"c": 0.8, "loc": -0.1, "scale": 1.2}, 1.5),
        ("laplace", {"loc": 0.0, "scale": 2.0}, 3),
    ],
)
def test_expected_distortion_against_scipy_quadrature(family, params, M):
    law = getattr(stats, family)(**params)
    levels = np.array([-2.0, -0.4, 0.1, 0.9, 3.0])
    ref = quad_distortion(law, levels, M, loc=params["loc"])
    assert expected_distortion(family, params, levels, M) == pytest.approx(ref, rel=1e-8)
    thresholds = np.array([-1.0, -0.3, 0.2, 2.5])  # cells other than the midpoints
    ref = quad_distortion(law, levels, M, thresholds, loc=params["loc"])
    got = expected_distortion(family, params, levels, M, thresholds)
    assert got == pytest.approx(ref, rel=1e-8)


def test_scale_and_location_equivariance():
    base = lloyd_design("gennorm", {"beta": 0.9, "scale": 1.0}, 8, 2)
    moved = lloyd_design("gennorm", {"beta": 0.9, "loc": 0.3, "scale": 0.01}, 8, 2)
    np.testing.assert_allclose(moved.levels, 0.3 + 0.01 * base.levels, rtol=1e-12, atol=1e-15)
    assert moved.distortion == pytest.approx(base.distortion * 0.01**4, rel=1e-10)


@pytest.mark.parametrize("family, params", LAWS)
@pytest.mark.parametrize("M", [0, 1, 2])
def test_levels_sorted_symmetric_and_monotone_history(family, params, M):
    res = lloyd_design(family, params, 8, M)
    assert res.levels.shape == (8,) and res.thresholds.shape == (7,)
    assert np.all(np.diff(res.levels) > 0)
    np.testing.assert_allclose(res.levels, -res.levels[::-1], atol=1e-12 * res.levels[-1])
    np.testing.assert_allclose(res.thresholds, 0.5 * (res.levels[1:] + res.levels[:-1]))
    assert res.converged and len(res.history) == res.n_iter + 1
    # Lloyd steps never increase the distortion (up to round-off)
    assert np.all(np.diff(res.history) <= 1e-12 * res.history[0])
    assert res.distortion == pytest.approx(
        expected_distortion(family, params, res.levels, M), rel=1e-12
    )


def test_every_init_reaches_the_weighted_centroids_for_gaussian():
    """Each named init starts from other levels (its initial distortion differs) and ends
    where every level is the |x|-weighted centroid of its cell, cells bounded by midpoints
    (scipy quadrature of the normal density, M = 1). Planted bugs that fail it: a named init
    ignored (the default used instead), the weight dropped from the centroid."""
    starts = {}
    for init in ("companding", "tilted", "uniform"):
        res = lloyd_design("norm", NORM, 8, 1, init=init)
        assert res.converged, init
        starts[init] = res.history[0]
        levels = res.levels
        edges = [-np.inf, *((levels[1:] + levels[:-1]) / 2), np.inf]
        for k in range(4, 8):  # the positive half; the design is symmetric
            a, b = edges[k], edges[k + 1]
            num = integrate.quad(lambda t: abs(t) * t * stats.norm.pdf(t), a, b, limit=200)[0]
            den = integrate.quad(lambda t: abs(t) * stats.norm.pdf(t), a, b, limit=200)[0]
            assert levels[k] == pytest.approx(num / den, rel=1e-7), (init, k)
    assert len(set(starts.values())) == 3, starts


def test_one_iteration_slip_returns_after_first_update():
    # the first update of plain Lloyd (a Newton step would differ)
    full = lloyd_design(
        "gennorm", {"beta": 0.8, "scale": 1.0}, 16, 2, init="uniform", accelerate=False
    )
    slip = lloyd_design(
        "gennorm", {"beta": 0.8, "scale": 1.0}, 16, 2, init="uniform", one_iteration=True
    )
    assert slip.n_iter == 1 and not slip.converged and len(slip.history) == 2
    np.testing.assert_allclose(slip.history, full.history[:2])
    assert slip.distortion > full.distortion


def test_gennorm_m2_spreads_levels_wider():
    """M = 2 moves every level outwards, and both designs satisfy the Lloyd conditions for
    their own weight, checked with scipy quadrature on the GenNorm density: each level is the
    |x|^M-weighted centroid of its cell, cells bounded by midpoints. Planted bug: the weight
    |x|^M dropped from the centroid (the M = 2 levels then equal the M = 0 ones)."""
    from scipy.integrate import quad

    params = {"beta": 0.8, "loc": 0.0, "scale": 1.0}
    m0 = lloyd_design("gennorm", params, 16, 0)
    m2 = lloyd_design("gennorm", params, 16, 2)
    assert m2.levels[-1] > m0.levels[-1]
    assert np.all(np.abs(m2.levels) > np.abs(m0.levels))
    pdf = stats.gennorm(**params).pdf
    for M, design in ((0, m0), (2, m2)):
        levels = design.levels
        edges = [-np.inf, *((levels[1:] + levels[:-1]) / 2), np.inf]
        for k in range(8, 16):  # the positive half; the design is symmetric
            a, b = edges[k], edges[k + 1]
            num = quad(lambda t, M=M: abs(t) ** M * t * pdf(t), a, b, limit=200)[0]
            den = quad(lambda t, M=M: abs(t) ** M * pdf(t), a, b, limit=200)[0]
            assert levels[k] == pytest.approx(num / den, rel=1e-6), (M, k)


@pytest.mark.parametrize("family, params", LAWS)
@pytest.mark.parametrize("M", [0, 1.5, 3])
def test_partial_moments_match_quad(family, params, M):
    law = SymmetricLaw.from_family(family, params)
    a = np.array([-np.inf, -3.0, -1.0, -0.2, 0.0, 0.5, 2.0, -np.inf])
    b = np.array([-3.0, 1.0, -0.2, 0.7, 0.5, 2.0, np.inf, np.inf])
    closed = law.cell_moments(a, b, M)
    quad = reference_partial_moments_quad(law, a, b, M)
    np.testing.assert_allclose(closed, quad, rtol=1e-9, atol=1e-13)
    # the law is a density: total mass 1, and it matches scipy's pdf
    assert law.cell_moments(-np.inf, np.inf, 0.0, orders=(0,))[0] == pytest.approx(1.0)
    x = np.linspace(-3, 3, 7) + 0.1
    np.testing.assert_allclose(law.pdf(x), getattr(stats, family)(**params).pdf(x), rtol=1e-12)


def test_partial_moments_with_location():
    params = {"beta": 1.3, "loc": 0.4, "scale": 0.7}
    f = stats.gennorm(**params).pdf
    got = partial_moments("gennorm", params, -0.5, 1.5, 2, order=1)
    ref = integrate.quad(lambda x: (x - 0.4) * abs(x - 0.4) ** 2 * f(x), -0.5, 1.5, points=[0.4])[0]
    assert got == pytest.approx(ref, rel=1e-10)


def test_expected_distortion_matches_monte_carlo():
    params = {"beta": 1.2, "loc": 0.0, "scale": 1.0}
    levels = np.array([-2.0, -0.5, 0.3, 1.7])
    x = stats.gennorm(**params).rvs(size=400_000, random_state=np.random.default_rng(1))
    q = NearestLevels.from_levels(levels)
    _, xq = q.quantize(x)
    mc = np.mean(np.abs(x) ** 2 * (x - xq) ** 2)
    assert expected_distortion("gennorm", params, levels, 2) == pytest.approx(mc, rel=0.02)


def test_zero_mass_cells_do_not_produce_nan():
    # levels far in the tail: their cells have (numerically) zero weighted mass
    init = np.array([-1.0, 0.0, 1.0, 60.0, 70.0])
    res = lloyd_design("norm", NORM, 5, 0, init=init, max_iter=5)
    assert np.all(np.isfinite(res.levels)) and np.all(np.isfinite(res.history))
    assert np.all(np.diff(res.levels) >= 0)


def test_single_level_and_bad_arguments():
    res = lloyd_design("gennorm", {"beta": 1.0, "scale": 1.0}, 1, 2)
    assert res.levels.shape == (1,) and res.thresholds.shape == (0,)
    assert res.levels[0] == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="family"):
        lloyd_design("cauchy", {"scale": 1.0}, 4, 0)
    with pytest.raises(ValueError, match="beta"):
        lloyd_design("gennorm", {"scale": 1.0}, 4, 0)
    with pytest.raises(ValueError, match="init"):
        lloyd_design("norm", NORM, 4, 0, init="random")


@pytest.mark.parametrize("R", [1, 2, 4])
def test_uniform_minmax_level_counts(R):
    lv = uniform_minmax_levels(-1.0, 3.0, R)
    assert lv.shape == (2**R,) and lv[0] == -1.0 and lv[-1] == 3.0
    np.testing.assert_allclose(np.diff(lv), 4.0 / (2**R - 1))
    extra = uniform_minmax_levels(-1.0, 3.0, R, extra_level=True)
    assert extra.shape == (2**R + 1,)
    np.testing.assert_allclose(np.diff(extra), 4.0 / 2**R)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=50))
def test_nearest_levels_picks_nearest_level(xs):
    q = NearestLevels.from_levels([-3.0, -1.0, 0.5, 2.0, 10.0])
    x = np.array(xs)
    idx, val = q.quantize(x)
    dist = np.abs(x[:, None] - q.levels[None, :])
    np.testing.assert_allclose(np.abs(x - val), dist.min(axis=1))
    t_idx, t_val = q.quantize(torch.tensor(x))
    np.testing.assert_array_equal(t_idx.numpy(), idx)
    np.testing.assert_array_equal(t_val.numpy(), val)


@pytest.mark.slow
def test_quad_moments_option_gives_same_design():
    fast = lloyd_design("gennorm", {"beta": 0.8, "scale": 1.0}, 4, 2, tol=1e-10)
    slow = lloyd_design("gennorm", {"beta": 0.8, "scale": 1.0}, 4, 2, tol=1e-10, moments="quad")
    np.testing.assert_allclose(slow.levels, fast.levels, rtol=1e-8)
    assert slow.n_iter == fast.n_iter


def _mp_centroids(family, params, levels, M, tau):
    """Weighted centroids of the positive levels' nearest-level cells beyond ``tau``, by
    mpmath quadrature of the unnormalised density at 40 digits (no underflow)."""
    import mpmath as mp

    mp.mp.dps = 40
    s = mp.mpf(params["scale"])
    if family == "norm":
        dens = lambda x: mp.exp(-((x / s) ** 2) / 2)  # noqa: E731
    elif family == "dweibull":
        c = mp.mpf(params["c"])
        dens = lambda x: (x / s) ** (c - 1) * mp.exp(-((x / s) ** c))  # noqa: E731
    else:
        b = mp.mpf(params["beta"])
        dens = lambda x: mp.exp(-((x / s) ** b))  # noqa: E731
    pos = levels[levels > 0]
    edges = [tau] + list(0.5 * (pos[:-1] + pos[1:])) + [mp.inf]
    out = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        lo = mp.mpf(max(lo, tau))
        # geometric breakpoints: the conditional law's scale beyond tau is about s^2 / tau
        steps = [lo + s * mp.mpf(2) ** k for k in range(-14, 7)]
        pts = [lo, *(steps if hi == mp.inf else [x for x in steps if x < hi]), mp.mpf(hi)]
        num = mp.quad(lambda x: x ** (M + 1) * dens(x), pts)
        den = mp.quad(lambda x: x**M * dens(x), pts)
        out.append(float(num / den))
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize(
    "family, params",
    [("norm", {"scale": 1.0}), ("dweibull", {"c": 1.3, "scale": 1.0}),
     ("gennorm", {"beta": 0.6, "scale": 1.0})],
)  # fmt: skip
@pytest.mark.parametrize("sigmas", [15.0, 26.0, 40.0])
@pytest.mark.parametrize("M", [0.0, 2.0])
def test_far_tail_designs_are_finite_and_centroidal(family, params, sigmas, M):
    """Kept threshold tau far in the tail (tau = 15, 26, 40 standard deviations).

    Planted bug / old behaviour: the initial quantiles inverted P(a, x) near 1
    (``gammaincinv(a, 1) = inf``) and the moments were not taken relative to the tail mass,
    so the Gaussian design returned levels [nan nan nan nan] from 15 sigma on and every
    family raised "no mass" where P(|X| >= tau) underflows (40 sigma for the normal).
    Reference: the centroid condition by mpmath quadrature at 40 digits."""
    std = math.sqrt(stats.__dict__[family](**params).var()) if family != "gennorm" else 1.0
    tau = sigmas * std
    res = lloyd_design(family, params, 4, M, tau=tau)
    assert np.all(np.isfinite(res.levels)) and np.isfinite(res.distortion) and res.converged
    assert np.all(np.diff(res.levels) > 0) and np.all(np.abs(res.levels) >= tau)
    ref = _mp_centroids(family, params, res.levels, M, tau)
    np.testing.assert_allclose(res.levels[res.levels > 0], ref, rtol=1e-9)


@pytest.mark.parametrize(
    "family, params, M",
    [("gennorm", {"beta": 1.0, "scale": 1.0}, 2.0), ("norm", {"scale": 1.0}, 0.0),
     ("dweibull", {"c": 0.7, "scale": 1.0}, 1.0)],
)  # fmt: skip
def test_rate_8_design_converges_in_few_updates(family, params, M):
    """2^8 levels: converged (centroid condition, checked independently by scipy quad with
    scipy.stats densities on every 16th cell) within 50 updates.

    Planted bug / old behaviour: plain Lloyd (``accelerate=False``) stops at max_iter
    = 10,000 without converging (6-29 s per design)."""
    res = lloyd_design(family, params, 256, M)
    assert res.converged and res.n_iter <= 50
    law = getattr(stats, family)(**params)
    t = np.concatenate([[-np.inf], res.thresholds, [np.inf]])
    for k in range(8, 256, 16):
        num = integrate.quad(lambda x: x * abs(x) ** M * law.pdf(x), t[k], t[k + 1], epsrel=1e-12)
        den = integrate.quad(lambda x: abs(x) ** M * law.pdf(x), t[k], t[k + 1], epsrel=1e-12)
        assert res.levels[k] == pytest.approx(num[0] / den[0], rel=1e-8)
    plain = lloyd_design(family, params, 16, M, accelerate=False)
    np.testing.assert_allclose(lloyd_design(family, params, 16, M).levels, plain.levels, rtol=1e-9)
