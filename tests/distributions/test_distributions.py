"""Tests of gradcomp.distributions: MLE fits, input checks and goodness-of-fit measures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy import integrate, special

from gradcomp.distributions import (
    FAMILIES,
    TAIL_LEVELS,
    FittedDistribution,
    GradientDataError,
    check_gradient,
    fit,
    fit_all,
    fit_gennorm,
    goodness_of_fit,
    ks_statistic,
    tail_probabilities,
    trimmed_w2,
)


def gennorm_sample(beta: float, scale: float, n: int, seed: int, loc: float = 0.0) -> np.ndarray:
    return st.gennorm.rvs(
        beta, loc=loc, scale=scale, size=n, random_state=np.random.default_rng(seed)
    )


def total_loglik(family: str, x: np.ndarray, params: dict[str, float]) -> float:
    return float(np.sum(getattr(st, family).logpdf(np.asarray(x, np.float64), **params)))


def beta_standard_error(beta: float, n: int) -> float:
    """Asymptotic standard error of the GenNorm beta MLE, from the Fisher information.

    Per entry, with ``t = |z|**beta ~ Gamma(1/beta)`` for a unit-scale GenNorm ``z``, the
    scores are ``d/dbeta = 1/beta + digamma(1/beta)/beta**2 - t log(t)/beta`` and
    ``d/dlog(scale) = beta t - 1``; loc is orthogonal to both (symmetry), so the same
    standard error holds with loc fixed or fitted.
    """
    a = 1.0 / beta

    def score(t):
        s_beta = 1 / beta + special.digamma(a) / beta**2 - t * np.log(t) / beta
        return s_beta, beta * t - 1

    def expect(fn):
        return integrate.quad(lambda t: fn(t) * st.gamma.pdf(t, a), 0, np.inf, limit=200)[0]

    i_bb = expect(lambda t: score(t)[0] ** 2)
    i_bs = expect(lambda t: score(t)[0] * score(t)[1])
    i_ss = expect(lambda t: score(t)[1] ** 2)
    info = np.array([[i_bb, i_bs], [i_bs, i_ss]])
    return math.sqrt(np.linalg.inv(info)[0, 0] / n)


# --------------------------------------------------------------------------------------------
# GenNorm MLE
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5, 2.0, 3.0])
@pytest.mark.parametrize("scale", [1e-6, 1e-3, 1.0])
@pytest.mark.parametrize("free_loc", [False, True])
def test_gennorm_recovers_beta_within_five_standard_errors(beta, scale, free_loc):
    n = 20_000
    loc = 0.3 * scale if free_loc else 0.0
    x = gennorm_sample(beta, scale, n, seed=int(100 * beta) + int(-math.log10(scale)), loc=loc)
    f = fit_gennorm(x, floc=None if free_loc else 0.0)
    se = beta_standard_error(beta, n)
    assert abs(f.params["beta"] - beta) <= 5 * se, (f.params, se)
    # scale: the same order of accuracy (relative), loc well inside one scale
    assert f.params["scale"] == pytest.approx(scale, rel=0.1)
    assert abs(f.params["loc"] - loc) < 0.1 * scale


@pytest.mark.parametrize("beta", [0.5, 1.5, 3.0])
def test_standard_error_matches_profile_curvature(beta):
    # the observed information (curvature of the profile log-likelihood in beta, scale at
    # its closed form, loc = 0) on a large sample agrees with the Fisher information above
    n = 200_000
    x = gennorm_sample(beta, 1.0, n, seed=21)
    ax = np.abs(x)

    def profile(b):
        log_scale = (math.log(b) + math.log(np.mean(ax**b))) / b
        return n * (math.log(b / 2) - special.gammaln(1 / b) - 1 / b - log_scale)

    b_hat = fit_gennorm(x, floc=0.0).params["beta"]
    h = 1e-3 * b_hat
    curvature = -(profile(b_hat + h) - 2 * profile(b_hat) + profile(b_hat - h)) / h**2
    assert 1 / math.sqrt(curvature) == pytest.approx(beta_standard_error(beta, n), rel=0.05)


@pytest.mark.parametrize("beta", [0.5, 0.8, 1.5, 3.0])
@pytest.mark.parametrize("floc", [None, 0.0])
def test_gennorm_loglik_not_below_scipy(beta, floc):
    x = gennorm_sample(beta, 2e-3, 2000, seed=7 + int(10 * beta), loc=0.0)
    ours = fit_gennorm(x, floc=floc)
    kw = {} if floc is None else {"floc": floc}
    b, loc, scale = st.gennorm.fit(x, **kw)
    ll_scipy = total_loglik("gennorm", x, {"beta": b, "loc": loc, "scale": scale})
    ll_ours = total_loglik("gennorm", x, ours.params)
    assert ll_ours >= ll_scipy - 1e-6 * abs(ll_scipy)
    assert ours.loglik == pytest.approx(ll_ours, rel=1e-12, abs=1e-8)


@settings(max_examples=25, deadline=None)
@given(
    beta=hst.floats(0.4, 4.0),
    seed=hst.integers(0, 2**31 - 1),
    n=hst.integers(50, 3000),
    free_loc=hst.booleans(),
)
def test_gennorm_fit_is_a_local_maximum(beta, seed, n, free_loc):
    x = gennorm_sample(beta, 1.0, n, seed)
    f = fit_gennorm(x, floc=None if free_loc else 0.0)
    best = total_loglik("gennorm", x, f.params)
    assert f.loglik == pytest.approx(best, rel=1e-10, abs=1e-7)
    names = ["beta", "scale"] + (["loc"] if free_loc else [])
    for name in names:
        for step in (-1e-3, 1e-3):
            p = dict(f.params)
            p[name] = p[name] * (1 + step) if name != "loc" else p[name] + step * p["scale"]
            if name == "beta" and not 0.05 <= p[name] <= 20:
                continue
            assert total_loglik("gennorm", x, p) <= best + 1e-7 * abs(best)


def test_gennorm_float32_and_shapes():
    x64 = gennorm_sample(0.8, 1e-4, 3 * 4 * 500, seed=3)
    x32 = x64.astype(np.float32)
    f32 = fit_gennorm(x32.reshape(3, 4, 500), floc=0.0)
    f64 = fit_gennorm(x32.astype(np.float64), floc=0.0)
    assert f32.params == f64.params and f32.loglik == f64.loglik
    assert f32.n == x64.size
    assert isinstance(f32.loglik, float)


def test_gennorm_handles_exact_zeros_and_shape_bounds():
    x = gennorm_sample(0.7, 1.0, 5000, seed=11)
    x[:1000] = 0.0  # dead units: exact zeros at loc
    f = fit_gennorm(x, floc=0.0, zero_atom=False)  # the continuous law on every entry
    assert np.isfinite(f.loglik) and f.p0 == 0.0
    assert f.loglik == pytest.approx(total_loglik("gennorm", x, f.params), rel=1e-12)
    g = fit_gennorm(x, zero_atom=False)
    assert g.loglik >= f.loglik - 1e-9 * abs(f.loglik)
    uniform = np.random.default_rng(0).uniform(-1, 1, 5000)  # beta -> infinity
    assert fit_gennorm(uniform, floc=0.0).params["beta"] == 20.0


# --------------------------------------------------------------------------------------------
# Other families
# --------------------------------------------------------------------------------------------


def test_norm_and_laplace_closed_forms():
    x = st.laplace.rvs(loc=0.2, scale=0.5, size=4001, random_state=np.random.default_rng(1))
    norm = fit(x, "norm")
    assert norm.params["loc"] == pytest.approx(np.mean(x), rel=1e-12)
    assert norm.params["scale"] == pytest.approx(np.std(x), rel=1e-12)
    lap = fit(x, "laplace")
    assert lap.params["loc"] == np.median(x)
    assert lap.params["scale"] == pytest.approx(np.mean(np.abs(x - np.median(x))), rel=1e-12)
    for f in (norm, lap):
        assert f.loglik == pytest.approx(total_loglik(f.family, x, f.params), rel=1e-12)
        assert f.n_params == 2 and f.fixed == ()
    norm0, lap0 = fit(x, "norm", floc=0.0), fit(x, "laplace", floc=0.0)
    assert norm0.params["scale"] == pytest.approx(np.sqrt(np.mean(x**2)), rel=1e-12)
    assert lap0.params["scale"] == pytest.approx(np.mean(np.abs(x)), rel=1e-12)
    assert norm0.n_params == lap0.n_params == 1


def test_dweibull_profile_mle_against_scipy():
    x = st.dweibull.rvs(0.7, loc=0.0, scale=0.01, size=3000, random_state=np.random.default_rng(2))
    ours = fit(x, "dweibull", floc=0.0)
    c, _, scale = st.dweibull.fit(x, floc=0.0)
    ll_scipy = total_loglik("dweibull", x, {"c": c, "loc": 0.0, "scale": scale})
    assert ours.loglik >= ll_scipy - 1e-9 * abs(ll_scipy)
    assert ours.loglik == pytest.approx(total_loglik("dweibull", x, ours.params), rel=1e-12)
    free = fit(x, "dweibull")
    assert free.params["loc"] == pytest.approx(np.median(x), abs=1e-3 * scale)
    assert not np.any(x == free.params["loc"])
    assert free.n_params == 3


def test_dweibull_rejects_entries_at_fixed_loc():
    x = np.r_[np.zeros(3), np.linspace(-1, 1, 100)]
    with pytest.raises(GradientDataError, match="fc7.weight"):
        fit(x, "dweibull", floc=0.0, label="fc7.weight", zero_atom=False)
    # as an atom, the zeros leave the law to the other entries
    assert fit(x, "dweibull", floc=0.0).p0 == 3 / 103


def test_fit_all_and_unknown_family():
    x = gennorm_sample(1.2, 1.0, 2000, seed=5)
    fits = fit_all(x, label="t")
    assert tuple(fits) == FAMILIES
    assert all(isinstance(f, FittedDistribution) and f.n == x.size for f in fits.values())
    # the richer families nest norm / laplace, so they fit at least as well
    assert fits["gennorm"].loglik >= max(fits["norm"].loglik, fits["laplace"].loglik) - 1e-6
    with pytest.raises(ValueError, match="unknown family"):
        fit(x, "cauchy")


def test_information_criteria_and_frozen_delegation():
    x = gennorm_sample(1.5, 2.0, 1000, seed=9)
    f = fit(x, "gennorm", floc=0.0)
    assert f.n_params == 2 and f.fixed == ("loc",)
    assert f.aic == pytest.approx(2 * 2 - 2 * f.loglik)
    assert f.bic == pytest.approx(2 * math.log(1000) - 2 * f.loglik)
    q = np.array([0.01, 0.5, 0.99])
    fz = st.gennorm(**f.params)
    for name in ("pdf", "logpdf", "cdf", "sf"):
        np.testing.assert_allclose(getattr(f, name)(q), getattr(fz, name)(q))
    np.testing.assert_allclose(f.ppf(q), fz.ppf(q))


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["norm", "laplace", "gennorm", "dweibull"])
def test_cdf_and_sf_are_scipys_to_the_last_bit(family):
    """The fast path behind ``cdf`` / ``sf`` (the family's ``_cdf`` / ``_sf`` on the
    standardised points) gives exactly scipy's public ``cdf`` / ``sf``: at both infinities, at
    NaN, at the FP8 grid's edges and around the law's scale, for parameters over 6 decades
    (planted bugs that fail it: loc added instead of subtracted, +inf given 0, shape
    arguments dropped); bad parameters give scipy's NaN."""
    from gradcomp.quantization.grids import get_grid

    law, rng = getattr(st, family), np.random.default_rng(8)
    edges = get_grid("fp8_e5m2").edges
    for _ in range(40):
        params = {"loc": rng.normal() * 1e-4, "scale": 10 ** rng.uniform(-7, -1)}
        if law.shapes:
            params[law.shapes] = rng.uniform(0.2, 3.0)
        x = np.r_[edges, rng.normal(size=30) * 10 * params["scale"], np.nan, 0.0, -np.inf]
        f = FittedDistribution(family, params, 100, 0.0)
        np.testing.assert_array_equal(f.cdf(x), law.cdf(x, **params))
        np.testing.assert_array_equal(f.sf(x), law.sf(x, **params))
    bad = FittedDistribution(family, {**params, "scale": -1.0}, 100, 0.0)
    assert np.isnan(bad.cdf(np.array([0.5]))).all()


@pytest.mark.parametrize(
    "bad, words",
    [
        (np.array([]), "empty"),
        (np.zeros(10), "zero"),
        (np.full(10, 0.25), "constant"),
        (np.array([1.0, np.nan, np.nan, 2.0]), "2 NaN"),
        (np.array([1.0, np.inf, -np.inf, 2.0]), "2 infinite"),
        (np.array(["a", "b"]), "real numbers"),
    ],
)
def test_bad_input_errors_name_the_label(bad, words):
    for call in (
        lambda: check_gradient(bad, "layer3.conv.weight"),
        lambda: fit(bad, "gennorm", label="layer3.conv.weight"),
        lambda: fit_all(bad, label="layer3.conv.weight"),
    ):
        with pytest.raises(GradientDataError, match=words) as info:
            call()
        assert "layer3.conv.weight" in str(info.value)
    assert issubclass(GradientDataError, ValueError)


def test_check_gradient_views_float64_and_takes_torch():
    x = np.arange(12.0).reshape(3, 4)
    out = check_gradient(x)
    assert out.dtype == np.float64 and out.shape == (12,) and np.shares_memory(out, x)
    import torch  # a core dependency: no skip

    t = torch.linspace(-1, 1, 7, dtype=torch.float32)
    np.testing.assert_array_equal(check_gradient(t), t.double().numpy())


# --------------------------------------------------------------------------------------------
# Goodness of fit
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def laplace_fits():
    x = st.laplace.rvs(scale=1e-3, size=30_000, random_state=np.random.default_rng(4))
    return x, fit_all(x, ("norm", "laplace", "gennorm"))


def test_w2_and_ks_prefer_the_right_family(laplace_fits):
    x, fits = laplace_fits
    w2 = {k: trimmed_w2(f, x) for k, f in fits.items()}
    ks = {k: ks_statistic(f, x) for k, f in fits.items()}
    assert max(w2["laplace"], w2["gennorm"]) < 0.5 * w2["norm"]
    assert max(ks["laplace"], ks["gennorm"]) < 0.5 * ks["norm"]
    # own-family fit vs own samples: within the 1% Kolmogorov critical value
    assert ks["laplace"] < 1.63 / math.sqrt(x.size)
    assert w2["laplace"] < 0.1


def test_ks_matches_scipy_kstest():
    x = gennorm_sample(1.3, 1.0, 999, seed=12)
    f = fit_gennorm(x)
    expected = st.kstest(
        x, "gennorm", args=(f.params["beta"], f.params["loc"], f.params["scale"])
    ).statistic
    assert ks_statistic(f, x) == pytest.approx(expected, rel=1e-12)


W2_MODEL = {"beta": 0.9, "loc": 0.3, "scale": 1.7}


def w2_model(params: dict[str, float] = W2_MODEL) -> FittedDistribution:
    return FittedDistribution("gennorm", dict(params), 0, 0.0)


def model_quantile_data(n: int, params: dict[str, float] = W2_MODEL) -> np.ndarray:
    """``n`` entries equal to the model quantiles at the levels i/(n-1); the two infinite
    ones (levels 0 and 1) replaced by finite values beyond their neighbours."""
    q = st.gennorm.ppf(np.linspace(0.0, 1.0, n), **params)
    q[0], q[-1] = q[1] - 1.0, q[-2] + 2.0
    return q


def brute_force_trimmed_w2(params: dict[str, float], x: np.ndarray) -> float:
    """Paper L's trimmed W2 for data of exactly n entries (the resample is then all of them):
    standardise by the data's mean and (population) standard deviation; the entry of rank
    i (counted, not sorted) is matched with the model quantile at level i/(n-1); ranks 0 and
    n-1 are dropped."""
    n = len(x)
    mean = math.fsum(x) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / n)
    pairs = []
    for v in x:
        rank = int(np.count_nonzero(x < v))
        if 0 < rank < n - 1:
            pairs.append(((v - mean) / std, rank / (n - 1)))
    data, levels = np.array(pairs).T
    model = (st.gennorm.ppf(levels, **params) - mean) / std
    return math.sqrt(math.fsum((data - model) ** 2) / (n - 2))


def test_trimmed_w2_is_zero_on_the_model_quantiles():
    x = model_quantile_data(3000)
    assert trimmed_w2(w2_model(), np.random.default_rng(0).permutation(x)) < 1e-12


def test_trimmed_w2_of_a_shifted_and_a_scaled_copy():
    q = model_quantile_data(3000)
    kept = q[1:-1]
    # a shift b of the data: every standardised pair differs by b / std
    b = 0.25
    assert trimmed_w2(w2_model(), q + b) == pytest.approx(b / q.std(), rel=1e-9)
    # data c * q around the model's loc: the pairs differ by (c - 1)(q_i - loc) / (c std(q))
    c, loc = 1.5, W2_MODEL["loc"]
    x = loc + c * (q - loc)
    expected = (c - 1) / c * np.sqrt(np.mean((kept - loc) ** 2)) / q.std()
    assert trimmed_w2(w2_model(), x) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("n, beta", [(3000, 0.7), (400, 1.8)])
def test_trimmed_w2_matches_a_brute_force_of_the_definition(n, beta):
    x = gennorm_sample(beta, 0.02, n, seed=13, loc=0.01)
    params = {"beta": 1.1, "loc": 0.0, "scale": 0.02}
    got = trimmed_w2(w2_model(params), x, n=n)
    assert got == pytest.approx(brute_force_trimmed_w2(params, x), rel=1e-9)


def test_trimmed_w2_affine_invariance_and_small_inputs():
    x = gennorm_sample(0.9, 1.0, 5000, seed=13)
    f = fit_gennorm(x)
    # data and model scaled together: same distance
    scaled = FittedDistribution(
        "gennorm",
        {
            "beta": f.params["beta"],
            "loc": 1e-6 * f.params["loc"],
            "scale": 1e-6 * f.params["scale"],
        },
        f.n,
        0.0,
    )
    assert trimmed_w2(scaled, 1e-6 * x) == pytest.approx(trimmed_w2(f, x), rel=1e-6)
    # fewer entries than draws: with replacement, still finite
    assert np.isfinite(trimmed_w2(f, x[:100]))


def test_tail_probabilities_table(laplace_fits):
    x, fits = laplace_fits
    table = tail_probabilities(fits["laplace"], x)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["level", "threshold", "empirical", "model", "abs_log10_error"]
    np.testing.assert_allclose(table["threshold"], np.quantile(np.abs(x), 1 - table["level"]))
    first = table.iloc[0]
    assert first["empirical"] == pytest.approx(0.01, rel=0.01)
    assert first["abs_log10_error"] < 0.1  # model and data agree at the 1% tail
    norm_table = tail_probabilities(fits["norm"], x)
    assert norm_table["abs_log10_error"].iloc[2] > table["abs_log10_error"].iloc[2]
    # no entry above the threshold (ties at the maximum): no error at that level
    tied = np.r_[np.linspace(-1, 1, 1000), np.full(20, 5.0)]
    tied_table = tail_probabilities(fit(tied, "norm"), tied, levels=(1e-1, 1e-3))
    assert tied_table["empirical"].iloc[1] == 0 and np.isnan(tied_table["abs_log10_error"][1])
    assert not np.isnan(tied_table["abs_log10_error"][0])


def test_goodness_of_fit_keys_and_values(laplace_fits):
    x, fits = laplace_fits
    g = goodness_of_fit(fits["gennorm"], x)
    per_level = {f"tail_err_{lv:g}" for lv in TAIL_LEVELS}
    assert set(g) == {"loglik_per_entry", "aic", "bic", "ks", "w2", "tail_log10_err", *per_level}
    f = fits["gennorm"]
    tails = tail_probabilities(f, x, TAIL_LEVELS)["abs_log10_error"]
    for lv, err in zip(TAIL_LEVELS, tails, strict=True):
        assert g[f"tail_err_{lv:g}"] == pytest.approx(err, nan_ok=True)
    assert g["loglik_per_entry"] == pytest.approx(f.loglik / x.size, rel=1e-12)
    assert g["aic"] == pytest.approx(f.aic, rel=1e-12)
    assert g["bic"] == pytest.approx(f.bic, rel=1e-12)
    assert g["w2"] == trimmed_w2(f, x) and g["ks"] == ks_statistic(f, x)
    assert g["tail_log10_err"] < goodness_of_fit(fits["norm"], x)["tail_log10_err"]


# --------------------------------------------------------------------------------------------
# Exact zeros: an atom p0, the family fitted to the non-zero entries
# --------------------------------------------------------------------------------------------


def with_zeros(x: np.ndarray, p0: float, seed: int) -> np.ndarray:
    """``x`` with a share ``p0`` of its entries, at random positions, set to exactly zero."""
    y = x.copy()
    y[np.random.default_rng(seed).permutation(y.size)[: round(p0 * y.size)]] = 0.0
    return y


def observed_beta_se(x: np.ndarray, params: dict[str, float]) -> float:
    """Standard error of beta from the observed information: the numerical Hessian of the
    summed scipy GenNorm log-density in (beta, log scale) at ``params`` (loc held)."""
    loc = params["loc"]

    def ll(theta):
        return float(np.sum(st.gennorm.logpdf(x, theta[0], loc=loc, scale=math.exp(theta[1]))))

    theta = np.array([params["beta"], math.log(params["scale"])])
    h = 1e-3 * np.array([theta[0], 1.0])
    hess = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h[i], np.eye(2)[j] * h[j]
            corners = ll(theta + ei + ej) + ll(theta - ei - ej)
            hess[i, j] = (corners - ll(theta + ei - ej) - ll(theta - ei + ej)) / (4 * h[i] * h[j])
    return math.sqrt(np.linalg.inv(-hess)[0, 0])


@pytest.mark.parametrize("p0", [0.0, 0.02, 0.1, 0.3])
def test_zero_atom_keeps_beta_on_the_non_zero_entries(p0):
    # Laplace entries (beta = 1) with a share p0 of exact zeros, as dead units give
    x = with_zeros(st.laplace.rvs(scale=1e-3, size=20_000, random_state=4), p0, seed=5)
    nonzero = x[x != 0]
    f = fit(x, "gennorm", label="t")
    assert f.p0 == (x.size - nonzero.size) / x.size
    assert not f.shape_at_bound
    assert abs(f.params["beta"] - 1.0) <= 3 * observed_beta_se(nonzero, f.params), f.params
    # log-likelihood of the mixture: n0 log p0 + sum over the rest of log((1 - p0) f(x))
    expected = total_loglik("gennorm", nonzero, f.params) + nonzero.size * math.log1p(-p0)
    if p0:
        expected += (x.size - nonzero.size) * math.log(p0)
    assert f.loglik == pytest.approx(expected, rel=1e-10)
    assert f.n_params == 3 + (p0 > 0) and f.n == x.size
    # KS compares the model's jump at zero on both sides: small for data from the model
    assert ks_statistic(f, x) < 0.02


def test_without_the_atom_zeros_make_a_degenerate_flagged_fit():
    x = with_zeros(st.laplace.rvs(scale=1e-3, size=20_000, random_state=4), 0.1, seed=5)
    f = fit(x, "gennorm", zero_atom=False)
    assert f.params["beta"] == 0.05 and f.shape_at_bound and f.p0 == 0.0
    assert goodness_of_fit(f, x)["w2"] > 10 * goodness_of_fit(fit(x, "gennorm"), x)["w2"]


def test_mixture_cdf_sf_ppf_closed_forms():
    # p0 = 0.2 at zero, Laplace(0, 1) for the rest: F(x) = 0.8 * 0.5 e^x for x < 0
    f = FittedDistribution("laplace", {"loc": 0.0, "scale": 1.0}, 100, 0.0, p0=0.2)
    x = np.array([-2.0, -1e-12, 0.0, 1.0])
    cont = np.array([0.5 * math.exp(-2.0), 0.5 * math.exp(-1e-12), 0.5, 1 - 0.5 * math.exp(-1)])
    np.testing.assert_allclose(f.cdf(x), 0.8 * cont + 0.2 * (x >= 0), rtol=1e-12)
    np.testing.assert_allclose(f.sf(x), 1 - (0.8 * cont + 0.2 * (x >= 0)), rtol=1e-12)
    np.testing.assert_allclose(f.pdf(x[[0, 3]]), 0.8 * 0.5 * np.exp(-np.abs(x[[0, 3]])))
    # quantiles: below 0.4 the negative half, 0.4..0.6 the atom, above it the positive half
    q = np.array([0.1, 0.4, 0.5, 0.6, 0.9])
    expected = [math.log(2 * 0.1 / 0.8), 0.0, 0.0, 0.0, -math.log(2 * (1 - (0.9 - 0.2) / 0.8))]
    np.testing.assert_allclose(f.ppf(q), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "bad, words",
    [
        (np.r_[np.zeros(5), np.full(7, 0.5)], "non-zero entries all equal"),
        (np.r_[np.zeros(5), [-3.0]], "non-zero entries all equal"),
        (np.zeros(8), "all 8 entries are zero"),
    ],
)
def test_zeros_and_constant_non_zeros_cannot_be_fitted(bad, words):
    for family in ("gennorm", "norm"):
        with pytest.raises(GradientDataError, match=words) as info:
            fit(bad, family, label="fc3.weight")
        assert "fc3.weight" in str(info.value)
