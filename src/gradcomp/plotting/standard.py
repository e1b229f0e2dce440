"""The figure standard, measured: what a saved figure is (panels, width, smallest text as a
reader sees it, whether every series is in a legend, how much of it is data, symlog axes,
replicates behind its bands, identifiers or machine paths in its text) read from the
matplotlib figure itself, and the limits (:data:`STANDARD`) it is held to.

:func:`~gradcomp.plotting.common.save_figure` calls :func:`measure` at save time and stores the row
in the PNG (:func:`read_png_row`); the workflow's manifest (:mod:`gradcomp.plotting.catalogue`)
reads every figure's row back. A series (a line of two or more points or with markers, a
scatter, a filled band, a bar) counts as labelled when its colour (RGB, alpha ignored) is
among the colours of the figure's legend handles; a reference line that needs no legend
(a zero line, a bound named in the caption) says so with ``gid="guide"``.

>>> row = {"panels": 8, "min_text_px_at_700": 7.5, "all_labelled": True, "axes_share": 0.6,
...        "symlog": False, "replicates": 3, "bad_text": []}
>>> for v in violations(row): print(v)
8 panels > 6
smallest text 7.5 px < 8 px at 700 px wide
a band or interval from 3 replicates < 5
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from matplotlib import collections as mcollections
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.axis import Axis, Tick
from matplotlib.collections import Collection, PathCollection, PolyCollection
from matplotlib.colors import to_rgba_array
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from gradcomp import names

__all__ = [
    "GUIDE",
    "PNG_KEY",
    "READ_WIDTH_PX",
    "STANDARD",
    "bad_texts",
    "internal_names",
    "measure",
    "read_png_row",
    "violations",
]

#: The ``gid`` of an artist that needs no legend entry (a zero line, a reference named in
#: the caption, an image a colorbar explains).
GUIDE = "guide"
#: The PNG text chunk holding the measured row (JSON).
PNG_KEY = "gradcomp-figure"
#: The width a reader's page shows a figure at (px): text sizes are measured there.
READ_WIDTH_PX = 700

#: The limits every figure of a run is held to (tests/plotting/test_figure_standard.py).
STANDARD: Mapping[str, Any] = {
    "max_panels": 6,
    "min_text_px_at_700": 8.0,
    "min_axes_share": 0.55,
    "min_replicates": 5,
}

#: A machine path: an absolute path of two or more parts, a home folder or the run's folder.
_PATH = re.compile(r"(?<![\w)\]}|])/[\w.-]+/|~/|\bresults/")
#: Mathtext (``$W_2$``) is notation, not an identifier.
_MATH = re.compile(r"(?<!\\)\$.*?(?<!\\)\$")
_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def internal_names(specs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The compressor names (``lossy.compressors``' ``name``: name -> its config entry or
    checked spec) that a reader does not use: those that are not, ignoring case and hyphens,
    a word of the reader's name of their own variant (:func:`gradcomp.names.variant`) or of
    any kind or law (:func:`gradcomp.names.kind_titles`, :data:`gradcomp.names.LAWS`).

    >>> internal_names({"uniform": {"quantizer": "uniform"},
    ...                 "uniformk20": {"quantizer": "uniform", "topk": 0.2},
    ...                 "kmeans": {"quantizer": "kmeans"}, "signef": {"quantizer": "scaled_sign"}})
    ['signef', 'uniformk20']
    """

    def words(text: str) -> set[str]:
        return {w.casefold() for w in re.findall(r"[A-Za-z0-9]+", text.replace("-", ""))}

    common = words(" ".join([*names.kind_titles(), *names.LAWS.values()]))
    return sorted(
        name for name, spec in specs.items()
        if name.replace("-", "").casefold() not in common | words(names.variant(spec))
    )  # fmt: skip


def bad_texts(texts: Iterable[str], identifiers: Iterable[str] = ()) -> list[str]:
    """The texts that hold a machine path (``/work/...``, ``results/``) or an internal
    identifier: a token with an underscore outside mathtext, or one of ``identifiers``
    (:func:`internal_names`, matched as whole tokens, case as written)."""
    ids = set(identifiers)
    out = []
    for text in texts:
        plain = _MATH.sub(" ", text)
        tokens = _TOKEN.findall(plain)
        if _PATH.search(text) or any("_" in t or t in ids for t in tokens):
            out.append(text)
    return sorted(set(out))


def _rgb(colors: Any) -> set[tuple[float, float, float]]:
    """Distinct RGB triples (alpha ignored, rounded) of the visible colours in ``colors``."""
    if colors is None or (isinstance(colors, str) and colors.lower() == "none"):
        return set()
    rgba = to_rgba_array(colors)
    return {tuple(round(float(c), 3) for c in row[:3]) for row in rgba if row[3] > 0}  # type: ignore[misc]


def _line_colours(line: Line2D) -> set[tuple[float, float, float]]:
    if line.get_linestyle() not in ("None", "none", "", " "):
        return _rgb(line.get_color())
    return _rgb(line.get_markerfacecolor()) or _rgb(line.get_markeredgecolor())


def _artist_colours(artist: Artist) -> set[tuple[float, float, float]]:
    """The colours a reader tells ``artist`` by (a line's colour, a fill's face, else its
    edge)."""
    if isinstance(artist, Line2D):
        return _line_colours(artist) | _rgb(artist.get_markerfacecolor())
    if isinstance(artist, Collection):
        return _rgb(artist.get_facecolor()) or _rgb(artist.get_edgecolor())
    if isinstance(artist, Patch):
        return _rgb(artist.get_facecolor()) if artist.get_fill() else _rgb(artist.get_edgecolor())
    return set()


def _is_panel(ax: Axes) -> bool:
    """A visible Axes that draws data (not a colorbar, not an Axes holding only a legend)."""
    if not ax.get_visible() or ax.get_label() == "<colorbar>" or hasattr(ax, "_colorbar"):
        return False
    return bool(ax.lines or ax.collections or ax.patches or ax.images)


def _series(ax: Axes) -> Iterator[Artist]:
    """The data series of ``ax`` a legend should name (guides left out)."""
    for line in ax.get_lines():
        marked = line.get_marker() not in (None, "None", "none", "", " ")
        if len(line.get_xdata()) >= 2 or marked:  # type: ignore[arg-type]
            yield line
    yield from (c for c in ax.collections if isinstance(c, PathCollection | PolyCollection))
    yield from ax.patches


def _intervals(ax: Axes) -> int:
    """Bands (``fill_between``, seaborn's error bands) and error bars drawn on ``ax`` that
    are not guides: what stands on replicates."""
    bands = getattr(mcollections, "FillBetweenPolyCollection", ())
    n = sum(isinstance(c, bands) and c.get_gid() != GUIDE for c in ax.collections)
    return n + sum(
        isinstance(c, ErrorbarContainer) and (c.has_xerr or c.has_yerr) for c in ax.containers
    )


def _legends(fig: Figure) -> list[Legend]:
    found = list(fig.legends)
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            found.append(legend)
    return [legend for legend in found if legend.get_visible()]


def _legend_colours(fig: Figure) -> set[tuple[float, float, float]]:
    out: set[tuple[float, float, float]] = set()
    for legend in _legends(fig):
        for handle in legend.legend_handles:
            if handle is None:
                continue
            out |= _artist_colours(handle)
            if isinstance(handle, Line2D):
                out |= _rgb(handle.get_markeredgecolor())
            elif isinstance(handle, Collection | Patch):
                out |= _rgb(handle.get_edgecolor())
    return out


def _texts(artist: Artist) -> Iterator[Text]:
    """The visible, non-empty texts drawn under ``artist``: an invisible parent hides its
    children, an Axes with its axis off draws no tick labels, an Axis only the ticks in view."""
    if not artist.get_visible():
        return
    if isinstance(artist, Text):
        if artist.get_text().strip():
            yield artist
    if isinstance(artist, Axis):
        ticks = artist._update_ticks()  # type: ignore[attr-defined]  # the ticks drawn
        children: list[Artist] = [artist.label, artist.offsetText]
        children += [label for tick in ticks for label in (tick.label1, tick.label2)]
    elif isinstance(artist, Axes) and not artist.axison:
        children = [c for c in artist.get_children() if not isinstance(c, Axis)]
    elif isinstance(artist, Tick):
        return
    else:
        children = artist.get_children()
    for child in children:
        yield from _texts(child)


def measure(
    fig: Figure,
    png_width_px: int,
    png_height_px: int,
    *,
    dpi: float,
    replicates: int | None = None,
    identifiers: Iterable[str] = (),
) -> dict[str, Any]:
    """The row of the figure standard for ``fig`` saved as a PNG of ``png_width_px`` x
    ``png_height_px`` at ``dpi`` (``bbox_inches="tight"`` crops it: pass the saved size).

    ``panels``: visible Axes that draw data; ``width_in``: the saved width in inches;
    ``min_text_px_at_700``: the smallest visible text (tick labels, legends, titles, labels)
    in pixels when the PNG is shown :data:`READ_WIDTH_PX` wide, with ``smallest_text`` its
    string; ``all_labelled``: every series' colour is among the legends' handle colours
    (``unlabelled`` lists those that are not); ``axes_share``: the panels' area over the
    saved area; ``symlog``: an axis has a symlog scale; ``replicates``: as given (the
    fewest independent replicates behind any band or interval drawn, None if none);
    ``intervals``: the bands and error bars drawn (a band marked ``gid="guide"`` aside);
    ``texts``: every visible text; ``bad_text``: those :func:`bad_texts` finds.
    """
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if _is_panel(ax)]
    width_in = png_width_px / dpi
    texts = list(_texts(fig))
    scale = dpi / 72 * READ_WIDTH_PX / png_width_px
    sizes = sorted((float(t.get_fontsize()) * scale, t.get_text()) for t in texts)
    known = _legend_colours(fig)
    unlabelled = list(
        dict.fromkeys(
            f"{type(s).__name__} {s.get_label()!r} in {ax.get_title() or f'panel {i + 1}'!r}"
            for i, ax in enumerate(panels)
            for s in _series(ax)
            if s.get_visible() and s.get_gid() != GUIDE and not _artist_colours(s) <= known
        )
    )
    fw, fh = fig.get_size_inches()
    # a twin Axes (twinx, twiny) draws on its partner's place: one panel, one area
    places = {tuple(round(v, 4) for v in ax.get_position().bounds) for ax in panels}
    axes_area = sum(w * h for _, _, w, h in places) * fw * fh
    strings = sorted({t.get_text() for t in texts})
    return {
        "panels": len(places),
        "width_in": round(width_in, 3),
        "min_text_px_at_700": round(sizes[0][0], 2) if sizes else None,
        "smallest_text": sizes[0][1] if sizes else "",
        "all_labelled": not unlabelled,
        "unlabelled": unlabelled,
        "axes_share": round(axes_area / (width_in * png_height_px / dpi), 4),
        "symlog": any("symlog" in (ax.get_xscale(), ax.get_yscale()) for ax in panels),
        "replicates": replicates,
        "intervals": sum(_intervals(ax) for ax in panels),
        "texts": strings,
        "bad_text": bad_texts(strings, identifiers),
    }


def violations(row: Mapping[str, Any]) -> list[str]:
    """What in ``row`` (:func:`measure`'s keys; ``bad_text`` a list of texts) breaks
    :data:`STANDARD`, one phrase each; empty when it meets it."""
    s, out = STANDARD, []
    if row["panels"] > s["max_panels"]:
        out.append(f"{row['panels']} panels > {s['max_panels']}")
    small = row["min_text_px_at_700"]
    if small is not None and small < s["min_text_px_at_700"]:
        where = f" ({row['smallest_text']!r})" if row.get("smallest_text") else ""
        out.append(
            f"smallest text {small:g} px < {s['min_text_px_at_700']:g} px at 700 px wide{where}"
        )
    if not row["all_labelled"]:
        out.append("series not in a legend: " + "; ".join(row.get("unlabelled") or ["?"]))
    if row["axes_share"] < s["min_axes_share"]:
        out.append(
            f"axes {100 * row['axes_share']:.0f}% of the area < {100 * s['min_axes_share']:.0f}%"
        )
    if row["symlog"]:
        out.append("a symlog axis")
    if row.get("intervals") and row["replicates"] is None:
        out.append(f"{row['intervals']} bands or intervals drawn, their replicates not given")
    if row["replicates"] is not None and row["replicates"] < s["min_replicates"]:
        out.append(
            f"a band or interval from {row['replicates']} replicates < {s['min_replicates']}"
        )
    if row["bad_text"]:
        out.append("identifier or path in text: " + "; ".join(map(repr, row["bad_text"])))
    return out


def read_png_row(path: str | Path) -> dict[str, Any]:
    """The row :func:`gradcomp.plotting.common.save_figure` stored in the PNG at ``path``."""
    from PIL import Image

    with Image.open(path) as image:
        text = getattr(image, "text", None) or image.info
        if PNG_KEY not in text:
            raise KeyError(
                f"{path}: no {PNG_KEY} (not saved by gradcomp.plotting.common.save_figure)"
            )
        return json.loads(text[PNG_KEY])
