"""Figure Y8 (:mod:`gradcomp.plotting.paper_y_m`): what a coded bit buys against the distortion
weight M, drawn from synthetic one-round tables with a planted effect of M, checked against
an independent computation (per-warm-start means, scipy's Student-t interval) and against
what the figure drew, and held to the figure standard."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import scipy.stats  # noqa: E402

from gradcomp.lossy.one_round import ONE_ROUND_COLUMNS  # noqa: E402
from gradcomp.plotting import paper_y_m as figure_m  # noqa: E402
from gradcomp.plotting.standard import read_png_row, violations  # noqa: E402

QUANTIZERS = {"none": "none", "uniform": "uniform", "gennorm": "lloyd",
              "gennormk10": "lloyd", "kmeans": "kmeans"}  # fmt: skip
KEPT = {"none": "top-K 45.2%", "uniform": "top-K 45.2%", "gennorm": "top-K 45.2%",
        "gennormk10": "top-K 10%", "kmeans": "top-K 45.2%"}  # fmt: skip
MS = (0, 1, 2, 3, 4)
#: (compressor, rate, M) of the synthetic study: the figure's series, and what it leaves
#: out (uniform, the reference, another kept set, a rate above two bits).
VARIANTS = [
    ("none", 32, 0), ("uniform", 1, 0), ("uniform", 2, 0),
    *[(name, rate, M) for name in ("gennorm", "kmeans") for rate in (1, 2) for M in MS],
    ("gennorm", 4, 2), ("gennormk10", 1, 2),
]  # fmt: skip
ENTRIES = 100_000


def spec(name: str) -> dict:
    out = {"none": {"quantizer": "none"}, "uniform": {"quantizer": "uniform"},
           "gennorm": {"quantizer": "lloyd", "family": "gennorm"},
           "gennormk10": {"quantizer": "lloyd", "family": "gennorm"},
           "kmeans": {"quantizer": "kmeans"}}[name]  # fmt: skip
    return {**out, "sparsifier": "topk", "topk": 0.1 if name.endswith("k10") else 0.452}


SPECS = {f"{n}/R{r}_M{m}": spec(n) for n, r, m in VARIANTS}


def write_tables(folder: Path, warm_starts: int, seeds: int = 2, rounds: int = 2) -> list[Path]:
    """One table per warm start: every variant on each (seed, round), the loss a round takes
    off growing with M (0.01 nats a step of M), the warm starts' own gains differing."""
    rng = np.random.default_rng(7)
    paths = []
    for ws in range(warm_starts):
        gain_ws = 0.3 + 0.1 * rng.standard_normal()
        rows = []
        for seed in range(seeds):
            for rnd in range(1, rounds + 1):
                start_loss, start_acc = 2.0 - 0.1 * rnd, 0.3 + 0.02 * rnd
                exact = gain_ws + 0.02 * rng.standard_normal()
                for name, rate, M in VARIANTS:
                    bpe = (32 * 0.452 if rate == 32 else 0.452 * rate) + 0.9 - 0.02 * M
                    gain = exact - 0.05 / rate + 0.01 * M + 0.005 * rng.standard_normal()
                    rows.append({
                        "model": "cnn", "warm_start": ws, "seed": seed, "round": rnd,
                        "compressor": name, "rate": rate, "M": M,
                        "bits_coded": round(bpe * ENTRIES), "bits_fixed": round(bpe * ENTRIES),
                        "test_acc": start_acc + 0.25 * gain, "test_loss": start_loss - gain,
                        "start_acc": start_acc, "start_loss": start_loss,
                        "exact_acc": start_acc + 0.25 * exact, "exact_loss": start_loss - exact,
                        "entries": ENTRIES, "bits_accounted": round(bpe * ENTRIES),
                        "bits_source": "bytes",
                    })  # fmt: skip
        path = folder / f"ws{ws}.tsv"
        pd.DataFrame(rows, columns=list(ONE_ROUND_COLUMNS)).to_csv(path, sep="\t", index=False)
        paths.append(path)
    return paths


def independent(paths, name, rate, M, metric) -> tuple[float, float, float, float]:
    """(mean, lo, hi, ceiling) of ``metric`` computed here: per row the gain over the bits
    per entry, the mean per (warm start, seed) over rounds, then per warm start over seeds,
    then the mean and scipy's 95% t-interval over the warm starts."""
    d = pd.concat(pd.read_csv(p, sep="\t") for p in paths)
    d = d[(d["compressor"] == name) & (d["rate"] == rate) & (d["M"] == M)]
    bpe = d["bits_coded"] / d["entries"]
    if metric == "loss_per_bit":
        value, top = (
            (d["start_loss"] - d["test_loss"]) / bpe,
            (d["start_loss"] - d["exact_loss"]) / bpe,
        )
    else:
        value = 100 * (d["test_acc"] - d["start_acc"]) / bpe
        top = 100 * (d["exact_acc"] - d["start_acc"]) / bpe
    frame = d.assign(value=value, top=top)
    per_ws = (
        frame.groupby(["warm_start", "seed"])[["value", "top"]].mean().groupby("warm_start").mean()
    )
    u = per_ws["value"].to_numpy()
    lo, hi = scipy.stats.t.interval(0.95, len(u) - 1, loc=u.mean(), scale=scipy.stats.sem(u))
    return float(u.mean()), float(lo), float(hi), float(per_ws["top"].mean())


@pytest.fixture
def drawn(tmp_path, monkeypatch):
    """Render Y8 from 8 warm starts x 2 seeds, keeping the figure the library saved."""
    paths = write_tables(tmp_path, warm_starts=8)
    kept = {}
    real = figure_m.save_figure

    def keep(fig, png, *, replicates=None):
        kept["lines"] = [[(ln.get_label(), ln.get_xdata(), ln.get_ydata()) for ln in ax.get_lines()]
                         for ax in fig.axes]  # fmt: skip
        kept["bars"] = [[c for c in ax.containers] for ax in fig.axes]
        kept["ylabels"] = [ax.get_ylabel() for ax in fig.axes]
        real(fig, png, replicates=replicates)

    monkeypatch.setattr(figure_m, "save_figure", keep)
    png = tmp_path / "Y8_cnn.png"
    table = figure_m.figure_y8(paths, QUANTIZERS, png, model="cnn",
                               specs=SPECS, kept_sets=KEPT, baseline="uniform")  # fmt: skip
    return paths, png, table, kept


@pytest.mark.slow
def test_series_are_gennorm_lloyd_and_kmeans_at_one_and_two_bits(drawn) -> None:
    _, _, table, _ = drawn
    assert list(dict.fromkeys(table["series"])) == [
        "GenNorm Lloyd, 1 bit", "GenNorm Lloyd, 2 bits",
        "weighted k-means, 1 bit", "weighted k-means, 2 bits",
    ]  # fmt: skip
    # another kept set (top-K 10%), 4 bits, uniform and the float32 reference are left out
    assert set(table["compressor"]) == {"gennorm", "kmeans"} and set(table["rate"]) == {1, 2}
    assert len(table) == 2 * 4 * len(MS) and list(table.columns) == figure_m.Y8_COLUMNS
    assert (table["units"] == 8).all() and (table["design"] == "warm starts").all()


@pytest.mark.slow
def test_means_and_intervals_match_an_independent_computation(drawn) -> None:
    paths, _, table, _ = drawn
    for row in table.itertuples(index=False):
        mean, lo, hi, top = independent(paths, row.compressor, row.rate, row.M, row.metric)
        assert (row.mean, row.lo, row.hi, row.ceiling) == pytest.approx(
            (mean, lo, hi, top), rel=1e-9
        )
        assert row.bits_per_entry == pytest.approx(0.452 * row.rate + 0.9 - 0.02 * row.M)


@pytest.mark.slow
def test_planted_effect_of_M_shows(drawn) -> None:
    """The loss a round takes off grows 0.01 nats a step of M and M spends fewer bits: every
    series rises with M, in both panels; one bit buys more per bit than two."""
    _, _, table, _ = drawn
    for (_, _), own in table.groupby(["metric", "series"]):
        assert np.all(np.diff(own.sort_values("M")["mean"].to_numpy()) > 0)
    loss = table[table["metric"] == "loss_per_bit"].set_index(["compressor", "rate", "M"])
    assert (loss.xs(1, level="rate")["mean"] > loss.xs(2, level="rate")["mean"]).all()


@pytest.mark.slow
def test_the_figure_draws_the_table(drawn) -> None:
    """Each panel's series line holds the table's means at M plus its offset, each error bar
    spans the table's interval; a dotted line per rate through the mean ceilings."""
    _, _, table, kept = drawn
    for panel, (metric, *_rest) in enumerate(figure_m.METRICS):
        rows = table[table["metric"] == metric]
        lines = {label: (x, y) for label, x, y in kept["lines"][panel]}
        for label, own in rows.groupby("series"):
            x, y = lines[label]
            own = own.sort_values("M")
            np.testing.assert_allclose(y, own["mean"])
            np.testing.assert_allclose(np.round(x), own["M"])
            assert 0 < abs(x[0] - own["M"].iloc[0]) < 0.2  # set apart, not moved to another M
        for rate in (1, 2):
            word = "bit" if rate == 1 else "bits"
            x, y = lines[f"uncompressed aggregate's gain over the bits of {rate} {word}"]
            ceiling = rows[rows["rate"] == rate].groupby("M")["ceiling"].mean()
            np.testing.assert_allclose(y, ceiling.to_numpy())
        segments = [c.lines[2][0].get_segments()[0] for c in kept["bars"][panel]]
        spans = sorted((float(seg[0][1]), float(seg[1][1])) for seg in segments)
        expected = sorted(zip(rows["lo"], rows["hi"], strict=True))
        np.testing.assert_allclose(spans, expected)
    assert "nats" in kept["ylabels"][0] and "points" in kept["ylabels"][1]


@pytest.mark.slow
def test_the_saved_figure_meets_the_standard(drawn) -> None:
    _, png, _, _ = drawn
    row = read_png_row(png)
    assert violations(row) == [], violations(row)
    assert row["panels"] == 2 and row["replicates"] == 8 and row["intervals"] == 2 * 4 * len(MS)
    assert any("95% interval over 8 warm starts" in t for t in row["texts"])
    assert png.with_suffix(".pdf").stat().st_size > 1000


@pytest.mark.slow
def test_few_warm_starts_draw_their_values_not_an_interval(tmp_path) -> None:
    """Three warm starts: no interval (fewer than 5 units), each unit's value drawn; the
    standard is still met (no interval, so no replicates needed)."""
    paths = write_tables(tmp_path, warm_starts=3, seeds=1, rounds=1)
    png = tmp_path / "Y8_cnn.png"
    table = figure_m.figure_y8(paths, QUANTIZERS, png, model="cnn",
                               specs=SPECS, kept_sets=KEPT, baseline="uniform")  # fmt: skip
    row = read_png_row(png)
    assert row["intervals"] == 0 and row["replicates"] is None and violations(row) == []
    assert (table["units"] == 3).all()
    assert any("fewer than 5 warm starts" in t for t in row["texts"])


@pytest.mark.slow
def test_only_the_Ms_the_study_ran(tmp_path) -> None:
    """The default config's study: GenNorm Lloyd at M 0 and 2, k-means at M 2 only."""
    paths = write_tables(tmp_path, warm_starts=6, seeds=1, rounds=1)
    for p in paths:
        d = pd.read_csv(p, sep="\t")
        keep = ~d["M"].isin([1, 3, 4]) & ~((d["compressor"] == "kmeans") & (d["M"] == 0))
        d[keep].to_csv(p, sep="\t", index=False)
    png = tmp_path / "Y8_cnn.png"
    table = figure_m.figure_y8(paths, QUANTIZERS, png, model="cnn",
                               specs=SPECS, kept_sets=KEPT, baseline="uniform")  # fmt: skip
    assert sorted(set(table.loc[table["compressor"] == "kmeans", "M"])) == [2]
    assert sorted(set(table.loc[table["compressor"] == "gennorm", "M"])) == [0, 2]
    assert violations(read_png_row(png)) == []


def test_without_its_quantizers_the_figure_says_so(tmp_path) -> None:
    """A config without them: a figure that says so (no panel draws data), no error."""
    paths = write_tables(tmp_path, warm_starts=5, seeds=1, rounds=1)
    for p in paths:
        d = pd.read_csv(p, sep="\t")
        d[d["compressor"].isin(["none", "uniform"])].to_csv(p, sep="\t", index=False)
    png = tmp_path / "Y8_cnn.png"
    table = figure_m.figure_y8(paths, QUANTIZERS, png, model="cnn",
                               specs=SPECS, kept_sets=KEPT, baseline="uniform")  # fmt: skip
    assert table.empty
    row = read_png_row(png)
    assert any("no GenNorm Lloyd or weighted k-means" in t for t in row["texts"])
    assert row["panels"] == 0 and row["intervals"] == 0
