import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcomp.quantization.grids import (
    GRIDS,
    FixedGrid,
    amax_exponent,
    fp_levels,
    get_grid,
    uniform_grid,
)


def torch_finite_values(dtype: torch.dtype) -> np.ndarray:
    """All finite values of a torch 8-bit float format, from its 256 byte patterns."""
    v = torch.arange(256, dtype=torch.uint8).view(dtype).to(torch.float64).numpy()
    return np.unique(v[np.isfinite(v)])  # -0 and +0 collapse


def brute_force_nearest(x: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """argmin |x - level|, ties towards the smaller |level|, then towards the lower level."""
    d = np.abs(x[:, None] - levels[None, :])
    best = d == d.min(axis=1, keepdims=True)
    mag = np.where(best, np.abs(levels)[None, :], np.inf)
    return np.argmax(mag == mag.min(axis=1, keepdims=True), axis=1)


def test_e5m2_grid_equals_torch_finite_values():
    q = get_grid("fp8_e5m2")
    ref = torch_finite_values(torch.float8_e5m2)
    assert ref.size == 247
    assert q.n_levels == 247
    np.testing.assert_array_equal(q.levels, ref)
    assert q.is_symmetric
    assert np.count_nonzero(q.levels == 0) == 1
    assert q.levels[-1] == 57344.0
    assert q.levels[q.levels > 0][0] == 2.0**-16  # smallest subnormal
    assert q.n_magnitudes == 124


def test_e4m3_grid_equals_torch_e4m3fn():
    q = get_grid("fp8_e4m3")
    np.testing.assert_array_equal(q.levels, torch_finite_values(torch.float8_e4m3fn))
    assert q.n_levels == 253 and q.levels[-1] == 448.0


def test_fp_levels_conventions():
    all_finite = fp_levels(4, 3, 7, special="none")
    assert all_finite.size == 255 and all_finite[-1] == 480.0
    np.testing.assert_array_equal(get_grid("fp4_e2m1").levels[7:], [0, 0.5, 1, 1.5, 2, 3, 4, 6])
    assert get_grid("fp4_e2m1").n_levels == 15
    with pytest.raises(ValueError):
        fp_levels(5, 2, 15, special="bogus")


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 8])
def test_uniform_grid(bits):
    q = uniform_grid(bits, 0.3)
    assert q.n_levels == 2**bits
    assert q.is_symmetric
    assert q.levels[0] == -0.3 and q.levels[-1] == 0.3
    np.testing.assert_allclose(np.diff(q.levels), 0.6 / (2**bits - 1))
    assert get_grid("uniform", bits=float(bits), max_abs=0.3).n_levels == 2**bits


def test_unknown_grid():
    with pytest.raises(ValueError, match="unknown grid"):
        get_grid("fp16")
    assert set(GRIDS) >= {"fp8_e5m2", "fp8_e4m3", "fp4_e2m1", "uniform"}


GRID_CHOICES = ["fp8_e5m2", "fp8_e4m3", "fp4_e2m1"]


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(GRID_CHOICES),
    x=st.lists(st.floats(-7e4, 7e4, allow_nan=False, width=32), min_size=1, max_size=50),
    use_mid=st.lists(st.integers(0, 300), max_size=10),
)
def test_nearest_by_midpoint_matches_brute_force(name, x, use_mid):
    q = get_grid(name)
    # exact midpoints and levels (both signs) exercise the tie rule
    extra = [q.midpoints[i % q.midpoints.size] for i in use_mid]
    extra += [q.levels[i % q.n_levels] for i in use_mid]
    v = np.asarray(x + extra, dtype=np.float64)
    sym, n_sat = q.encode(v)
    np.testing.assert_array_equal(sym, brute_force_nearest(v, q.levels))
    assert n_sat == np.count_nonzero(np.abs(v) > q.levels[-1])


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(1, 6),
    max_abs=st.floats(1e-6, 1e3),
    u=st.lists(st.floats(-2, 2), min_size=1, max_size=50),
)
def test_uniform_nearest_matches_brute_force(bits, max_abs, u):
    q = uniform_grid(bits, max_abs)
    v = np.asarray(u) * max_abs
    # away from midpoints, where rounding of |x - level| could reorder near-ties
    gap = np.abs(v[:, None] - q.midpoints[None, :]).min(axis=1) if q.midpoints.size else 1
    v = v[gap > 1e-9 * max_abs]
    np.testing.assert_array_equal(q.encode(v)[0], brute_force_nearest(v, q.levels))


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(GRID_CHOICES + ["uniform"]),
    x=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=40),
)
def test_symmetric_grids_quantize_symmetrically(name, x):
    q = uniform_grid(3, 1.0) if name == "uniform" else get_grid(name)
    v = np.asarray(x)
    v = v[v != 0]  # 0 lies on the midpoint between +-l of a grid without zero
    s_pos, _ = q.encode(v)
    s_neg, _ = q.encode(-v)
    np.testing.assert_array_equal(s_neg, q.n_levels - 1 - s_pos)


def test_matches_torch_cast_away_from_ties():
    q = get_grid("fp8_e5m2")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(200_000) * np.exp(rng.uniform(-25, 10, 200_000))).astype(np.float32)
    x = x[np.abs(x) < q.levels[-1]]
    x = x[~np.isin(x.astype(np.float64), q.midpoints)]  # torch rounds ties to even
    ref = torch.from_numpy(x).to(torch.float8_e5m2).to(torch.float64).numpy()
    np.testing.assert_array_equal(q.quantize(x), ref)


def test_saturation_is_counted_not_dropped():
    q = get_grid("fp8_e5m2")
    x = np.array([1e6, -1e6, np.inf, -np.inf, 57344.0, 60000.0, 1.0], dtype=np.float32)
    sym, n_sat = q.encode(x)
    assert n_sat == 5
    assert sym.size == x.size
    np.testing.assert_array_equal(q.decode(sym[:4]), [57344, -57344, 57344, -57344])
    with pytest.raises(ValueError, match="NaN"):
        q.encode(np.array([np.nan]))


def test_torch_input_and_shapes():
    q = get_grid("fp8_e5m2")
    t = torch.randn(3, 4, 5)
    sym, _ = q.encode(t)
    assert sym.shape == (3, 4, 5) and sym.dtype == np.int64
    np.testing.assert_array_equal(sym, q.encode(t.numpy())[0])
    assert q.decode(sym).shape == (3, 4, 5)
    tb = t.to(torch.bfloat16)
    np.testing.assert_array_equal(q.encode(tb)[0], q.encode(tb.float().numpy())[0])


def test_scale():
    q1 = get_grid("fp8_e5m2")
    qs = get_grid("fp8_e5m2", scale=2.0**-10)
    np.testing.assert_array_equal(qs.levels, q1.levels * 2.0**-10)
    np.testing.assert_array_equal(qs.unit_levels, q1.levels)
    x = np.random.default_rng(1).standard_normal(1000) * 1e-3
    np.testing.assert_array_equal(qs.encode(x)[0], q1.encode(x * 2.0**10)[0])
    assert qs.params == {"scale": 2.0**-10}


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    amax=st.floats(1e-30, 1e30) | st.sampled_from([1.0, 2.0**-20, 57344.0, 28672.0, 57345.0]),
    unit_max=st.sampled_from([57344.0, 448.0, 6.0]),
)
def test_amax_exponent_lands_in_the_top_binade(amax, unit_max):
    k = amax_exponent(amax, unit_max)
    assert amax * 2.0**k <= unit_max < amax * 2.0 ** (k + 1)


def test_amax_exponent_edge_cases():
    assert amax_exponent(0.0, 57344.0) == 0
    assert amax_exponent(57344.0, 57344.0) == 0 and amax_exponent(1.0, 1.75) == 0
    assert amax_exponent(2.0**-16, 57344.0) == 31  # 2**15 <= 57344 < 2**16
    with pytest.raises(ValueError, match="amax"):
        amax_exponent(float("inf"), 57344.0)


def test_edges():
    q = get_grid("fp4_e2m1")
    e = q.edges
    assert e.shape == (q.n_levels + 1,) and e[0] == -np.inf and e[-1] == np.inf
    np.testing.assert_array_equal(e[1:-1], q.midpoints)
    me = q.magnitude_edges
    assert me.shape == (q.n_magnitudes + 1,) and me[0] == 0 and me[-1] == np.inf
    np.testing.assert_array_equal(me[1:-1], [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5])


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(GRID_CHOICES + ["uniform"]),
    x=st.lists(st.floats(-1e5, 1e5, allow_nan=False), max_size=60),
)
def test_sign_magnitude_roundtrip(name, x):
    q = uniform_grid(2, 1.0) if name == "uniform" else get_grid(name)
    sym, _ = q.encode(np.asarray(x, dtype=np.float64))
    mags, signs = q.signed_to_magnitude(sym)
    assert mags.shape == sym.shape
    nonzero = q.magnitude_levels[mags] != 0
    assert signs.size == np.count_nonzero(nonzero)
    np.testing.assert_array_equal(q.magnitude_levels[mags], np.abs(q.levels[sym]))
    np.testing.assert_array_equal(q.magnitude_to_signed(mags, signs), sym)
    np.testing.assert_array_equal(q.decode_magnitude(mags, signs), q.levels[sym])
    m2, s2 = q.encode_magnitude(np.asarray(x, dtype=np.float64))
    np.testing.assert_array_equal(m2, mags)
    np.testing.assert_array_equal(s2, signs)


def test_sign_magnitude_needs_symmetric_grid():
    q = FixedGrid([-1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="symmetric"):
        q.encode_magnitude(np.array([0.5]))


def test_invalid_levels():
    with pytest.raises(ValueError):
        FixedGrid([1.0, 1.0])
    with pytest.raises(ValueError):
        FixedGrid([0.0, np.inf])
    with pytest.raises(ValueError):
        FixedGrid([0.0, 1.0], scale=0.0)
