"""Paper Y's rows of the answers table (:mod:`gradcomp.answers`), from verdicts.tsv and T5:
each verdict's word with the interval it is decided on (``decided_lo`` / ``decided_hi``, the
family's Holm-adjusted level), the M question across M, a test's comparisons against float32
and single configurations read together, and the strongest finding against each answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from gradcomp import names
from gradcomp.answer_cells import NUMBER, num

__all__ = ["PAPER_Y", "decided", "paper_y_rows"]

#: Bits per entry of sending every entry as float32.
FLOAT32_BITS = 32
#: A decided interval this small against the margin is float noise around no difference:
#: the two configurations decode alike (the entropy-constrained design at one bit, M=2, is
#: GenNorm Lloyd's two levels), shown as such rather than as +0.0000 [-1e-09, +1e-09].
IDENTICAL = 1e-6


def _end(x: float, margin: float) -> str:
    """An interval's end, with digits enough that its rounding keeps its side of 0 and of
    ±``margin`` (an end just below 0 never reads as 0)."""
    if not np.isfinite(x):
        return num(x)
    for digits in range(3 if abs(x) >= 0.001 else 4, 10):
        text = f"{x:+.{digits}f}"
        shown = float(text)
        if all(np.sign(shown - c) == np.sign(x - c) for c in (0.0, margin, -margin)):
            return text
    return f"{x:+.10g}"


#: Paper Y's rows: (question, the paper's answer, the verdicts' question label).
PAPER_Y = [
    (
        "How much accuracy does one bit per kept value buy? Uniform at 1 bit against float32",
        "defines the per-bit accuracy; no number per quantizer",
        "uniform R1 M0 on top-K 45.2% vs uncompressed",
    ),
    (
        "... GenNorm Lloyd M=2 (the paper's weighted distortion) at 1 bit against float32",
        "",
        "gennorm R1 M2 on top-K 45.2% vs uncompressed",
    ),
    (
        "... GenNorm Lloyd M=0 (Lloyd-Max) at 1 bit against float32",
        "",
        "gennorm R1 M0 on top-K 45.2% vs uncompressed",
    ),
    (
        "... weighted k-means M=2 (the data's own optimum) at 1 bit against float32",
        "",
        "kmeans R1 M2 on top-K 45.2% vs uncompressed",
    ),
    (
        "At 1 bit per kept value, does the M-weighted GenNorm quantizer buy more accuracy than "
        "uniform at the same bits?",
        "yes: GenNorm quantizers with M > 0",
        "gennorm R1 M2 on top-K 45.2% vs uniform M0, kept set",
    ),
    ("... at 2 bits per kept value", "", "gennorm R2 M2 on top-K 45.2% vs uniform M0, kept set"),
    ("... at 4 bits per kept value", "", "gennorm R4 M2 on top-K 45.2% vs uniform M0, kept set"),
    (
        "Does M=2 buy more accuracy per bit than M=0 at 1 bit per kept value?",
        "yes: M > 0 spends resolution on large entries",
        "gennorm R1 M2 on top-K 45.2% vs gennorm M0, kept set",
    ),
]

_OPPOSITE = {"better": "worse", "worse": "better"}
#: A verdict word with the preposition that relates it to its reference.
_RELATION = {"better": "better than", "worse": "worse than", "equivalent": "equivalent to",
             "undecided": "undecided against"}  # fmt: skip


def _reference_rate(r: Mapping[str, Any]) -> float | None:
    """A verdict row's ``reference_rate`` (one reference configuration at its own bits), or
    None for a question against a curve at the test's bits (the column missing in tables
    written before it, NaN or empty read back)."""
    value = r.get("reference_rate")
    if value is None or value == "" or pd.isna(value):
        return None
    return float(value)


def _curve_questions(table: pd.DataFrame) -> pd.Series:
    """Which verdict rows ask about a reference curve at the test's bits (not one reference
    configuration at its own bits, ``reference_rate``)."""
    if "reference_rate" not in table:
        return pd.Series(True, index=table.index)
    return table["reference_rate"].isna() | (table["reference_rate"].astype(str) == "")


def _bits(r: Mapping[str, Any]) -> str:
    """Where a verdict row's two sides stand in bits: the same bits for a curve question,
    each its own for one reference configuration."""
    if _reference_rate(r) is None:
        return f"at the same {r['bits_per_entry']:.2f} bits per entry"
    return (
        f"at {r['bits_per_entry']:.2f} bits per entry against the reference's "
        f"{r['reference_bits']:.2f}"
    )


def decided(r: Mapping[str, Any]) -> str:
    """A verdict row's loss difference with the interval its word is decided on
    (``decided_lo`` / ``decided_hi``), each end on its true side of 0 and the margin:
    ``"+0.122 [+0.008, +0.235] nats"``."""
    m = float(r["margin"])
    if max(abs(r["decided_lo"]), abs(r["decided_hi"])) < IDENTICAL * m:
        return "0 [the same test loss on every warm start] nats"
    return (
        f"{num(r['loss_diff_mean'])} [{_end(r['decided_lo'], m)}, {_end(r['decided_hi'], m)}] nats"
    )


def _why(r: Mapping[str, Any]) -> str:
    """Why a row's word is what it is, where the interval alone might leave a reader asking."""
    if r["verdict"] != "undecided":
        return ""
    lo, hi, m = r["decided_lo"], r["decided_hi"], r["margin"]
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return " (no interval)"
    return (
        f" (the interval holds 0 and reaches past ±{m:g}; the design detects "
        f"{r['min_detectable']:.3f})"
    )


def _against(r: Mapping[str, Any], table: pd.DataFrame, t5: pd.DataFrame | None) -> str:
    """The strongest contrary finding (module doc), by rule: the same test curve against the
    same reference at another rate or kept set with the opposite word (else a word that is
    not this one); for M > 0, M against M=0 of the same curve when not better; for a question
    against float32, the other compressors at one bit whose word differs; the BD-rate of the
    test's curve against the reference's (T5) when its sign disagrees. An undecided word
    claims nothing to argue against."""
    if r["verdict"] == "undecided":
        return "n/a (undecided)"
    found = []
    rate = _reference_rate(r)
    same_rate = (
        _curve_questions(table) if rate is None
        else pd.to_numeric(table.get("reference_rate"), errors="coerce") == rate
    )  # fmt: skip
    same = table[
        (table["test_curve"] == r["test_curve"])
        & (table["reference"] == r["reference"])
        & (table["reference_M"] == r["reference_M"])
        & (table["match"] == r["match"])
        & same_rate
        & (table["question"] != r["question"])
    ]
    opposite = same[same["verdict"] == _OPPOSITE.get(r["verdict"], "")]
    if r["verdict"] in _OPPOSITE and opposite.empty:
        opposite = same[same["verdict"] != r["verdict"]]
    if not opposite.empty:
        o = opposite.loc[opposite["loss_diff_mean"].abs().idxmax()]
        found.append(f"{o['verdict']} for {o['test_name']}: {decided(o)}")
    if r["match"] != "exact" and r["M"] > 0 and r["reference"] != r["test_curve"]:
        m0 = table[
            (table["test_point"] == r["test_point"])
            & (table["reference"] == r["test_curve"])
            & (table["reference_M"] == 0)
            & _curve_questions(table)
        ]
        if not m0.empty and m0.iloc[0]["verdict"] != "better":
            o = m0.iloc[0]
            found.append(
                f"M={r['M']:g} against M=0 is {o['verdict']} ({decided(o)}): the "
                "weighting is not shown to be what wins"
            )
    if r["match"] == "exact":
        peers = table[
            (table["match"] == "exact")
            & (table["family"] == r["family"])
            & (table["verdict"] != r["verdict"])
        ]
        if not peers.empty:
            found.append(
                "at the same bits against float32: "
                + "; ".join(f"{p['test_name']} {p['verdict']}" for _, p in peers.iterrows())
            )
    # T5's BD-rate compares the curves at the same loss: no finding about one reference
    # configuration at its own bits
    if (t5 is not None and r["match"] != "exact" and r["verdict"] in _OPPOSITE
            and rate is None):  # fmt: skip
        needed = {"model", "curve", "M", "baseline", "bd_rate_mean", "verdict"}
        bd = t5.iloc[:0] if not needed <= set(t5) else t5[
            (t5["model"] == r["model"]) & (t5["curve"] == r["test_curve"]) & (t5["M"] == r["M"])
            & (t5["baseline"] == r["reference"])]  # fmt: skip
        contrary = "more bits" if r["verdict"] == "better" else "fewer bits"
        for _, b in bd[bd["verdict"] == contrary].iterrows():
            found.append(
                f"over all its rates the curve needs {contrary} than {r['reference_name']} "
                f"for the same loss: BD-rate {b['bd_rate_mean']:+.0f}% ({names.TABLES['T5']})"
            )
    return "; ".join(found[:3]) if found else "none found in the verdicts"


def _verdict_row(
    question: str, paper: str, r: Mapping[str, Any], table: pd.DataFrame, t5: pd.DataFrame | None
) -> dict[str, str]:
    """One question's row from its verdict: the word (and why, where undecided), the loss
    difference with its decided interval and the accuracy, at the bits it spends (against
    float32: the bits saved and the accuracy per bit), and the evidence against it."""
    number = f"{decided(r)} of test loss, {100 * r['acc_diff_mean']:+.1f} accuracy points"
    if r["match"] == "exact":
        saved = FLOAT32_BITS - r["bits_per_entry"]
        number += (
            f" for {saved:.1f} fewer bits per entry than float32 "
            f"({r['bits_per_entry']:.2f} against {FLOAT32_BITS}): "
            f"{100 * -r['acc_diff_mean'] / saved:.3f} points per bit per entry"
        )
    else:
        number += f" {_bits(r)}"
    return {
        "question": question,
        "the paper": paper,
        "this study": r["verdict"] + _why(r),
        NUMBER: number,
        "the evidence against": _against(r, table, t5),
        "from": f"{names.TABLES['verdicts']} ({r['family']})",
    }


def paper_y_rows(table: pd.DataFrame | None, t5: pd.DataFrame | None) -> list[dict[str, str]]:
    """Paper Y's rows from the verdicts (first model) and T5: :data:`PAPER_Y`'s questions, the
    M question, the direct families and every other question beyond both papers."""
    if table is None or table.empty or "decided_lo" not in table:
        return []
    rows = []
    for question, paper, label in PAPER_Y:
        found = table[table["question"] == label]
        if found.empty:
            continue
        rows.append(_verdict_row(question, paper, found.iloc[0].to_dict(), table, t5))
    rows += _m_rows(table)
    paper_families = set(table[table["question"].isin([q for *_, q in PAPER_Y])]["family"])
    beyond = table[~table["family"].isin([*paper_families, "field"])]
    direct = _direct_families(beyond)
    rows += _direct_rows(beyond[beyond["family"].isin(direct)])
    beyond = beyond[~beyond["family"].isin(direct)]
    for _, r in beyond.iterrows():
        if _reference_rate(r) is None:
            question = (f"(beyond both papers) Does {r['test_name']} beat {r['reference_name']} "
                        "at the same bits?")  # fmt: skip
        else:
            question = (f"(beyond both papers) Does {r['test_name']} at "
                        f"{r['bits_per_entry']:.2f} bits per entry beat {r['reference_name']} "
                        f"at its {r['reference_bits']:.2f}?")  # fmt: skip
        rows.append(_verdict_row(question, "", r.to_dict(), table, t5))
    field = table[table["family"] == "field"]
    if not field.empty:
        words = [f"{r['test_name']}: {r['verdict']}" for _, r in field.iterrows()]
        rows.append(
            {
                "question": "(beyond both papers) Do the field's compressors beat uniform's "
                "operational curve at the bits they spend?",
                "the paper": "",
                "this study": "no compressor better"
                if not (field["verdict"] == "better").any()
                else "some better",
                NUMBER: "; ".join(words),
                "the evidence against": "none found in the verdicts"
                if not (field["verdict"] == "better").any()
                else "; ".join(w for w in words if w.endswith("worse")) or "none found",
                "from": f"{names.TABLES['verdicts']} (field)",
            }
        )
    return rows


def _direct_families(table: pd.DataFrame) -> list[str]:
    """The families that ask a test against float32 and against single reference
    configurations at their own bits (``reference_rate``): read a test's answers together."""
    if "reference_rate" not in table:
        return []
    own = ~_curve_questions(table)
    return sorted(set(table[own]["family"]) & set(table[table["match"] == "exact"]["family"]))


def _direct_rows(family: pd.DataFrame) -> list[dict[str, str]]:
    """One row per test compressor of the families of :func:`_direct_families` (the most accuracy
    a design buys at one coded bit or below, ``config/decisive.yaml``): its word against
    float32 per M; the number: each comparison's difference with its decided interval and
    the bits of both sides; against: every comparison with another reference (a design at
    its own bits) that the test loses or does not decide."""
    rows = []
    for _, group in family.groupby("test", sort=False):
        group = group.sort_values(["M"], kind="stable")
        first = group.iloc[0]
        method = re.sub(r" M=\d+", "", first["test_name"])
        exact = group[group["match"] == "exact"]
        words = "; ".join(f"M={r['M']:g}: {_RELATION[r['verdict']]} float32"
                          for _, r in exact.iterrows())  # fmt: skip
        parts, found = [], []
        for M, at in group.groupby("M"):
            cells = []
            for _, r in at.iterrows():
                other = "float32" if r["match"] == "exact" else (
                    f"{r['reference_name'].removesuffix(' on the same kept set')} at "
                    f"{r['reference_bits']:.2f}")  # fmt: skip
                cells.append(f"vs {other}: {decided(r)}")
                if r["match"] != "exact" and r["verdict"] in ("worse", "undecided"):
                    found.append(f"M={M:g} {_RELATION[r['verdict']]} {other} ({decided(r)})")
            parts.append(f"M={M:g} at {at.iloc[0]['bits_per_entry']:.2f} bits per entry: "
                         + "; ".join(cells))  # fmt: skip
        rows.append(
            {
                "question": f"(beyond both papers) How much accuracy does {method} buy "
                "(arithmetic-coded; below one bit a zero cell over the smaller kept values)?",
                "the paper": "",
                "this study": words or "no question against float32",
                NUMBER: " / ".join(parts),
                "the evidence against": "; ".join(found[:3]) or "none found in the verdicts",
                "from": f"{names.TABLES['verdicts']} ({first['family']})",
            }
        )
    return rows


def _m_rows(table: pd.DataFrame) -> list[dict[str, str]]:
    """Paper Y's M question where the run asks it of several M (``config/decisive.yaml``):
    per rate, every M of a curve against M=0 of the same curve on the same kept set; the
    number lists each M's difference with its decided interval; against: each M's word
    against float32 at the same bits, and another rate's opposite word."""
    vs0 = table[
        (table["match"] == "kept_set") & (table["reference"] == table["test_curve"])
        & (table["reference_M"] == 0) & (table["M"] > 0) & _curve_questions(table)
    ]  # fmt: skip
    exact = table[table["match"] == "exact"]
    rows = []
    for (curve, rate), group in vs0.groupby(["test_curve", "rate"]):
        if group["M"].nunique() < 2:
            continue
        group = group.sort_values("M")
        better = group[group["verdict"] == "better"]
        first = group.iloc[0]
        reference = first["reference_name"].removesuffix(" on the same kept set")
        method = re.sub(r" M=\d+", "", reference)
        unit = "bit" if rate == 1 else "bits"
        if better.empty:
            word = "no M shown better than M=0: " + ", ".join(
                f"M={r['M']:g} {r['verdict']}" for _, r in group.iterrows()
            )
        else:
            best = better.loc[better["loss_diff_mean"].idxmin()]
            word = f"M={best['M']:g} buys the most; better: " + ", ".join(
                f"M={m:g}" for m in better["M"]
            )
        found = []
        same = exact[(exact["test_curve"] == curve) & (exact["rate"] == rate)].sort_values("M")
        if not same.empty:
            found.append(
                "against float32 at the same bits: "
                + ", ".join(f"M={r['M']:g} {r['verdict']}" for _, r in same.iterrows())
            )
        other = vs0[(vs0["test_curve"] == curve) & (vs0["rate"] != rate)]
        for _, r in group.iterrows():
            flip = other[(other["M"] == r["M"]) & (other["verdict"] == _OPPOSITE.get(r["verdict"]))]
            for _, o in flip.iterrows():
                found.append(f"{o['verdict']} for {o['test_name']}: {decided(o)}")
        rows.append(
            {
                "question": f"Which weight M buys the most at {rate:g} {unit} per kept value? "
                f"{method} at M={', '.join(f'{m:g}' for m in group['M'])} against M=0",
                "the paper": "M > 0 (the paper uses M=2)",
                "this study": word,
                NUMBER: "; ".join(f"M={r['M']:g}: {decided(r)}" for _, r in group.iterrows())
                + f" at the same {first['bits_per_entry']:.2f} bits per entry",
                "the evidence against": "; ".join(found[:3]) or "none found in the verdicts",
                "from": f"{names.TABLES['verdicts']} ({first['family']})",
            }
        )
    return rows
