"""Figure Y5's study: M-weighted distortion of each quantizer against the rate-distortion bound.

On the entries of one real model update that a federated compressor kept (read from a run's
update snapshot, :func:`gradcomp.lossy.run_files.read_snapshot`), each value quantizer of the
federated study (:mod:`gradcomp.compression.value_quantizers`, the same objects) is applied at
rates R = 1, 2, ... bits per entry and its empirical M-weighted distortion

    D_M = mean over entries of |g|^M (g - g_hat)^2      (units of g^(M+2))

is measured (:func:`gradcomp.quantization.distortion.m_weighted_distortion`). The
Blahut-Arimoto distortion-rate curve of the GenNorm fitted to those entries under the same
distortion gives the bound (only the points its discretised grid resolves, ``reliable`` in
:func:`gradcomp.quantization.rate_distortion.distortion_rate_curve`); top-K leaves a hole
around zero that this fit does not model, so the bound is the bound of the fitted law.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from gradcomp.artifacts import write_text
from gradcomp.compression.value_quantizers import (
    GaussianChannel,
    LloydQuantizer,
    UniformQuantizer,
    ValueQuantizer,
)
from gradcomp.distributions import fit
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.quantization.distortion import m_weighted_distortion
from gradcomp.quantization.rate_distortion import distortion_rate_curve

log = logging.getLogger(__name__)

__all__ = ["BOUND", "distortion_study", "distortion_table", "kept_entries"]

BOUND = "bound (GenNorm fit)"
COLUMNS = ("M", "quantizer", "rate_bits", "distortion")


def study_quantizers(rate: int, M: float, *, seed: int = 0, slip: bool = False):
    """Name -> value quantizer at ``rate`` bits: uniform min-max, Lloyd for the fitted GenNorm
    under the same M, Gaussian Lloyd-Max (M = 0) and the Gaussian test channel."""
    quantizers: dict[str, ValueQuantizer] = {
        "uniform": UniformQuantizer(rate, slip=slip),
        "lloyd gennorm (same M)": LloydQuantizer(rate, "gennorm", M, slip=slip),
        "lloyd gauss (M0)": LloydQuantizer(rate, "norm", 0.0, slip=slip),
        "gaussian channel": GaussianChannel(rate, seed=seed),
    }
    return quantizers


def distortion_table(
    values: np.ndarray, *, rates: Sequence[int], Ms: Sequence[float], slip: bool = False
) -> pd.DataFrame:
    """Rows ``(M, quantizer, rate_bits, distortion)`` for every quantizer, rate and M on the
    entries ``values`` (1-D), plus the bound's curve (quantizer :data:`BOUND`) on a fine grid."""
    x = torch.as_tensor(np.asarray(values, dtype=np.float64).ravel())
    gennorm = fit(x.numpy(), "gennorm", label="Y5 update")
    log.info("Y5: %d kept entries, GenNorm fit %s", x.numel(), gennorm.params)
    rows = []
    for M in Ms:
        for rate in rates:
            for name, quantizer in study_quantizers(rate, M, slip=slip).items():
                q = quantizer.encode(x, name="Y5 update")
                x_hat = quantizer.decode(q)
                rows.append(
                    {
                        "M": M,
                        "quantizer": name,
                        "rate_bits": float(rate),
                        "distortion": m_weighted_distortion(x, x_hat, M),
                    }
                )
        grid = np.linspace(0.25, max(rates), 4 * max(rates))
        # Blahut-Arimoto's small matrix products run faster on one BLAS thread.
        with threadpool_limits(1):
            curve = distortion_rate_curve("gennorm", gennorm.params, M, rates=grid)
        curve = curve[curve["reliable"]]  # the points the discretisation resolves
        rows += [
            {"M": M, "quantizer": BOUND, "rate_bits": r, "distortion": d}
            for r, d in zip(curve["rate_bits"], curve["distortion"], strict=True)
        ]
        log.info("Y5: M = %g done", M)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def kept_entries(snapshot: Path, tensor: str) -> np.ndarray:
    """The non-zero entries of ``tensor``'s update that the compressor kept (float64, 1-D).

    Raises ValueError naming the tensor when the snapshot does not hold it or kept nothing.
    """
    snap = read_snapshot(snapshot)
    if tensor not in snap["before"]:
        raise ValueError(
            f"figures.y5_tensor: {tensor!r} is not in the update of {snapshot} "
            f"(names look like {', '.join(list(snap['before'])[:4])}, ...)"
        )
    before = snap["before"][tensor].double().reshape(-1)
    keep = snap["kept"][tensor].reshape(-1) & (before != 0)
    if not bool(keep.any()):
        raise ValueError(f"figures.y5_tensor: the compressor kept no entry of {tensor!r}")
    return before[keep].numpy()


def distortion_study(
    snapshot: Path,
    out_tsv: Path,
    *,
    tensor: str,
    rates: Sequence[int],
    Ms: Sequence[float],
    slip: bool = False,
) -> pd.DataFrame:
    """Y5's table for ``tensor`` of a run's update snapshot, written to ``out_tsv``."""
    table = distortion_table(kept_entries(snapshot, tensor), rates=rates, Ms=Ms, slip=slip)
    write_text(out_tsv, table.to_csv(sep="\t", index=False))
    return table
