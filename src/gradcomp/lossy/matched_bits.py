"""A test configuration against a reference curve at its bits: the reference's value there
bracketed, one trajectory's difference as two linear contrasts.

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
  :func:`lower_hull`, flat past its lowest loss). Which configurations make it is not chosen
  on the data: the difference to it is the largest of the contrasts to every candidate,
  with simultaneous limits (:mod:`gradcomp.lossy.max_contrast`); a hull chosen on the means
  and then tested with them leans against the test.
- ``exact``: the uncompressed aggregate of the same round (the one-round tables'
  ``exact_loss``), at no bits: what the compressor loses against sending float32.

**The chord is not the curve.** Between two reference configurations the straight line in
bits lies *above* a convex curve, so a test configuration read off the chord looks better
than it is; more trajectories shrink the interval around that bias. Under the one assumption
that ``f`` is convex in bits (rate-distortion curves are; the operational curve is by
construction) and non-increasing (more bits never cost loss), ``f(x)`` on one kept set is
bracketed by
fixed linear combinations of the reference's losses (:func:`convex_bracket`):

- above by the chord of the two configurations ``j, j+1`` that bracket ``x``;
- below by the secants beside it carried to ``x``: the line through ``j`` and a neighbour
  with fewer bits carried right, and through ``j+1`` and a neighbour with more bits carried
  left, mixed with weights ``1 - lam`` and ``lam`` (``lam`` = how far ``x`` lies from ``j``
  to ``j+1``), so that the bound meets the curve at both configurations. Each neighbour is
  the nearest at least half the bracket's step ``h`` away (chosen on bits alone: a much
  nearer one would carry its noise far). With the adjacent neighbours the gap to the chord
  is ``lam (1 - lam) h (s_{j+1} - s_{j-1})`` for the neighbours' slopes ``s``: the curve's
  measured bend, small where the reference is dense, large across a kink.

A curve that bends the other way over those steps (concave: a quantizer whose next level
count costs loss, as uniform's two to four levels on a small kept set do) has the chord
below it and the secants above; the verdicts take whichever of the two ends measures lower
as the low end (:mod:`gradcomp.lossy.verdicts`), so the bracket holds for a curve of one
bend over the bracket's steps, either way, and its width is charged either way.

One trajectory's difference ``y_test - f(x)`` therefore lies between two contrasts,
``y_test - chord`` and ``y_test - secant bound`` (low and high end on a convex curve), whose
means
estimate the two ends of the difference's identified interval without bias whatever the
noise's correlation (:func:`gradcomp.lossy.nested.bounded_test` turns them into an interval
and tests). At a reference configuration's own bits both ends are that configuration
(:data:`AT_RTOL`); with a neighbour on neither side there is no lower bound and the high
end is unbounded. ``interpolation="chord"`` takes the chord for the curve (both ends the
chord): the procedure before this bracket, kept as a named switch to show its bias. On the
front the chord is exact: time sharing reaches it.

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
    "MATCHES",
    "Bracket",
    "bracket_differences",
    "convex_bracket",
    "frontier_candidates",
    "interpolation_weights",
    "kept_set_of",
    "lower_hull",
    "pareto_front",
]

#: What a test configuration is compared with (module doc).
MATCHES = ("kept_set", "frontier", "exact")
#: How the reference is read between its configurations (module doc).
INTERPOLATIONS = ("convex", "chord")
#: Bits that differ by at most this fraction count as the same budget: two quantizers with
#: two levels on one kept set spend the same bits but for their few side floats (0.03% in the
#: default run), and one configuration's bits move by 0.1-1% between trajectories.
AT_RTOL = 1e-3
#: A test configuration at most this fraction past the reference's most bits is read at its
#: last configuration (more bits never cost loss); farther out, or below the fewest bits,
#: it is not matched (no extrapolation).
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
    """The reference's loss at one test configuration's bits, bracketed (module doc).

    ``upper``: label -> weight of the chord (non-negative, sum 1), an upper bound of a convex
    curve; ``lower``: label -> weight of the secant extensions (sum 1, some negative), a lower
    bound, or None where no neighbour gives one; ``step_log2``: log2 of the ratio of the
    bits of the two configurations that bracket the test (0 at a configuration's bits).
    """

    upper: Mapping[str, float]
    lower: Mapping[str, float] | None
    step_log2: float

    @property
    def used(self) -> tuple[str, ...]:
        """The reference configurations either end leans on, sorted."""
        both = {**self.upper, **(self.lower or {})}
        return tuple(sorted(k for k, w in both.items() if w != 0))


def _spread(weights: dict[int, float], groups: list[list[str]]) -> dict[str, float]:
    """Weights of distinct bits -> weights of labels, labels at equal bits sharing theirs."""
    out: dict[str, float] = {}
    for g, w in weights.items():
        for label in groups[g]:
            out[label] = out.get(label, 0.0) + w / len(groups[g])
    return {k: v for k, v in out.items() if v != 0}


def _neighbour(u: np.ndarray, i: int, way: int, step: float) -> int:
    """The configuration beside ``u[i]`` (``way`` -1: fewer bits, 1: more) whose secant with
    it bounds the curve: the nearest at least ``step`` (half the bracket's) away, else the
    farthest. A neighbour much nearer would carry its two losses' noise far (weights 1 + c
    and -c, c at most 2 this way); any pair on one side bounds a convex curve, so the choice,
    made on bits alone, costs no validity."""
    others = range(i + way, -1 if way < 0 else u.size, way)
    last = i
    for k in others:
        last = k
        if abs(u[k] - u[i]) >= step:
            return k
    return last


def convex_bracket(
    x: float,
    bits: Mapping[str, float],
    *,
    interpolation: str = "convex",
    rtol: float = BITS_RTOL,
) -> Bracket | None:
    """:class:`Bracket` of the reference curve through the configurations ``bits`` (label ->
    design-mean bits per entry) at ``x`` bits; None where ``x`` lies below the fewest bits or
    more than ``rtol`` past the most. ``interpolation="chord"``: the lower end is the chord.

    >>> b = convex_bracket(1.5, {"r1": 1.0, "r2": 2.0, "r3": 3.0})
    >>> {k: float(w) for k, w in b.upper.items()}, {k: float(w) for k, w in b.lower.items()}
    ({'r1': 0.5, 'r2': 0.5}, {'r2': 1.5, 'r3': -0.5})
    """
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")
    if not bits:
        return None
    u = np.array(sorted(set(float(b) for b in bits.values())))
    groups = [[lb for lb, b in bits.items() if float(b) == ub] for ub in u]
    x = float(x)
    near = np.flatnonzero(np.abs(u - x) <= AT_RTOL * u)
    if near.size:
        k = int(near[np.argmin(np.abs(u[near] - x))])
        at = _spread({k: 1.0}, groups)
        return Bracket(at, at, 0.0)
    n = u.size - 1
    if x < u[0] or x > u[n] * (1 + rtol):
        return None
    if x > u[n]:  # just past the last configuration: no more loss than it (non-increasing)
        upper = {n: 1.0}
        lower = None
        if n >= 1:
            a = (x - u[n]) / (u[n] - u[n - 1])
            lower = {n: 1.0 + a, n - 1: -a}
        step = float(np.log2(x / u[n]))
    else:
        j = int(np.searchsorted(u, x) - 1)
        h = u[j + 1] - u[j]
        lam = (x - u[j]) / h
        upper = {j: 1.0 - lam, j + 1: lam}
        sides = []
        if j >= 1:  # the secant through k, j carried right to x
            k = _neighbour(u, j, -1, h / 2)
            a = (x - u[j]) / (u[j] - u[k])
            sides.append((1.0 - lam, {j: 1.0 + a, k: -a}))
        if j + 2 <= n:  # the secant through j+1, k carried left to x
            k = _neighbour(u, j + 1, 1, h / 2)
            c = (u[j + 1] - x) / (u[k] - u[j + 1])
            sides.append((lam, {j + 1: 1.0 + c, k: -c}))
        lower = None
        if sides:
            total = sum(s for s, _ in sides)
            lower = {}
            for share, w in sides:
                for g, v in w.items():
                    lower[g] = lower.get(g, 0.0) + share / total * v
        step = float(np.log2(u[j + 1] / u[j]))
    upper_w = _spread(upper, groups)
    if interpolation == "chord":
        return Bracket(upper_w, upper_w, step)
    return Bracket(upper_w, None if lower is None else _spread(lower, groups), step)


def frontier_candidates(
    x: float, bits: Mapping[str, float], rtol: float = BITS_RTOL
) -> list[dict[str, float]] | None:
    """The ways the reference reaches at most ``x`` bits (label -> weight each, summing to
    1): every configuration with at most ``x`` bits alone, and every pair that brackets
    ``x`` time-shared to spend ``x`` (its chord). The operational curve at ``x`` is the
    lowest of their losses (:mod:`gradcomp.lossy.max_contrast`). None below the fewest bits
    or more than ``rtol`` past the most (no extrapolation).

    >>> frontier_candidates(1.5, {"a": 1.0, "b": 2.0})
    [{'a': 1.0}, {'a': 0.5, 'b': 0.5}]
    """
    labels = list(bits)
    b = np.array([bits[lb] for lb in labels], dtype=np.float64)
    x = float(x)
    if b.size == 0 or x < b.min() * (1 - AT_RTOL) or x > b.max() * (1 + rtol):
        return None
    out: list[dict[str, float]] = [
        {lb: 1.0} for lb, bi in zip(labels, b, strict=True) if bi <= x * (1 + AT_RTOL)
    ]
    for i, j in ((i, j) for i in range(b.size) for j in range(b.size)):
        if b[i] < x < b[j] and abs(b[i] - x) > AT_RTOL * x and abs(b[j] - x) > AT_RTOL * x:
            lam = (x - b[i]) / (b[j] - b[i])
            out.append({labels[i]: float(1.0 - lam), labels[j]: float(lam)})
    return out


def bracket_differences(
    test: np.ndarray, reference: Mapping[str, np.ndarray], bracket: Bracket
) -> tuple[np.ndarray, np.ndarray]:
    """Per trajectory, (low end, high end) of the test's value minus the reference's at its
    bits: ``test - chord`` and ``test - lower bound`` (+inf without a lower bound);
    ``reference``: label -> one value per trajectory, in the test's order.

    >>> b = convex_bracket(1.5, {"r1": 1.0, "r2": 2.0, "r3": 3.0})
    >>> ref = {"r1": np.array([0.3]), "r2": np.array([0.1]), "r3": np.array([0.05])}
    >>> [round(float(v[0]), 12) for v in bracket_differences(np.array([0.2]), ref, b)]
    [0.0, 0.075]
    """
    y = np.asarray(test, dtype=np.float64)

    def combined(weights: Mapping[str, float]) -> np.ndarray:
        return cast(
            np.ndarray,
            sum(w * np.asarray(reference[r], dtype=np.float64) for r, w in weights.items()),
        )

    low_end = y - combined(bracket.upper)
    if bracket.lower is None:
        return low_end, np.full_like(y, np.inf)
    return low_end, y - combined(bracket.lower)
