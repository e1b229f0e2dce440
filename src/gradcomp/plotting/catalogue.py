"""What each figure is for: the question it answers, its counterpart in the papers and what a
reader should look at (:data:`FIGURES`), and what is made from that beside each figure's
measured row (:mod:`gradcomp.plotting.standard`): each figure's title
(:func:`question_title`), the run's manifest
(``results/figures/manifest.tsv``, :func:`write_manifest`) and the docs' gallery
(:func:`gallery_markdown`). Each report caption (``workflow/report/<id>.rst``) opens with
:func:`caption_head` (tests/plotting/test_figure_standard.py holds them equal).

A figure's id is its PNG name before ``_{model}`` (``L1_resnet20.png`` -> ``L1``). A new
figure adds one entry to :data:`FIGURES` and its caption; a figure without an entry stops
the manifest.

>>> figure_id("results/figures/Y7a_cnn.png"), FIGURES["L5"].counterpart
('Y7a', 'paper L headline figure: coded size against epoch')
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gradcomp.artifacts import write_tsv
from gradcomp.plotting.standard import bad_texts, read_png_row, violations

__all__ = [
    "FIGURES",
    "MANIFEST_COLUMNS",
    "Figure",
    "caption_head",
    "entry",
    "figure_id",
    "gallery_block",
    "headline_block",
    "gallery_markdown",
    "manifest_rows",
    "question_title",
    "write_manifest",
]

#: A counterpart of a figure that neither paper has.
BEYOND = "beyond the papers"


@dataclass(frozen=True)
class Figure:
    """One figure: ``question`` (one sentence), ``counterpart`` ("paper L figure: ...",
    "paper Y code output", "beyond the papers") and ``look_at`` (what a reader should look
    at, completing "Look at ...")."""

    question: str
    counterpart: str
    look_at: str


#: Figure id -> what it is for. Paper L's figure numbers were not at hand (docs/papers.md):
#: a counterpart names the paper's figure by what it shows.
FIGURES: dict[str, Figure] = {
    "L1": Figure(
        question="Which law (normal, Laplace or GenNorm) fits the gradient entries, body and "
        "flanks?",
        counterpart="paper L figure: histograms with fitted densities",
        look_at="the bottom row's flanks: a law whose curve follows the grey histogram further "
        "out models the large entries better; GenNorm's shape between Laplace's tent and the "
        "normal parabola is the paper's first claim.",
    ),
    "L2": Figure(
        question="Which fitted law predicts the tail P(|g| > x) of the gradient, and does the "
        "better tail give the shorter Huffman code?",
        counterpart="paper L figure: tail probabilities",
        look_at="where each dashed law leaves the black data curve (a law that stays on it "
        "further right predicts the rare large entries) and whether the box names that law's "
        "Huffman code the shortest.",
    ),
    "L3": Figure(
        question="How close is each fitted law to the gradient, in trimmed 2-Wasserstein "
        "distance, over training?",
        counterpart="paper L figure: trimmed W2 per epoch",
        look_at="which law's lines are lowest in each panel (a closer fit) and whether the "
        "order holds over the epochs and in both rows.",
    ),
    "L4": Figure(
        question="What GenNorm shape and scale do the gradients have, and do they drift over "
        "training?",
        counterpart=BEYOND,
        look_at="where beta sits between the dotted Laplace (1) and normal (2) guides and "
        "whether it drifts with training.",
    ),
    "L5": Figure(
        question="Does the Huffman code designed from the GenNorm fit code the FP8-quantized "
        "gradient shorter than the one designed from the normal fit and than LZ78?",
        counterpart="paper L headline figure: coded size against epoch",
        look_at="whether the red Huffman (GenNorm fit) line is below the blue Huffman (normal "
        "fit) line and the teal LZ78 line in the all-tensors panel: the paper's second claim.",
    ),
    "L5b": Figure(
        question="How far below paper L's GenNorm Huffman code do the other coders, those that "
        "model the entries' dependence included, code the FP8-quantized gradient?",
        counterpart=BEYOND,
        look_at="how far the coders that model the entries' dependence (per-channel GenNorm "
        "ANS, the context coders, context mixing) go below the red Huffman (GenNorm fit) line, "
        "and how near each code (solid) comes to its dashed bound.",
    ),
    "Y1": Figure(
        question="Does compressing the uplink slow the global model's learning, round by round?",
        counterpart="paper Y code output",
        look_at="the lower panel: how far each compressor's lines sit below the zero line (its "
        "accuracy minus top-K float32's in the run of the same seed) and whether the gap grows "
        "over the rounds.",
    ),
    "Y2": Figure(
        question="What test accuracy does each compressor reach for the uplink bits it has sent?",
        counterpart=BEYOND,
        look_at="the horizontal gap between a compressor's lines and the top-K float32 line at "
        "the same accuracy: the bits it saves.",
    ),
    "Y3": Figure(
        question="How many accuracy points does a megabit of coded uplink buy under each "
        "compressor, round by round?",
        counterpart="paper Y figure of merit: the per-bit accuracy (no figure of it available)",
        look_at="how far each compressor's lines sit above the top-K float32 line (how many "
        "more accuracy points a megabit buys than sending the kept values as float32) and how "
        "the lines fall as the rounds add bits.",
    ),
    "Y4": Figure(
        question="How do top-K and quantization reshape the distribution of a user's model update?",
        counterpart="paper Y code output",
        look_at="how the red spikes (the quantizer's levels) cover the grey histogram's body "
        "and flanks, and the hole top-K leaves around zero.",
    ),
    "Y5": Figure(
        question="How far above the rate-distortion bound is each quantizer's M-weighted "
        "distortion?",
        counterpart=BEYOND,
        look_at="how far each quantizer's line sits above the black 0 dB line (the bound) at "
        "the same bits: what a better design could still gain.",
    ),
    "Y6": Figure(
        question="On the same user updates, how much test loss does each configuration add to "
        "one round, and which differences do the verdicts decide?",
        counterpart=BEYOND,
        look_at="the rows near the zero line (a round as good as the uncompressed aggregate) "
        "and the verdict marks at the right: a triangle down decided better than that "
        "reference at the same bits, up worse, a diamond equivalent, a ring undecided.",
    ),
    "Y7a": Figure(
        question="On the baseline's kept set, which quantizer adds the least test loss for the "
        "bits it spends?",
        counterpart=BEYOND,
        look_at="where each quantizer's line runs against the grey dashed baseline at the same "
        "bits: below it, the same bits buy less loss; Y6's verdict marks say which gaps are "
        "more than noise.",
    ),
    "Y7b": Figure(
        question="Do the field's dense compressors add less test loss than the baseline's top-K "
        "quantizer at the same uplink bits?",
        counterpart=BEYOND,
        look_at="the vertical distance from a compressor's points to the dotted operational "
        "curve at its bits: above it, the baseline's top-K quantizer buys the same loss for "
        "fewer bits.",
    ),
    "Y7c": Figure(
        question="Does keeping fewer entries at more bits each add less test loss than the "
        "baseline's kept set at the same uplink bits?",
        counterpart=BEYOND,
        look_at="whether a smaller kept set's line, further left, runs below the line of the "
        "baseline's kept set carried to the same bits.",
    ),
    "Y8": Figure(
        question="How much test loss and accuracy does a coded bit buy as the quantizer's "
        "distortion weight M grows, at one and at two bits per kept value?",
        counterpart="paper Y figure: per-bit accuracy against M (no figure of it available)",
        look_at="whether a line rises from M = 0 to the right (the weighting buys more per "
        "bit) and how close its points come to the dotted grey line of their rate (what the "
        "same bits would buy if quantizing lost nothing).",
    ),
}

#: The manifest's columns (results/figures/manifest.tsv), one row per figure.
MANIFEST_COLUMNS = [
    "file", "question", "counterpart", "panels", "width_in", "min_text_px_at_700",
    "all_labelled", "axes_share", "symlog", "replicates", "bad_text", "violations",
]  # fmt: skip


def figure_id(path: str | Path) -> str:
    """The figure's id: its file name before ``_{model}`` (``L1_resnet20.png`` -> ``L1``)."""
    return Path(path).stem.partition("_")[0]


def entry(path: str | Path) -> Figure:
    """:data:`FIGURES`' entry of the figure at ``path``; a KeyError naming what to add."""
    fid = figure_id(path)
    if fid not in FIGURES:
        raise KeyError(
            f"{Path(path).name}: figure {fid!r} has no entry in gradcomp.plotting.catalogue.FIGURES"
        )
    return FIGURES[fid]


def question_title(fid: str, model: str, *lines: str, width: int = 92) -> str:
    """A figure's title: ``<fid> <model>:`` and its question (:data:`FIGURES`), wrapped at
    ``width`` characters, then ``lines`` (the data line, what it shows), the empty ones left
    out.

    >>> print(question_title("Y2", "cnn", "", "data: CIFAR-10", width=60))
    Y2 cnn: What test accuracy does each compressor reach for
    the uplink bits it has sent?
    data: CIFAR-10
    """
    head = textwrap.fill(f"{fid} {model}: {FIGURES[fid].question}", width)
    return "\n".join([head, *(line for line in lines if line)])


def caption_head(fid: str) -> str:
    """How the report caption of figure ``fid`` opens: its counterpart and what to look at."""
    f = FIGURES[fid]
    return f"**{fid} ({f.counterpart}).** **Look at** {f.look_at}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def manifest_rows(pngs: Iterable[str | Path], identifiers: Iterable[str] = ()) -> list[dict]:
    """One manifest row per PNG: its catalogue entry and the row measured when it was saved
    (:func:`gradcomp.plotting.standard.read_png_row`); ``bad_text`` checked again with
    ``identifiers`` (:func:`gradcomp.plotting.standard.internal_names` of the run's
    compressors), ``violations`` of the standard joined by "; "."""
    ids = list(identifiers)
    rows = []
    for png in sorted(map(Path, pngs), key=lambda p: p.name):
        fig, measured = entry(png), read_png_row(png)
        measured["bad_text"] = bad_texts(measured.get("texts", []), ids) or measured["bad_text"]
        rows.append({
            **{k: measured[k] for k in MANIFEST_COLUMNS if k in measured},
            "file": png.name,
            "question": fig.question,
            "counterpart": fig.counterpart,
            "bad_text": "; ".join(_one_line(t) for t in measured["bad_text"]),
            "violations": "; ".join(_one_line(v) for v in violations(measured)),
        })  # fmt: skip
    return rows


def write_manifest(
    pngs: Iterable[str | Path], out: str | Path, identifiers: Iterable[str] = ()
) -> None:
    """Write :func:`manifest_rows` as a TSV at ``out`` (columns :data:`MANIFEST_COLUMNS`)."""
    write_tsv(out, manifest_rows(pngs, identifiers), MANIFEST_COLUMNS)


def gallery_markdown(
    manifest: str | Path,
    shown: str | Path | None = None,
    folder: str = "figures",
    only: Iterable[str] | None = None,
) -> str:
    """The docs' gallery from a manifest (``results/figures/manifest.tsv`` or its copy in
    ``docs/figures``): one entry per figure whose PNG lies in ``shown`` (default: beside the
    manifest), in file order, with its image (``folder/<file>``, the link from the page), the
    question it answers, its counterpart and what to look at (wrapped at 120 characters);
    ``only``: these PNG names alone, in this order."""
    table = pd.read_csv(manifest, sep="\t", keep_default_na=False)
    here = Path(manifest).parent if shown is None else Path(shown)
    files = sorted(table["file"]) if only is None else [f for f in only if f in set(table["file"])]
    parts = []
    for file in (f for f in files if (here / f).exists()):
        f = entry(file)
        text = f"**{Path(file).stem}** ({f.counterpart}). {f.question} **Look at** {f.look_at}"
        lines: list[str] = []
        for line in textwrap.wrap(text, 120, break_long_words=False, break_on_hyphens=False):
            if lines and re.match(r"([-+*>#]|\d+[.)])\s", line):  # would open a list or heading
                lines[-1] += " " + line
            else:
                lines.append(line)
        parts.append("\n".join([f"![{Path(file).stem}]({folder}/{file})", *lines]))
    return "\n\n".join(parts)


#: The folder the docs' gallery links to (docs/results.md's ``figures/``), from the folder
#: the docs' command runs in (the repository's root, as its paths are).
DOCS_FIGURES = Path("docs/figures")


def gallery_block(tables: str | Path) -> str:
    """The docs' generated block ``gallery`` (:mod:`gradcomp.docblocks`): the gallery of the
    manifest beside the tables folder (``results/tables`` -> ``results/figures/manifest.tsv``)
    for the figures the docs hold (:data:`DOCS_FIGURES`; where that folder is missing, those
    beside the manifest)."""
    manifest = Path(tables).parent / "figures" / "manifest.tsv"
    if not manifest.exists():
        return f"*Left out: no figures/{manifest.name} beside the tables folder.*"
    return gallery_markdown(manifest, DOCS_FIGURES if DOCS_FIGURES.is_dir() else None)


#: The figures that carry the answers, as the README shows them (its block ``headline``).
HEADLINE = ("L5_resnet20.png", "L2_cnn.png", "Y7a_cnn.png")


def headline_block(tables: str | Path) -> str:
    """The README's generated block ``headline``: :data:`HEADLINE` from the docs' gallery
    (:func:`gallery_block`), linked from the repository's root."""
    manifest = Path(tables).parent / "figures" / "manifest.tsv"
    if not manifest.exists():
        return f"*Left out: no figures/{manifest.name} beside the tables folder.*"
    shown = DOCS_FIGURES if DOCS_FIGURES.is_dir() else None
    return gallery_markdown(manifest, shown, folder=str(DOCS_FIGURES), only=HEADLINE)
