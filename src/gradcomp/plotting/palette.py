"""The colours and marks of every figure, defined once: Paul Tol's colour-blind-safe
schemes ("vibrant" first, then "muted"), greys for the uncompressed references, and markers
that tell series apart where colours repeat.

It imports no plotting library, so the workflow reads the coders' colours (L5's lines)
when it parses its config without loading matplotlib.

Colours are handed out in a fixed order over a fixed list of names (config order, registry
order), so a name keeps its colour in every figure drawn from the same list; a name the
list does not know gets the next free colour, never none.

>>> assign(["a", "b"], taken={"c": SERIES[0]})
{'c': '#0077BB', 'a': '#EE7733', 'b': '#CC3311'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "BOUND_OF",
    "CODER_COLORS",
    "DISTORTION_STUDY_COLORS",
    "FAMILY_COLORS",
    "GREYS",
    "L5_CODERS",
    "MARKERS",
    "SERIES",
    "assign",
    "coder_colors",
    "is_bound",
]

#: Series colours in the order they are handed out (Tol vibrant, then muted without the
#: shades too close to a vibrant one, then the dark brown of Tol's discrete rainbow; the light
#: sand last: it reads worst on white, and the default's 12 rate curves stop before it).
SERIES = (
    "#0077BB", "#EE7733", "#CC3311", "#009988", "#332288", "#AA4499", "#33BBEE", "#117733",
    "#882255", "#999933", "#EE3377", "#72190E", "#DDCC77",
)  # fmt: skip
#: The uncompressed references (float32, float16, ...), darkest first.
GREYS = ("#000000", "#555555", "#999999")
#: Markers, handed out beside the colours where a figure needs both.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def assign(names: Iterable[str], taken: Mapping[str, str] | None = None) -> dict[str, str]:
    """``taken`` (name -> colour, kept as given) and then each of ``names`` not in it, in
    order, the next colour of :data:`SERIES` no name holds yet (round again from the start
    once every colour is held)."""
    out = dict(taken or {})
    used = set(out.values())
    free = [c for c in SERIES if c not in used] or list(SERIES)
    i = 0
    for name in names:
        if name not in out:
            out[name] = free[i % len(free)]
            i += 1
    return out


#: A fitted family's colour in every L figure (and its model-designed codes' in L5).
FAMILY_COLORS = {
    "norm": SERIES[0],
    "laplace": SERIES[1],
    "gennorm": SERIES[2],
    "dweibull": SERIES[5],
}
#: The coders L5 and L5b draw when ``lossless.coding.coders`` is null (every built-in is coded):
#: the GenNorm code and its rivals, in registry order
#: (:func:`gradcomp.coding.registry.builtin_specs`).
L5_CODERS = (
    "lz78", "zstd", "huffman_gennorm", "huffman_norm", "huffman_laplace", "huffman_empirical",
    "entropy", "ans_gennorm_channel", "entropy_channel", "ans_context", "entropy_context",
    "cm_context", "cm_fast",
)  # fmt: skip
#: A bound drawn dashed in the colour of the code it bounds.
BOUND_OF = {
    "entropy": "huffman_empirical",
    "entropy_channel": "ans_gennorm_channel",
    "entropy_context": "ans_context",
    "kt_context": "ans_context",
    **{f"xent_{f}": f"huffman_{f}" for f in FAMILY_COLORS},
}


def coder_colors(names: Sequence[str], given: Mapping[str, str] | None = None) -> dict[str, str]:
    """Name -> colour of the coders ``names`` (in order): ``given`` as given (a user's
    ``color``); a code designed from a fitted family (``huffman_gennorm``, ``ans_gennorm``) in
    the family's colour; a bound (:data:`BOUND_OF`) in its code's; every other coder, a user's
    unknown one included, the next free colour of :data:`gradcomp.plotting.palette.SERIES`.

    >>> coder_colors(["huffman_gennorm", "zstd"])["huffman_gennorm"] == FAMILY_COLORS["gennorm"]
    True
    """
    fixed = dict(given or {})
    for name in names:
        family = name.split("_", 1)[1] if name.startswith(("huffman_", "ans_")) else ""
        if name not in fixed and family in FAMILY_COLORS:
            fixed[name] = FAMILY_COLORS[family]
    codes = [n for n in names if n not in BOUND_OF or BOUND_OF[n] not in names]
    out = assign(codes, {**FAMILY_COLORS, **fixed})
    for name in names:
        if name not in out:
            out[name] = out[BOUND_OF[name]]
    return {n: out[n] for n in names}


def is_bound(name: str) -> bool:
    """Whether L5 draws ``name`` as a bound (dashed): an entropy or cross-entropy, no code."""
    return name in BOUND_OF


#: The default coders' colours (:func:`coder_colors` of :data:`L5_CODERS`).
CODER_COLORS = coder_colors(L5_CODERS)


#: Y5's quantizers (gradcomp.lossy.distortion_study), each in the colour its compressor has in
#: the default config's paper-Y figures (uniform, gennorm, ecsq, kmeans, gauss, channel); the
#: authors' survivors fit, which has no compressor of its own, in GenNorm's family's wine; ECSQ
#: of the data, not in the default config, in a colour Y5 does not use otherwise.
DISTORTION_STUDY_COLORS = {
    "uniform": SERIES[1],
    "lloyd gennorm (same M)": SERIES[2],
    "lloyd gennorm, survivors fit": SERIES[8],
    "k-means (same M)": SERIES[4],
    "lloyd gauss (M0)": SERIES[3],
    "gaussian channel": SERIES[5],
    "ecsq gennorm (same M)": SERIES[7],
    "ecsq data (same M)": SERIES[6],
}
