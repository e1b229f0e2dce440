"""The M-magnitude weighted L2 distortion of paper Y, measured on data.

``d(g, g_hat) = |g|^M (g - g_hat)^2``, averaged over entries; ``M = 0`` is the mean squared
error. (Its expectation under a fitted law is
:func:`gradcomp.quantization.symmetric_law.expected_distortion`.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["m_weighted_distortion"]


def m_weighted_distortion(x: Any, x_hat: Any, M: float) -> float:
    """Mean over entries of ``|x|^M (x - x_hat)^2`` in float64, units of x^(M+2).

    ``x`` and ``x_hat``: numpy arrays or torch tensors (any device) of the same shape.
    """
    x = _float64(x)
    if x.size == 0:
        return 0.0
    return float(np.mean(np.abs(x) ** M * (x - _float64(x_hat)) ** 2))


def _float64(a: Any) -> np.ndarray:
    if hasattr(a, "detach"):  # torch tensor, without importing torch
        a = a.detach().to("cpu").double().numpy()
    return np.asarray(a, dtype=np.float64)
