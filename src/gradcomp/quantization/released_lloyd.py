"""Paper Y's Lloyd quantizer as its code was released (``slip``), for reproduction only.

``update_centers_magnitude_distance`` in the authors' ``main.py`` (FL_RD) does, for the
2^R levels of one tensor's kept values ``x``:

1. draws ``2^(R-1)`` magnitudes uniformly on ``[0, min(|min x|, |max x|)]`` (numpy's global
   stream) and concatenates ``[-r, r]`` *without sorting*;
2. sets threshold ``k`` to the midpoint of levels ``k`` and ``k + 1`` of that unsorted list;
3. replaces each level by the weighted centroid of the interval between its two
   neighbouring thresholds in list order (``quad`` over a reversed interval negates both
   integrals, so this is the centroid of the interval between them, whichever is larger),
   and returns after this first update, with thresholds again the midpoints of unsorted
   neighbours;
4. labels each value with ``np.digitize`` on the *sorted* thresholds and reconstructs it
   as the level of that label in the *unsorted* list.

So entries go to levels that are not their nearest. Here the draw is seeded, the law is the
fitted one (any family, centred at its loc, weight ``|x - loc|^M``; the authors' GenNorm
with ``x^2`` weight is ``M = 2``), and ``tau`` restricts it to ``|x - loc| >= tau`` as in
:func:`gradcomp.quantization.lloyd.lloyd_design`.
"""

from __future__ import annotations

import numpy as np

from gradcomp.quantization.symmetric_law import SymmetricLaw

__all__ = ["released_design", "released_labels"]


def released_design(
    law: SymmetricLaw,
    n_levels: int,
    M: float,
    x_min: float,
    x_max: float,
    rng: np.random.Generator,
    *,
    tau: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-3 above: ``(levels, thresholds)`` in list order, shapes (L,) and (L-1,), x units.

    ``n_levels`` L = 2^R >= 2; ``x_min``, ``x_max``: the extremes of the values to quantize;
    ``rng``: the seeded stream of the random initial levels. A cell with no weighted mass
    keeps its initial level (the authors' code would give NaN).
    """
    if n_levels < 2 or n_levels % 2:
        raise ValueError(f"the released design needs an even number of levels, got {n_levels}")
    half = rng.uniform(0.0, min(abs(x_min), abs(x_max)), n_levels // 2)
    init = np.concatenate([-half, half])
    unit = law.unit
    y = (init - law.loc) / law.scale
    t = 0.5 * (y[:-1] + y[1:])  # midpoints of unsorted neighbours
    lo = np.concatenate([[-np.inf], t])
    hi = np.concatenate([t, [np.inf]])
    t_unit = tau / law.scale
    m = unit.truncated_cell_moments(
        np.minimum(lo, hi), np.maximum(lo, hi), M, t_unit, orders=(0, 1),
        log_shift=unit.log_tail_mass(t_unit),
    )  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        centroid = m[1] / m[0]
    y_new = np.where(np.isfinite(centroid) & (m[0] > 0), centroid, y)
    levels = law.loc + law.scale * y_new
    return levels, 0.5 * (levels[:-1] + levels[1:])


def released_labels(x: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Step 4's labels: ``np.digitize(x, sorted(thresholds))``, int64 in 0..L-1, shape of x.

    The value of ``x[i]`` is ``levels[label[i]]`` with the *unsorted* levels.
    """
    return np.digitize(x, np.sort(thresholds)).astype(np.int64)
