"""The figure standard (gradcomp.plotting.standard): what measure() reads from a figure, checked
on figures built here with answers worked out by hand; the row stored in the PNG and read
back into the manifest (gradcomp.plotting.catalogue); the report captions opening with the
catalogue's words; and the default run's manifest (docs/figures/manifest.tsv) meeting the
standard."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from PIL import Image  # noqa: E402

from conftest import REPO  # noqa: E402
from gradcomp.plotting import common as plots  # noqa: E402
from gradcomp.plotting.catalogue import (  # noqa: E402
    FIGURES,
    MANIFEST_COLUMNS,
    caption_head,
    figure_id,
    gallery_markdown,
    manifest_rows,
    write_manifest,
)
from gradcomp.plotting.standard import (  # noqa: E402
    PNG_KEY,
    STANDARD,
    bad_texts,
    internal_names,
    measure,
    read_png_row,
    violations,
)

REPORT = REPO / "workflow" / "report"
DOCS_MANIFEST = REPO / "docs" / "figures" / "manifest.tsv"


def two_panels() -> plt.Figure:
    """14 x 4 in, two panels at fixed places, every text 12 pt but the tick labels (9 pt); a
    colorbar, an Axes holding only a legend, a hidden Axes and hidden texts that count for
    nothing."""
    fig = plt.figure(figsize=(14, 4))
    for left in (0.05, 0.5):
        ax = fig.add_axes((left, 0.1, 0.4, 0.8))
        ax.plot([0, 1], [0, 1], label="data")
        ax.set_title("a title", fontsize=12)
        ax.set_xlabel("x", fontsize=12)
        ax.tick_params(labelsize=9)
        ax.text(0.5, 0.5, "hidden", fontsize=2).set_visible(False)
        ax.text(0.5, 0.5, "  ", fontsize=1)
    fig.colorbar(ScalarMappable(), cax=fig.add_axes((0.92, 0.1, 0.02, 0.8))).ax.tick_params(
        labelsize=12
    )
    key = fig.add_axes((0.95, 0.1, 0.04, 0.8))
    key.axis("off")
    key.legend(*fig.axes[0].get_legend_handles_labels(), fontsize=12)
    hidden = fig.add_axes((0.0, 0.0, 0.1, 0.1))
    hidden.plot([0, 1], [1, 0])
    hidden.tick_params(labelsize=3)
    hidden.set_visible(False)
    return fig


def test_panels_and_smallest_text_at_700_px() -> None:
    """9 pt at 100 dpi is 12.5 px; the 1400 px PNG shown 700 px wide halves it: 6.25 px.
    Planted bugs that fail it: the 700 px scaling left out (12.5), tick labels not measured
    (12 pt: 8.33), hidden texts or Axes measured (2 or 3 pt), the colorbar or the legend's
    Axes counted as panels."""
    fig = two_panels()
    row = measure(fig, 1400, 400, dpi=100)
    assert row["panels"] == 2
    assert row["width_in"] == 14
    assert row["min_text_px_at_700"] == pytest.approx(6.25, abs=0.01)
    assert row["smallest_text"] not in ("hidden", "a title", "x")
    plt.close(fig)


def test_axes_share_of_the_saved_area() -> None:
    """One Axes of 5 x 2.5 in on a 10 x 5 in figure: a quarter of the whole figure, all of a
    PNG cropped to 5 x 2.5 in (planted bug: the figure's own size instead of the saved one)."""
    fig = plt.figure(figsize=(10, 5))
    fig.add_axes((0.1, 0.1, 0.5, 0.5)).plot([0, 1], [0, 1], label="a")
    assert measure(fig, 1000, 500, dpi=100)["axes_share"] == pytest.approx(0.25)
    assert measure(fig, 500, 250, dpi=100)["axes_share"] == pytest.approx(1.0)
    fig.axes[0].twinx().plot([0, 1], [1, 0], label="b")  # the same place: one panel
    row = measure(fig, 1000, 500, dpi=100)
    assert row["panels"] == 1 and row["axes_share"] == pytest.approx(0.25)
    plt.close(fig)


def labelled(draw) -> bool:
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4], color="C0", label="series")
    ax.legend()
    draw(ax)
    result = measure(fig, 640, 480, dpi=100)["all_labelled"]
    plt.close(fig)
    return result


@pytest.mark.parametrize(
    ("draw", "expected"),
    [
        (lambda ax: None, True),
        (lambda ax: ax.fill_between([0, 1, 2], [0, 0, 3], [1, 2, 5], color="C0", alpha=0.2), True),
        (lambda ax: ax.plot([0, 2], [1, 1], color="C3"), False),
        (lambda ax: ax.plot([0, 2], [1, 1], color="C3", gid="guide"), True),
        (lambda ax: ax.plot([1], [1], "o", color="C3"), False),
        (lambda ax: ax.plot([1], [1], color="C3"), True),  # one point, no marker: not drawn
        (lambda ax: ax.scatter([1, 2], [1, 2], color="C4"), False),
        (lambda ax: ax.bar([1, 2], [1, 2], color="C5"), False),
        (lambda ax: ax.bar([1, 2], [1, 2], color="C5", label="bars") and ax.legend(), True),
    ],
    ids=["line", "band", "line", "guide", "marker", "point", "scatter", "bars", "bars-legend"],
)
def test_every_series_in_a_legend(draw, expected) -> None:
    """A band in its line's colour (alpha aside) is labelled by the line; an unlabelled line,
    marker, scatter or bar is not, a ``gid="guide"`` line needs no entry."""
    assert labelled(draw) is expected


def test_bands_and_error_bars_are_counted() -> None:
    """A band or an error bar stands on replicates: drawn without ``replicates`` it is a
    violation (planted bug: bands not counted); a guide band is not one."""
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4], color="C0", label="a")
    ax.fill_between([0, 1, 2], [0, 0, 3], [1, 2, 5], color="C0", alpha=0.2)
    ax.fill_between([0, 2], [0, 0], [1, 1], color="0.9", gid="guide")
    ax.errorbar([1], [1], yerr=[0.5], color="C0")
    ax.errorbar([2], [2], color="C0")  # no bar
    ax.legend()
    row = measure(fig, 640, 480, dpi=100)
    assert row["intervals"] == 2
    assert "2 bands or intervals drawn, their replicates not given" in violations(row)
    assert violations({**row, "replicates": 5}) == []
    plt.close(fig)


def test_symlog_axis_found() -> None:
    fig, axes = plt.subplots(1, 2)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    assert measure(fig, 640, 480, dpi=100)["symlog"] is False
    axes[1].set_yscale("symlog", linthresh=0.01)
    assert measure(fig, 640, 480, dpi=100)["symlog"] is True
    plt.close(fig)


def config_identifiers() -> list[str]:
    entries = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["lossy"]["compressors"]
    return internal_names({e["name"]: e for e in entries})


def test_internal_names_come_from_the_config() -> None:
    """The config's names that are no reader's word (planted bug: every name, or none)."""
    ids = config_identifiers()
    assert {"uniformq3", "uniformk20", "gennormk10", "kmeansk10", "ecsqb15", "signef"} <= set(ids)
    assert not {"uniform", "gennorm", "kmeans", "qsgd", "terngrad", "powersgd", "dense"} & set(ids)


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("uniformk20", True),
        ("signef, R2", True),
        ("uniform, 2 bits", False),
        ("QSGD", False),
        ("/work/main/results", True),
        ("results/figures/L1_cnn.png", True),
        ("R4_M2", True),
        ("$W_2$ distance", False),
        ("bits/entry, 1/2", False),
    ],
)
def test_bad_text(text: str, bad: bool) -> None:
    assert bool(bad_texts([text], config_identifiers())) is bad


def test_measure_reads_the_text_of_the_figure() -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="uniformk20")
    ax.legend()
    ax.set_xlabel("/work/x")
    row = measure(fig, 640, 480, dpi=100, identifiers=config_identifiers())
    assert row["bad_text"] == ["/work/x", "uniformk20"]
    plt.close(fig)


def test_violations_name_each_breach() -> None:
    good = {"panels": 6, "min_text_px_at_700": 8.0, "all_labelled": True, "axes_share": 0.55,
            "symlog": False, "replicates": None, "bad_text": []}  # fmt: skip
    assert violations(good) == []
    assert violations({**good, "replicates": 5}) == []
    for key, value in [("panels", 7), ("min_text_px_at_700", 7.9), ("all_labelled", False),
                       ("axes_share", 0.54), ("symlog", True), ("replicates", 4),
                       ("bad_text", ["x_y"])]:  # fmt: skip
        assert len(violations({**good, key: value})) == 1, key


def test_saved_png_carries_its_row_and_the_manifest_reads_it(tmp_path: Path) -> None:
    """save_figure measures the PNG as saved (bbox_inches="tight" crops it) and stores the
    row in it; the manifest reads it back with the catalogue's words (planted bug: the
    figure's own width instead of the PNG's)."""
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot([0, 1, 2], [0, 1, 4], label="a")
    ax.legend()
    ax.set_title("uniformk20")
    png = tmp_path / "L1_tiny.png"
    plots.save_figure(fig, png, replicates=3)
    assert png.with_suffix(".pdf").stat().st_size > 1000
    with Image.open(png) as image:
        width_px = image.size[0]
        assert PNG_KEY in image.text
    row = read_png_row(png)
    assert row["width_in"] == pytest.approx(width_px / plots.DPI, abs=1e-3)
    assert row["width_in"] < 8 and row["replicates"] == 3 and row["panels"] == 1
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
    out = tmp_path / "manifest.tsv"
    write_manifest([png], out, config_identifiers())
    table = pd.read_csv(out, sep="\t", keep_default_na=False)
    assert list(table.columns) == MANIFEST_COLUMNS and len(table) == 1
    got = table.iloc[0]
    assert got["file"] == "L1_tiny.png" and got["question"] == FIGURES["L1"].question
    assert got["counterpart"] == FIGURES["L1"].counterpart
    assert got["bad_text"] == "uniformk20"
    assert "3 replicates" in got["violations"] and "uniformk20" in got["violations"]


def test_a_figure_without_a_catalogue_entry_stops_the_manifest(tmp_path: Path) -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    plots.save_figure(fig, tmp_path / "Z9_tiny.png")
    with pytest.raises(KeyError, match="Z9"):
        manifest_rows([tmp_path / "Z9_tiny.png"])


# --- the catalogue and the report's captions ---------------------------------------------


def test_figure_id() -> None:
    assert figure_id("results/figures/Y7a_cnn.png") == "Y7a"
    assert figure_id("L1b_resnet20.png") == "L1b"


@pytest.mark.parametrize("fid", sorted(FIGURES))
def test_each_entry_is_one_question_with_a_counterpart(fid: str) -> None:
    f = FIGURES[fid]
    assert "_" not in fid and f.question.endswith("?") and f.question.count("?") == 1
    assert re.fullmatch(r"paper [LY] .+|paper Y code output|beyond the papers", f.counterpart)
    assert f.look_at[0].islower() and f.look_at.endswith(".")


FIGURE_CAPTIONS = sorted(REPORT.glob("[LY][0-9]*.rst"))


@pytest.mark.parametrize("path", FIGURE_CAPTIONS, ids=lambda p: p.name)
def test_report_caption_opens_with_the_catalogue_entry(path: Path) -> None:
    """The caption opens with "**<id> (<counterpart>).** **Look at** <look_at>" from the
    catalogue (planted bugs: a caption edited without the catalogue, a figure caption without
    an entry)."""
    fid = path.stem
    assert fid in FIGURES, f"{path.name} has no entry in gradcomp.plotting.catalogue.FIGURES"
    text = " ".join(path.read_text().split())
    assert text.startswith(caption_head(fid)), (text[:200], caption_head(fid))


# --- the default run's manifest ------------------------------------------------------------


def docs_manifest() -> pd.DataFrame:
    return pd.read_csv(DOCS_MANIFEST, sep="\t", keep_default_na=False)


def test_default_run_manifest_has_every_column_and_known_figures() -> None:
    table = docs_manifest()
    assert list(table.columns) == MANIFEST_COLUMNS and len(table) >= 10
    assert set(table["file"].map(figure_id)) <= set(FIGURES)
    assert set(p.name for p in DOCS_MANIFEST.parent.glob("*.png")) <= set(table["file"])


def standard_breaches(row: pd.Series) -> list[str]:
    """The standard read from the manifest's numbers (not from its violations column)."""
    s, out = STANDARD, []
    if int(row["panels"]) > s["max_panels"]:
        out.append(f"{row['panels']} panels")
    if float(row["min_text_px_at_700"]) < s["min_text_px_at_700"]:
        out.append(f"text {row['min_text_px_at_700']} px")
    if str(row["all_labelled"]) != "True":
        out.append("a series without a legend entry")
    if float(row["axes_share"]) < s["min_axes_share"]:
        out.append(f"axes share {row['axes_share']}")
    if str(row["symlog"]) != "False":
        out.append("symlog")
    if str(row["replicates"]) not in ("", "None") and int(row["replicates"]) < s["min_replicates"]:
        out.append(f"{row['replicates']} replicates")
    if row["bad_text"]:
        out.append(f"text {row['bad_text']!r}")
    return out


def test_default_run_figures_meet_the_standard() -> None:
    """Every figure of the default run: at most 6 panels, text at least 8 px at 700 px wide,
    every series in a legend, axes at least 55% of the area, no symlog axis, no band from
    fewer than 5 replicates, no identifier or machine path in its text."""
    breaches = {
        row["file"]: standard_breaches(row) + ([row["violations"]] if row["violations"] else [])
        for _, row in docs_manifest().iterrows()
    }
    assert {f: b for f, b in breaches.items() if b} == {}


def test_gallery_shows_each_figure_of_the_docs(tmp_path: Path) -> None:
    """One entry per PNG beside the manifest, with its question, counterpart and what to
    look at; rows whose PNG is not in the docs are left out."""
    table = docs_manifest()
    text = gallery_markdown(DOCS_MANIFEST)
    shown = re.findall(r"\]\(figures/([^)]+)\)", text)
    assert shown == sorted(p.name for p in DOCS_MANIFEST.parent.glob("*.png"))
    flat = " ".join(text.split())
    for file in shown:
        f = FIGURES[figure_id(file)]
        assert f.question in flat and f.look_at in flat and f.counterpart in flat
    assert len(shown) <= len(table)
    assert max(len(line) for line in text.splitlines()) <= 120


def test_results_page_holds_the_gallery() -> None:
    """docs/results.md's generated block ``gallery`` is the docs' manifest's gallery (planted
    bug: a figure or a catalogue entry changed without the page rewritten)."""
    page = (REPO / "docs" / "results.md").read_text()
    block = re.search(
        r"<!-- generated: gallery .*?-->\n(.*?)\n<!-- end generated: gallery", page, re.S
    )
    assert block is not None and block.group(1) == gallery_markdown(DOCS_MANIFEST)
