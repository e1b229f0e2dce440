import numpy as np
import pytest

from gradcomp.quantization.lloyd import SymmetricLaw, lloyd_design
from gradcomp.quantization.rate_distortion import (
    blahut_arimoto,
    discretise,
    distortion_rate_curve,
    high_rate_distortion,
    weighted_distortion_matrix,
)

RATES = np.arange(0.0, 5.01, 0.5)


@pytest.fixture(scope="module")
def gaussian_curve():
    return distortion_rate_curve("norm", {"loc": 0.0, "scale": 2.0}, 0, rates=RATES, grid_size=400)


def test_gaussian_curve_matches_shannon(gaussian_curve):
    df = gaussian_curve
    exact = 4.0 * 2.0 ** (-2.0 * df["rate_bits"])
    np.testing.assert_allclose(df["distortion"], exact, rtol=2e-3)
    # for M = 0 the high-rate approximation is the Shannon lower bound, exact for a Gaussian
    np.testing.assert_allclose(df["high_rate"], exact, rtol=1e-12)
    assert df["reliable"].all()


def test_curve_is_monotone_decreasing(gaussian_curve):
    assert np.all(np.diff(gaussian_curve["distortion"]) < 0)


@pytest.mark.parametrize(
    "family, params, M",
    [
        ("norm", {"loc": 0.0, "scale": 1.0}, 0),
        ("gennorm", {"beta": 0.8, "loc": 0.0, "scale": 1.0}, 2),
        ("dweibull", {"c": 0.9, "loc": 0.0, "scale": 1.0}, 1),
    ],
)
def test_lloyd_quantizers_lie_above_the_bound(family, params, M):
    rates = np.array([1.0, 2.0, 3.0])
    df = distortion_rate_curve(
        family, params, M, rates=rates, n_sweep=12, check_grid=False, grid_size=300
    )
    assert np.all(np.diff(df["distortion"]) < 0)
    for r, bound in zip(rates, df["distortion"], strict=True):
        lloyd = lloyd_design(family, params, 2 ** int(r), M).distortion
        assert lloyd >= bound


def test_slope_mode_points_are_on_the_curve():
    params = {"loc": 0.0, "scale": 1.0}
    df = distortion_rate_curve("norm", params, 0, slopes=[2.0, 8.0, 32.0], grid_size=400)
    assert list(df.columns) == ["slope", "rate_bits", "distortion"]
    # Gaussian: s = 1 / (2 D) and D = 2^(-2R)
    np.testing.assert_allclose(df["distortion"], 0.5 / df["slope"], rtol=2e-3)
    np.testing.assert_allclose(df["distortion"], 2.0 ** (-2 * df["rate_bits"]), rtol=2e-3)


def test_blahut_arimoto_binary_hamming():
    # binary uniform source, Hamming distortion: R(D) = 1 - h(D)
    p = np.array([0.5, 0.5])
    d = 1.0 - np.eye(2)
    res = blahut_arimoto(p, [0, 1], [0, 1], d, s=np.log(9.0))  # slope gives D = 0.1
    h = -(0.1 * np.log2(0.1) + 0.9 * np.log2(0.9))
    assert res.distortion == pytest.approx(0.1, rel=1e-9)
    assert res.rate_bits == pytest.approx(1.0 - h, rel=1e-9)


def test_discretisation_is_a_pmf_and_matrix_shape():
    law = SymmetricLaw.from_family("gennorm", {"beta": 0.7, "scale": 1.0})
    x, p = discretise(law, 2, 200)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(x) > 0) and np.all(p > 0)
    assert weighted_distortion_matrix(x, x[:5], 2).shape == (x.size, 5)


def test_high_rate_scales_with_scale():
    a = high_rate_distortion("gennorm", {"beta": 0.8, "scale": 1.0}, 2, [3.0])
    b = high_rate_distortion("gennorm", {"beta": 0.8, "scale": 0.1}, 2, [3.0])
    assert b[0] == pytest.approx(a[0] * 0.1**4, rel=1e-12)


def test_rates_and_slopes_are_exclusive():
    with pytest.raises(ValueError, match="not both"):
        distortion_rate_curve("norm", {"scale": 1.0}, 0, rates=[1.0], slopes=[1.0])
