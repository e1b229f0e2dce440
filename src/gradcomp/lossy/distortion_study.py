"""Figure Y5's study: M-weighted distortion of each quantizer against the rate-distortion bound.

On the entries of one real model update that a federated compressor kept (read from a run's
update snapshot, :func:`gradcomp.lossy.run_files.read_snapshot`), the value quantizers of the
federated study (:mod:`gradcomp.compression`, the same objects, given the whole tensor as in
the federated runs) are applied at rates R = 1, 2, ... bits per entry and their empirical
M-weighted distortion

    D_M = mean over entries of |g|^M (g - g_hat)^2      (units of g^(M+2))

is measured (:func:`gradcomp.quantization.distortion.m_weighted_distortion`), with the bits
each spends: ``coded_bits``, the empirical entropy of its level indices on these entries
(bits per kept entry: what an ideal entropy code of the indices spends, its table aside;
the Gaussian test channel has no indices and counts its nominal R). Below 1.5 bits, where
a Huffman code cannot go (it spends a bit per value once there are two levels), the
entropy-constrained design is added at each target of ``low_bits`` (0.25, 0.5, ...: its
row's ``rate_bits``); up to 1.5 bits the ``ecsq`` kind's design is for the ideal code length
that its arithmetic code reaches (a zero cell over the smaller kept values). The bound is
the Blahut-Arimoto distortion-rate curve, under the same distortion, of the GenNorm fitted
(loc 0) to the whole update tensor and restricted to ``|g| >= tau`` (tau: the smallest kept
magnitude): the law of what is quantized. Only the points its discretised grid resolves
are kept (``reliable`` in :func:`gradcomp.quantization.rate_distortion.distortion_rate_curve`).
Each quantizer's distance to it (:func:`gradcomp.quantization.rd_gap.rd_gap`): ``gap_bits``,
its coded bits minus R(D) at its distortion, and ``gap_db``, its distortion over D(R) at its
coded bits in decibels (empty where the bound's resolved range does not reach).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from gradcomp import names
from gradcomp.artifacts import write_tsv
from gradcomp.coding.pmf import entropy_bits
from gradcomp.compression.ecsq_data_quantizer import ECSQDataQuantizer
from gradcomp.compression.ecsq_quantizer import ECSQQuantizer
from gradcomp.compression.gaussian_channel import GaussianChannel
from gradcomp.compression.kmeans_quantizer import KMeansQuantizer
from gradcomp.compression.lloyd_quantizer import LloydQuantizer
from gradcomp.compression.value_quantizers import UniformQuantizer, ValueQuantizer
from gradcomp.distributions import fit
from gradcomp.lossy.run_files import read_snapshot
from gradcomp.quantization.distortion import m_weighted_distortion
from gradcomp.quantization.rate_distortion import distortion_rate_curve
from gradcomp.quantization.rd_gap import rd_gap
from gradcomp.reporting import write_table

log = logging.getLogger(__name__)

__all__ = [
    "BOUND", "DESIGN_NAMES", "distortion_study", "distortion_table", "kept_entries", "table_t6",
]  # fmt: skip

BOUND = "bound (GenNorm of the update, |g| >= tau)"
#: The bound's grid step in bits: its points are computed there and the gaps read between
#: them (log-linearly), so a step of 0.05 keeps that reading within a few thousandths of a bit.
BOUND_STEP = 0.05
COLUMNS = ("M", "quantizer", "rate_bits", "coded_bits", "distortion", "gap_bits", "gap_db")


#: Each design's label (T6's ``quantizer``, :func:`study_quantizers`' keys) as a reader
#: names it (Y5, the answers).
DESIGN_NAMES = {
    "uniform": "uniform",
    "lloyd gennorm (same M)": f"{names.law('gennorm')} Lloyd, same M",
    "lloyd gennorm, survivors fit": f"{names.law('gennorm')} Lloyd, fitted to the kept values",
    "ecsq gennorm (same M)": f"{names.law('gennorm')} {names.kind('ecsq')}, same M",
    "ecsq data (same M)": f"{names.kind('ecsq_data')}, same M",
    "k-means (same M)": f"{names.kind('kmeans')}, same M",
    "lloyd gauss (M0)": f"{names.law('norm')} Lloyd M=0",
    "gaussian channel": f"{names.kind('gaussian_channel')} (nominal rate)",
}


def study_quantizers(rate: int, M: float, *, seed: int = 0, slip: bool = False):
    """Name -> value quantizer at ``rate`` bits: uniform min-max, GenNorm Lloyd under the
    same M (designed for the truncated update, and the authors' fit of the survivors),
    the entropy-constrained design of the same law at R coded bits and of the data (same M),
    weighted k-means of the data (same M), Gaussian Lloyd (M = 0) and the Gaussian test
    channel."""
    quantizers: dict[str, ValueQuantizer] = {
        "uniform": UniformQuantizer(rate, slip=slip),
        "lloyd gennorm (same M)": LloydQuantizer(rate, "gennorm", M, slip=slip),
        "lloyd gennorm, survivors fit": LloydQuantizer(
            rate, "gennorm", M, fit_to="survivors", slip=slip
        ),
        "ecsq gennorm (same M)": ECSQQuantizer(rate, "gennorm", M),
        "ecsq data (same M)": ECSQDataQuantizer(rate, M),
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
    low_bits: Sequence[float] = (),
    slip: bool = False,
) -> pd.DataFrame:
    """Rows ``(M, quantizer, rate_bits, distortion)`` for every quantizer, rate and M on the
    kept entries ``values`` (1-D) of the update tensor ``full`` (1-D), the entropy-constrained
    design also at each target of ``low_bits`` (coded bits per entry; a whole one among
    ``rates`` is there already), plus the bound's curve (quantizer :data:`BOUND`) every
    :data:`BOUND_STEP` bits."""
    x = torch.as_tensor(np.asarray(values, dtype=np.float64).ravel())
    whole = torch.as_tensor(np.asarray(full, dtype=np.float64).ravel())
    tau = float(x.abs().min())
    gennorm = fit(whole.numpy(), "gennorm", floc=0.0, label="Y5 update")
    log.info("Y5: %d kept entries of %d, tau %.3g, GenNorm fit %s", x.numel(), whole.numel(),
             tau, gennorm.params)  # fmt: skip
    rows = []
    for M in Ms:
        designs = []
        for rate in rates:
            designs += [(float(rate), *d) for d in study_quantizers(rate, M, slip=slip).items()]
        for b in sorted(set(map(float, low_bits)) - set(map(float, rates))):
            low = ECSQQuantizer(math.ceil(b), "gennorm", M, target_bits=b)
            designs.append((b, "ecsq gennorm (same M)", low))
        for rate_bits, name, quantizer in designs:
            extra = {"full": whole} if quantizer.uses_full_tensor else {}
            sent = quantizer.encode(x, "Y5 update", **extra)
            x_hat = quantizer.decode(sent)
            coded = rate_bits  # the channel's nominal rate: it has no indices
            if sent.indices is not None:
                coded = entropy_bits(np.bincount(sent.indices.cpu().numpy()))
            rows.append(
                {
                    "M": M,
                    "quantizer": name,
                    "rate_bits": rate_bits,
                    "coded_bits": coded,
                    "distortion": m_weighted_distortion(x, x_hat, M),
                }
            )
        top = max([*rates, *low_bits])
        grid = np.arange(1, round(top / BOUND_STEP) + 1) * BOUND_STEP
        # Blahut-Arimoto's small matrix products run faster on one BLAS thread.
        with threadpool_limits(1):
            curve = distortion_rate_curve("gennorm", gennorm.params, M, rates=grid, tau=tau)
        curve = curve[curve["reliable"]]  # the points the discretisation resolves
        for row in rows:
            if row["M"] == M and len(curve) >= 2:
                gap = rd_gap(row["coded_bits"], row["distortion"], curve)
                row.update(gap_bits=gap.bits, gap_db=gap.db)
        rows += [
            {"M": M, "quantizer": BOUND, "rate_bits": r, "coded_bits": r, "distortion": d}
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
    low_bits: Sequence[float] = (),
    slip: bool = False,
) -> pd.DataFrame:
    """Y5's table for ``tensor`` of a run's update snapshot, written to ``out_tsv``."""
    kept, full = kept_entries(snapshot, tensor)
    table = distortion_table(kept, full, rates=rates, Ms=Ms, low_bits=low_bits, slip=slip)
    write_tsv(out_tsv, table)
    return table


def table_t6(paths: Sequence[str | Path], tsv: str | Path, md: str | Path) -> pd.DataFrame:
    """T6: each quantizer's distance to the rate-distortion bound, from the distortion
    studies ``paths`` (``results/lossy/{model}/distortion_study.tsv``, the model read from
    the folder): per model, M, quantizer and designed rate R, its coded bits, its distortion
    and its gaps (``gap_bits``, ``gap_db``; NaN, shown as a dash, where the bound's
    resolved range does not reach), best (smallest gap in bits) first within each M."""
    frames = []
    for path in paths:
        rd = pd.read_csv(path, sep="\t")
        rd = rd[rd["quantizer"] != BOUND].assign(model=Path(path).parent.name)
        frames.append(rd)
    table = pd.concat(frames, ignore_index=True)
    table = table.sort_values(["model", "M", "rate_bits", "gap_bits"], kind="stable",
                              na_position="last")  # fmt: skip
    table = table[["model", "M", "rate_bits", "quantizer", "coded_bits", "distortion",
                   "gap_bits", "gap_db"]].rename(columns={"rate_bits": "R"})  # fmt: skip
    write_table(table, tsv, md, title="T6: distance of each quantizer to the rate-distortion "
                "bound (bits at its distortion, dB at its coded bits)")  # fmt: skip
    return table
