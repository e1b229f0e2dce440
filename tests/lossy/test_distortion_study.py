"""Tests of gradcomp.lossy.distortion_study (figure Y5's table) on synthetic updates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from scipy.special import ndtr

import gradcomp.lossy.distortion_study as study
from gradcomp.lossy.distortion_study import BOUND, distortion_study, distortion_table, kept_entries
from gradcomp.lossy.run_files import save_snapshot

RATES = [1, 2]
MS = [0.0, 2.0]
QUANTIZERS = {
    "uniform", "lloyd gennorm (same M)", "lloyd gennorm, survivors fit", "k-means (same M)",
    "lloyd gauss (M0)", "gaussian channel", "ecsq gennorm (same M)", "ecsq data (same M)",
}  # fmt: skip


def weighted(x: np.ndarray, x_hat: np.ndarray, M: float) -> float:
    return float(np.mean(np.abs(x) ** M * (x - x_hat) ** 2))


def nearest(x: np.ndarray, levels: np.ndarray) -> np.ndarray:
    return levels[np.argmin(np.abs(x[:, None] - levels[None, :]), axis=1)]


@pytest.fixture(scope="module")
def full() -> np.ndarray:
    """A whole update tensor (GenNorm beta 1)."""
    return stats.gennorm.rvs(1.0, scale=1e-3, size=6000, random_state=np.random.default_rng(4))


@pytest.fixture(scope="module")
def values(full) -> np.ndarray:
    """Its kept entries: the 45.2% largest magnitudes, as top-K keeps them."""
    tau = np.quantile(np.abs(full), 1 - 0.452)
    return full[np.abs(full) >= tau]


def coarse_table(values: np.ndarray, full: np.ndarray, **kwargs) -> pd.DataFrame:
    """distortion_table(values, full, **kwargs) with the bound's curve on a coarser grid than
    the pipeline's, for speed (its accuracy is tested in test_rate_distortion.py)."""
    real = study.distortion_rate_curve

    def coarse(*args, **kw):
        return real(*args, grid_size=300, n_sweep=10, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(study, "distortion_rate_curve", coarse)
        return distortion_table(values, full, **kwargs)


@pytest.fixture(scope="module")
def table(values, full) -> pd.DataFrame:
    return coarse_table(values, full, rates=RATES, Ms=MS)


def points(table: pd.DataFrame, name: str, M: float) -> pd.Series:
    rows = table[(table["quantizer"] == name) & (table["M"] == M)]
    return rows.set_index("rate_bits")["distortion"]


@pytest.mark.slow
def test_table_columns_and_rows(table):
    assert list(table.columns) == ["M", "quantizer", "rate_bits", "coded_bits", "distortion",
                                   "gap_bits", "gap_db"]  # fmt: skip
    assert set(table["quantizer"]) == QUANTIZERS | {BOUND}
    measured = table[table["quantizer"] != BOUND]
    assert len(measured) == len(MS) * len(RATES) * len(QUANTIZERS)
    assert sorted(set(measured["rate_bits"])) == RATES
    assert set(table["M"]) == set(MS)
    assert np.all(np.isfinite(table["distortion"])) and np.all(table["distortion"] > 0)


@pytest.mark.slow
@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("R", RATES)
def test_uniform_distortion_by_hand(table, values, M, R):
    # from the min and max as the quantizer sends them: float32
    lo, hi = (float(np.float32(v)) for v in (values.min(), values.max()))
    expected = weighted(values, nearest(values, np.linspace(lo, hi, 2**R)), M)
    assert points(table, "uniform", M)[R] == pytest.approx(expected, rel=1e-12, abs=0)


def truncated_normal_lloyd(sigma: float, tau: float, n_levels: int) -> np.ndarray:
    """Lloyd-Max levels of N(0, sigma^2) restricted to |x| >= tau, by the normal's own
    formulas: the mean of N(0, sigma^2) on [a, b] is sigma^2 (phi(a) - phi(b)) / (Phi(b) -
    Phi(a)) (densities in units of sigma); each cell is cut to its parts beyond +-tau."""
    z_tau = tau / sigma

    def moments(a, b):  # mass and first moment of N(0, 1) on [a, b], in sigma units
        return ndtr(b) - ndtr(a), stats.norm.pdf(a) - stats.norm.pdf(b)

    y = np.linspace(-3.0, 3.0, n_levels)
    for _ in range(2000):
        edges = np.concatenate([[-np.inf], 0.5 * (y[1:] + y[:-1]), [np.inf]])
        new = np.empty_like(y)
        for k in range(n_levels):
            a, b = edges[k], edges[k + 1]
            m0 = m1 = 0.0
            for lo, hi in ((a, min(b, -z_tau)), (max(a, z_tau), b)):
                if lo < hi:
                    p, q = moments(lo, hi)
                    m0, m1 = m0 + p, m1 + q
            new[k] = m1 / m0 if m0 > 0 else y[k]
        if np.max(np.abs(new - y)) < 1e-13:
            break
        y = new
    return sigma * y


@pytest.mark.slow
@pytest.mark.parametrize("R", RATES)
def test_gaussian_lloyd_and_channel_by_hand(table, values, full, R):
    """The Gaussian Lloyd quantizer: the normal fitted to the whole update (loc 0: sigma =
    rms), designed for its law beyond the smallest kept magnitude; the test channel's
    distortion is the kept values' variance times 2^-2R."""
    levels = truncated_normal_lloyd(np.sqrt(np.mean(full**2)), np.abs(values).min(), 2**R)
    expected = weighted(values, nearest(values, levels), 0)
    assert points(table, "lloyd gauss (M0)", 0)[R] == pytest.approx(expected, rel=1e-6, abs=0)
    # backward test channel: D_0 = var 2^-2R up to the noise's sample fluctuation
    assert points(table, "gaussian channel", 0)[R] == pytest.approx(
        values.var() * 2.0 ** (-2 * R), rel=0.1, abs=0
    )


@pytest.mark.slow
def test_truncated_design_beats_the_survivors_fit(table):
    """On the kept entries, the GenNorm Lloyd designed for the truncated law of the update
    has lower distortion than the one fitted to the survivors as if untruncated."""
    for M in MS:
        for R in RATES:
            assert (
                points(table, "lloyd gennorm (same M)", M)[R]
                < points(table, "lloyd gennorm, survivors fit", M)[R]
            )


@pytest.mark.slow
@pytest.mark.parametrize("M", MS)
def test_distortion_falls_with_rate_and_bound_lies_below(table, M):
    bound = points(table, BOUND, M)
    assert len(bound) > 0 and np.all(np.diff(bound.to_numpy()) < 0)
    for name in QUANTIZERS:
        d = points(table, name, M)
        assert np.all(np.diff(d.to_numpy()) < 0), name
        for R in RATES:
            assert bound[float(R)] < d[R], (name, R)


def write_snapshot(path, before: dict[str, torch.Tensor], kept: dict[str, torch.Tensor]):
    after = {name: t.clone() for name, t in before.items()}
    save_snapshot({"before": before, "after": after, "kept": kept}, path)


def test_kept_entries_are_the_kept_nonzero_entries(tmp_path):
    rng = np.random.default_rng(0)
    before = rng.normal(size=(6, 7)).astype(np.float32)
    before[0, :3] = 0.0  # kept zeros are not entries of the update
    kept = rng.random((6, 7)) < 0.5
    kept[0, :3] = True
    path = tmp_path / "update.safetensors"
    write_snapshot(
        path,
        {"conv.weight": torch.from_numpy(before), "fc.bias": torch.ones(3)},
        {"conv.weight": torch.from_numpy(kept), "fc.bias": torch.ones(3, dtype=torch.bool)},
    )
    got, whole = kept_entries(path, "conv.weight")
    expected = before[kept & (before != 0)].astype(np.float64)
    assert got.dtype == np.float64 and whole.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(whole, before.ravel().astype(np.float64))


def test_kept_entries_errors_name_the_tensor(tmp_path):
    path = tmp_path / "update.safetensors"
    write_snapshot(
        path,
        {"fc1.weight": torch.ones(4), "fc2.weight": torch.tensor([0.0, 1.0, 0.0])},
        {"fc1.weight": torch.ones(4, dtype=torch.bool), "fc2.weight": torch.tensor([1, 0, 1]) > 0},
    )
    with pytest.raises(ValueError, match=r"'conv9.weight' is not in the update.*fc1.weight"):
        kept_entries(path, "conv9.weight")
    with pytest.raises(ValueError, match=r"kept no entry of 'fc2.weight'"):
        kept_entries(path, "fc2.weight")


def test_distortion_study_writes_the_table(tmp_path, monkeypatch):
    def fake_table(values, full, *, rates, Ms, low_bits=(), slip=False):
        return pd.DataFrame(
            {"M": [Ms[0]], "quantizer": ["uniform"], "rate_bits": [rates[0]], "distortion": [1.5]}
        )

    monkeypatch.setattr(study, "distortion_table", fake_table)
    path = tmp_path / "update.safetensors"
    write_snapshot(path, {"w": torch.tensor([1.0, 2.0])}, {"w": torch.ones(2, dtype=torch.bool)})
    out = tmp_path / "y5" / "distortion_study.tsv"
    table = distortion_study(path, out, tensor="w", rates=[3], Ms=[2.0])
    pd.testing.assert_frame_equal(pd.read_csv(out, sep="\t"), table)


@pytest.mark.slow
@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("R", RATES)
def test_uniform_coded_bits_and_gaps_by_hand(table, values, M, R):
    """Uniform's coded bits are the entropy of its nearest-level labels (counted here with
    numpy's histogram of the labels), and its gaps are read off the bound's rows by hand:
    log-linear interpolation of D(R) at its bits, and of R(D) at its distortion (planted
    bugs: the nominal R as its bits; the gap against another M's bound)."""
    lo, hi = (float(np.float32(v)) for v in (values.min(), values.max()))
    levels = np.linspace(lo, hi, 2**R)
    labels = np.argmin(np.abs(values[:, None] - levels[None, :]), axis=1)
    p = np.unique(labels, return_counts=True)[1] / values.size
    bits = float(-(p * np.log2(p)).sum())
    row = table[(table["quantizer"] == "uniform") & (table["M"] == M) & (table["rate_bits"] == R)]
    assert row["coded_bits"].item() == pytest.approx(bits, abs=1e-12)
    bound = table[(table["quantizer"] == BOUND) & (table["M"] == M)].sort_values("rate_bits")
    r, log_d = bound["rate_bits"].to_numpy(), np.log(bound["distortion"].to_numpy())
    d = row["distortion"].item()
    if r[0] <= bits <= r[-1]:
        expected_db = 10 * (np.log(d) - np.interp(bits, r, log_d)) / np.log(10)
        assert row["gap_db"].item() == pytest.approx(expected_db, abs=1e-9)
    else:
        assert np.isnan(row["gap_db"].item())
    if log_d[-1] <= np.log(d) <= log_d[0]:
        expected_bits = bits - np.interp(np.log(d), log_d[::-1], r[::-1])
        assert row["gap_bits"].item() == pytest.approx(expected_bits, abs=1e-9)


@pytest.mark.slow
def test_the_entropy_constrained_design_is_nearer_the_bound_than_lloyd_at_two_bits(table):
    """At R = 2 on GenNorm entries the design made for coded bits is closer to the bound in
    bits than the fixed-rate GenNorm Lloyd of the same M (what T6 shows on the real update)."""
    at = table[table["rate_bits"] == 2].set_index(["M", "quantizer"])["gap_bits"]
    for M in MS:
        assert at[(M, "ecsq gennorm (same M)")] < at[(M, "lloyd gennorm (same M)")], M


def test_t6_ranks_each_quantizer_by_its_gap(tmp_path):
    """T6 from two models' distortion studies: the bound's rows dropped, the model from the
    folder, within a model, M and R the smallest gap first and an unreached gap (NaN) last."""
    rows = pd.DataFrame({
        "M": [0, 0, 0, 0], "quantizer": ["a", "b", "c", BOUND], "rate_bits": [2.0] * 4,
        "coded_bits": [1.9, 2.0, 1.0, 2.0], "distortion": [1.0, 2.0, 3.0, 0.5],
        "gap_bits": [0.3, 0.1, np.nan, np.nan], "gap_db": [1.0, 0.5, np.nan, np.nan],
    })  # fmt: skip
    paths = []
    for model in ("cnn", "resnet"):
        (tmp_path / model).mkdir()
        rows.to_csv(tmp_path / model / "distortion_study.tsv", sep="\t", index=False)
        paths.append(tmp_path / model / "distortion_study.tsv")
    t6 = study.table_t6(paths, tmp_path / "T6.tsv", tmp_path / "T6.md")
    assert list(t6["model"]) == ["cnn"] * 3 + ["resnet"] * 3
    assert list(t6["quantizer"]) == ["b", "a", "c"] * 2
    assert "–" in (tmp_path / "T6.md").read_text()  # NaN shown as a dash, not "nan"


LOW_BITS = [0.25, 0.5, 1.0]


@pytest.fixture(scope="module")
def low_table(values, full) -> pd.DataFrame:
    return coarse_table(values, full, rates=[1], Ms=MS, low_bits=LOW_BITS)


@pytest.mark.slow
@pytest.mark.parametrize("M", MS)
def test_below_one_bit_the_entropy_constrained_design_follows_the_bound(low_table, values, M):
    """The arithmetic-coded design's points below 1.5 bits: one per target, its index
    entropy near the target (the law is fitted to these entries), its distortion falling with
    the bits and never below the bound (which reaches below them); at one bit it does at
    least as well as the two-level GenNorm Lloyd design of the same M (at most one bit), and
    at M = 2 much better (a dead zone, which no one-bit Huffman-coded design has)."""
    own = points(low_table, "ecsq gennorm (same M)", M).index
    assert sorted(own) == LOW_BITS  # R = 1 once, from the rates
    own = low_table[(low_table["quantizer"] == "ecsq gennorm (same M)") & (low_table["M"] == M)]
    own = own.set_index("rate_bits").sort_index()
    assert np.all(np.abs(own["coded_bits"] - own.index) < 0.1), own["coded_bits"]
    assert np.all(np.diff(own["distortion"].to_numpy()) < 0)
    bound = points(low_table, BOUND, M)
    assert bound.index.min() <= 0.05 + 1e-9
    assert np.all(own["gap_bits"] > -0.01), own["gap_bits"]
    lloyd = points(low_table, "lloyd gennorm (same M)", M)[1.0]
    assert own.loc[1.0, "distortion"] <= (1.01 if M == 0 else 0.8) * lloyd, lloyd
    # a dead zone at a quarter bit: M-weighted distortion below the zero quantizer's
    zero = weighted(values, np.zeros_like(values), M)
    assert own.loc[0.25, "distortion"] < zero
