"""A test configuration against a reference curve at its bits: the reference's value there
bracketed by linear combinations of its configurations' losses.

A rate curve is a set of *configurations* (a compressor's variants: rate R or level count,
top-K fraction), each with a measured uplink cost (bits per entry) and a test loss on every
trajectory. A primary question asks about **one** test configuration, at its bits ``x`` (its
*design mean* over every trajectory: a configuration's bits move by well under 1% between
trajectories, so the weights below are fixed numbers): how its loss compares with the
reference curve's loss ``f(x)`` at the same bits. Which reference configurations make that
curve (``match``):

- ``kept_set``: the reference's configurations on the **same kept set** (the same sparsifier
  and top-K fraction, :func:`kept_set_of`). ``f`` is the reference quantizer's curve on those
  entries, at any level count. The loss of a kept set carries a trajectory effect shared by
  every quantizer on it (residuals of one top-K fraction correlate 0.8-1.0 in the default
  run), which this contrast cancels. No loss enters the choice of weights.
- ``frontier``: the reference's **operational curve** over every kept set: the lowest
  loss any of its configurations reaches with at most ``x`` bits, alone or time-shared with
  another (:func:`frontier_candidates`; the lower convex hull of their mean (bits, loss),
  :func:`lower_hull`, flat past its lowest loss). Time sharing reaches it exactly, so it
  needs no bracket; which configurations make it is not chosen on the data: the difference
  to it is the largest of the contrasts to every candidate, with simultaneous limits
  (:mod:`gradcomp.statistics.max_contrast`).
- ``exact``: the uncompressed aggregate of the same round (the one-round tables'
  ``exact_loss``), at no bits: what the compressor loses against sending float32.

**The chord is not the curve.** Between two reference configurations ``j, j+1`` the straight
line in bits lies above a convex curve, below a concave one, and on an S (a concave stretch
meeting a convex one, as uniform's curve on a small kept set) on either side. :func:`bracket_at`
gives the readings of ``f(x)`` each shape allows, as fixed linear combinations (``lam`` = how
far ``x`` lies from ``j`` to ``j+1``, ``h`` the step); which one a question uses is decided
on the reference's own points (:mod:`gradcomp.statistics.bracket_choice`, its ``kind`` in the
verdict row's ``interpolation``):

- ``convex`` / ``concave``: the chord, and the secants beside it carried to ``x`` (through
  ``j`` and a neighbour with fewer bits carried right, through ``j+1`` and one with more
  carried left) mixed with weights ``1 - lam`` and ``lam``, so that the bound meets the curve
  at both configurations. Each neighbour is the nearest at least ``h / 2`` away (chosen on
  bits alone: a much nearer one would carry its noise far). With adjacent neighbours the
  gap is ``lam (1 - lam) h (s_{j+1} - s_{j-1})`` for the neighbours' slopes ``s``. The two
  second differences of those points (:attr:`Bracket.bends`) must show the bend's sign.
- ``either bend``: the lowest and highest of the chord and the two unmixed secants carried
  to ``x``, which holds for any curve that changes its bend at most once between the four
  points (an S included: two lines through one point cross only there).
- ``monotone``: between the two configurations' own values, for a curve with a neighbour on
  one side or none.
- ``slope``: within :data:`AT_RTOL` of a configuration's bits (or at most ``rtol`` past the
  last), that configuration's value plus and minus the offset times the slope of the
  secant to each neighbour at least 1% away: a curve no steeper beside a configuration than
  its steeper step there; ``point`` at its exact bits.

One trajectory's difference ``y_test - f(x)`` therefore lies between the test's value minus
the highest and minus the lowest of the reading's combinations; their means estimate the
two ends of the difference's identified interval without bias whatever the noise's
correlation, and the width between them is charged in the interval
(:func:`gradcomp.statistics.nested.bounded_test`). ``interpolation="chord"`` takes the chord for
the curve: the procedure before this bracket, kept as a named switch to show its bias.

A configuration that another configuration of its own curve beats in both bits and loss is
*dominated* (:func:`pareto_front`); the verdicts list which reference configurations a
question leans on, and which of them are dominated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

__all__ = [
    "AT_RTOL",
    "BITS_RTOL",
    "INTERPOLATIONS",
    "KINDS",
    "MATCHES",
    "Bracket",
    "bracket_at",
    "combine",
    "frontier_candidates",
    "interpolation_weights",
    "kept_set_of",
    "lower_hull",
    "pareto_front",
]

#: What a test configuration is compared with (module doc).
MATCHES = ("kept_set", "frontier", "exact")
#: How a question reads the reference between its configurations: the bracket its points
#: support, or the chord (module doc).
INTERPOLATIONS = ("convex", "chord")
#: The readings of the reference at a test's bits (module doc), as the verdict row names them.
KINDS = ("convex", "concave", "either bend", "monotone", "slope", "point", "chord")
#: A test this close to a configuration's bits (relative) is read there, its offset charged
#: at the neighbouring slopes: two quantizers with two levels on one kept set spend the same
#: bits but for their few side floats (0.03% in the default run).
AT_RTOL = 1e-3
#: A test configuration at most this fraction past the reference's most bits is read at its
#: last configuration, its offset charged at the last slope; farther out, or below the
#: fewest bits by more than :data:`AT_RTOL`, it is not matched (no extrapolation).
BITS_RTOL = 0.01


def kept_set_of(spec: Mapping) -> str:
    """The kept set a checked compressor spec sends (its ``sparsifier`` and the ``topk``
    fraction it actually keeps): ``"top-K 45.2%"``, ``"random-K 10%"`` or ``"dense"`` (every
    entry; PowerSGD and count sketch, which sparsify nothing, included).

    >>> kept_set_of({"quantizer": "uniform", "sparsifier": "topk", "topk": 0.452})
    'top-K 45.2%'
    """
    sparsifier = spec.get("sparsifier") or "none"
    if spec.get("compressor") is not None or sparsifier == "none":
        return "dense"
    name = {"topk": "top-K", "randomk": "random-K"}.get(sparsifier, sparsifier)
    return f"{name} {100 * float(spec['topk']):.4g}%"


def pareto_front(log_bits: Sequence[float], loss: Sequence[float]) -> np.ndarray:
    """Boolean mask of the configurations that no other one beats: another with fewer or as
    many bits and as low or lower loss, one of the two strictly (ties in both keep both)."""
    b = np.asarray(log_bits, dtype=np.float64)
    y = np.asarray(loss, dtype=np.float64)
    if b.shape != y.shape or b.ndim != 1:
        raise ValueError("pareto_front needs matching 1-D bits and loss arrays")
    beats = (b[None, :] <= b[:, None]) & (y[None, :] <= y[:, None])
    beats &= (b[None, :] < b[:, None]) | (y[None, :] < y[:, None])
    return cast(np.ndarray, ~beats.any(axis=1))


def lower_hull(
    bits: Sequence[float] | np.ndarray, loss: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Boolean mask of the configurations on the lower convex hull of (bits, loss) from the
    fewest bits to the lowest loss: the operational curve, every point of which time sharing
    between two neighbouring configurations reaches; a configuration above it is beaten by a
    mixture of two others at its own bits. Equal points are all kept."""
    b = np.asarray(bits, dtype=np.float64)
    y = np.asarray(loss, dtype=np.float64)
    if b.shape != y.shape or b.ndim != 1 or b.size == 0:
        raise ValueError("lower_hull needs matching non-empty 1-D bits and loss arrays")
    order = np.lexsort((y, b))
    best = y.min()
    hull: list[int] = []
    for i in order:
        if hull and b[i] == b[hull[-1]]:
            continue  # as many bits as the last point, as much loss or more (equals: below)
        while len(hull) >= 2:
            (b0, y0), (b1, y1) = (b[hull[-2]], y[hull[-2]]), (b[hull[-1]], y[hull[-1]])
            # drop the middle point where it lies above the chord of its neighbours (a point
            # on it is reached exactly by time sharing and stays)
            above, chord = (y1 - y0) * (b[i] - b0), (y[i] - y0) * (b1 - b0)
            if above > chord + 1e-12 * max(abs(above), abs(chord)):
                hull.pop()
            else:
                break
        hull.append(i)
        if y[i] == best:
            break
    mask = np.zeros(b.size, dtype=bool)
    mask[hull] = True
    on = {(b[i], y[i]) for i in hull}
    mask |= np.array([(bi, yi) in on for bi, yi in zip(b, y, strict=True)])
    return mask


def interpolation_weights(
    x: float, xs: Sequence[float] | np.ndarray, rtol: float = BITS_RTOL
) -> np.ndarray | None:
    """Weights over the points ``xs`` (any order) of the piecewise-linear interpolant at
    ``x``: the two points that bracket it (points at equal ``xs`` share their weight), the
    end point(s) where ``x`` lies beyond an end by at most ``rtol`` of it; None farther out.

    >>> interpolation_weights(1.5, [1.0, 2.0]).tolist()
    [0.5, 0.5]
    """
    xs = np.asarray(xs, dtype=np.float64)
    if xs.size == 0:
        return None
    lo_end, hi_end = xs.min(), xs.max()
    if x < lo_end * (1 - rtol) or x > hi_end * (1 + rtol):
        return None
    w = np.zeros(xs.size)
    x = float(np.clip(x, lo_end, hi_end))
    exact = xs == x
    if exact.any():
        w[exact] = 1.0 / exact.sum()
        return w
    lo_x, hi_x = xs[xs < x].max(), xs[xs > x].min()
    lo, hi = xs == lo_x, xs == hi_x
    lam = (x - lo_x) / (hi_x - lo_x)
    w[lo] = (1.0 - lam) / lo.sum()
    w[hi] = lam / hi.sum()
    return w


@dataclass(frozen=True)
class Bracket:
    """The readings of the reference at one test configuration's bits (module doc).

    ``readings``: kind -> its combinations (label -> weight, each summing to 1): the
    reference's value lies between the lowest and the highest of them where the kind's shape
    holds; ``bends``: second differences of the points the bend-dependent readings use (label
    -> weight; positive on a convex curve), empty where no reading depends on the bend;
    ``step_log2``: log2 of the ratio of the bits of the two configurations that bracket the
    test (0 at a configuration's bits).
    """

    readings: Mapping[str, tuple[Mapping[str, float], ...]]
    bends: tuple[Mapping[str, float], ...]
    step_log2: float

    def used(self, kind: str) -> tuple[str, ...]:
        """The reference configurations reading ``kind`` leans on, sorted."""
        return tuple(sorted({k for w in self.readings[kind] for k, v in w.items() if v != 0}))


def _spread(weights: dict[int, float], groups: list[list[str]]) -> dict[str, float]:
    """Weights of distinct bits -> weights of labels, labels at equal bits sharing theirs."""
    out: dict[str, float] = {}
    for g, w in weights.items():
        for label in groups[g]:
            out[label] = out.get(label, 0.0) + w / len(groups[g])
    return {k: v for k, v in out.items() if v != 0}


def _neighbour(u: np.ndarray, i: int, way: int, step: float) -> int:
    """The configuration beside ``u[i]`` (``way`` -1: fewer bits, 1: more) whose secant with
    it bounds the curve: the nearest at least ``step`` away, else the farthest. A neighbour
    much nearer would carry its two losses' noise far (weights 1 + c and -c, c at most 2 with
    half the bracket's step); any pair on one side bounds a curve of one bend there, so the
    choice, made on bits alone, costs no validity."""
    others = range(i + way, -1 if way < 0 else u.size, way)
    last = i
    for k in others:
        last = k
        if abs(u[k] - u[i]) >= step:
            return k
    return last


def _carried(u: np.ndarray, i: int, k: int, x: float) -> dict[int, float]:
    """The secant through ``u[i]`` and ``u[k]`` read at ``x``."""
    a = (x - u[i]) / (u[i] - u[k])
    return {i: 1.0 + a, k: -a}


def _slope_reading(u: np.ndarray, k: int, x: float) -> list[dict[int, float]]:
    """``f(u[k])`` plus and minus ``|x - u[k]|`` times each neighbouring secant's slope."""
    out = []
    for way in (-1, 1):
        if 0 <= k + way < u.size:
            m = _neighbour(u, k, way, BITS_RTOL * u[k])
            a = (x - u[k]) / (u[m] - u[k])
            out += [{k: 1.0 - a, m: a}, {k: 1.0 + a, m: -a}]
    return out


def bracket_at(
    x: float,
    bits: Mapping[str, float],
    *,
    interpolation: str = "convex",
    rtol: float = BITS_RTOL,
) -> Bracket | None:
    """:class:`Bracket` of the reference curve through the configurations ``bits`` (label ->
    design-mean bits per entry) at ``x`` bits; None where ``x`` lies below the fewest bits or
    more than ``rtol`` past the most (by more than :data:`AT_RTOL` at a configuration with no
    neighbour). ``interpolation="chord"``: between configurations, the chord alone.

    >>> b = bracket_at(1.5, {"r1": 1.0, "r2": 2.0, "r3": 3.0})
    >>> [{k: float(w) for k, w in c.items()} for c in b.readings["convex"]]
    [{'r1': 0.5, 'r2': 0.5}, {'r2': 1.5, 'r3': -0.5}]
    """
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")
    if not bits:
        return None
    u = np.array(sorted(set(float(b) for b in bits.values())))
    groups = [[lb for lb, b in bits.items() if float(b) == ub] for ub in u]
    x, n = float(x), u.size - 1

    def done(readings: dict[str, list[dict[int, float]]], bends=(), step=0.0) -> Bracket:
        spread = {k: tuple(_spread(w, groups) for w in ws) for k, ws in readings.items()}
        return Bracket(spread, tuple(_spread(d, groups) for d in bends), float(step))

    near = np.flatnonzero(np.abs(u - x) <= AT_RTOL * u)
    if near.size or u[n] < x <= u[n] * (1 + rtol):
        k = int(near[np.argmin(np.abs(u[near] - x))]) if near.size else n
        if x == u[k]:
            return done({"point": [{k: 1.0}]})
        slope = _slope_reading(u, k, x)
        return done({"slope": slope}) if slope else None
    if x < u[0] or x > u[n]:
        return None
    j = int(np.searchsorted(u, x) - 1)
    h = u[j + 1] - u[j]
    lam = (x - u[j]) / h
    chord = {j: 1.0 - lam, j + 1: lam}
    step = np.log2(u[j + 1] / u[j])
    if interpolation == "chord":
        return done({"chord": [chord]}, step=step)
    readings = {"monotone": [{j: 1.0}, {j + 1: 1.0}]}
    sides, bends = [], []
    if j >= 1:  # the secant through k, j carried right to x
        k = _neighbour(u, j, -1, h / 2)
        sides.append((1.0 - lam, _carried(u, j, k, x)))
        bends.append({j + 1: 1 / h, j: -1 / h - 1 / (u[j] - u[k]), k: 1 / (u[j] - u[k])})
    if j + 2 <= n:  # the secant through j+1, k carried left to x
        k = _neighbour(u, j + 1, 1, h / 2)
        sides.append((lam, _carried(u, j + 1, k, x)))
        d = u[k] - u[j + 1]
        bends.append({k: 1 / d, j + 1: -1 / d - 1 / h, j: 1 / h})
    if sides:
        total = sum(s for s, _ in sides)
        mixed: dict[int, float] = {}
        for share, w in sides:
            for g, v in w.items():
                mixed[g] = mixed.get(g, 0.0) + share / total * v
        readings["convex"] = readings["concave"] = [chord, mixed]
    if len(sides) == 2:
        readings["either bend"] = [chord] + [w for _, w in sides]
    return done(readings, bends, step)


def frontier_candidates(
    x: float, bits: Mapping[str, float], rtol: float = BITS_RTOL
) -> list[dict[str, float]] | None:
    """The ways the reference reaches at most ``x`` bits (label -> weight each, summing to
    1): every configuration with at most ``x`` bits alone, and every pair that brackets
    ``x`` time-shared to spend ``x`` (its chord). The operational curve at ``x`` is the
    lowest of their losses (:mod:`gradcomp.statistics.max_contrast`). None below the fewest bits
    or more than ``rtol`` past the most (no extrapolation).

    >>> frontier_candidates(1.5, {"a": 1.0, "b": 2.0})
    [{'a': 1.0}, {'a': 0.5, 'b': 0.5}]
    """
    labels = list(bits)
    b = np.array([bits[lb] for lb in labels], dtype=np.float64)
    x = float(x)
    if b.size == 0 or x < b.min() or x > b.max() * (1 + rtol):
        return None
    out: list[dict[str, float]] = [{lb: 1.0} for lb, bi in zip(labels, b, strict=True) if bi <= x]
    for i, j in ((i, j) for i in range(b.size) for j in range(b.size)):
        if b[i] < x < b[j]:
            lam = (x - b[i]) / (b[j] - b[i])
            out.append({labels[i]: float(1.0 - lam), labels[j]: float(lam)})
    return out


def combine(weights: Mapping[str, float], values: Mapping[str, np.ndarray]) -> np.ndarray:
    """One combination of the reference's per-trajectory ``values`` (label -> array).

    >>> b = bracket_at(1.5, {"r1": 1.0, "r2": 2.0, "r3": 3.0})
    >>> ref = {"r1": np.array([0.3]), "r2": np.array([0.1]), "r3": np.array([0.05])}
    >>> [round(float(combine(w, ref)[0]), 12) for w in b.readings["convex"]]
    [0.2, 0.125]
    """
    return cast(
        np.ndarray,
        sum(w * np.asarray(values[r], dtype=np.float64) for r, w in weights.items()),
    )
