"""The stated detectable difference (``min_detectable`` of verdicts.tsv) has the stated power:
a true difference of that size, either way, is found (the difference test rejects at Holm's
first step, level alpha / m, in the right direction) in about 80% of studies.

Four cases, each simulated at exactly the stated size (the mean ``min_detectable`` of 100
pilot studies of the same design):

- kept set (:class:`gradcomp.statistics.nested.BoundedTest`), read through the bracket the
  reference's points support (:mod:`gradcomp.statistics.bracket_choice`), the true value at the
  end of the bracket that works against the test: a convex curve for an advantage, a
  concave one for a deficit;
- front (:class:`gradcomp.statistics.max_contrast.MaxContrastTest`), the default run's reference
  over five kept sets (:func:`gradcomp.statistics.verdict_simulation.default_scenario`), a dense
  configuration at 1.054 bits (between two kept sets, near-tied candidates) and at 0.636;
  and a front of one configuration (one contrast: an advantage and a deficit alike).

300 studies per case: the binomial error of a power of 0.8 is 0.023, so the goal >= 0.75
holds with about two errors to spare. The planted bug of issue 52 fails it: the front's
detectable difference read off the binding contrast alone (``(q + t_power) se``), which
ignores that an advantage must beat every near-tied candidate (power 0.34 and 0.54 here).
"""

from __future__ import annotations

import numpy as np
import pytest

from gradcomp.statistics.bracket_choice import choose, difference_ends
from gradcomp.statistics.matched_bits import bracket_at, frontier_candidates
from gradcomp.statistics.max_contrast import max_contrast_test
from gradcomp.statistics.nested import bounded_test
from gradcomp.statistics.simulated_study import Config, true_loss
from gradcomp.statistics.verdict_simulation import default_scenario

ALPHA, FAMILY, POWER = 0.05, 9, 0.8
LEVEL = ALPHA / FAMILY
W = 16
PILOT, REPS = 100, 300

#: Two curves through four points (bits -> true loss increase), straight between them, read at
#: 2.5 bits where the truth is the chord: below the bracket's other end on the convex one (an
#: advantage is hardest to show, on the end with the secants' larger noise), above it on the
#: concave one (a deficit is).
CONVEX = {1.0: 0.6, 2.0: 0.3, 3.0: 0.2, 4.0: 0.15}
CONCAVE = {1.0: 0.6, 2.0: 0.55, 3.0: 0.45, 4.0: 0.15}


def kept_set_study(rng, curve, d):
    """One study of W warm starts (one seed each): the reference's four configurations on
    ``curve`` (loading 0.02 on the shared factor, own noise 0.01), a test at 2.5 bits
    ``d`` nats off the true curve (own noise 0.005); its :class:`BoundedTest`."""
    f = rng.standard_normal(W)
    values = {f"r{b:g}": m + 0.02 * f + 0.01 * rng.standard_normal(W) for b, m in curve.items()}
    y = 0.5 * (curve[2.0] + curve[3.0]) + d + 0.02 * f + 0.005 * rng.standard_normal(W)
    b = bracket_at(2.5, {f"r{b:g}": b for b in curve})
    units = np.arange(W)
    return bounded_test(*difference_ends(y, values, choose(b, values, units)[1]), units)


SCENARIO = default_scenario()
REFERENCE = [c for cs in SCENARIO.reference.values() for c in cs]
MEANS = np.array([SCENARIO.shapes[c.kept_set](c.bits) for c in REFERENCE])
BITS = {f"c{i}": c.bits for i, c in enumerate(REFERENCE)}


def front(x):
    """The operational curve of the default reference's true means at ``x`` bits."""
    return true_loss(SCENARIO, Config(0, "dense", x), "frontier")


def front_study(rng, x, d, one=False):
    """One study: the default reference (its loadings and own noise; ``one``: its first
    configuration alone, at 1.583 bits), a dense test at ``x`` bits ``d`` nats off the front
    (loading 0.02, own noise 0.006); its MaxContrastTest."""
    f = rng.standard_normal(W)
    values = {f"c{i}": MEANS[i] + c.loading * f + c.sd * rng.standard_normal(W)
              for i, c in enumerate(REFERENCE)}  # fmt: skip
    y = (MEANS[0] if one else front(x)) + d + 0.02 * f + 0.006 * rng.standard_normal(W)
    cands = frontier_candidates(x, {"c0": BITS["c0"]} if one else BITS)
    contrasts = np.column_stack([y - sum(w * values[k] for k, w in c.items()) for c in cands])
    return max_contrast_test(contrasts, np.arange(W))


def power_at_stated(study, sign, seed):
    """(stated size, share found): the pilot's mean min_detectable, then REPS studies at that
    size with ``sign`` (-1: an advantage, +1: a deficit) counted when p < alpha / m with the
    right sign."""
    rng = np.random.default_rng(seed)
    stated = float(np.mean([study(rng, 0.0).min_detectable(LEVEL, POWER) for _ in range(PILOT)]))
    found = 0
    for _ in range(REPS):
        t = study(rng, sign * stated)
        found += t.p < LEVEL and np.sign(t.mean) == sign
    return stated, found / REPS


#: case -> (study, sign, whether the stated size is set by this direction).
CASES = {
    "kept set, advantage": (lambda rng, d: kept_set_study(rng, CONVEX, d), -1, True),
    "kept set, deficit": (lambda rng, d: kept_set_study(rng, CONCAVE, d), 1, True),
    "front at 1.054, advantage": (lambda rng, d: front_study(rng, 1.054, d), -1, True),
    "front at 1.054, deficit": (lambda rng, d: front_study(rng, 1.054, d), 1, False),
    "front at 0.636, advantage": (lambda rng, d: front_study(rng, 0.636, d), -1, True),
    "front of one, advantage": (lambda rng, d: front_study(rng, 1.59, d, one=True), -1, True),
    "front of one, deficit": (lambda rng, d: front_study(rng, 1.59, d, one=True), 1, True),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_the_stated_detectable_difference_has_the_stated_power(case):
    """Power >= 0.75 each way. Where the direction sets the stated size (on the front an
    advantage, which must beat every candidate, does unless there is one), power <= 0.95:
    the size stated, not one far past it; a deficit on a front of many is found with more."""
    study, sign, binding = CASES[case]
    stated, power = power_at_stated(study, sign, seed=len(case))
    se = np.sqrt(POWER * (1 - POWER) / REPS)
    assert power >= POWER - 2.2 * se, (case, stated, power)
    assert power <= (0.95 if binding else 1.0), (case, stated, power)


if __name__ == "__main__":
    for name, (study, sign, _) in CASES.items():
        print(name, *(round(v, 4) for v in power_at_stated(study, sign, seed=len(name))))


def test_units_for_agrees_with_the_stated_size():
    """The warm starts that would detect a target (``units_for_target``) are the design's own
    where the target is the stated detectable difference: exactly on one kept set, within
    the 5% the front's search resolves (1,000 draws) and a warm start; fewer for a target
    twice as large, more for one half as large. Planted bug that fails it: units_for on
    the binding contrast alone while min_detectable beats every candidate."""
    rng = np.random.default_rng(7)
    kept = kept_set_study(rng, CONVEX, 0.0)
    assert kept.units_for(kept.min_detectable(LEVEL), LEVEL) == W
    for x in (1.054, 0.636):
        t = front_study(rng, x, 0.0)
        stated = t.min_detectable(LEVEL)
        assert abs(t.units_for(stated, LEVEL) - W) <= 0.05 * W + 1, x
        assert t.units_for(2 * stated, LEVEL) < W < t.units_for(0.5 * stated, LEVEL)
