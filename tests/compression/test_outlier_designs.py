"""Issue 54, item 2: data designs that one extreme entry cannot capture, and M bounded.

The property: with one entry 1e3 to 1e30 times the typical one, the ``kmeans`` and
``ecsq_data`` compressors' weighted error ``mean |x|^M (x - Q(x))^2`` is within 2x of the
best design of at most 2^R levels on the same data (a 2^R-level fixed-rate design is also
one an entropy-constrained design may use at R coded bits). The best is computed here by
itself: a dynamic program over the sorted entries, the cells that hold the outlier summed
entry by entry (a difference of prefix sums that hold it would lose the others).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradcomp.compression import build_compressor
from gradcomp.compression.inputs import OutOfRangeUpdateError
from gradcomp.compression.specs import MAX_M, SpecError, check_spec

ORDINARY = 999


def _data(factor: float, sign: float, seed: int = 0) -> np.ndarray:
    """999 float32 Laplace entries of unit scale and one outlier ``sign factor`` (float32)."""
    rng = np.random.default_rng(seed)
    x = rng.laplace(size=ORDINARY + 1).astype(np.float32)
    x[0] = np.float32(sign * factor)
    return x.astype(np.float64)


def _cell_costs(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """cost[i, j]: the weighted error of one level (the weighted centroid) on x[i:j]
    (sorted, no outlier), from prefix sums of the centred entries."""
    xc = x - np.average(x, weights=w) if w.sum() > 0 else x
    c0, c1, c2 = (np.concatenate([[0.0], np.cumsum(v)]) for v in (w, w * xc, w * xc * xc))
    s0 = c0[None, :] - c0[:, None]
    s1 = c1[None, :] - c1[:, None]
    s2 = c2[None, :] - c2[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        cost = np.where(s0 > 0, s2 - s1 * s1 / np.where(s0 > 0, s0, 1.0), s2)
    return np.maximum(cost, 0.0)


def best_design_error(x: np.ndarray, M: float, levels: int) -> float:
    """The least ``sum |x|^M (x - Q(x))^2`` of a quantizer of at most ``levels`` levels: the
    optimal cells of a 1-D weighted k-means are intervals of the sorted entries."""
    order = np.sort(x)
    top = abs(order[-1]) > abs(order[0])  # the outlier: the largest or the smallest entry
    xs = order if top else -order[::-1]  # the outlier last
    w = np.abs(xs) ** M
    ordinary, n = xs[:-1], xs.size - 1
    cost = _cell_costs(ordinary / np.abs(ordinary).max(), w[:-1] / w[:-1].max())
    cost *= np.abs(ordinary).max() ** 2 * w[:-1].max()
    best = np.full((levels, n + 1), np.inf)  # best[k, j]: x[:j] in k + 1 cells
    best[0] = cost[0]
    for k in range(1, levels - 1):
        best[k] = np.min(best[k - 1][:, None] + cost, axis=0)
    # the last cell holds the outlier: x[i:], summed entry by entry
    out = np.inf
    for i in range(n + 1):
        cell, cw = xs[i:], w[i:]
        centre = float(np.sum(cw * cell) / np.sum(cw)) if np.sum(cw) > 0 else float(cell.mean())
        tail = float(np.sum(cw * (cell - centre) ** 2))
        before = 0.0 if i == 0 else float(np.min(best[: levels - 1, i]))
        out = min(out, before + tail)
    return out


def _weighted_error(kind: str, x: np.ndarray, M: float, rate: int) -> float:
    c = build_compressor({"quantizer": kind, "rate": rate, "M": M, "min_entries": 0})
    update = {"w": torch.from_numpy(x)}
    decoded = c.decompress(*c.compress(update))["w"].numpy()
    return float(np.sum(np.abs(x) ** M * (x - decoded) ** 2))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["kmeans", "ecsq_data"])
@pytest.mark.parametrize("M", [0, 2])
@pytest.mark.parametrize(("factor", "sign"), [(1e3, 1), (1e6, 1), (1e6, -1), (1e12, 1),
                                              (1e30, -1)])  # fmt: skip
def test_one_outlier_cannot_capture_the_ordinary_entries(kind, M, factor, sign):
    x = _data(factor, sign)
    got = _weighted_error(kind, x, M, rate=2)
    best = best_design_error(x, M, levels=4)
    assert got <= 2 * best, f"{kind} M {M}: weighted error {got:.4g}, best design {best:.4g}"


def test_the_reference_is_the_brute_force_optimum_on_a_small_sample():
    """The dynamic program against every split of 12 entries into at most 3 intervals."""
    from itertools import combinations

    x = _data(1e4, 1, seed=3)[:12]
    for M in (0, 2):
        xs, brute = np.sort(x), np.inf
        w = np.abs(xs) ** M
        for cuts in [c for k in range(3) for c in combinations(range(1, 12), k)]:
            bounds = [0, *cuts, 12]
            total = 0.0
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                centre = np.sum(w[a:b] * xs[a:b]) / np.sum(w[a:b])
                total += float(np.sum(w[a:b] * (xs[a:b] - centre) ** 2))
            brute = min(brute, total)
        assert best_design_error(x, M, levels=3) == pytest.approx(brute, rel=1e-9)


def test_kmeans_with_one_entry_of_1e6_keeps_the_others_apart():
    """The issue's case: kmeans at M = 2 with one entry 1e6 among N(0, 0.1^2) entries decoded
    every ordinary entry as the outlier (weighted error 1e10; {0, outlier}: 3e-5)."""
    x = np.random.default_rng(0).normal(scale=0.1, size=1000).astype(np.float32)
    x[0] = 1e6
    x = x.astype(np.float64)
    c = build_compressor({"quantizer": "kmeans", "rate": 2, "M": 2, "min_entries": 0})
    decoded = c.decompress(*c.compress({"w": torch.from_numpy(x)}))["w"].numpy()
    assert decoded[0] == x[0] and not np.any(decoded[1:] == x[0])
    zero_or_outlier = float(np.sum(np.abs(x[1:]) ** 2 * x[1:] ** 2))
    assert float(np.sum(np.abs(x) ** 2 * (x - decoded) ** 2)) <= 2 * zero_or_outlier


def test_ecsq_data_with_one_entry_1e30_times_the_others_keeps_them_apart():
    x = _data(1e30, 1)
    c = build_compressor({"quantizer": "ecsq_data", "rate": 2, "M": 2, "min_entries": 0})
    decoded = c.decompress(*c.compress({"w": torch.from_numpy(x)}))["w"].numpy()
    assert decoded[0] == x[0] and np.all(np.abs(decoded[1:]) < 10)


@pytest.mark.parametrize("M", [MAX_M + 1, 1e300])
def test_m_beyond_what_the_designs_compute_is_refused_at_check_spec(M):
    with pytest.raises(SpecError) as err:
        check_spec({"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": M})
    assert err.value.key == "M" and str(MAX_M) in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lloyd", "kmeans", "tcq", "ecsq", "ecsq_data"])
def test_the_largest_m_designs_finite_levels(kind):
    spec = {"quantizer": kind, "rate": 2, "M": MAX_M, "min_entries": 0}
    if kind in ("lloyd", "tcq", "ecsq"):
        spec["family"] = "gennorm"
    x = torch.from_numpy(np.random.default_rng(1).laplace(scale=1e-3, size=2000))
    c = build_compressor(spec)
    assert bool(torch.isfinite(c.decompress(*c.compress({"w": x}))["w"]).all())


@pytest.mark.parametrize("kind", ["kmeans", "tcq", "ecsq_data"])
def test_values_beyond_float32_levels_are_refused_by_name(kind):
    """kmeans and tcq raised OverflowError at 1e200, ecsq_data sent infinite levels."""
    spec = {"quantizer": kind, "rate": 2, "min_entries": 0}
    if kind == "tcq":
        spec["family"] = "gennorm"
    x = torch.from_numpy(_data(10.0, 1)) * 1e200
    with pytest.raises(OutOfRangeUpdateError, match="'w'"):
        build_compressor(spec).compress({"w": x})


@pytest.mark.parametrize("kind", ["kmeans", "tcq", "ecsq_data"])
def test_tiny_values_design_without_dividing_by_zero(kind):
    """ecsq_data raised ZeroDivisionError at 1e-200: the designs run at unit scale."""
    spec = {"quantizer": kind, "rate": 2, "min_entries": 0}
    if kind == "tcq":
        spec["family"] = "gennorm"
    x = torch.from_numpy(_data(10.0, 1)) * 1e-200
    c = build_compressor(spec)
    assert bool(torch.isfinite(c.decompress(*c.compress({"w": x}))["w"]).all())
