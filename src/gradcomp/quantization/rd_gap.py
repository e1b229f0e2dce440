"""How far an operational quantizer is from the limit: its distance to the distortion-rate
function D(R) of the same law and distortion (Blahut-Arimoto,
:func:`gradcomp.quantization.rate_distortion.distortion_rate_curve`), in bits at its
distortion and in decibels at its bits.

>>> import numpy as np, pandas as pd
>>> curve = pd.DataFrame({"rate_bits": np.arange(0, 8.0, 0.5)})
>>> curve["distortion"] = 2.0 ** (-2 * curve["rate_bits"])  # a unit Gaussian's D(R)
>>> gap = rd_gap(3.0, 2.0 ** (-2 * 2.5), curve)  # 3 bits for what 2.5 bits can reach
>>> round(gap.bits, 6), round(gap.db, 4)
(0.5, 3.0103)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["RDGap", "rd_gap"]


@dataclass(frozen=True)
class RDGap:
    """``bits``: the quantizer's rate minus R(D) at its distortion (bits per entry);
    ``db``: 10 log10 of its distortion over D(R) at its rate (decibels); NaN where the
    curve does not reach."""

    bits: float
    db: float


def rd_gap(rate: float, distortion: float, curve: pd.DataFrame) -> RDGap:
    """The gaps of a quantizer spending ``rate`` bits per entry for ``distortion`` (units of
    the curve's) to ``curve`` (columns ``rate_bits``, ``distortion``: D(R), decreasing),
    with log D interpolated linearly in R between the curve's points."""
    c = curve.dropna(subset=["distortion"]).sort_values("rate_bits")
    r = c["rate_bits"].to_numpy(dtype=np.float64)
    log_d = np.log(c["distortion"].to_numpy(dtype=np.float64))
    if r.size < 2 or not np.all(np.diff(log_d) < 0):
        raise ValueError("the curve needs two or more points with D falling as R grows")
    db = math.nan
    if r[0] <= rate <= r[-1]:
        db = 10.0 * (math.log(distortion) - float(np.interp(rate, r, log_d))) / math.log(10)
    bits = math.nan
    target = math.log(distortion)
    if log_d[-1] <= target <= log_d[0]:
        bits = float(rate) - float(np.interp(target, log_d[::-1], r[::-1]))
    return RDGap(bits, db)
