"""Paper L's drawings: each figure saved as the workflow saves it meets the figure standard
(gradcomp.plotting.standard, read back from the PNG), one legend under the panels, one colour
per law, each run its own line below five runs, L5 the paper's three codes and L5b the rest."""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
import scipy.stats

from gradcomp import names
from gradcomp.lossless.fit_lossless import fit_tensor
from gradcomp.plotting import palette, paper_l_coded_size, paper_l_epochs, paper_l_laws
from gradcomp.plotting.paper_l_coded_size import PAPER_CODERS, figure_l5
from gradcomp.plotting.paper_l_epochs import draw_l3, draw_l4
from gradcomp.plotting.paper_l_laws import draw_l1, draw_l2
from gradcomp.plotting.paper_l_panels import MIN_BAND_RUNS
from gradcomp.plotting.standard import read_png_row, violations

FAMILIES = ("norm", "laplace", "gennorm")
TENSORS = {"lower": "conv1.weight", "middle": "layers.4.conv2.weight", "upper": "fc.weight"}


@pytest.fixture
def captured(monkeypatch) -> list:
    """(figure, keywords) handed to save_figure, kept open instead of written."""
    figures: list = []
    for module in (paper_l_laws, paper_l_epochs, paper_l_coded_size):
        monkeypatch.setattr(
            module, "save_figure", lambda fig, path, **kw: figures.append((fig, kw))
        )
    return figures


def fits_table(runs: int) -> pd.DataFrame:
    rng = np.random.default_rng(runs)
    rows = []
    for run, epoch, kind, position, family in itertools.product(
        range(runs), (1, 2, 3), ("epoch_avg", "last_batch"), TENSORS, FAMILIES
    ):
        rows.append({
            "run": run, "epoch": epoch, "kind": kind, "position": position,
            "tensor": TENSORS[position], "family": family, "numel": 1000, "loglik": 0.0,
            "w2": 0.1 * rng.lognormal(0, 0.3), "loc": 0.0, "scale": 1e-3, "p0": 0.0,
            "beta": 1.0 + 0.2 * rng.standard_normal() if family == "gennorm" else np.nan,
        })  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tensors() -> tuple[dict[str, np.ndarray], pd.DataFrame]:
    """Three tensors of GenNorm entries (shapes 0.7, 1.2, 1.8; 2% exact zeros) and their
    fit rows at one epoch, fitted as the workflow fits them."""
    rng = np.random.default_rng(0)
    samples, rows = {}, []
    for (position, tensor), beta in zip(TENSORS.items(), (0.7, 1.2, 1.8), strict=True):
        x = scipy.stats.gennorm.rvs(beta, scale=1e-3, size=4000, random_state=rng)
        x[rng.random(x.size) < 0.02] = 0.0
        samples[position] = x
        for row in fit_tensor(x, families=FAMILIES, floc=None, label=tensor):
            rows.append({**row, "run": 0, "epoch": 3, "kind": "epoch_avg",
                         "position": position, "tensor": tensor, "numel": x.size})  # fmt: skip
    return samples, pd.DataFrame(rows)


def meets_the_standard(png: Path, panels: int) -> dict:
    """The row save_figure stored in ``png``: no violation of the standard, ``panels`` panels."""
    row = read_png_row(png)
    assert violations(row) == [], violations(row)
    assert row["panels"] == panels
    return row


def one_legend_under_the_panels(fig) -> dict[str, tuple]:
    """Assert the figure has one legend, under all its panels; return its colours by label."""
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert len(fig.legends) == 1
    assert all(ax.get_legend() is None for ax in fig.axes)
    legend = fig.legends[0]
    lowest = min(ax.get_window_extent(renderer).y0 for ax in fig.axes if ax.get_visible())
    assert legend.get_window_extent(renderer).y1 <= lowest
    return {
        text.get_text(): mcolors.to_rgb(handle.get_color() if hasattr(handle, "get_color")
                                        else handle.get_facecolor())
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }  # fmt: skip


@pytest.mark.slow
def test_l1_and_l2_meet_the_standard(tensors, tmp_path) -> None:
    """L1 (six panels: linear and log density of three tensors) and L2 (three tail panels
    on a linear axis in sd units, the code lengths in a box), written as the workflow
    writes them (planted bugs that fail it: the 18 panels of three epochs, 120 hairline bars
    at 4 px tick labels, a symlog or 8-decade log x axis squeezing the tails)."""
    samples, fits = tensors
    draw_l1(samples, fits, title="L1", png_path=tmp_path / "L1_m.png")
    meets_the_standard(tmp_path / "L1_m.png", panels=6)
    bits = {p: {"gennorm": 6.17, "laplace": 6.21, "norm": 6.38} for p in TENSORS}
    draw_l2(samples, fits, title="L2", png_path=tmp_path / "L2_m.png", code_bits=bits)
    row = meets_the_standard(tmp_path / "L2_m.png", panels=3)
    assert any("GenNorm 6.170" in t for t in row["texts"])


@pytest.mark.slow
def test_l1_and_l2_colour_each_law_and_name_it_as_a_reader_does(tensors, captured) -> None:
    samples, fits = tensors
    draw_l1(samples, fits, title="L1", png_path="x.png")
    draw_l2(samples, fits, title="L2", png_path="x.png")
    for fig, _ in captured:
        colours = one_legend_under_the_panels(fig)
        for family in FAMILIES:
            assert colours[f"{names.law(family)} fit"] == mcolors.to_rgb(
                palette.FAMILY_COLORS[family]
            )
    # L2's x axis: |entry| / sd, linear, starting at 0
    tails = captured[1][0].axes[0]
    assert tails.get_xscale() == "linear" and tails.get_yscale() == "log"
    assert tails.get_xlim()[0] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("runs", [2, 6])
def test_l3_and_l4_draw_each_run_below_five_runs_and_a_band_from_five(
    runs, captured, tmp_path
) -> None:
    """Two runs: one line per run and law (or dump kind), no band, save_figure told of no
    replicates; six runs: the mean with a band, save_figure told 6 (planted bug: the ±sd band
    over two runs that took L4's beta below 0)."""
    fits = fits_table(runs)
    draw_l3(fits, metric="w2", ylabel="W2", title="L3", png_path="x.png")
    draw_l4(fits, title="L4", png_path="x.png")
    (l3, l3_kw), (l4, l4_kw) = captured
    for fig, kw, per_panel in ((l3, l3_kw, len(FAMILIES)), (l4, l4_kw, 2)):
        assert len(fig.axes) == 6
        one_legend_under_the_panels(fig)
        for ax in fig.axes:
            bands = [c for c in ax.collections if c.get_label() and c.get_array() is None]
            if runs < MIN_BAND_RUNS:
                assert len(ax.lines) - len(_guides(ax)) == per_panel * runs and not bands
                assert kw["replicates"] is None
            else:
                assert len(ax.lines) - len(_guides(ax)) == per_panel and len(bands) == per_panel
                assert kw["replicates"] == runs
    colours = one_legend_under_the_panels(l3)
    for family in FAMILIES:
        assert colours[names.law(family)] == mcolors.to_rgb(palette.FAMILY_COLORS[family])
    title = l3.legends[0].get_title().get_text()
    assert title.startswith("one line per run" if runs < MIN_BAND_RUNS else "mean ± sd")


def _guides(ax) -> list:
    return [line for line in ax.lines if line.get_gid() == "guide"]


@pytest.mark.slow
def test_l3_and_l4_meet_the_standard(tmp_path) -> None:
    fits = fits_table(2)
    draw_l3(fits, metric="w2", ylabel="W2", title="L3",
                                png_path=tmp_path / "L3_m.png", log_y=True)  # fmt: skip
    meets_the_standard(tmp_path / "L3_m.png", panels=6)
    draw_l4(fits, title="L4", png_path=tmp_path / "L4_m.png")
    meets_the_standard(tmp_path / "L4_m.png", panels=6)


def coding_files(tmp_path: Path, coders: list[str]) -> tuple[Path, Path]:
    rows = [
        {"model": "m", "run": run, "epoch": e, "kind": "epoch_avg", "tensor": t,
         "scaling": "none", "accounting": "exact", "coder": c, "total_bits": 700.0 + e + run,
         "numel": 100, "n_nonzero": 90, "n_saturated": 1}
        for run, e, t, c in itertools.product((0, 1), (1, 2), TENSORS.values(), coders)
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "coding.tsv", sep="\t", index=False)
    pd.DataFrame({"model": "m", "tensor": list(TENSORS.values()), "position": list(TENSORS)}
                 ).to_csv(tmp_path / "positions.tsv", sep="\t", index=False)  # fmt: skip
    return tmp_path / "coding.tsv", tmp_path / "positions.tsv"


@pytest.mark.slow
def test_l5_is_the_papers_three_codes_and_l5b_every_other_coder(captured, tmp_path) -> None:
    """L5: LZ78 and the Huffman codes of the GenNorm and normal fits, each in its own colour,
    the family codes in their law's colour; L5b: every other drawn coder beside the GenNorm
    code, codes solid and bounds dashed in their code's colour, each named in the legend as
    a reader names it; the coders without ``figure`` left out. Lines add the runs' bits (as
    paper L sums its runs): no band.

    Planted bugs that fail it: the 13 coders in one figure, a bound's legend entry solid like
    its code, a Huffman code coloured other than its law, an identifier as a legend label."""
    coders = [*palette.CODER_COLORS, "huffman_dweibull"]  # the last one is not drawn by default
    coding, positions = coding_files(tmp_path, coders)
    figure_l5([coding], positions, "x.png", "y.png", model="m")
    (l5, _), (l5b, _) = captured
    colours = one_legend_under_the_panels(l5)
    assert list(colours) == [names.coder(c) for c in PAPER_CODERS]
    for family in ("gennorm", "norm"):
        assert colours[names.coder(f"huffman_{family}")] == mcolors.to_rgb(
            palette.FAMILY_COLORS[family]
        )
    assert len(set(colours.values())) == 3
    assert [ax.get_title().split("\n")[0] for ax in l5.axes] == [
        "all tensors",
        *(f"{names.POSITIONS[p]}: {t}" for p, t in TENSORS.items()),
    ]
    others = [c for c in palette.CODER_COLORS if c not in PAPER_CODERS]
    colours_b = one_legend_under_the_panels(l5b)
    assert list(colours_b) == [names.coder(c) for c in ["huffman_gennorm", *others]]
    styles = {t.get_text(): h.get_linestyle()
              for t, h in zip(l5b.legends[0].get_texts(), l5b.legends[0].legend_handles,
                              strict=True)}  # fmt: skip
    for coder in ["huffman_gennorm", *others]:
        assert styles[names.coder(coder)] == ("--" if palette.is_bound(coder) else "-"), coder
    codes = {c: colours_b[names.coder(c)] for c in others if not palette.is_bound(c)}
    assert len(set(codes.values())) == len(codes)  # every code its own colour
    for bound, code in palette.BOUND_OF.items():  # a bound in its code's colour, dashed
        if bound in others and code in others:
            assert colours_b[names.coder(bound)] == colours_b[names.coder(code)]
    for fig in (l5, l5b):
        assert not any(ax.collections for ax in fig.axes)  # no band
        line = fig.axes[0].lines[0]  # all tensors, LZ78 / GenNorm: (700 + e + run) / 800
        assert list(line.get_ydata()) == pytest.approx([(1400 + 2 * e + 1) / 1600 for e in (1, 2)])


@pytest.mark.slow
def test_l5_and_l5b_meet_the_standard(tmp_path) -> None:
    coding, positions = coding_files(tmp_path, list(palette.CODER_COLORS))
    figure_l5([coding], positions, tmp_path / "L5_m.png", tmp_path / "L5b_m.png", model="m",
              source="CIFAR-10, 5,000 training images")  # fmt: skip
    meets_the_standard(tmp_path / "L5_m.png", panels=4)
    meets_the_standard(tmp_path / "L5b_m.png", panels=4)


def test_coder_colours_come_from_one_palette_and_never_drop_a_coder() -> None:
    """Every coder gets a colour, a user's unknown one too; a user's colour is kept; codes
    distinct, a family's code in the family's colour (planted bug: the old lookup in a fixed
    table, which left an unknown coder out of L5)."""
    names_ = ["lz78", "mine", "huffman_gennorm", "entropy", "huffman_empirical", "theirs"]
    got = palette.coder_colors(names_, {"theirs": "#123456"})
    assert list(got) == names_ and got["theirs"] == "#123456"
    assert got["huffman_gennorm"] == palette.FAMILY_COLORS["gennorm"]
    assert got["entropy"] == got["huffman_empirical"]
    codes = [got[n] for n in names_ if n != "entropy"]
    assert len(set(codes)) == len(codes)
