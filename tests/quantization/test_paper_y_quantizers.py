"""Paper Y's reference quantizers against their definitions: weighted k-means, the backward
Gaussian test channel, Lloyd for a truncated law, and the bound of the truncated law."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch

from gradcomp.compression import GaussianChannel, build_compressor
from gradcomp.quantization.kmeans import weighted_kmeans
from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.rate_distortion import distortion_rate_curve
from gradcomp.quantization.symmetric_law import expected_distortion


@pytest.mark.parametrize("M", [0, 2])
def test_weighted_kmeans_is_a_stationary_point_with_its_reported_distortion(M):
    x = scipy.stats.laplace(scale=0.3).rvs(20_000, random_state=np.random.default_rng(5))
    res = weighted_kmeans(x, 8, M)
    assert res.converged and np.all(np.diff(res.levels) > 0)
    nearest = np.argmin(np.abs(x[:, None] - res.levels[None, :]), axis=1)  # brute force
    w = np.abs(x) ** M
    for k, level in enumerate(res.levels):
        cell = nearest == k
        assert level == pytest.approx(np.sum(w[cell] * x[cell]) / np.sum(w[cell]), rel=1e-9)
    direct = np.mean(w * (x - res.levels[nearest]) ** 2)
    assert res.distortion == pytest.approx(direct, rel=1e-9)


def test_weighted_kmeans_finds_separated_clusters():
    rng = np.random.default_rng(0)
    centres = np.array([-5.0, 1.0, 7.0])
    x = np.concatenate([c + 0.1 * rng.standard_normal(1000) for c in centres])
    levels = weighted_kmeans(x, 3, 0).levels
    np.testing.assert_allclose(levels, [x[:1000].mean(), x[1000:2000].mean(), x[2000:].mean()])


def test_kmeans_compressor_sends_its_levels():
    """The compressor's 8 levels are a stationary point of |x|^1-weighted k-means on the kept
    values, checked by brute force (each level the weighted mean of the kept values nearest to
    it), every sent value is one of them, and they cost 8 x 32 bits. Planted bug: unweighted
    (M = 0) k-means levels, or levels fitted to the whole update instead of the kept values."""
    x = torch.as_tensor(scipy.stats.norm.rvs(size=5000, random_state=1))
    c = build_compressor({"quantizer": "kmeans", "rate": 3, "M": 1, "min_entries": 0})
    payload, ctx = c.compress({"w": x})
    q = payload["w"].quantized
    assert q.levels_sent and len(q.levels) == 8
    assert c.rate(payload, ctx).side_bits == 8 * 32
    pos = payload["w"].indices  # None: dense, every entry sent
    positions = np.arange(x.numel()) if pos is None else pos.numpy()
    kept = x.numpy()[positions]
    levels = np.asarray(q.levels, dtype=np.float64)
    nearest = np.argmin(np.abs(kept[:, None] - levels[None, :]), axis=1)
    w = np.abs(kept)
    for k, level in enumerate(levels):
        cell = nearest == k
        assert level == pytest.approx(np.sum(w[cell] * kept[cell]) / np.sum(w[cell]), rel=1e-5)
    sent = c.decompress(payload, ctx)["w"].numpy()[positions]
    np.testing.assert_allclose(sent, levels[nearest], rtol=1e-6)


@pytest.mark.parametrize("rate", [1, 3])
def test_backward_gaussian_channel_reaches_the_distortion_rate_function(rate):
    """X_hat = mu + a (X - mu) + noise: X - X_hat has variance s^2 2^(-2R) and is
    uncorrelated with X_hat, so I(X; X_hat) = R bits exactly for a Gaussian source."""
    mu, s, n = 0.3, 2.0, 400_000
    x = torch.as_tensor(scipy.stats.norm(mu, s).rvs(n, random_state=np.random.default_rng(rate)))
    q = GaussianChannel(rate, seed=7).encode(x)
    y = q.values.numpy()
    err = x.numpy() - y
    d = s**2 * 2.0 ** (-2 * rate)
    tol = 4 * np.sqrt(2.0 / n)  # ~4 standard errors of a variance estimate, relative
    assert np.var(err) == pytest.approx(d, rel=tol)
    assert np.corrcoef(err, y)[0, 1] == pytest.approx(0.0, abs=4 / np.sqrt(n))
    assert np.mean(y) == pytest.approx(mu, abs=4 * s / np.sqrt(n))
    assert q.value_bits == rate and set(q.side) == {"mean", "std"}
    # its mutual information, 1/2 log2(Var X_hat / Var(X_hat | X)), is R bits
    a = 1 - 2.0 ** (-2 * rate)
    assert 0.5 * np.log2(np.var(y) / (a * (1 - a) * s**2)) == pytest.approx(rate, abs=0.01)
    # the authors' forward channel (slip) adds N(0, s^2 2^-2R) to X: its output's variance
    # is s^2 (1 + 2^-2R), so it carries 1/2 log2(1 + 2^2R) > R bits
    fwd = GaussianChannel(rate, seed=7, slip=True).encode(x).values.numpy()
    assert np.var(fwd - x.numpy()) == pytest.approx(d, rel=tol)
    assert np.var(fwd) == pytest.approx(s**2 * (1 + 2.0 ** (-2 * rate)), rel=tol)


@pytest.mark.slow
@pytest.mark.parametrize(("beta", "M"), [(0.7, 0), (1.0, 2)])
def test_truncated_lloyd_distortion_matches_monte_carlo(beta, M):
    """Lloyd for GenNorm restricted to |x| >= tau: its closed-form conditional distortion
    equals a Monte Carlo estimate on draws of the truncated law (scipy), and no level falls
    in the hole (-tau, tau)."""
    law = scipy.stats.gennorm(beta, scale=1.0)
    tau = law.ppf(0.5 + 0.548 / 2)  # keeps the 45.2% largest magnitudes
    res = lloyd_design("gennorm", {"beta": beta, "loc": 0.0, "scale": 1.0}, 16, M, tau=tau)
    assert res.converged and np.all(np.abs(res.levels) >= tau)
    draws = law.rvs(2_000_000, random_state=np.random.default_rng(2))
    x = draws[np.abs(draws) >= tau]
    y = res.levels[np.argmin(np.abs(x[:, None] - res.levels[None, :]), axis=1)]
    d = np.abs(x) ** M * (x - y) ** 2
    assert res.distortion == pytest.approx(d.mean(), abs=4 * d.std() / np.sqrt(x.size))
    closed = expected_distortion("gennorm", {"beta": beta, "scale": 1.0}, res.levels, M, tau=tau)
    assert closed == pytest.approx(res.distortion, rel=1e-10)


@pytest.mark.slow
def test_bound_of_the_truncated_law_lies_below_its_lloyd_quantizers():
    """D(R) of the truncated law is at most the distortion of any 2^R-level quantizer of it
    (a fixed-rate code of R bits)."""
    params = {"beta": 0.8, "loc": 0.0, "scale": 1.0}
    tau = scipy.stats.gennorm(0.8).ppf(0.5 + 0.548 / 2)
    for M in (0, 2):
        curve = distortion_rate_curve(
            "gennorm", params, M, rates=[2.0, 3.0], tau=tau, grid_size=400, n_sweep=12
        )
        for rate, bound, reliable in zip(
            curve["rate_bits"], curve["distortion"], curve["reliable"], strict=True
        ):
            assert reliable
            lloyd = lloyd_design("gennorm", params, int(2**rate), M, tau=tau).distortion
            assert 0 < bound <= lloyd
