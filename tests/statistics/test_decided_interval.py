"""The interval a verdict is decided on (``decided_lo`` / ``decided_hi`` of verdicts.tsv,
:func:`gradcomp.statistics.nested.decided_interval`) agrees with its word on sight: better
below 0, worse above 0, equivalent inside the margin, undecided holding 0 and reaching past
the margin. Checked on simulated studies with every verdict (the known-truth simulation of
:mod:`gradcomp.statistics.verdict_simulation`, at no difference, at 1.5 margins and at 6 margins),
where the unadjusted 95% interval does disagree with the word in some rows (what this column
replaces: the planted bug), and the intervals' limits against scipy's t-test.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from gradcomp.statistics.nested import bounded_test, nested_test
from gradcomp.statistics.verdict_simulation import default_scenario, replicate

MARGIN = 0.004


def disagreements(table, lo="decided_lo", hi="decided_hi"):
    """Rows whose interval contradicts the word (module doc)."""
    lo, hi, m, v = table[lo], table[hi], table["margin"], table["verdict"]
    bad = (
        ((v == "better") & ~(hi < 0))
        | ((v == "worse") & ~(lo > 0))
        | ((v == "equivalent") & ~((lo > -m) & (hi < m)))
        | ((v == "undecided") & ~((lo <= 0) & (hi >= 0) & ((lo <= -m) | (hi >= m))))
    )
    return table[bad]


@pytest.fixture(scope="module")
def studies():
    s = default_scenario()
    n = len(s.questions())
    tables = [
        replicate(s, 40, 2, 6, seed=1, shift=0.0, margin=3 * MARGIN),
        replicate(s, 16, 1, 8, seed=2, shift=1.5 * MARGIN * (-1.0) ** np.arange(n), margin=MARGIN),
        replicate(s, 16, 1, 8, seed=3, shift=6 * MARGIN * (-1.0) ** np.arange(n), margin=MARGIN),
    ]
    import pandas as pd

    return pd.concat(tables, ignore_index=True).dropna(subset=["p"])


@pytest.mark.slow
def test_every_verdict_occurs(studies):
    assert {"better", "worse", "equivalent", "undecided"} <= set(studies["verdict"])


@pytest.mark.slow
def test_the_decided_interval_never_contradicts_the_word(studies):
    assert disagreements(studies).empty, disagreements(studies)[
        ["question", "verdict", "decided_lo", "decided_hi", "p_holm", "tost_p_holm"]
    ]


@pytest.mark.slow
def test_the_unadjusted_interval_would(studies):
    """The raw 95% interval shown with the adjusted word disagrees in some rows: the page
    the table replaced, which the test above would catch."""
    assert not disagreements(studies, "loss_diff_lo", "loss_diff_hi").empty


@pytest.mark.slow
def test_the_decided_interval_is_wider_than_the_raw_one_for_a_difference(studies):
    """Holm's adjusted level is at most alpha: a better / worse row's interval contains its
    unadjusted 95% interval."""
    d = studies[studies["verdict"].isin(["better", "worse"])]
    assert (d["decided_lo"] <= d["loss_diff_lo"] + 1e-12).all()
    assert (d["decided_hi"] >= d["loss_diff_hi"] - 1e-12).all()


@pytest.mark.parametrize("level", [0.9, 0.95, 0.995])
def test_limits_against_scipy(level):
    rng = np.random.default_rng(0)
    low = rng.normal(0.01, 0.02, 12)
    t = nested_test(low, np.arange(12))
    ref = scipy.stats.ttest_1samp(low, 0.0).confidence_interval(level)
    assert t.interval(level) == pytest.approx((ref.low, ref.high), rel=1e-9)
    high = low + 0.003
    b = bounded_test(low, high, np.arange(12))
    ref_high = scipy.stats.ttest_1samp(high, 0.0).confidence_interval(level)
    assert b.interval(level) == pytest.approx((ref.low, ref_high.high), rel=1e-9)
    # the level a p-value is rejected at: the interval at 1 - p has an end at 0
    lo, hi = b.interval(1 - b.p)
    assert min(abs(lo), abs(hi)) == pytest.approx(0.0, abs=1e-12)
