"""Plotting shared by both papers: the theme and atomic PNG + PDF output. Each paper's figures
live in a module per figure group (:mod:`gradcomp.plotting`).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from gradcomp.artifacts import atomic_path  # noqa: E402
from gradcomp.plotting import standard as figure_standard  # noqa: E402

#: Resolution of every PNG (pixels per inch).
DPI = 130


def save_figure(fig: plt.Figure, png_path: str | Path, *, replicates: int | None = None) -> None:
    """Write ``fig`` as ``png_path`` and the same name with ``.pdf``; close it.

    The PNG carries the figure's measured row of the figure standard
    (:func:`gradcomp.plotting.standard.measure`, read back by
    :func:`gradcomp.plotting.standard.read_png_row`). ``replicates``: the fewest independent
    replicates (seeds, runs, warm starts) behind any band or interval the figure draws;
    None when it draws none. Both files are written under temporary names and renamed into
    place, so an interrupted run leaves no half-written figure.
    """
    from PIL import Image, PngImagePlugin

    png = Path(png_path)
    fig.tight_layout()
    with atomic_path(png) as tmp:
        fig.savefig(tmp, dpi=DPI, bbox_inches="tight")
        with Image.open(tmp) as saved:
            image, chunks = saved.copy(), dict(getattr(saved, "text", {}))
        row = figure_standard.measure(fig, *image.size, dpi=DPI, replicates=replicates)
        info = PngImagePlugin.PngInfo()
        for key, value in {**chunks, figure_standard.PNG_KEY: json.dumps(row)}.items():
            info.add_text(key, value)
        image.save(tmp, format="png", pnginfo=info, dpi=(DPI, DPI))
    with atomic_path(png.with_suffix(".pdf")) as tmp:
        fig.savefig(tmp, dpi=DPI, bbox_inches="tight")
    plt.close(fig)


def set_theme() -> None:
    """The seaborn look shared by every figure."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.0)
