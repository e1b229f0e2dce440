"""Paper Y's figures against the figure standard (gradcomp.plotting.facets and the figures that
use it): at most six panels, text readable at 700 px, every series in a legend, no symlog
axis, no interval from fewer than five replicates, readers' names, and Y6 marking exactly
what the verdict table decides; checked on the drawn and saved figures, not on the code's
choices."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from conftest import REPO  # noqa: E402
from gradcomp.compression.entries import entry_kind  # noqa: E402
from gradcomp.lossy.paper_y_tables import one_round_data  # noqa: E402
from gradcomp.plotting import facets
from gradcomp.plotting import paper_y_distortion as distortion
from gradcomp.plotting import paper_y_m as figure_m
from gradcomp.plotting import paper_y_rate_curves as rate_curves
from gradcomp.plotting import paper_y_rounds as rounds_figures
from gradcomp.plotting import paper_y_verdicts as verdicts_figure  # noqa: E402
from gradcomp.plotting import standard as fs  # noqa: E402
from gradcomp.statistics.matched_bits import kept_set_of  # noqa: E402
from gradcomp.study.lossy import compressor_variants  # noqa: E402


def test_grid_is_at_most_three_wide_and_six_panels() -> None:
    """Planted bug: all panels in one row (the width growing with the compressors), or a
    seventh panel."""
    for n, shape in ((1, (1, 1)), (3, (1, 3)), (4, (2, 3)), (6, (2, 3))):
        fig, axes = facets.grid(n, height=4.0)
        assert len(axes) == n == len(fig.axes)
        assert axes[0].get_gridspec().get_geometry() == shape
        assert tuple(fig.get_size_inches()) == (facets.FIG_WIDTH, 4.0)
        plt.close(fig)
    with pytest.raises(ValueError, match="1 to 6 panels"):
        facets.grid(7, height=4.0)


def test_partition_keeps_neighbours_and_balances() -> None:
    """Runs of neighbours (config order kept), at most ``parts`` of them, the largest as small
    as it can be (planted bug: round-robin, which splits a compressor's curves apart)."""
    runs = facets.partition([1, 2, 1, 1, 1, 1, 1], 4)
    assert [i for run in runs for i in run] == list(range(7)) and len(runs) == 4
    assert max(sum([1, 2, 1, 1, 1, 1, 1][i] for i in run) for run in runs) == 3
    assert facets.partition([3], 6) == [[0]] and facets.partition([], 6) == []


def test_log_ticks_label_a_narrow_range_plainly() -> None:
    """Y2's uplink axis spans less than a decade: it gets at least three labelled ticks, as
    plain numbers (planted bug, the last release's: one tick, 10^7)."""
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_xlim(3.0, 25.0)
    facets.log_ticks(ax.xaxis, 3.0, 25.0)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels == ["5", "10", "20"]
    facets.log_ticks(ax.xaxis, 1.4, 3.3)
    assert [f"{t:g}" for t in ax.xaxis.get_majorticklocs()] == ["1.5", "2", "3"]
    plt.close(fig)


# --- a small study: the default config's kinds, warm starts enough for intervals --------------

LOSSY = {
    "topk": 0.452,
    "compressors": [
        {"name": "none", "quantizer": "none"},
        {"name": "uniform", "quantizer": "uniform", "rates": [1, 2]},
        {"name": "uniformk10", "curve": "uniform", "quantizer": "uniform", "topk": 0.1,
         "rates": [1, 2]},
        {"name": "gennorm", "quantizer": "lloyd", "family": "gennorm", "rates": [1], "M": [0, 2]},
        {"name": "signef", "quantizer": "scaled_sign", "sparsifier": "none",
         "error_feedback": True},
    ],
}  # fmt: skip


@pytest.fixture
def study(tmp_path):
    """One-round tables of 6 warm starts (one seed each) for :data:`LOSSY`'s variants, with
    made-up finite numbers; the run's specs, kinds, curves and kept sets."""
    variants = compressor_variants(LOSSY)
    rng = np.random.default_rng(0)
    tables = []
    for ws in range(6):
        rows = []
        for v in variants:
            bits = 1000 * min(v.rate, 32) * (0.2 if "k10" in v.name else 1.0)
            rows.append({
                "model": "cnn", "warm_start": ws, "seed": 0, "round": 1, "compressor": v.name,
                "rate": v.rate, "M": v.M, "bits_coded": bits, "bits_fixed": bits,
                "test_acc": 0.4, "test_loss": 1.6 + 0.05 / v.rate + rng.normal(0, 0.01),
                "start_acc": 0.35, "start_loss": 1.8, "exact_acc": 0.41, "exact_loss": 1.6,
                "entries": 1000,
            })  # fmt: skip
        path = tmp_path / f"ws{ws}.tsv"
        pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
        tables.append(path)
    return {
        "tables": tables,
        "specs": {v.label: v.spec.plain() for v in variants},
        "quantizers": {e["name"]: entry_kind(e) for e in LOSSY["compressors"]},
        "curves": {e["name"]: e.get("curve", e["name"]) for e in LOSSY["compressors"]},
        "kept": {v.name: kept_set_of(v.spec) for v in variants},
        "identifiers": fs.internal_names({v.name: v.spec.plain() for v in variants}),
    }


def verdict_table(rows) -> pd.DataFrame:
    """A verdict table (the columns Y6 reads) of ``rows``: (test, rate, M, reference,
    reference M, match, verdict)."""
    columns = ["test", "rate", "M", "reference", "reference_M", "match", "verdict"]
    return pd.DataFrame(rows, columns=columns).assign(model="cnn", margin=0.004)


def meets_standard(png, identifiers=()) -> dict:
    row = fs.read_png_row(png)
    row["bad_text"] = fs.bad_texts(row["texts"], identifiers)
    assert fs.violations(row) == [], (png.name, fs.violations(row))
    return row


@pytest.mark.slow
def test_y6_marks_exactly_what_the_verdicts_decide(study, tmp_path, monkeypatch) -> None:
    """Each verdict of the table appears once, in its variant's row and its reference's
    column, as that verdict's mark, and nothing else is marked (planted bugs, the last
    release's: stars from a test of the figure's own, so GenNorm 1 bit M=0, "better" in the
    verdicts, went unmarked). Rows and columns carry readers' names, no config name."""
    table = verdict_table([
        ("gennorm", 1, 0, "uniform", 0, "kept_set", "better"),
        ("gennorm", 1, 2, "uniform", 0, "kept_set", "equivalent"),
        ("gennorm", 1, 2, "exact", 0, "exact", "undecided"),
        ("uniform", 1, 0, "exact", 0, "exact", "worse"),
        ("signef", 1, 0, "uniform", 0, "frontier", "worse"),
    ])  # fmt: skip
    seen = {}
    real = verdicts_figure._verdict_grid

    def spy(ax, *args, **kwargs):
        real(ax, *args, **kwargs)
        seen["grid"] = ax

    monkeypatch.setattr(verdicts_figure, "_verdict_grid", spy)
    png = tmp_path / "Y6_cnn.png"
    # drawn from the frames under a short title (the catalogue's takes room a six-row test lacks)
    verdicts_figure.draw_y6(
        one_round_data(study["tables"]), study["quantizers"], png, title="Y6 cnn: question?",
        verdicts=table, curves=study["curves"], kept_sets=study["kept"], specs=study["specs"],
    )  # fmt: skip
    grid = seen["grid"]
    heads = [t.get_text() for t in grid.get_xticklabels()]
    assert heads[0].startswith("bits per entry")
    assert heads[1:] == [
        "vs uniform,\nsame kept set",
        "vs uncompressed",
        "vs uniform,\nany kept set",
    ]
    marks = {(int(line.get_xdata()[0]), line.get_label()) for line in grid.get_lines()
             if line.get_gid() != "guide"}  # fmt: skip
    words = verdicts_figure._verdict_words(0.004)
    assert sorted(marks) == sorted({(1, words["better"]), (1, words["equivalent"]),
                                    (2, words["undecided"]), (2, words["worse"]),
                                    (3, words["worse"])})  # fmt: skip
    assert len([ln for ln in grid.get_lines() if ln.get_gid() != "guide"]) == len(table)
    row = meets_standard(png, study["identifiers"])
    assert row["replicates"] == 6
    assert not any(n in text for text in row["texts"] for n in ("uniformk10", "signef"))
    assert (
        "uniform, top-K 10%" in row["texts"]
        and "scaled sign, dense, error feedback" in row["texts"]
    )


@pytest.mark.slow
def test_y7_parts_meet_the_standard_without_symlog(study, tmp_path) -> None:
    """Y7a-c: each at most four panels, a legend for every line, no symlog axis (the last
    release's y axis was), intervals only over the six warm starts, readers' names."""
    pngs = {p: tmp_path / f"Y7{p}_cnn.png" for p in "abc"}
    rate_curves.figure_y7(
        study["tables"], study["quantizers"], pngs, model="cnn", kept_sets=study["kept"],
        baseline="uniform", curves=study["curves"], specs=study["specs"],
    )  # fmt: skip
    for png in pngs.values():
        row = meets_standard(png, study["identifiers"])
        assert row["panels"] <= rate_curves.Y7_PANELS and not row["symlog"]
        assert row["replicates"] in (6, None)
    assert "scaled sign, error feedback" in fs.read_png_row(pngs["b"])["texts"]
    assert "top-K 10%" in fs.read_png_row(pngs["c"])["texts"]


def test_y7_panels_by_question() -> None:
    """a: the baseline's kept set (the baseline itself in every panel, not its own), b: the
    dense compressors, c: the curves with another kept set; at most four panels each,
    neighbours sharing one past that."""
    names = ["uniform", "uniformk10", "g", "k", "t", "e", "c", "q"]
    kept = {n: "top-K 45.2%" for n in names} | {"uniformk10": "top-K 10%", "q": "dense"}
    parts = rate_curves.y7_panels(names, kept, baseline="uniform", curves={"uniformk10": "uniform"})
    assert parts["b"] == [["q"]] and parts["c"] == [["uniform"]]
    assert [n for panel in parts["a"] for n in panel] == ["g", "k", "t", "e", "c"]
    assert len(parts["a"]) == 4


def rounds_tables(tmp_path, seeds=(0, 1)):
    """Rounds tables of three full-run variants, two seeds each."""
    paths = []
    for name, rate, M in (("none", 32, 0), ("uniform", 2, 0), ("gennorm", 1, 2)):
        for seed in seeds:
            run = tmp_path / f"{name}/R{rate}_M{M}/seed{seed}"
            run.mkdir(parents=True)
            bits = np.arange(5) * 1e6 * (min(rate, 32) / 2)
            acc = 0.35 + 0.04 * np.arange(5) - 0.002 * seed
            pd.DataFrame({
                "model": "cnn", "compressor": name, "rate": rate, "M": M, "warm_start": 0,
                "seed": seed, "round": range(5), "test_acc": acc, "test_loss": 2.0 - acc,
                "cumulative_bits_coded": bits, "cumulative_bits_fixed": bits,
            }).to_csv(run / "rounds.tsv", sep="\t", index=False)  # fmt: skip
            paths.append(run / "rounds.tsv")
    return paths


@pytest.mark.slow
def test_y1_y3_draw_each_seed_and_no_interval(study, tmp_path) -> None:
    """Two seeds are too few for an interval: Y1-Y3 draw each run's own line (a line per
    variant and seed, Y1's lower panel the difference to top-K float32 of the same seed) and
    report no replicates (planted bug, the last release's Y3: a t interval over 2 seeds).
    Y2's log axis has at least three labelled ticks."""
    paths = rounds_tables(tmp_path)
    out = {i: tmp_path / f"Y{i}_cnn.png" for i in (1, 2, 3)}
    rounds_figures.figures_y1_y3(
        paths, study["quantizers"], out[1], out[2], out[3], model="cnn",
        curves=study["curves"], specs=study["specs"], reference="none",
    )  # fmt: skip
    for png in out.values():
        row = meets_standard(png, study["identifiers"])
        assert row["replicates"] is None and not row["symlog"]
    texts = fs.read_png_row(out[2])["texts"]
    assert {"2", "5", "10"} <= set(texts)
    assert "GenNorm Lloyd M=2, 1 bit, top-K 45.2%" in texts


def test_y5_names_its_bound_in_the_legend(tmp_path) -> None:
    """The rate-distortion bound is a series with a legend entry, the 0 dB line the
    quantizers' gaps (T6's ``gap_db``) are drawn above (planted bug, the last release's: a
    black line the legend left out)."""
    from gradcomp.lossy.distortion_study import BOUND

    rows = [
        {
            "M": M,
            "quantizer": q,
            "rate_bits": r,
            "coded_bits": r * 0.9,
            "distortion": 2.0**-r * (1.5 if q == "uniform" else 1.2),
            "gap_db": 1.8 if q == "uniform" else 0.8,
        }
        for M in (0, 2)
        for q in ("uniform", "lloyd gennorm (same M)")
        for r in (1, 2, 3)
    ]
    rows += [{"M": M, "quantizer": BOUND, "rate_bits": r, "coded_bits": r, "distortion": 2.0**-r}
             for M in (0, 2) for r in (0.5, 1, 2, 3)]  # fmt: skip
    path = tmp_path / "rd.tsv"
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    png = tmp_path / "Y5_cnn.png"
    distortion.figure_y5(path, png, model="cnn", tensor="fc1.weight")
    row = meets_standard(png)
    assert distortion.Y5_NAMES[BOUND] in row["texts"] and row["panels"] == 2


def paper_inputs(tmp_path):
    """Round tables of two seeds and one-round tables of two seeds for every variant of
    config/paper.yaml, with made-up but finite numbers."""
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())["lossy"]
    paper = yaml.safe_load((REPO / "config/paper.yaml").read_text())["lossy"]
    lossy = {**default, **paper}
    variants = compressor_variants(lossy)
    quantizers = {e["name"]: entry_kind(e) for e in lossy["compressors"]}
    rng = np.random.default_rng(0)
    rounds, tables = [], []
    for v in variants:
        for seed in (0, 1):
            run = tmp_path / f"cnn/{v.name}/R{v.rate}_M{v.M}/seed{seed}"
            run.mkdir(parents=True)
            bits = np.concatenate([[0], rng.integers(1, 10, 3) * 10**6 * min(v.rate, 32)])
            acc = 0.1 + np.concatenate([[0], np.cumsum(rng.uniform(0.01, 0.1, 3))])
            pd.DataFrame({
                "model": "cnn", "compressor": v.name, "rate": v.rate, "M": v.M, "warm_start": -1,
                "seed": seed, "round": range(4), "test_acc": acc, "test_loss": 2.3 - acc,
                "cumulative_bits_coded": np.cumsum(bits), "cumulative_bits_fixed": np.cumsum(bits),
            }).to_csv(run / "rounds.tsv", sep="\t", index=False)  # fmt: skip
            rounds.append(run / "rounds.tsv")
    for seed in (0, 1):
        rows = []
        for v in variants:
            b = 197332 * min(v.rate, 32) * rng.uniform(0.4, 0.6)
            rows.append({
                "model": "cnn", "warm_start": -1, "seed": seed, "round": 1,
                "compressor": v.name, "rate": v.rate, "M": v.M,
                "bits_coded": int(b), "bits_fixed": int(b), "test_acc": rng.uniform(0.2, 0.3),
                "test_loss": rng.uniform(2.0, 2.3), "start_acc": 0.2, "start_loss": 2.2,
                "exact_acc": 0.31, "exact_loss": 2.0, "entries": 197332,
            })  # fmt: skip
        path = tmp_path / f"cnn/one_round/seed{seed}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
        tables.append(path)
    return rounds, tables, quantizers, variants, lossy


@pytest.mark.slow
def test_paper_scale_figures_are_bounded(tmp_path) -> None:
    """With config/paper.yaml's 72 variants: every figure at most six panels and 7.6 inches
    wide (text at least 8 px at 700 px), every series in a legend, readers' names only.
    Planted bugs: one panel per compressor (15 panels, Y1 was 13.5 inches wide), one legend
    entry per variant (72 entries, taller than the panels)."""
    rounds, tables, quantizers, variants, lossy = paper_inputs(tmp_path)
    assert len(variants) == 72
    specs = {v.label: v.spec.plain() for v in variants}
    curves = {e["name"]: e.get("curve", e["name"]) for e in lossy["compressors"]}
    kept = {}
    for v in variants:
        kept.setdefault(v.name, kept_set_of(v.spec))
    ids = fs.internal_names({v.name: v.spec.plain() for v in variants})
    out = tmp_path / "figs"
    out.mkdir()
    rounds_figures.figures_y1_y3(
        rounds, quantizers, out / "Y1.png", out / "Y2.png", out / "Y3.png", model="cnn",
        curves=curves, specs=specs, reference="none",
    )  # fmt: skip
    verdicts_figure.figure_y6(tables, quantizers, out / "Y6.png", model="cnn", curves=curves,
                              kept_sets=kept, specs=specs)  # fmt: skip
    rate_curves.figure_y7(
        tables, quantizers, {p: out / f"Y7{p}.png" for p in "abc"}, model="cnn",
        kept_sets=kept, baseline="uniform", curves=curves, specs=specs,
    )  # fmt: skip
    figure_m.figure_y8(tables, quantizers, out / "Y8.png", model="cnn",
                       specs=specs, kept_sets=kept, baseline="uniform", curves=curves)  # fmt: skip
    assert sorted(p.name for p in out.glob("*.png")) == [
        "Y1.png", "Y2.png", "Y3.png", "Y6.png", "Y7a.png", "Y7b.png", "Y7c.png", "Y8.png",
    ]  # fmt: skip
    for png in sorted(out.glob("*.png")):
        row = fs.read_png_row(png)
        assert row["panels"] <= 6 and row["width_in"] <= 7.6, (png.name, row["width_in"])
        assert row["min_text_px_at_700"] >= 8 and row["all_labelled"], (png.name, row)
        assert fs.bad_texts(row["texts"], ids) == [], png.name
