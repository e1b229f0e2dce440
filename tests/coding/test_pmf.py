import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcomp.coding.pmf import empirical_pmf, floor_and_renormalise, model_magnitude_pmf, model_pmf
from gradcomp.quantization.grids import get_grid


def test_empirical_pmf():
    counts, pmf = empirical_pmf(np.array([[0, 2], [2, 2]]), 4)
    np.testing.assert_array_equal(counts, [1, 0, 3, 0])
    np.testing.assert_allclose(pmf, [0.25, 0, 0.75, 0])
    counts, pmf = empirical_pmf(np.array([], dtype=np.int64), 3)
    assert counts.sum() == 0 and pmf.sum() == 0 and pmf.shape == (3,)
    with pytest.raises(ValueError):
        empirical_pmf(np.array([3]), 3)
    with pytest.raises(ValueError):
        empirical_pmf(np.array([-1]), 3)


def test_model_pmf_sums_to_one_and_matches_cdf_differences():
    q = get_grid("fp8_e5m2")
    d = scipy.stats.gennorm(0.8, scale=1e-3)
    p = model_pmf(d.cdf, q.edges)
    assert p.shape == (q.n_levels,)
    assert abs(p.sum() - 1) < 1e-12 and np.all(p >= 0)
    np.testing.assert_allclose(p, np.diff(d.cdf(q.edges)), atol=1e-15)
    # the survival function recovers upper-tail bins that 1 - cdf rounds to zero
    d2 = scipy.stats.norm()
    edges = np.array([-np.inf, 0.0, 9.0, 10.0, np.inf])
    plain = model_pmf(d2.cdf, edges)
    tail = model_pmf(d2.cdf, edges, sf=d2.sf)
    assert plain[2] == 0 and tail[2] > 0
    np.testing.assert_allclose(tail[2], d2.sf(9) - d2.sf(10))
    np.testing.assert_allclose(tail[:2], plain[:2])


@pytest.mark.parametrize("loc", [0.0, 3e-4, -1e-3])
def test_magnitude_pmf_is_sum_of_mirror_bins(loc):
    q = get_grid("fp8_e5m2")
    d = scipy.stats.gennorm(1.2, loc=loc, scale=1e-3)
    pm = model_magnitude_pmf(d.cdf, q.magnitude_edges)
    assert pm.shape == (q.n_magnitudes,)
    assert abs(pm.sum() - 1) < 1e-12
    e = q.magnitude_edges
    # signed bins (-e_{k+1}, -e_k] and (e_k, e_{k+1}] fold onto magnitude bin k
    signed = model_pmf(d.cdf, np.concatenate([-e[::-1], e[1:]]))
    k = e.size - 1
    np.testing.assert_allclose(pm, signed[:k][::-1] + signed[k:], rtol=1e-12, atol=1e-300)
    if loc == 0:  # with sf, both tails are computed without cancellation
        pm_sf = model_magnitude_pmf(d.cdf, e, sf=d.sf)
        np.testing.assert_allclose(pm_sf[1:], 2 * model_pmf(d.cdf, e, sf=d.sf)[1:], rtol=1e-9)


def test_magnitude_pmf_rejects_negative_edges():
    with pytest.raises(ValueError):
        model_magnitude_pmf(scipy.stats.norm().cdf, np.array([-1.0, 0.0, np.inf]))


@settings(max_examples=80, deadline=None)
@given(
    p=st.lists(st.one_of(st.just(0.0), st.floats(1e-30, 1.0)), min_size=1, max_size=40),
    data=st.data(),
    floor=st.sampled_from([1e-12, 1e-6, 1e-3]),
)
def test_floor_covers_observed_and_sums_to_one(p, data, floor):
    mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(p), max_size=len(p))))
    p = np.asarray(p)
    if p.sum() == 0 and not mask.any():
        with pytest.raises(ValueError):
            floor_and_renormalise(p, floor, must_cover=mask)
        return
    out = floor_and_renormalise(p, floor, must_cover=mask)
    assert abs(out.sum() - 1) < 1e-12
    assert np.all(out[mask] > 0)
    assert np.all(out[(p == 0) & ~mask] == 0)
    # floored symbols get at least floor / (1 + added mass)
    assert np.all(out[mask] >= floor / (1 + floor * mask.sum()) * (1 - 1e-12))
    # index form and None form
    np.testing.assert_allclose(
        floor_and_renormalise(p, floor, must_cover=np.flatnonzero(mask)), out
    )
    assert np.all(floor_and_renormalise(p + (p.sum() == 0), floor) > 0)


def test_floor_invalid():
    with pytest.raises(ValueError):
        floor_and_renormalise(np.array([0.5, -0.1]))
    with pytest.raises(ValueError):
        floor_and_renormalise(np.array([0.5, 0.5]), floor=0)
    np.testing.assert_allclose(
        floor_and_renormalise(np.zeros(4), must_cover=[1, 3]), [0, 0.5, 0, 0.5]
    )
