"""Two rate curves compared at matched bits: one trajectory's difference as a linear contrast.

A rate curve is a set of *configurations* (a compressor's variants: rate R, top-K fraction),
each with a measured uplink cost (bits per entry) and a test loss on every trajectory. To
compare a test curve with a reference curve "at the same bits", each test configuration is
matched with the reference's loss at its bits: the mixture of the two reference
configurations that bracket it which spends the same bits on average (time sharing: linear
interpolation in bits). The bits that place a configuration are its **design mean** over
every trajectory (a configuration's bits move by well under 1% between trajectories), so the
weights are fixed numbers and one trajectory's difference

    d = mean over matched test configurations t of ( y_t - sum_r w_tr y_r )

is a fixed linear contrast of that trajectory's losses: its mean over trajectories estimates
the same contrast of the true means without bias, whatever the noise's correlation, and the
interval over the design's units (:mod:`gradcomp.lossy.nested`) is exact for it. Two ways to
choose the reference configurations a test configuration is matched with (``match``):

- ``kept_set``: only the reference's configurations on the **same kept set** (the same
  sparsifier and top-K fraction, :func:`kept_set_of`). The loss of a kept set carries a
  trajectory effect shared by every quantizer on it (in the default run the residuals of one
  top-K fraction correlate 0.8-1.0), which this contrast cancels: it measures the
  quantizers, sparsifier held fixed. No loss enters the choice of weights. A test
  configuration outside the bits its kept set's reference configurations span is not
  matched (no extrapolation) and is listed.
- ``frontier``: the reference's **operational curve**, the lower convex hull of its
  configurations' design-mean (bits, loss) from its fewest bits to its lowest loss
  (:func:`lower_hull`; flat beyond the lowest loss, up to its most bits), across kept sets.
  It answers "is the test compressor better than the best the reference offers at these
  bits" and is the only comparison for curves that share no kept set (a dense compressor
  against a top-K curve); the kept sets' trajectory effects do not cancel in it. Choosing
  the hull on the same data is a selection, and its cost was measured by simulation
  (:mod:`gradcomp.lossy.verdict_simulation`): on the default run's structure, 95% intervals
  cover a null difference in 93.5-96% of studies from 6 to 24 warm starts. Choosing it for
  each unit on the other units instead (cross-fitting) did worse at 6 warm starts (92%, with
  the units' differences no longer independent), and per-trajectory hulls are biased
  (the minimum of noisy losses is low).

A configuration that another configuration of its own curve beats in both bits and loss is
*dominated* (:func:`pareto_front`); which reference configurations a question's contrasts
lean on, and which of them are dominated, is reported beside every verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BITS_RTOL",
    "MATCHES",
    "Contrast",
    "Matching",
    "interpolation_weights",
    "kept_set_of",
    "lower_hull",
    "match_points",
    "pareto_front",
    "unit_differences",
]

#: The ways a test configuration is matched with the reference (module doc).
MATCHES = ("kept_set", "frontier")


def kept_set_of(spec: Mapping) -> str:
    """The kept set a checked compressor spec sends (its ``sparsifier`` and the ``topk``
    fraction it actually keeps): ``"top-K 45.2%"``, ``"random-K 10%"`` or ``"dense"`` (every
    entry; PowerSGD and count sketch, which sparsify nothing, included)."""
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
    return ~beats.any(axis=1)


def lower_hull(bits: Sequence[float], loss: Sequence[float]) -> np.ndarray:
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


#: Bits that differ by at most this fraction count as the same bits: two quantizers at one
#: rate on one kept set spend bits within 1% of each other, and a test configuration that far
#: past the reference's last configuration is read at it.
BITS_RTOL = 0.01


def interpolation_weights(
    x: float, xs: Sequence[float], rtol: float = BITS_RTOL
) -> np.ndarray | None:
    """Weights over the points ``xs`` (any order) of the piecewise-linear interpolant at
    ``x``: the two points that bracket it (points at equal ``xs`` share their weight), the
    end point(s) where ``x`` lies beyond an end by at most ``rtol`` of it; None farther out."""
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
class Contrast:
    """One test configuration matched with the reference: ``weights`` (reference label ->
    weight, summing to 1) give the reference's loss at the test's ``log_bits``."""

    test: str
    kept_set: str
    log_bits: float
    weights: Mapping[str, float]


@dataclass(frozen=True)
class Matching:
    """A test curve matched with a reference curve (:func:`match_points`): the contrasts, the
    test configurations left ``unmatched`` (label -> why) and the reference configurations
    the contrasts use (``used``)."""

    mode: str
    contrasts: tuple[Contrast, ...]
    unmatched: Mapping[str, str]

    @property
    def used(self) -> tuple[str, ...]:
        return tuple(sorted({r for c in self.contrasts for r, w in c.weights.items() if w > 0}))


def match_points(
    test: Mapping[str, tuple[str, float]],
    reference: Mapping[str, tuple[str, float, float]],
    mode: str,
) -> Matching:
    """Match every test configuration (label -> (kept set, design-mean bits per entry)) with the
    reference's (label -> (kept set, design-mean bits per entry, mean loss)); ``mode`` one of
    :data:`MATCHES` (module doc). The reference's mean loss only chooses the front
    (``frontier``)."""
    if mode not in MATCHES:
        raise ValueError(f"match must be one of {MATCHES}, got {mode!r}")
    labels = list(reference)
    kept = np.array([reference[r][0] for r in labels])
    bits = np.array([reference[r][1] for r in labels], dtype=np.float64)
    if mode == "frontier":
        loss = np.array([reference[r][2] for r in labels], dtype=np.float64)
        on_front = lower_hull(bits, loss)
    contrasts, unmatched = [], {}
    for label, (kept_set, test_bits) in test.items():
        if mode == "kept_set":
            pool = kept == kept_set
            if not pool.any():
                unmatched[label] = f"the reference has no configuration on {kept_set}"
                continue
        else:
            pool = on_front
        idx = np.flatnonzero(pool)
        w = interpolation_weights(test_bits, bits[idx])
        if w is None and mode == "frontier" and bits[idx].max() < test_bits <= bits.max():
            # past the lowest-loss configuration the operational curve is flat: more bits
            # buy nothing the reference cannot reach with its fewer
            w = (bits[idx] == bits[idx].max()) / (bits[idx] == bits[idx].max()).sum()
        if w is None:
            where = f"on {kept_set}" if mode == "kept_set" else "on its front"
            lo, hi = bits[idx].min(), bits[idx].max()
            unmatched[label] = (
                f"{test_bits:.3g} bits per entry lie outside the reference's "
                f"{lo:.3g}-{hi:.3g} {where}"
            )
            continue
        weights = {labels[i]: float(wi) for i, wi in zip(idx, w, strict=True) if wi > 0}
        contrasts.append(Contrast(label, kept_set, float(test_bits), weights))
    return Matching(mode, tuple(contrasts), unmatched)


def unit_differences(
    matching: Matching, test_values: Mapping[str, np.ndarray], ref_values: Mapping[str, np.ndarray]
) -> np.ndarray:
    """Per trajectory, the mean over the matched test configurations of the test's value
    minus the reference's at matched bits (module doc); ``*_values``: label -> one value per
    trajectory, in one trajectory order. NaN for every trajectory when nothing matched."""
    if not matching.contrasts:
        n = len(next(iter(test_values.values()))) if test_values else 0
        return np.full(n, np.nan)
    parts = [
        np.asarray(test_values[c.test], dtype=np.float64)
        - sum(w * np.asarray(ref_values[r], dtype=np.float64) for r, w in c.weights.items())
        for c in matching.contrasts
    ]
    return np.mean(parts, axis=0)
