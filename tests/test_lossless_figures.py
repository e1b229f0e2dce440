"""Paper L's drawings: legends outside the panels, one colour per family in every figure."""

from __future__ import annotations

import itertools

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from gradcomp import plots
from gradcomp.lossless import plots as lplots
from gradcomp.lossless.figures import figure_l5

FAMILIES = ("norm", "laplace", "gennorm")


@pytest.fixture
def captured(monkeypatch) -> list:
    """Figures handed to save_figure, kept open instead of written."""
    figures: list = []
    for module in (plots, lplots):
        monkeypatch.setattr(module, "save_figure", lambda fig, path: figures.append(fig))
    return figures


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    rows = []
    for run, epoch, position, family in itertools.product(
        (0, 1), (1, 2, 3), ("lower", "middle", "upper"), FAMILIES
    ):
        rows.append({
            "run": run, "epoch": epoch, "kind": "epoch_avg", "position": position,
            "tensor": f"{position}.weight", "family": family, "numel": 1000, "loglik": 0.0,
            "w2": 0.1 + 0.01 * epoch, "beta": 1.0 if family == "gennorm" else np.nan,
            "loc": 0.0, "scale": 1e-3, "p0": 0.0,
        })  # fmt: skip
    return pd.DataFrame(rows)


def legend_right_of_every_panel(fig) -> dict[str, tuple]:
    """Assert the figure has one legend, right of all axes; return its colours by label."""
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert len(fig.legends) == 1
    assert all(ax.get_legend() is None for ax in fig.axes)
    legend = fig.legends[0]
    right = max(ax.get_window_extent(renderer).x1 for ax in fig.axes)
    assert legend.get_window_extent(renderer).x0 >= right
    return {
        text.get_text(): mcolors.to_rgb(handle.get_color())
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if hasattr(handle, "get_color")
    }


@pytest.mark.slow
def test_l3_legend_outside_and_family_colours(fits, captured) -> None:
    lplots.plot_metric_by_epoch(fits, metric="w2", ylabel="W2", title="L3", png_path="x.png")
    colours = legend_right_of_every_panel(captured[0])
    for family in FAMILIES:
        label = lplots.FAMILY_LABELS[family]
        assert colours[label] == mcolors.to_rgb(lplots.FAMILY_COLORS[family])


@pytest.mark.slow
def test_l2_and_l4_legends_outside(fits, captured) -> None:
    rng = np.random.default_rng(0)
    samples = {p: rng.laplace(scale=1e-3, size=2000) for p in ("lower", "middle", "upper")}
    lplots.plot_tails(samples, fits[fits["epoch"] == 3], title="L2", png_path="x.png")
    colours = legend_right_of_every_panel(captured[0])
    assert colours["GenNorm"] == mcolors.to_rgb(lplots.FAMILY_COLORS["gennorm"])
    lplots.plot_gennorm_parameters(fits, title="L4", png_path="x.png")
    legend_right_of_every_panel(captured[1])


@pytest.mark.slow
def test_l5_codes_take_their_family_colour(captured, tmp_path) -> None:
    """L5 as :func:`~gradcomp.lossless.figures.figure_l5` draws it from a coding table, with
    its default coders: each model-designed Huffman code in its family's colour (that of the
    family's fitted pdf in L1-L4), every coder its own colour, the coders without ``figure``
    left out.

    Planted bugs that fail it: the default palette built from other specs than the drawn
    coders (a missing legend entry), a Huffman code coloured other than its family."""
    coders = [*lplots.CODER_COLORS, "huffman_dweibull"]  # the last one is not drawn by default
    rows = [
        {"model": "m", "run": run, "epoch": e, "kind": "epoch_avg", "tensor": t,
         "scaling": "none", "accounting": "exact", "coder": c, "total_bits": 700.0 + e,
         "numel": 100, "n_nonzero": 90, "n_saturated": 1}
        for run, e, t, c in itertools.product((0, 1), (1, 2), ("a.weight", "b.weight"), coders)
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "coding.tsv", sep="\t", index=False)
    pd.DataFrame(
        {"model": ["m", "m"], "tensor": ["a.weight", "b.weight"], "position": ["lower", "upper"]}
    ).to_csv(tmp_path / "positions.tsv", sep="\t", index=False)
    figure_l5([tmp_path / "coding.tsv"], tmp_path / "positions.tsv", "x.png", model="m")
    colours = legend_right_of_every_panel(captured[0])
    headers = {"coder", "line", "code", "bound"}  # seaborn's sections: hue and style
    colours = {k: v for k, v in colours.items() if k not in headers}
    assert set(colours) == set(lplots.CODER_COLORS) and "huffman_dweibull" not in colours
    for family in FAMILIES:
        if f"huffman_{family}" in colours:
            assert colours[f"huffman_{family}"] == mcolors.to_rgb(lplots.FAMILY_COLORS[family])
    codes = {k: v for k, v in colours.items() if not lplots.is_bound(k)}
    assert len(set(codes.values())) == len(codes)  # every code its own colour
    for bound, code in lplots.BOUND_OF.items():  # a bound in its code's colour (dashed)
        if bound in colours and code in colours:
            assert colours[bound] == colours[code]


def test_coder_colours_come_from_one_palette_and_never_drop_a_coder() -> None:
    """Every coder gets a colour, a user's unknown one too; a user's colour is kept; codes
    distinct, a family's code in the family's colour (planted bug: the old lookup in a fixed
    table, which left an unknown coder out of L5)."""
    names = ["lz78", "mine", "huffman_gennorm", "entropy", "huffman_empirical", "theirs"]
    got = lplots.coder_colors(names, {"theirs": "#123456"})
    assert list(got) == names and got["theirs"] == "#123456"
    assert got["huffman_gennorm"] == lplots.FAMILY_COLORS["gennorm"]
    assert got["entropy"] == got["huffman_empirical"]
    codes = [got[n] for n in names if n != "entropy"]
    assert len(set(codes)) == len(codes)
