"""Paper Y's figures at paper scale (gradcomp.lossy.facets and the figures that use it):
bounded width, short legends, checked on the drawn geometry, not on the code's choices."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from conftest import REPO, assert_readable  # noqa: E402
from gradcomp import plots  # noqa: E402
from gradcomp.compression.entries import entry_kind  # noqa: E402
from gradcomp.lossy import facets, figures, figures_paired, styles  # noqa: E402
from gradcomp.lossy.matched_bits import kept_set_of  # noqa: E402
from gradcomp.study.lossy import compressor_variants  # noqa: E402


def test_grid_is_at_most_four_wide_and_has_n_panels() -> None:
    """Planted bug: all panels in one row (width growing with the number of compressors)."""
    for n, shape in ((1, (1, 1)), (3, (1, 3)), (4, (1, 4)), (13, (4, 4))):
        fig, axes = facets.grid(n, width=3.0, height=2.0)
        assert len(axes) == n == len(fig.axes)
        assert tuple(fig.get_size_inches()) == (3.0 * shape[1], 2.0 * shape[0])
        plt.close(fig)


def test_family_legend_names_marks_not_variants() -> None:
    """A compressor with 5 rates x 4 M gets 5 + 4 entries, not 20; one with a single
    variant gets that variant's label (planted bug: one entry per variant)."""
    rows = [("gennorm", r, m) for r in (2, 3, 4, 5, 6) for m in (0, 1, 2, 3)]
    rows += [("float8", 8, 0), ("none", 32, 0)]
    data = pd.DataFrame(rows, columns=["compressor", "rate", "M"])
    quantizers = {"none": "none", "float8": "float8", "gennorm": "lloyd"}
    st = styles.variant_styles(data, quantizers)
    fig, (ax, ax2) = plt.subplots(1, 2)
    facets.family_legend(ax, "gennorm", [k for k in st if k[0] == "gennorm"], st)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["R2", "R3", "R4", "R5", "R6", "M0", "M1", "M2", "M3"]
    facets.family_legend(ax2, "float8", [("float8", 8, 0)], st)
    assert [t.get_text() for t in ax2.get_legend().get_texts()] == ["float8 R8"]
    assert facets.compressors(data, quantizers) == ["float8", "gennorm"]  # none: a reference
    plt.close(fig)


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
    return rounds, tables, quantizers, len(variants)


@pytest.mark.slow
def test_paper_scale_figures_are_bounded(tmp_path, monkeypatch) -> None:
    """With config/paper.yaml's 72 variants: every figure at most 13.5 inches wide (four
    3-inch panels and the references' legend), and no legend taller than the panel it sits
    in (a figure legend: than the tallest panel), measured on the drawn figure before it is
    saved. Planted bugs: one panel per rate in one row (Y6 was 3,170 pixels wide), one
    legend of every variant (60 entries, taller than the panels)."""
    rounds, tables, quantizers, n = paper_inputs(tmp_path)
    assert n == 72
    seen = {}
    save = plots.save_figure

    def measure(fig, png):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        panels = [ax for ax in fig.axes if ax.get_visible()]
        tallest = max(ax.get_window_extent(renderer).height for ax in panels)
        worst = 0.0
        for ax in panels:
            legend = ax.get_legend()
            if legend is not None:
                over = legend.get_window_extent(renderer).height / ax.get_window_extent().height
                worst = max(worst, over)
        for legend in fig.legends:
            worst = max(worst, legend.get_window_extent(renderer).height / tallest)
        seen[png.name if hasattr(png, "name") else str(png)] = (fig.get_size_inches()[0], worst)
        assert_readable(fig)
        save(fig, png)

    monkeypatch.setattr(plots, "save_figure", measure)
    out = tmp_path / "figs"
    out.mkdir()
    figures.figures_y1_y3(
        rounds, quantizers, out / "Y1.png", out / "Y2.png", out / "Y3.png", model="cnn"
    )
    figures_paired.figure_y6(tables, quantizers, out / "Y6.png", baseline="uniform", title="Y6")
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())["lossy"]
    paper = yaml.safe_load((REPO / "config/paper.yaml").read_text())["lossy"]
    kept = {}
    for v in compressor_variants({**default, **paper}):
        kept.setdefault(v.name, kept_set_of(v.spec))
    parts = [suffix for suffix, _ in figures_paired.Y7_PARTS]
    figures_paired.figure_y7(
        tables, quantizers, {p: out / f"Y7{p}.png" for p in parts},
        titles={p: f"Y7{p}" for p in parts}, kept_sets=kept, baseline="uniform",
    )  # fmt: skip
    assert sorted(seen) == ["Y1.png", "Y2.png", "Y3.png", "Y6.png", "Y7a.png", "Y7b.png",
                            "Y7c.png"]  # fmt: skip
    for name, (width, legend_share) in seen.items():
        assert width <= 13.5, (name, width)
        assert legend_share <= 1.0, (name, legend_share)
