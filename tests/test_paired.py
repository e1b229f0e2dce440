"""Intervals and paired differences of gradcomp.lossy.paired, against scipy and by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from gradcomp.lossy.paired import paired_summary, t_interval


def test_t_interval_is_scipys_student_t_interval():
    x = np.array([0.3, 0.1, 0.7, 0.4, 0.2])
    mean, lo, hi = t_interval(x)
    ref = scipy.stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=scipy.stats.sem(x))
    assert mean == pytest.approx(x.mean()) and (lo, hi) == pytest.approx(ref)
    assert np.isnan(t_interval([1.0])[1]) and np.isnan(t_interval([])[0])
    assert t_interval([1.0, np.nan, 3.0])[0] == 2.0  # non-finite entries are left out


def units_table() -> pd.DataFrame:
    """Three compressors on 6 paired units: 'better' = baseline - 0.1 + small noise, 'same'
    = baseline + pure noise; a compressor at a rate the baseline lacks."""
    rng = np.random.default_rng(3)
    base = rng.normal(1.0, 0.5, size=6)  # large unit-to-unit spread, shared by all
    rows = []
    for unit, b in enumerate(base):
        for name, value, rate in (
            ("uniform", b, 2),
            ("better", b - 0.1 + rng.normal(0, 0.01), 2),
            ("same", b + rng.normal(0, 0.01), 2),
            ("other", b, 8),
        ):
            rows.append({"model": "m", "compressor": name, "rate": rate, "M": 0, "seed": unit,
                         "metric": value})  # fmt: skip
    return pd.DataFrame(rows)


def test_paired_differences_see_through_the_unit_spread():
    data = units_table()
    out = paired_summary(
        data, units=["seed"], metrics=["metric"], paired=["metric"], baseline="uniform"
    ).set_index("compressor")
    # unpaired, 'better' and 'uniform' overlap: the unit spread (0.5) swamps the 0.1 gap
    assert out.loc["better", "metric_hi"] > out.loc["uniform", "metric_lo"]
    # paired, the difference is -0.1 with a tight interval, computed unit by unit
    diffs = (
        data[data.compressor == "better"]["metric"].to_numpy()
        - data[data.compressor == "uniform"]["metric"].to_numpy()
    )
    mean, lo, hi = t_interval(diffs)
    assert out.loc["better", "metric_vs_uniform_mean"] == pytest.approx(mean)
    assert (
        out.loc["better", "metric_vs_uniform_lo"],
        out.loc["better", "metric_vs_uniform_hi"],
    ) == (
        pytest.approx(lo),
        pytest.approx(hi),
    )
    assert mean == pytest.approx(-0.1, abs=0.02) and hi < 0
    assert bool(out.loc["better", "metric_vs_uniform_significant"])
    assert not bool(out.loc["same", "metric_vs_uniform_significant"])
    # no baseline at rate 8, and the baseline against itself: no difference, not significant
    for name in ("other", "uniform"):
        assert np.isnan(out.loc[name, "metric_vs_uniform_mean"])
        assert not bool(out.loc[name, "metric_vs_uniform_significant"])
    assert (out["units"] == 6).all()


def test_pairing_follows_the_units_not_the_row_order():
    data = units_table()
    shuffled = data.sample(frac=1.0, random_state=1)
    a = paired_summary(data, units=["seed"], metrics=[], paired=["metric"], baseline="uniform")
    b = paired_summary(shuffled, units=["seed"], metrics=[], paired=["metric"], baseline="uniform")
    pd.testing.assert_frame_equal(a, b)
