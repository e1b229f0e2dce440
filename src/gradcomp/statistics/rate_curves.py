"""Compressors compared at the bits they spend: rate curves and the Bjøntegaard delta rate.

A compressor with several rates (R, rank, sketch size) traces a *rate curve*: uplink bits
against the test-loss increase its aggregate suffers over the uncompressed one (the
one-round study). Two curves are compared as video codecs are (Bjøntegaard, VCEG-M33):
the **BD-rate** of a test curve against a reference curve is the mean difference of log
bits at equal loss increase over the range of loss increase both curves cover, as a
percentage, ``100 (exp(mean delta log bits) - 1)``: -30 means 30% fewer bits for the same
loss increase. Differences from VCEG-M33:

- log bits are interpolated piecewise-linearly in the loss increase (the cubic fit of
  VCEG-M33 needs four points per curve; the field's curves here have two to five);
- a curve is first made monotone (the loss increase may not grow with the bits) by
  isotonic regression, since a noisy seed can put two close rates out of order;
- a one-point test curve (a compressor with a single rate) gets the log-bits difference
  at its own loss increase, when that lies on the reference curve;
- no overlap gives NaN (reported as undecided, never extrapolated).

How the verdicts compare curves at matched bits is :mod:`gradcomp.statistics.matched_bits`
(a pooled BD-loss over monotone-fitted curves failed its null: :mod:`gradcomp.statistics.verdicts`).
:func:`dominance` classifies two curves that share no range.

Per trajectory, both curves come from the same updates and test images; intervals are over
the design's units (:mod:`gradcomp.statistics.nested`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from gradcomp.statistics.matched_bits import pareto_front

__all__ = ["bd_rate", "curve_points", "dominance", "drop_dominated", "monotone_decreasing"]


def monotone_decreasing(y: Sequence[float]) -> np.ndarray:
    """The least-squares non-increasing fit to ``y`` (pool-adjacent-violators)."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in np.asarray(y, dtype=np.float64):
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    return np.concatenate([np.full(int(c), s / c) for s, c in blocks])


def _curve(bits, loss) -> tuple[np.ndarray, np.ndarray]:
    """(loss increase ascending, log bits) of one curve, monotone."""
    bits = np.asarray(bits, dtype=np.float64)
    loss = np.asarray(loss, dtype=np.float64)
    if bits.shape != loss.shape or bits.ndim != 1 or bits.size == 0:
        raise ValueError("a rate curve needs matching 1-D bits and loss arrays")
    if not (np.isfinite(bits).all() and np.isfinite(loss).all()) or (bits <= 0).any():
        raise ValueError(f"a rate curve needs finite positive bits and finite losses: {bits}")
    order = np.argsort(bits, kind="stable")
    logr, d = np.log(bits[order]), monotone_decreasing(loss[order])
    back = np.argsort(d, kind="stable")  # ascending loss increase, i.e. descending bits
    return d[back], logr[back]


def _log_bits_at(d_grid, d, logr) -> np.ndarray:
    """Log bits of a monotone curve at loss increases ``d_grid`` inside its range (a flat
    stretch of the curve gives its fewest bits)."""
    # np.interp needs increasing x: keep, for each distinct loss, its smallest log bits
    keep = np.r_[np.diff(d) > 0, True]
    d_u, r_u = d[keep], logr[keep]
    for i in range(len(d) - 1, -1, -1):
        j = np.searchsorted(d_u, d[i])
        r_u[j] = min(r_u[j], logr[i])
    return np.interp(d_grid, d_u, r_u)


def bd_rate(test_bits, test_loss, ref_bits, ref_loss) -> float:
    """BD-rate in percent of the test curve against the reference curve (module doc).

    ``*_bits``: uplink bits per point (> 0); ``*_loss``: the loss increase at that point.
    The reference needs two or more points; NaN when the curves share no loss range.
    """
    d_t, r_t = _curve(test_bits, test_loss)
    d_r, r_r = _curve(ref_bits, ref_loss)
    if d_r.size < 2 or d_r[0] == d_r[-1]:
        return float("nan")
    lo, hi = max(d_t[0], d_r[0]), min(d_t[-1], d_r[-1])
    if lo > hi:
        return float("nan")
    if lo == hi:  # a one-point (or flat) test curve on the reference's range
        delta = _log_bits_at(np.array([lo]), d_t, r_t) - _log_bits_at(np.array([lo]), d_r, r_r)
        return float(100.0 * np.expm1(delta[0]))
    # both curves are linear between their points: the trapezoid rule on every point of
    # either curve inside the overlap is the exact integral
    grid = np.unique(np.clip(np.r_[lo, hi, d_t, d_r], lo, hi))
    delta = _log_bits_at(grid, d_t, r_t) - _log_bits_at(grid, d_r, r_r)
    return float(100.0 * np.expm1(np.trapezoid(delta, grid) / (hi - lo)))


def dominance(test_bits, test_loss, ref_bits, ref_loss) -> int:
    """+1 if some test point is at least as good in both bits and loss as every reference
    point and strictly better in one (the test curve dominates), -1 if the reference
    dominates the test curve that way, 0 otherwise."""

    def dominates(b_a, l_a, b_b, l_b) -> bool:
        b_a, l_a = np.asarray(b_a, float), np.asarray(l_a, float)
        b_b, l_b = np.asarray(b_b, float), np.asarray(l_b, float)
        for b, l in zip(b_a, l_a, strict=True):
            if (b <= b_b).all() and (l <= l_b).all() and ((b < b_b) | (l < l_b)).all():
                return True
        return False

    if dominates(test_bits, test_loss, ref_bits, ref_loss):
        return 1
    if dominates(ref_bits, ref_loss, test_bits, test_loss):
        return -1
    return 0


def curve_points(points, curves):
    """``points`` (a DataFrame with a ``compressor`` column, one row per variant and
    trajectory) with a ``curve`` column: the rate curve each compressor joins (``curves``:
    name -> curve, the entries' ``curve`` keys; a name not listed is its own curve)."""
    out = points.copy()
    out["curve"] = [curves.get(name, name) for name in out["compressor"]]
    return out


def drop_dominated(
    per_seed: pd.DataFrame, metric: str, label: Callable[[str, int, int], str]
) -> tuple[pd.DataFrame, dict]:
    """``per_seed`` without the configurations that another of their own curve (model,
    curve, M) beats in mean bits and mean ``metric`` (:func:`~gradcomp.statistics.matched_bits.
    pareto_front`), and (model, curve, M) -> those configurations' labels (``label(name,
    rate, M)``), comma-joined."""
    keep, dominated = [], {}
    for key, pts in per_seed.groupby(["model", "curve", "M"], sort=True):
        means = pts.groupby(["compressor", "rate"])[["bits_per_entry", metric]].mean()
        front = pareto_front(means["bits_per_entry"], means[metric])
        out = [label(n, int(r), int(key[2])) for (n, r), on in
               zip(means.index, front, strict=True) if not on]  # fmt: skip
        if out:
            dominated[key] = ",".join(out)
        kept = {i for i, on in zip(means.index, front, strict=True) if on}
        keep.append(pts[[(n, r) in kept for n, r in zip(pts["compressor"], pts["rate"],
                                                         strict=True)]])  # fmt: skip
    return pd.concat(keep, ignore_index=True), dominated
