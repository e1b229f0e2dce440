"""The verdicts' statistics against independent references: the two-level interval's
coverage by simulation (and the pooled interval's failure), TOST against statsmodels, the
detectable difference against the noncentral t, the variance components on simulated data,
dominance on hand-made curves, and the verdict table on synthetic studies with a planted
truth (its coverage and power on the real data's structure:
tests/statistics/test_verdict_simulation.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from gradcomp.artifacts import write_tsv
from gradcomp.lossy.one_round import ONE_ROUND_COLUMNS
from gradcomp.lossy.verdict_tables import verdicts_table
from gradcomp.statistics.nested import (
    decide,
    min_detectable,
    nested_test,
    tost_p,
    unit_values,
    variance_components,
)
from gradcomp.statistics.rate_curves import dominance


def simulate(rng, W, S, sigma_b, sigma_w, mu=0.0):
    effects = rng.normal(0.0, sigma_b, W)
    values = mu + np.repeat(effects, S) + rng.normal(0.0, sigma_w, W * S)
    return values, np.repeat(np.arange(W), S)


@pytest.mark.slow
def test_two_level_interval_covers_where_the_pooled_one_does_not():
    """4,000 simulated studies of 6 warm starts x 2 seeds with half the variance between
    warm starts: the interval over warm starts covers the truth 95% of the time (binomial
    tolerance), the interval that pools the 12 trajectories as independent covers far less.
    Planted bugs that fail it: the interval over trajectories (df 11); the warm-start means
    taken over all trajectories (one unit)."""
    rng = np.random.default_rng(1)
    hits = pooled_hits = 0
    n = 4000
    for _ in range(n):
        y, w = simulate(rng, 6, 2, sigma_b=1.0, sigma_w=1.0, mu=0.3)
        t = nested_test(y, w)
        hits += t.lo <= 0.3 <= t.hi
        se = y.std(ddof=1) / np.sqrt(len(y))
        half = scipy.stats.t.ppf(0.975, len(y) - 1) * se
        pooled_hits += abs(y.mean() - 0.3) <= half
        assert t.df == 5 and t.units == 6 and t.design == "warm starts"
    assert abs(hits / n - 0.95) < 3 * np.sqrt(0.95 * 0.05 / n) + 0.005
    assert pooled_hits / n < 0.90


def test_unit_values_are_warm_start_means_or_the_seeds():
    y, w = [1.0, 3.0, 10.0, 14.0], [7, 7, 2, 2]
    units, design = unit_values(y, w)
    assert design == "warm starts" and sorted(units) == [2.0, 12.0]
    units, design = unit_values(y, [5, 5, 5, 5])
    assert design == "seeds" and list(units) == y
    assert np.isnan(nested_test([1.0, np.nan, 2.0, 3.0], [0, 0, 1, 1]).mean)


def test_tost_equals_statsmodels():
    """TOST p of a one-sample mean within +-margin, against statsmodels' ttost_mean.
    Planted bugs: the smaller instead of the larger one-sided p; a z instead of t."""
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(3)
    for n, shift, margin in ((6, 0.0, 0.5), (8, 0.3, 0.4), (12, -0.2, 1.0), (5, 0.9, 0.5)):
        x = rng.normal(shift, 0.4, n)
        se = x.std(ddof=1) / np.sqrt(n)
        expected = DescrStatsW(x).ttost_mean(-margin, margin)[0]
        assert tost_p(x.mean(), se, n - 1, margin) == pytest.approx(expected, rel=1e-10)


def test_min_detectable_has_the_stated_power_by_simulation():
    """At a true difference of min_detectable, 20,000 simulated studies of df + 1 normal
    units reject the two-sided t-test at level alpha 80% of the time (binomial tolerance).
    Planted bugs: a one-sided quantile (power near 0.9); the textbook normal-plus-t sum
    (power 0.75 at 6 units and level 0.05/7); t_{power} left out (power 0.5)."""
    rng = np.random.default_rng(11)
    n_sim = 20000
    for df, alpha in ((5, 0.05 / 7), (9, 0.05), (19, 0.01)):
        n, sigma = df + 1, 0.002
        d = min_detectable(sigma / np.sqrt(n), df, alpha, 0.8)
        x = rng.normal(d, sigma, size=(n_sim, n))
        t = x.mean(1) / (x.std(1, ddof=1) / np.sqrt(n))
        power = (np.abs(t) > scipy.stats.t.ppf(1 - alpha / 2, df)).mean()
        assert abs(power - 0.8) < 4 * np.sqrt(0.16 / n_sim), (df, alpha, power)


def test_variance_components_recover_the_simulated_ones():
    """200 warm starts x 4 seeds, sigma_b^2 = 4, sigma_w^2 = 1: the ANOVA estimates within
    a few standard errors. Planted bug: MS_between not divided by S (sigma_b^2 ~ 16)."""
    rng = np.random.default_rng(5)
    y, w = simulate(rng, 200, 4, sigma_b=2.0, sigma_w=1.0)
    between, within = variance_components(y, w)
    assert between == pytest.approx(4.0, rel=0.25)
    assert within == pytest.approx(1.0, rel=0.1)
    assert all(np.isnan(variance_components([1.0, 2.0], [0, 0])))


def test_dominance():
    ref_b, ref_l = [2.0, 4.0], [0.5, 0.2]
    assert dominance([1.0], [0.1], ref_b, ref_l) == 1  # fewer bits and lower loss than all
    assert dominance([5.0], [0.6], ref_b, ref_l) == -1
    assert dominance([1.0], [0.3], ref_b, ref_l) == 0  # fewer bits, more loss than R4
    assert dominance([2.0], [0.1], [2.0, 4.0], [0.1, 0.2]) == 0  # ties one point exactly


@pytest.mark.parametrize(
    ("mean", "p", "tost", "expected"),
    [(-0.01, 0.001, 0.9, "better"), (0.01, 0.001, 0.9, "worse"), (0.0005, 0.001, 0.01,
     "equivalent"), (0.002, 0.3, 0.2, "undecided"), (np.nan, np.nan, np.nan, "undecided")],
)  # fmt: skip
def test_decide(mean, p, tost, expected):
    assert decide(mean, p, tost, 0.05) == expected


def write_trajectories(root, shift, noise, seed=0, W=6, S=2):
    """One-round tables of W warm starts x S seeds: 'uniform' (R1, R2, R4) and 'test' (R1,
    R2) whose losses sit ``shift`` nats from uniform's curve at the same bits, plus noise."""
    rng = np.random.default_rng(seed)
    paths = []
    for w in range(W):
        rows = []
        for s in range(S):
            exact = 2.0 + 0.05 * rng.normal()
            head = {"model": "cnn", "warm_start": w, "seed": s, "round": 1, "start_acc": 0.3,
                    "start_loss": 2.2, "exact_acc": 0.4, "exact_loss": exact,
                    "entries": 1000}  # fmt: skip
            # uniform: loss 0.3 - 0.1 bits per entry above exact
            for rate, bpe in ((1, 0.5), (2, 1.0), (4, 3.0)):
                loss = exact + 0.3 - 0.1 * bpe
                rows.append({**head, "compressor": "uniform", "rate": rate, "M": 0,
                             "bits_coded": bpe * 1000, "bits_fixed": bpe * 1000,
                             "bits_accounted": bpe * 1000, "bits_source": "bytes",
                             "test_acc": 0.4 - (loss - exact), "test_loss": loss})  # fmt: skip
            for rate, bpe in ((1, 0.7), (2, 2.0)):
                loss = exact + 0.3 - 0.1 * bpe + shift + noise * rng.normal()
                rows.append({**head, "compressor": "test", "rate": rate, "M": 0,
                             "bits_coded": bpe * 1000, "bits_fixed": bpe * 1000,
                             "bits_accounted": bpe * 1000, "bits_source": "bytes",
                             "test_acc": 0.4 - (loss - exact), "test_loss": loss})  # fmt: skip
        path = root / f"ws{w}.tsv"
        write_tsv(path, pd.DataFrame(rows), ONE_ROUND_COLUMNS)
        paths.append(path)
    return paths


QUESTION = [{"test": "test", "M": 0, "rate": r, "reference": "uniform", "reference_M": 0,
             "match": "kept_set"} for r in (1, 2)]  # fmt: skip
KEPT = {f"{n}/R{r}_M0": "top-K 45.2%" for n in ("uniform", "test") for r in (1, 2, 4)}


@pytest.mark.parametrize(
    ("shift", "noise", "expected"),
    [(-0.02, 0.002, "better"), (0.02, 0.002, "worse"), (0.0, 0.0005, "equivalent"),
     (0.0, 0.05, "undecided")],
)  # fmt: skip
def test_verdicts_find_the_planted_truth(tmp_path, shift, noise, expected):
    """A test curve planted ``shift`` nats from uniform's at matched bits (curves linear in
    bits, so the difference at matched bits is the shift): better / worse at +-0.02 with small
    noise, equivalent within the 0.004 margin at 0 with small noise, undecided at 0 with noise
    far above the margin. Planted bugs: test and reference swapped (better <-> worse); the
    verdict from the raw instead of the TOST p; the accuracy difference's sign."""
    table = verdicts_table(
        write_trajectories(tmp_path, shift, noise), questions=QUESTION, curves={},
        kept_sets=KEPT, margin=0.004,
    )  # fmt: skip
    assert len(table) == 2  # one question per budget
    for _, row in table.iterrows():
        assert row["verdict"] == expected
        assert row["units"] == 6 and row["design"] == "warm starts" and row["trajectories"] == 12
        assert row["interp_bound"] == pytest.approx(0.0, abs=1e-12)  # uniform is linear in bits
        if expected in ("better", "worse"):
            assert row["loss_diff_mean"] == pytest.approx(shift, abs=0.003)
            assert np.sign(row["acc_diff_mean"]) == -np.sign(shift)
        assert row["min_detectable"] > 0


def test_curves_join_entries_into_one_curve(tmp_path):
    """A question names a compressor; its reference is a curve. With 'test' mapped onto
    curve 'uniform', test's other configuration joins the reference (never the question's
    own); on its own curve it does not. Planted bug that fails it: the curves mapping
    ignored (compressor names used)."""
    paths = write_trajectories(tmp_path, -0.02, 0.002)
    kw = {"questions": QUESTION, "kept_sets": KEPT, "margin": 0.004}
    joined = verdicts_table(paths, curves={"test": "uniform"}, **kw).set_index("test_point")
    # R1 (0.7 bits) read between uniform R1 (0.5) and R2 (1.0), the secant beyond from R2
    # to test's own R2 (2.0, joined); never the question's own configuration
    assert "test/R2_M0" in joined.loc["test/R1_M0", "reference_points"]
    assert "test/R2_M0" not in joined.loc["test/R2_M0", "reference_points"]
    own = verdicts_table(paths, curves={"test": "test"}, **kw)
    assert (own["verdict"] == "better").all()
    assert not own["reference_points"].str.contains("test/").any()


def test_rows_say_what_was_matched_and_leave_out_ideal_bits(tmp_path):
    """The row names the matched test configurations and the reference ones used; a
    reference configuration another one beats in bits and loss is listed as dominated; a
    curve whose bits are an ideal channel's (bits_source ideal) answers no question."""
    paths = write_trajectories(tmp_path, 0.0, 0.002)
    frames = [pd.read_csv(p, sep="\t") for p in paths]
    for f, p in zip(frames, paths, strict=True):
        r4 = (f["compressor"] == "uniform") & (f["rate"] == 4)
        f.loc[r4, "test_loss"] += 0.5  # more bits and loss than R2: dominated by it
        f.loc[f["compressor"] == "test", "bits_source"] = "ideal"
        write_tsv(p, f, list(f.columns))
    kw = {"questions": QUESTION, "curves": {}, "kept_sets": KEPT, "margin": 0.004}
    assert verdicts_table(paths, **kw).empty
    for f, p in zip(frames, paths, strict=True):
        f["bits_source"] = "bytes"
        write_tsv(p, f, list(f.columns))
    table = verdicts_table(paths, **kw).set_index("test_point")
    # R1 at 0.7 bits: chord of R1-R2 (0.5, 1.0) above, R2-R4's secant carried left below
    assert (
        table.loc["test/R1_M0", "reference_points"] == "uniform/R1_M0,uniform/R2_M0,uniform/R4_M0"
    )
    assert table.loc["test/R1_M0", "reference_dominated"] == "uniform/R4_M0"
    assert table.loc["test/R1_M0", "step_log2"] == pytest.approx(1.0)
    assert table.loc["test/R2_M0", "step_log2"] == pytest.approx(np.log2(3.0))
    assert (table["note"] == "").all()


#: test R1 (0.7 bits) against uniform's one configuration R2 (1.0 bits) and test R2 (2.0 bits)
#: against uniform R4 (3.0 bits), each at its own bits: no reading between configurations
ONE_CONFIGURATION = [
    {"test": "test", "M": 0, "rate": 1, "reference": "uniform", "reference_M": 0,
     "reference_rate": 2, "match": "kept_set", "interpolation": "none", "family": "direct"},
    {"test": "test", "M": 0, "rate": 2, "reference": "uniform", "reference_M": 0,
     "reference_rate": 4, "match": "kept_set", "interpolation": "none", "family": "direct"},
]  # fmt: skip


def _paired_by_hand(paths, test_rate, ref_rate):
    """The loss difference test R``test_rate`` minus uniform R``ref_rate`` per warm start
    (the mean of its seeds) read straight from the one-round tables, and scipy's paired t
    interval over the warm starts (independent of gradcomp.statistics.nested)."""
    data = pd.concat([pd.read_csv(p, sep="\t") for p in paths])
    pick = lambda name, rate: data[(data["compressor"] == name) & (data["rate"] == rate)]  # noqa: E731
    test = pick("test", test_rate).groupby("warm_start")["test_loss"].mean()
    ref = pick("uniform", ref_rate).groupby("warm_start")["test_loss"].mean()
    result = scipy.stats.ttest_rel(test.to_numpy(), ref.loc[test.index].to_numpy())
    ci = result.confidence_interval(0.95)
    return float((test - ref).mean()), float(ci.low), float(ci.high), float(result.pvalue)


@pytest.mark.parametrize(
    ("shift", "noise", "expected"),
    [(-0.05, 0.002, ("better", "worse")), (0.05, 0.002, ("worse", "worse")),
     # the planted null at R1: test R1 sits exactly as high as uniform R2 (R2: 0.07 above R4)
     (-0.03, 0.0005, ("equivalent", "worse")), (-0.03, 0.05, ("undecided", None))],
)  # fmt: skip
def test_one_reference_configuration_is_a_paired_difference(tmp_path, shift, noise, expected):
    """A question with ``reference_rate``: the test configuration against that one reference
    configuration, each at its own bits. uniform's loss is 0.3 - 0.1 bits above exact, the
    test's 0.3 - 0.1 bits + shift (+ noise): test R1 (0.7 bits) minus uniform R2 (1.0 bits) is
    0.03 + shift, test R2 (2.0) minus uniform R4 (3.0) is 0.1 + shift; shift -0.03 plants
    the null for R1 (R2's 0.07 is then far outside the margin). The mean and 95% interval
    equal scipy's paired t over the warm starts (each the mean of its seeds), the p its p;
    the verdict words follow; the row and label state both bits, no bracket. Planted bugs
    that fail it: the reference read on the curve at the test's bits (R1: 0.0 + shift, with
    a bracket); test and reference swapped; the seeds as units (df 11)."""
    paths = write_trajectories(tmp_path, shift, noise)
    table = verdicts_table(
        paths, questions=ONE_CONFIGURATION, curves={}, kept_sets=KEPT, margin=0.004,
    ).set_index("test_point")  # fmt: skip
    assert len(table) == 2
    for (test_rate, ref_rate, ref_bits), word in zip(((1, 2, 1.0), (2, 4, 3.0)), expected,
                                                     strict=True):  # fmt: skip
        row = table.loc[f"test/R{test_rate}_M0"]
        mean, lo, hi, p = _paired_by_hand(paths, test_rate, ref_rate)
        assert row["loss_diff_mean"] == pytest.approx(mean, abs=1e-12)
        assert row["loss_diff_lo"] == pytest.approx(lo, abs=1e-12)
        assert row["loss_diff_hi"] == pytest.approx(hi, abs=1e-12)
        assert row["p"] == pytest.approx(p, rel=1e-9)
        assert row["units"] == 6 and row["df"] == 5 and row["design"] == "warm starts"
        assert row["interp_bound"] == 0.0 and row["interpolation"] == "none"
        assert row["reference_points"] == f"uniform/R{ref_rate}_M0"
        assert row["reference_rate"] == ref_rate
        assert row["reference_bits"] == pytest.approx(ref_bits)
        test_bits = {1: 0.7, 2: 2.0}[test_rate]
        assert row["bits_per_entry"] == pytest.approx(test_bits)
        assert row["question"] == (
            f"test R{test_rate} M0 on top-K 45.2% ({test_bits:.2f} bits) vs uniform "
            f"R{ref_rate} M0 ({ref_bits:.2f} bits), same kept set"
        )
        assert word is None or row["verdict"] == word, (test_rate, row["loss_diff_mean"])
        truth = {1: 0.03, 2: 0.1}[test_rate] + shift
        if noise < 0.01:
            assert row["loss_diff_mean"] == pytest.approx(truth, abs=0.003)
        assert row["family_size"] == 2 and row["min_detectable"] > 0
        assert np.isfinite(row["units_for_target"]) or row["units_for_target"] == np.inf
        if word in ("better", "worse"):
            assert np.sign(row["acc_diff_mean"]) == -np.sign(row["loss_diff_mean"])
        if word == "equivalent":
            assert -0.004 < row["decided_lo"] <= row["decided_hi"] < 0.004


def test_one_reference_configuration_not_on_the_kept_set_is_not_matched(tmp_path):
    """A reference configuration on another kept set than the test's is no answer: the row
    says why, undecided, without an interval."""
    paths = write_trajectories(tmp_path, -0.05, 0.002)
    kept = {**KEPT, "uniform/R2_M0": "top-K 10%"}
    table = verdicts_table(
        paths, questions=ONE_CONFIGURATION[:1], curves={}, kept_sets=kept, margin=0.004,
    )  # fmt: skip
    (row,) = table.to_dict("records")
    assert row["verdict"] == "undecided" and np.isnan(row["loss_diff_mean"])
    assert row["note"].startswith("not matched: uniform R2 M0 has no configuration on top-K 45.2%")
