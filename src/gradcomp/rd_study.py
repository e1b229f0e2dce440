"""Figure Y5's study: M-weighted distortion of each quantizer against the rate-distortion bound.

On the entries of one real model update (kept by top-K, as the federated
compressors see them), each quantizer is designed at rates R = 1, 2, ...
bits per entry and its empirical M-weighted distortion

    D_M = mean over entries of |g|^M (g - g_hat)^2      (units of g^(M+2))

is measured; the Blahut-Arimoto distortion-rate curve of the fitted GenNorm
under the same distortion gives the bound (only the points its discretised
grid resolves, ``reliable`` in :func:`gradcomp.rate_distortion.distortion_rate_curve`).
The GenNorm is fitted to the kept entries, as the federated Lloyd quantizers
are; top-K leaves a hole around zero that the fit does not model, so the
bound is the bound of the fitted law, not of the data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from gradcomp.distributions import FittedDistribution, fit
from gradcomp.lloyd import LevelQuantizer, lloyd_design, uniform_minmax_levels
from gradcomp.rate_distortion import distortion_rate_curve

log = logging.getLogger(__name__)

BOUND = "bound (GenNorm fit)"


def weighted_distortion(x: np.ndarray, x_hat: np.ndarray, M: float) -> float:
    """``mean(|x|^M (x - x_hat)^2)`` over the entries (float64)."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.mean(np.abs(x) ** M * (x - np.asarray(x_hat, dtype=np.float64)) ** 2))


def keep_top_fraction(values: np.ndarray, fraction: float) -> np.ndarray:
    """The ``ceil(fraction * n)`` entries of largest magnitude (flat float64 array)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    k = int(np.ceil(fraction * flat.size))
    if k >= flat.size:
        return flat
    return flat[np.argpartition(np.abs(flat), flat.size - k)[flat.size - k :]]


def quantizer_designs(
    x: np.ndarray,
    M: float,
    rate: int,
    gennorm: FittedDistribution,
    norm: FittedDistribution,
    *,
    seed: int = 0,
    slip: bool = False,
) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Quantizers at ``rate`` bits (2^rate levels) designed on the entries ``x``.

    ``gennorm`` and ``norm`` are fits to ``x``. Returns name -> function
    mapping entries to reconstructions: uniform min-max, Lloyd for the fitted
    GenNorm under ``|g|^M`` weighting, Gaussian Lloyd-Max (M = 0, fitted
    normal) and the Gaussian test channel.
    """
    n_levels = 2**rate
    uniform = LevelQuantizer.from_levels(uniform_minmax_levels(x.min(), x.max(), rate, slip=slip))
    lloyd_g = lloyd_design("gennorm", gennorm.params, n_levels, M, one_iteration=slip).quantizer()
    lloyd_n = lloyd_design("norm", norm.params, n_levels, 0, one_iteration=slip).quantizer()
    std = float(x.std())
    rng = np.random.default_rng(seed)

    def channel(v: np.ndarray) -> np.ndarray:
        return v + std * rng.normal(0.0, 2.0**-rate, size=v.shape)

    return {
        "uniform": lambda v: uniform.quantize(v)[1],
        "lloyd gennorm (same M)": lambda v: lloyd_g.quantize(v)[1],
        "lloyd gauss (M0)": lambda v: lloyd_n.quantize(v)[1],
        "gaussian channel": channel,
    }


def rate_distortion_table(
    values: np.ndarray,
    *,
    rates: Sequence[int],
    Ms: Sequence[float],
    topk: float,
    slip: bool = False,
) -> pd.DataFrame:
    """Rows ``(M, quantizer, rate_bits, distortion)`` for every quantizer, rate and M,
    plus the bound's curve (quantizer :data:`BOUND`) on a fine rate grid."""
    x = keep_top_fraction(values, topk)
    rows = []
    gennorm = fit(x, "gennorm", label="Y5 update")
    norm = fit(x, "norm", label="Y5 update")
    log.info("Y5: %d kept entries, GenNorm fit %s", x.size, gennorm.params)
    for M in Ms:
        for rate in rates:
            designs = quantizer_designs(x, M, rate, gennorm, norm, slip=slip)
            for name, quantize in designs.items():
                rows.append(
                    {
                        "M": M,
                        "quantizer": name,
                        "rate_bits": float(rate),
                        "distortion": weighted_distortion(x, quantize(x), M),
                    }
                )
        grid = np.linspace(0.25, max(rates), 4 * max(rates))
        # Blahut-Arimoto's small matrix products run faster on one BLAS thread.
        with threadpool_limits(1):
            curve = distortion_rate_curve("gennorm", gennorm.params, M, rates=grid)
        # keep the points the discretisation resolves (see gradcomp.rate_distortion)
        curve = curve[curve["reliable"]]
        rows += [
            {"M": M, "quantizer": BOUND, "rate_bits": r, "distortion": d}
            for r, d in zip(curve["rate_bits"], curve["distortion"], strict=True)
        ]
        log.info("Y5: M = %g done", M)
    return pd.DataFrame(rows)
