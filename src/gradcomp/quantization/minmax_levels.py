"""Uniform levels between a tensor's minimum and maximum (paper Y's uniform quantizer); the
symmetric fixed grid's levels are :func:`gradcomp.quantization.grids.uniform_levels`."""

from __future__ import annotations

import numpy as np

__all__ = ["uniform_minmax_levels"]


def uniform_minmax_levels(
    x_min: float, x_max: float, R: int, *, extra_level: bool = False
) -> np.ndarray:
    """Uniform levels including both ends: 2^R levels on [x_min, x_max].

    With ``extra_level=True``, 2^R + 1 levels (step (max-min)/2^R), as the authors' code does.
    Returns a float64 array of shape (2^R,) or (2^R + 1,).
    """
    if R < 0 or int(R) != R:
        raise ValueError("R must be a non-negative integer")
    n = 2 ** int(R) + (1 if extra_level else 0)
    if n == 1:
        return np.array([0.5 * (x_min + x_max)])
    return np.linspace(float(x_min), float(x_max), n)
