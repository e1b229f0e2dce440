"""One nearest-level rule for paper L's grids and paper Y's level quantizers: the nearest
level, and on an exact tie the level nearer zero (a tie on a threshold at zero goes down)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradcomp.quantization.grids import FixedGrid, get_grid
from gradcomp.quantization.nearest_level import NearestLevels, nearest_index


def brute_nearest(levels: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of the nearest level by scanning every level; ties to the smaller magnitude, and
    between two levels of equal magnitude (a tie at zero) to the lower one. Written apart
    from the library: distances, not thresholds."""
    out = np.empty(x.shape, dtype=np.int64)
    for i, v in enumerate(x.ravel()):
        d = np.abs(levels - v)
        tied = np.flatnonzero(d == d.min())
        out.flat[i] = min(tied, key=lambda k: (abs(levels[k]), levels[k]))
    return out


def cases(levels: np.ndarray) -> np.ndarray:
    """Every midpoint (exact ties), the levels, values beyond the ends and random values.
    Levels are multiples of 1/8, so midpoints and distances are exact in float64."""
    mids = 0.5 * (levels[1:] + levels[:-1])
    rng = np.random.default_rng(0)
    spread = rng.uniform(levels[0] - 2, levels[-1] + 2, 200)
    return np.concatenate([mids, levels, [levels[0] - 5, levels[-1] + 5, 0.0], spread])


LEVEL_SETS = [
    np.array([-3.0, -1.0, 0.5, 2.0, 10.0]),
    np.array([-1.5, -0.5, 0.5, 1.5]),  # symmetric, a threshold at zero
    np.array([-2.0, -0.75, 0.0, 0.75, 2.0]),  # symmetric with a zero level
    np.array([0.25, 0.5, 4.0]),  # all positive
    np.array([-4.0, -0.5, -0.25]),  # all negative
]


@pytest.mark.parametrize("levels", LEVEL_SETS)
def test_nearest_levels_is_the_brute_force_nearest_level(levels: np.ndarray) -> None:
    """Planted bug: ties sent to the lower level everywhere (the old NearestLevels rule),
    which fails on every negative midpoint; or numpy and torch paths that differ."""
    x = cases(levels)
    want = brute_nearest(levels, x)
    q = NearestLevels.from_levels(levels)
    idx, val = q.quantize(x)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(val, levels[want])
    t_idx, t_val = q.quantize(torch.tensor(x, dtype=torch.float64))
    np.testing.assert_array_equal(t_idx.numpy(), want)
    np.testing.assert_array_equal(t_val.numpy(), levels[want])


@pytest.mark.parametrize("levels", LEVEL_SETS)
def test_grid_quantizer_is_the_brute_force_nearest_level(levels: np.ndarray) -> None:
    """Planted bug: the grid's own tie rule drifting from the level quantizer's."""
    x = cases(levels)
    symbols, n_sat = FixedGrid(levels).encode(x)
    np.testing.assert_array_equal(symbols, brute_nearest(levels, x))
    assert n_sat == np.count_nonzero((x < levels[0]) | (x > levels[-1]))


def test_fp8_grid_ties_and_oddness() -> None:
    """On a grid symmetric about zero the rule makes the quantizer odd at every tie: Q(-m) =
    -Q(m) for each midpoint m > 0 (planted bug: ties to the lower level give -Q(m) - step)."""
    grid = get_grid("fp8_e5m2")
    mids = grid.midpoints[grid.midpoints > 0]
    pos, neg = grid.quantize(mids), grid.quantize(-mids)
    np.testing.assert_array_equal(neg, -pos)
    np.testing.assert_array_equal(pos, grid.levels[brute_nearest(grid.levels, mids)])


def test_nearest_index_without_thresholds() -> None:
    """One level: every value goes to index 0, numpy and torch."""
    x = np.array([-1.0, 0.0, 3.0])
    assert nearest_index(np.array([]), x).tolist() == [0, 0, 0]
    assert nearest_index(np.array([]), torch.tensor(x)).tolist() == [0, 0, 0]
