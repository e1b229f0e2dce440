"""The colours and marks of every figure, defined once: Paul Tol's colour-blind-safe
schemes ("vibrant" first, then "muted"), greys for the uncompressed references, and markers
that tell series apart where colours repeat.

Colours are handed out in a fixed order over a fixed list of names (config order, registry
order), so a name keeps its colour in every figure drawn from the same list; a name the
list does not know gets the next free colour, never none.

>>> assign(["a", "b"], taken={"c": SERIES[0]})
{'c': '#0077BB', 'a': '#EE7733', 'b': '#CC3311'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["GREYS", "MARKERS", "SERIES", "assign"]

#: Series colours in the order they are handed out (Tol vibrant, then muted without the
#: shades too close to a vibrant one; the light sand last: it reads worst on white).
SERIES = (
    "#0077BB", "#EE7733", "#CC3311", "#009988", "#332288", "#AA4499", "#33BBEE", "#117733",
    "#882255", "#999933", "#EE3377", "#DDCC77",
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
