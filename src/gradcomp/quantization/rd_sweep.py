"""Where the Blahut-Arimoto points of a distortion-rate curve go, and how the curve is read
between them (:func:`gradcomp.quantization.rate_distortion.distortion_rate_curve`).

Each point is solved at a multiplier s (minus the curve's slope, in nats per unit of
distortion): its rate R (bits) and distortion D, and, exactly, the slope of the curve there,
``d ln D / dR = -ln 2 / (s D)`` per bit. The sweep (:func:`sweep`):

- from s = 1/(4 E d(X, 0)) (rate about 0) s grows by the step the local ``dR / d ln s``
  predicts for about ``max(R_target, 0.5) / n_sweep`` bits, at most 0.09;
- a step that still gains more than :data:`MAX_STEP_BITS` above :data:`LOW_RATE_BITS` is
  bisected in ``ln s`` until neighbours are that close (near the slope where the rate leaves
  0 it rises steeply: a step aimed by the local slope went from 0.002 to 2 bits on a normal,
  from about 0.1 to 1 bit on GenNorm laws, and the curve was read off a straight line in
  between, 0.01-0.05 bits off);
- a midpoint starts from the geometric mean of its neighbours' output pmfs, and below
  :data:`EXTRA_RUN_BELOW` bits a point's iterations go on while its Lagrangian still falls
  (BA converges slowly there: 1,000 iterations from a warm start left points up to 0.007
  bits above the curve).

Between points ``ln D`` is a cubic in R with the points' exact slopes (Hermite; a straight
line on the segment from rate 0, whose slope is not a point's). The distance between that
cubic and the straight line, in bits of rate, bounds the straight line's error (and far
exceeds the cubic's): ``interp_bits``, with the distance between the two points,
``bracket_bits``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = [
    "EXTRA_RUN_BELOW", "EXTRA_RUN_BITS", "EXTRA_RUNS", "LOW_RATE_BITS", "MAX_STEP_BITS",
    "Sweep", "sweep",
]  # fmt: skip

LN2 = math.log(2.0)
#: The largest rate step between neighbouring points (bits) from :data:`LOW_RATE_BITS` up.
MAX_STEP_BITS = 0.1
#: Below this rate (bits) neighbouring points may be further apart.
LOW_RATE_BITS = 0.05
#: Below EXTRA_RUN_BELOW bits a point is solved again from its own output pmf (up to
#: EXTRA_RUNS more times) while its Lagrangian ``R + s D`` falls by more than EXTRA_RUN_BITS
#: (bits) a time.
EXTRA_RUNS, EXTRA_RUN_BITS, EXTRA_RUN_BELOW = 4, 3e-4, 1.5


class Point(Protocol):
    """What a solved point gives (:class:`gradcomp.quantization.rate_distortion.BAResult`)."""

    rate_bits: float
    distortion: float
    q_y: np.ndarray
    s: float


@dataclass
class Sweep:
    """Points of one curve sorted by rate: ``rate`` (bits), ``log_d`` (ln D), ``slope``
    (d ln D / dR per bit; NaN at rate 0)."""

    rate: np.ndarray
    log_d: np.ndarray
    slope: np.ndarray

    def at(self, rates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(D, bracket_bits, interp_bits) at ``rates`` (module doc), NaN outside the points'
        range."""
        r, y, g = self.rate, self.log_d, self.slope
        rates = np.asarray(rates, dtype=np.float64)
        out, bracket, interp = (np.full(rates.shape, np.nan) for _ in range(3))
        inside = (rates >= r[0]) & (rates <= r[-1])
        if r.size == 1:
            out[inside], bracket[inside], interp[inside] = np.exp(y[0]), 0.0, 0.0
            return out, bracket, interp
        k = np.clip(np.searchsorted(r, rates[inside], side="right") - 1, 0, r.size - 2)
        h = r[k + 1] - r[k]
        t = (rates[inside] - r[k]) / h
        secant = (y[k + 1] - y[k]) / h
        linear = y[k] + t * (y[k + 1] - y[k])
        g0 = np.where(np.isfinite(g[k]), g[k], secant)
        g1 = np.where(np.isfinite(g[k + 1]), g[k + 1], secant)
        cubic = ((1 + 2 * t) * (1 - t) ** 2 * y[k] + t * (1 - t) ** 2 * h * g0
                 + t * t * (3 - 2 * t) * y[k + 1] + t * t * (t - 1) * h * g1)  # fmt: skip
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.abs(cubic - linear) / np.abs(secant)
        out[inside], bracket[inside] = np.exp(cubic), h
        interp[inside] = np.where(secant < 0, gap, 0.0)
        return out, bracket, interp


def _lagrangian(point: Point) -> float:
    """``R + s D`` of a point (nats)."""
    return point.rate_bits * LN2 + point.s * point.distortion


def sweep(
    solve: Callable[[float, np.ndarray | None], Point],
    d0: float,
    r_target: float,
    n_sweep: int,
    n_outputs: int,
) -> Sweep:
    """The points from rate 0 past ``r_target`` bits (module doc). ``solve(s, q)``: the
    point at multiplier s from the output pmf q (None: uniform) over ``n_outputs``
    reproductions; ``d0``: the distortion at rate 0 (every value reproduced by 0)."""
    floor = 1e-12 / n_outputs  # warm starts keep every output alive
    step = min(max(r_target, 0.5) / n_sweep, 0.9 * MAX_STEP_BITS)
    pts: list[tuple[float, Point]] = []

    def run(log_s: float, q: np.ndarray | None) -> tuple[float, Point]:
        got = solve(math.exp(log_s), q)
        for _ in range(EXTRA_RUNS if got.rate_bits < EXTRA_RUN_BELOW else 0):
            more = solve(got.s, got.q_y)
            drop, got = (_lagrangian(got) - _lagrangian(more)) / LN2, more
            if drop < EXTRA_RUN_BITS:
                break
        pts.append((log_s, got))
        return log_s, got

    def fill(lo: tuple[float, Point], hi: tuple[float, Point]) -> None:
        if hi[1].rate_bits - lo[1].rate_bits <= MAX_STEP_BITS or hi[1].rate_bits <= LOW_RATE_BITS:
            return
        if hi[0] - lo[0] < 1e-6:
            return
        start = np.sqrt(np.maximum(lo[1].q_y, floor) * np.maximum(hi[1].q_y, floor))
        mid = run(0.5 * (lo[0] + hi[0]), start)
        fill(lo, mid)
        fill(mid, hi)

    prev = run(math.log(0.25 / d0), None)
    before: tuple[float, Point] | None = None
    for _ in range(4 * n_sweep):
        if prev[1].rate_bits > r_target + step:
            break
        gain = math.inf if before is None else prev[1].rate_bits - before[1].rate_bits
        if 0 <= gain < 1e-4 and prev[1].rate_bits > 1.0:
            break  # saturated at the discretised source's entropy
        # the next multiplier: a step of `step` bits by the local dR / d ln s
        dlog = math.log(2.0)
        if before is not None and gain > 1e-6:
            dlog = step * (prev[0] - before[0]) / gain
        nxt = run(prev[0] + min(max(dlog, math.log(1.05)), math.log(16.0)),
                  np.maximum(prev[1].q_y, floor))  # fmt: skip
        fill(prev, nxt)
        before, prev = prev, nxt
    rate = np.array([0.0] + [got.rate_bits for _, got in pts])
    dist = np.array([d0] + [got.distortion for _, got in pts])
    s = np.array([np.nan] + [got.s for _, got in pts])
    order = np.lexsort((dist, rate))
    rate, dist, s = rate[order], np.minimum.accumulate(dist[order]), s[order]
    keep = np.concatenate([[True], np.diff(rate) > 0])
    rate, dist, s = rate[keep], dist[keep], s[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        return Sweep(rate, np.log(dist), np.where(rate > 0, -LN2 / (s * dist), np.nan))
