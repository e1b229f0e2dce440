"""The one-round paired study's configurations as points, what Y6-Y8 draw: a configuration's
mean bits per entry and a metric's mean, 95% interval and units' values over the design's
units (warm starts where there are several, else seeds; :mod:`gradcomp.statistics.nested`).
An interval is drawn only from :data:`MIN_REPLICATES` units on; a configuration with fewer
(the descriptive variants, run on the first warm start only) shows its units' own values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from gradcomp.statistics.nested import nested_test, unit_values
from gradcomp.statistics.paired import seed_means

__all__ = [
    "BEATEN",
    "METRIC",
    "MIN_REPLICATES",
    "Point",
    "configuration_points",
    "fewest",
    "mark_handles",
    "mark_labels",
]

#: The fewest independent units an interval is drawn from; fewer: the units themselves.
MIN_REPLICATES = 5
#: What Y6 and Y7 plot: (column of the one-round tables, axis label).
METRIC = ("loss_increase", "test loss minus the uncompressed aggregate's (nats)")


@dataclass
class Point:
    """One configuration of the one-round study: its mean bits per entry and the metric's
    mean, 95% interval and units' values over the design's units."""

    name: str
    rate: int
    M: int
    bits: float
    mean: float
    lo: float
    hi: float
    units: np.ndarray = field(repr=False)
    design: str = "warm starts"

    @property
    def interval(self) -> bool:
        """Whether an interval is drawn (enough units and a finite one)."""
        return len(self.units) >= MIN_REPLICATES and bool(np.isfinite(self.lo))


def configuration_points(data: pd.DataFrame, metric: str) -> dict[tuple[str, int, int], Point]:
    """(compressor, rate, M) -> :class:`Point` of ``metric`` (rounds of a trajectory averaged
    first)."""
    per_seed = seed_means(data, ["bits_per_entry", metric])
    out = {}
    for (name, rate, M), rows in per_seed.groupby(["compressor", "rate", "M"]):
        t = nested_test(rows[metric], rows["warm_start"])
        units, design = unit_values(rows[metric], rows["warm_start"])
        key = (str(name), int(rate), int(M))
        out[key] = Point(*key, float(rows["bits_per_entry"].mean()), t.mean, t.lo, t.hi,
                         units, design)  # fmt: skip
    return out


def fewest(points: Sequence[Point]) -> int | None:
    """The fewest units behind a drawn interval (None: no interval drawn)."""
    counts = [len(p.units) for p in points if p.interval]
    return min(counts) if counts else None


def mark_labels(points: Sequence[Point]) -> tuple[str, str, str]:
    """The legend's words for an interval, for a configuration's runs drawn alone and for a
    configuration of one run."""
    many = [p for p in points if p.interval]
    design = (many or list(points))[0].design if points else "warm starts"
    counts = sorted({len(p.units) for p in many})
    span = f"{counts[0]} " if len(counts) == 1 else ""
    return (
        f"mean and 95% interval over {span}{design}",
        f"each run (fewer than {MIN_REPLICATES} {design}: no interval)",
        "no interval: a single run",
    )


#: The legend's words for a hollow mark in Y7.
BEATEN = "hollow: another point of its line has fewer bits and less loss"


def mark_handles(drawn: Sequence[Point], beaten: bool) -> dict[str, Any]:
    """Legend entries for the marks of ``drawn`` (grey proxies: the colours are the
    series'): an interval, the runs of a configuration with too few for one, a configuration
    of one run, a configuration its own line beats (``beaten``: :data:`BEATEN`)."""
    out: dict[str, Any] = {}
    with_interval, alone, single = mark_labels(drawn)
    if any(p.interval for p in drawn):
        out[with_interval] = Line2D([], [], color="0.3", marker="|", ms=8, ls="none")
    if any(not p.interval and len(p.units) > 1 for p in drawn):
        out[alone] = Line2D([], [], color="0.3", marker="x", ms=4, ls="none")
    if any(len(p.units) == 1 for p in drawn):
        out[single] = Line2D([], [], color="0.3", marker="o", ms=4, ls="none")
    if beaten:
        out[BEATEN] = Line2D([], [], color="0.3", marker="o", mfc="white", ms=4, ls="none")
    return out
