"""Paper Y's generated blocks of the docs (:mod:`gradcomp.docblocks`), from verdicts.tsv, T3,
T5 and T6, and the other run's verdicts beside them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gradcomp.answer_cells import first_model, num
from gradcomp.answers_paper_y import decided
from gradcomp.docblock_text import (
    ci,
    first_verdicts,
    markdown_table,
    read_table,
    wrap,
)
from gradcomp.lossy.distortion_study import DESIGN_NAMES
from gradcomp.lossy.verdict_comparison import AGREEMENTS, beside

__all__ = ["block_bd_rates", "block_beside", "block_follow_up", "block_full_runs", "block_limit",
           "block_open", "block_regime", "block_verdicts"]  # fmt: skip


def _short(question: str) -> str:
    """A question label without its kept set's words (``on top-K 45.2%`` -> ``(45.2%)``, the
    test's bits of a question against one configuration joined in: ``(45.2%, 0.50 bits)``).

    >>> _short("kmeans R1 M2 on top-K 45.2% (0.50 bits) vs uniform R2 M0 (1.00 bits), same kept")
    'kmeans R1 M2 (45.2%, 0.50 bits) vs uniform R2 M0 (1.00 bits), same kept'
    """
    question = re.sub(r" on top-K ([\d.]+%) \(([\d.]+ bits)\)", r" (\1, \2)", question)
    return re.sub(r" on top-K ([\d.]+%)", r" (\1)", question).replace(" on dense", "")


def _bits(r: Any) -> str:
    """A verdict row's bits per entry: the test's, and the reference's where the question
    compares one reference configuration at its own bits (``reference_rate``)."""
    ref = getattr(r, "reference_bits", np.nan)
    if isinstance(ref, (int, float)) and np.isfinite(ref):
        return f"{r.bits_per_entry:.2f} vs {ref:.2f}"
    return f"{r.bits_per_entry:.2f}"


def block_verdicts(tables: Path) -> str:
    """Every primary question: its verdict, loss difference at matched bits, detectable size."""
    v = first_verdicts(tables)
    parts = []
    for family, t in v.groupby("family", sort=False):
        rows = [[_short(r.question), _bits(r),
                 decided(r._asdict()).removesuffix(" nats"), f"{r.min_detectable:.3g}",
                 f"**{r.verdict}**" if r.verdict != "undecided" else r.verdict]
                for r in t.itertuples()]  # fmt: skip
        parts.append(f"**{family}** ({len(t)} questions):\n\n" + markdown_table(
            ["question", "bits/entry", "loss diff. [decided interval], nats", "detectable",
             "verdict"], rows
        ))  # fmt: skip
    return "\n\n".join(parts)


def block_open(tables: Path) -> str:
    """The questions on the quantizers that stay open: undecided and not detecting the
    table's target difference (``target``, the size the run's design was asked to detect)."""
    v = first_verdicts(tables)
    quant = v[v["family"] != "field"]
    limit = float(v["target"].iloc[0])
    small = quant["verdict"].ne("undecided") | (quant["min_detectable"] <= limit)
    others = [f"{_short(r.question)} (detects {r.min_detectable:.3f}"
              + (f", bracket {r.interp_bound:.3f})" if r.interpolation != "none" else ")")
              for r in quant[~small].itertuples()]  # fmt: skip
    return wrap(
        f"Of the {len(quant)} questions on the quantizers, {int(small.sum())} are decided or "
        f"undecided with a detectable difference of at most {limit:g} nats. The others: "
        + "; ".join(others)
        + "."
    )


def _regime(tables: Path) -> str:
    """Where a run's one-round study measures: the round's start and its uncompressed
    aggregate's test accuracy, means over every trajectory (T4)."""
    t4 = read_table(tables, "T4")
    r = t4.loc[t4["trajectories"].idxmax()]
    return (
        f"{int(r['units'])} {r['design']}, the round starting at {100 * r['start_acc']:.1f}% test "
        f"accuracy, the uncompressed aggregate at {100 * r['exact_acc']:.1f}%"
    )


def block_regime(tables: Path) -> str:
    """The regime of this run and of the default run (``default/`` in the tables folder)."""
    return wrap(f"This run: {_regime(tables)}. The default run: {_regime(tables / 'default')}.")


def block_beside(tables: Path) -> str:
    """The default run's verdicts (``default/verdicts.tsv`` in the tables folder) beside this
    run's, on the questions both declared (:func:`gradcomp.lossy.verdict_comparison.beside`):
    the words that differ with both intervals, the others listed by what the pair says."""
    both = beside(first_verdicts(tables / "default"), first_verdicts(tables))
    parts = [f"{len(both)} questions both runs declared."]
    differ = both[both["agreement"] == AGREEMENTS[0]]
    said = {AGREEMENTS[1]: "The same word in both",
            AGREEMENTS[2]: "Decided in one run only (default / this run)",
            AGREEMENTS[3]: "Undecided in both"}  # fmt: skip
    words = {AGREEMENTS[1]: lambda r: f": {r['verdict_2']}",
             AGREEMENTS[2]: lambda r: f": {r['verdict_1']} / {r['verdict_2']}",
             AGREEMENTS[3]: lambda r: ""}  # fmt: skip
    for agreement, lead in said.items():
        own = both[both["agreement"] == agreement]
        if not own.empty:
            items = "; ".join(_short(r["question"]) + words[agreement](r)
                              for _, r in own.iterrows())  # fmt: skip
            parts.append(f"{lead} ({len(own)}): {items}.")
    text = wrap(f"Words that differ: {len(differ)}. " + " ".join(parts))
    if differ.empty:
        return text
    rows = [[_short(r["question"]), f"{r['verdict_1']} ({decided(_side(r, '_1'))})",
             f"{r['verdict_2']} ({decided(_side(r, '_2'))})"]
            for _, r in differ.iterrows()]  # fmt: skip
    return text + "\n\n" + markdown_table(["question", "default run", "this run"], rows)


def _side(r: pd.Series, suffix: str) -> dict[str, object]:
    """One run's columns of a :func:`beside` row, under their own names."""
    return {k.removesuffix(suffix): v for k, v in r.items() if str(k).endswith(suffix)}


def block_limit(tables: Path) -> str:
    """T6: each quantizer's distance to R(D) of the fitted GenNorm, bits, per rate at M=0
    and the paper's M=2 (as Y5 draws them; T6 holds every M)."""
    t6 = read_table(tables, "T6")
    t6 = first_model(t6)
    t6 = t6[~t6["quantizer"].str.contains("survivors|gauss")]
    Ms = sorted(t6["M"].unique())
    t6 = t6[t6["M"].isin(Ms[:1] + [m for m in Ms[1:] if m == 2])]
    gap = t6.pivot_table(index=["M", "R"], columns="quantizer", values="gap_bits")
    names = list(gap.mean().sort_values().index)
    rows = [
        [f"{M:g}", f"{R:g}", *(f"{gap.loc[(M, R), n]:.2f}" for n in names)] for M, R in gap.index
    ]
    header = ["M", "R", *(DESIGN_NAMES.get(n, n) for n in names)]
    return markdown_table(header, rows).replace("| nan ", "| - ")


def _cell(r: pd.Series, col: str) -> str:
    """``col``'s mean [lo, hi] of a row, or "-" where the row has none."""
    if f"{col}_mean" not in r or pd.isna(r[f"{col}_mean"]):
        return "-"
    return ci(r[f"{col}_mean"], r[f"{col}_lo"], r[f"{col}_hi"])


def _variant(r: pd.Series) -> str:
    return f"{r['compressor']} R{r['rate']:g} M{r['M']:g}"


def block_bd_rates(tables: Path) -> str:
    """T5: each rate curve's BD-rate against the baseline's (percent more bits at equal loss),
    with its interval and verdict; the curves without an interval (one trajectory) left out."""
    t5 = read_table(tables, "T5")
    t5 = t5[t5["bd_rate_lo"].notna()]
    rows = [[f"{r.curve} M{r.M:g}", f"{r.bits_per_entry_min:.2f}-{r.bits_per_entry_max:.2f}",
             f"{r.bd_rate_mean:+.0f}% [{r.bd_rate_lo:+.0f}, {r.bd_rate_hi:+.0f}]", r.verdict]
            for r in t5.itertuples()]  # fmt: skip
    base = t5["baseline"].iloc[0] if len(t5) else "the baseline"
    return f"Against {base}'s curve:\n\n" + markdown_table(
        ["curve", "bits per entry", "BD-rate [interval]", "verdict"], rows
    )


def _plain(r: pd.Series, col: str, scale: float = 1.0, fmt: str = ".3f") -> str:
    """``col``'s mean [lo, hi] of a row times ``scale``, unsigned."""
    m, lo, hi = (scale * r[f"{col}_{p}"] for p in ("mean", "lo", "hi"))
    return f"{m:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def block_full_runs(tables: Path) -> str:
    """T3: the full federated runs' final accuracy, uplink Mbit and per-bit accuracy (accuracy
    points per Mbit), intervals over seeds."""
    t3 = read_table(tables, "T3")
    rows = [[_variant(r), f"{r['units']} {r['design']}", _plain(r, "test_acc"),
             f"{r['cumulative_bits_coded'] / 1e6:.1f}",
             _plain(r, "per_bit_acc_coded", 1e8, ".2f")] for _, r in t3.iterrows()]  # fmt: skip
    return markdown_table(["variant", "over", "final test accuracy", "uplink Mbit",
                   "accuracy points per Mbit"], rows)  # fmt: skip


def block_follow_up(tables: Path) -> str:
    """T4's descriptive variants (those run on fewer trajectories than the primary pass, M22's
    float8 and trellis-coded quantizer among them): bits, and the loss against the uncompressed
    aggregate of the same round; from the default run's tables where the folder holds them
    (``default/``: the decisive profile runs no descriptive variant)."""
    t4 = read_table(
        tables / "default" if (tables / "default" / "T4.tsv").exists() else tables, "T4"
    )
    t4 = t4[t4["trajectories"] < t4["trajectories"].max()]
    rows = [[_variant(r), f"{r['bits_per_entry_mean']:.2f}", num(r["loss_increase_mean"])]
            for _, r in t4.iterrows()]  # fmt: skip
    n = int(t4["trajectories"].max()) if len(t4) else 0
    over = f"{n} trajector{'y' if n == 1 else 'ies'}"
    return f"Descriptive, on {over}, no interval:\n\n" + markdown_table(
        ["variant", "bits/entry", "loss vs uncompressed, nats"], rows
    )
