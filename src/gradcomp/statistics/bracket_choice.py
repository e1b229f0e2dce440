"""Which reading of the reference its own points support, and a test's two ends against it.

:func:`gradcomp.statistics.matched_bits.bracket_at` gives the readings of the reference curve at
a test configuration's bits that each shape allows. The ``convex`` one (the chord and the
neighbouring secants, mixed; the same pair on a concave curve) is the narrowest, but holds
only where the curve bends one way over the four points it uses; on an S it misses the
curve while claiming almost no width. So the bend is **measured**, not assumed: each second
difference of those points (the change of slope from one step to the next, a linear
contrast of the reference's losses) goes through the design's units
(:func:`gradcomp.statistics.nested.nested_test`), and a sign counts as shown where its one-sided
limit at :data:`BEND_LEVEL` (the interval's own 97.5%) keeps it. Every second difference
shown positive: ``convex``; every one negative: ``concave`` (a straight reference, whose
second differences are 0 to rounding, is both); otherwise, or with none, the reading that
needs no bend: ``either bend`` with a neighbour on each side, ``monotone`` without.

A curve whose bend does change between the points is then read with a bend shown wrong in
at most 2.5% of studies per second difference; between its points a curve can always do
what no point shows, which no procedure can check. The accuracy is read the same way on
its own points.

The ends: the test's value minus the highest and minus the lowest of the reading's
combinations, picked by their means (the reading's own order is the curve's, which the
data shows); :func:`gradcomp.statistics.nested.bounded_test` charges the width between them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.stats

from gradcomp.statistics.matched_bits import Bracket, combine
from gradcomp.statistics.nested import nested_test

__all__ = ["BEND_LEVEL", "bend_shown", "choose", "difference_ends"]

#: One-sided confidence at which a second difference's sign counts as shown.
BEND_LEVEL = 0.975
#: A second difference within this of 0 (nats per bit^2, after its limit) is 0: rounding.
_ROUNDING = 1e-9


def bend_shown(weights: Mapping[str, float], values: Mapping[str, np.ndarray], units) -> set[str]:
    """The bends (``convex``, ``concave``) the second difference ``weights`` of the reference's
    per-trajectory ``values`` shows at :data:`BEND_LEVEL` over the design's ``units``: its
    lower limit at least 0 shows ``convex``, its upper limit at most 0 ``concave`` (both for
    a difference of 0 without spread); none without a standard error."""
    t = nested_test(combine(weights, values), units)
    if not (np.isfinite(t.mean) and np.isfinite(t.se) and t.df >= 1):
        return set()
    half = float(scipy.stats.t.ppf(BEND_LEVEL, t.df)) * t.se
    shown = set()
    if t.mean - half >= -_ROUNDING:
        shown.add("convex")
    if t.mean + half <= _ROUNDING:
        shown.add("concave")
    return shown


def choose(
    bracket: Bracket, values: Mapping[str, np.ndarray], units
) -> tuple[str, tuple[Mapping[str, float], ...]]:
    """(kind, combinations): the reading of ``bracket`` that the reference's per-trajectory
    ``values`` support over the design's ``units`` (module doc)."""
    readings = bracket.readings
    if len(readings) == 1:
        kind = next(iter(readings))
        return kind, readings[kind]
    if bracket.bends:
        shown = set.intersection(*(bend_shown(d, values, units) for d in bracket.bends))
        for kind in ("convex", "concave"):
            if kind in shown:
                return kind, readings[kind]
    kind = "either bend" if "either bend" in readings else "monotone"
    return kind, readings[kind]


def difference_ends(
    y: np.ndarray, values: Mapping[str, np.ndarray], ends: tuple[Mapping[str, float], ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Per trajectory, (low end, high end) of the test's value ``y`` minus the reference's:
    ``y`` minus the combination of ``ends`` with the highest mean, and minus the one with
    the lowest.

    >>> ref = {"a": np.array([0.3, 0.5]), "b": np.array([0.1, 0.1])}
    >>> low, high = difference_ends(np.array([0.2, 0.2]), ref, ({"a": 1.0}, {"b": 1.0}))
    >>> low.round(12).tolist(), high.round(12).tolist()
    ([-0.1, -0.3], [0.1, 0.1])
    """
    y = np.asarray(y, dtype=np.float64)
    diffs = [y - combine(w, values) for w in ends]
    means = [float(np.mean(d)) for d in diffs]
    return diffs[int(np.argmin(means))], diffs[int(np.argmax(means))]
