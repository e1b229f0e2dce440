"""Figure Y5's study: M-weighted distortion of each quantizer against the rate-distortion bound.

On the entries of one real model update that a federated compressor kept (read from a run's
update snapshot, :func:`gradcomp.lossy.run_files.read_snapshot`), the value quantizers of the
federated study (:mod:`gradcomp.compression`, the same objects, given the whole tensor as in
the federated runs) are applied at rates R = 1, 2, ... bits per entry and their empirical
M-weighted distortion

    D_M = mean over entries of |g|^M (g - g_hat)^2      (units of g^(M+2))

is measured (:func:`gradcomp.quantization.distortion.m_weighted_distortion`). The bound is
the Blahut-Arimoto distortion-rate curve, under the same distortion, of the GenNorm fitted
(loc 0) to the whole update tensor and restricted to ``|g| >= tau`` (tau: the smallest kept
magnitude): the law of what is quantized. Only the points its discretised grid resolves
are kept (``reliable`` in :func:`gradcomp.quantization.rate_distortion.distortion_rate_curve`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from gradcomp.artifacts import write_tsv
from gradcomp.compression.gaussian_channel import GaussianChannel
from gradcomp.compression.kmeans_quantizer import KMeansQuantizer
from gradcomp.compression.lloyd_quantizer import LloydQuantizer
from gradcomp.compression.value_quantizers import UniformQuantizer, ValueQuantizer
from gradcomp.distributions import fit
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.quantization.distortion import m_weighted_distortion
from gradcomp.quantization.rate_distortion import distortion_rate_curve

log = logging.getLogger(__name__)

__all__ = ["BOUND", "distortion_study", "distortion_table", "kept_entries"]

BOUND = "bound (GenNorm of the update, |g| >= tau)"
COLUMNS = ("M", "quantizer", "rate_bits", "distortion")


def study_quantizers(rate: int, M: float, *, seed: int = 0, slip: bool = False):
    """Name -> value quantizer at ``rate`` bits: uniform min-max, GenNorm Lloyd under the
    same M (designed for the truncated update, and the authors' fit of the survivors),
    weighted k-means of the data (same M), Gaussian Lloyd (M = 0) and the Gaussian
    test channel."""
    quantizers: dict[str, ValueQuantizer] = {
        "uniform": UniformQuantizer(rate, slip=slip),
        "lloyd gennorm (same M)": LloydQuantizer(rate, "gennorm", M, slip=slip),
        "lloyd gennorm, survivors fit": LloydQuantizer(
            rate, "gennorm", M, fit_to="survivors", slip=slip
        ),
        "k-means (same M)": KMeansQuantizer(rate, M),
        "lloyd gauss (M0)": LloydQuantizer(rate, "norm", 0.0, slip=slip),
        "gaussian channel": GaussianChannel(rate, seed=seed, slip=slip),
    }
    return quantizers


def distortion_table(
    values: np.ndarray,
    full: np.ndarray,
    *,
    rates: Sequence[int],
    Ms: Sequence[float],
    slip: bool = False,
) -> pd.DataFrame:
    """Rows ``(M, quantizer, rate_bits, distortion)`` for every quantizer, rate and M on the
    kept entries ``values`` (1-D) of the update tensor ``full`` (1-D), plus the bound's
    curve (quantizer :data:`BOUND`) on a fine grid."""
    x = torch.as_tensor(np.asarray(values, dtype=np.float64).ravel())
    whole = torch.as_tensor(np.asarray(full, dtype=np.float64).ravel())
    tau = float(x.abs().min())
    gennorm = fit(whole.numpy(), "gennorm", floc=0.0, label="Y5 update")
    log.info("Y5: %d kept entries of %d, tau %.3g, GenNorm fit %s", x.numel(), whole.numel(),
             tau, gennorm.params)  # fmt: skip
    rows = []
    for M in Ms:
        for rate in rates:
            for name, quantizer in study_quantizers(rate, M, slip=slip).items():
                extra = {"full": whole} if quantizer.uses_full_tensor else {}
                x_hat = quantizer.decode(quantizer.encode(x, "Y5 update", **extra))
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
            curve = distortion_rate_curve("gennorm", gennorm.params, M, rates=grid, tau=tau)
        curve = curve[curve["reliable"]]  # the points the discretisation resolves
        rows += [
            {"M": M, "quantizer": BOUND, "rate_bits": r, "distortion": d}
            for r, d in zip(curve["rate_bits"], curve["distortion"], strict=True)
        ]
        log.info("Y5: M = %g done", M)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def kept_entries(snapshot: Path, tensor: str) -> tuple[np.ndarray, np.ndarray]:
    """``(kept, full)``: the non-zero entries of ``tensor``'s update that the compressor kept,
    and the whole update tensor (both float64, 1-D).

    Raises ValueError naming the tensor when the snapshot does not hold it or kept nothing.
    """
    snap = read_snapshot(snapshot)
    if tensor not in snap["before"]:
        raise ValueError(
            f"lossy.distortion_study.tensor: {tensor!r} is not in the update of {snapshot} "
            f"(names look like {', '.join(list(snap['before'])[:4])}, ...)"
        )
    before = snap["before"][tensor].double().reshape(-1)
    keep = snap["kept"][tensor].reshape(-1) & (before != 0)
    if not bool(keep.any()):
        raise ValueError(
            f"lossy.distortion_study.tensor: the compressor kept no entry of {tensor!r}"
        )
    return before[keep].numpy(), before.numpy()


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
    kept, full = kept_entries(snapshot, tensor)
    table = distortion_table(kept, full, rates=rates, Ms=Ms, slip=slip)
    write_tsv(out_tsv, table)
    return table
