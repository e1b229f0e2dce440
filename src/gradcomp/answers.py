"""Both papers' questions answered in one short table, from the run's own tables.

:func:`answers` reads T1 and T2 (paper L), verdicts.tsv (paper Y), T5 and T6 from a tables
folder and gives one row per question: the question in the paper's terms, the paper's
answer, this study's answer, the number behind it, **the strongest finding of the same study
against that answer** (found in the tables by rule, never typed) and where it comes from.
Paper Y's numbers carry the interval their word is decided on (``decided_lo`` /
``decided_hi`` of verdicts.tsv: the family's Holm-adjusted level), so that word and interval
agree on sight; :func:`check_agreement` refuses a table where they would not. Names are
readers' names (:mod:`gradcomp.names`).

The workflow writes it as ``results/tables/answers.md``; the README carries the default
run's copy as the generated block ``answers`` (:mod:`gradcomp.docblocks`, whose test holds
it to what this module makes of ``docs/tables``). A question whose table or row is missing
(another config) is left out, never guessed.

>>> answers("no/such/folder").empty
True
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gradcomp import names
from gradcomp.lossy.distortion_study import DESIGN_NAMES
from gradcomp.plotting.palette import is_bound

__all__ = [
    "COLUMNS",
    "answers",
    "answers_markdown",
    "check_agreement",
    "decided",
    "first_model",
    "markdown_of",
    "scope",
]

NUMBER = "the number [interval the word is decided on]"
COLUMNS = ("question", "the paper", "this study", NUMBER, "the evidence against", "from")
#: Bits per entry of sending every entry as float32.
FLOAT32_BITS = 32
#: A decided interval this small against the margin is float noise around no difference:
#: the two configurations decode alike (the entropy-constrained design at one bit, M=2, is
#: GenNorm Lloyd's two levels), shown as such rather than as +0.0000 [-1e-09, +1e-09].
IDENTICAL = 1e-6


def _num(x: float, digits: int = 3) -> str:
    if not np.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "n/a")
    if abs(x) < 0.001:
        return f"{x:+.4f}"
    return f"{x:+.{digits}f}"


def _end(x: float, margin: float) -> str:
    """An interval's end, with digits enough that its rounding keeps its side of 0 and of
    ±``margin`` (an end just below 0 never reads as 0)."""
    if not np.isfinite(x):
        return _num(x)
    for digits in range(3 if abs(x) >= 0.001 else 4, 10):
        text = f"{x:+.{digits}f}"
        shown = float(text)
        if all(np.sign(shown - c) == np.sign(x - c) for c in (0.0, margin, -margin)):
            return text
    return f"{x:+.10g}"


def _g(term: str, anchor: str, docs: str) -> str:
    """``term`` linked to its glossary entry."""
    return f"[{term}]({docs}glossary.md#{anchor})"


def first_model(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``table`` (with a ``model`` column) for its first model by name: the one
    the answers and the docs quote."""
    return table[table["model"] == sorted(table["model"])[0]]


def _by_model(values: Mapping[str, str]) -> str:
    return "; ".join(f"{m}: {v}" for m, v in values.items())


def _fit_rows(t2: pd.DataFrame, docs: str) -> list[dict[str, str]]:
    kind = "epoch_avg" if "epoch_avg" in set(t2["kind"]) else t2["kind"].iloc[0]
    avg = t2[t2["kind"] == kind]
    tail = avg.pivot_table(
        index=["model", "position"], columns="family", values="tail_log10_err_mean"
    )
    w2 = avg.pivot_table(index=["model", "position"], columns="family", values="w2_mean")
    if not {"gennorm", "norm"} <= set(tail.columns):
        return []
    lower = int((tail["gennorm"] < tail["norm"]).sum())
    median = avg.groupby("family")["w2_mean"].median()
    worse = w2[w2["gennorm"] > w2["norm"]]
    if worse.empty:
        against = "none: GenNorm's trimmed W2 is at most the normal law's in every cell"
    else:
        cells = [
            f"{names.POSITIONS.get(p, p)} of {m} {r['gennorm'] / r['norm']:.1f}x "
            f"(best there: {names.law(str(r.idxmin()))})"
            for (m, p), r in worse.iterrows()
        ]
        against = "GenNorm's trimmed W2 against the normal law's: " + "; ".join(cells)
    return [
        {
            "question": "Are gradient entries closer to a GenNorm law than to a normal one, above "
            f"all in the tails? ({_g('tail error', 'tail-error', docs)}, "
            f"{_g('trimmed W2', 'trimmed-w2', docs)})",
            "the paper": "yes",
            "this study": "reproduced" if lower >= 0.75 * len(tail) else "not reproduced",
            NUMBER: f"tail error lower for GenNorm in {lower} of {len(tail)} (model, layer depth) "
            f"cells; median trimmed W2 {median['gennorm']:.2f} against {median['norm']:.2f}",
            "the evidence against": against,
            "from": names.TABLES["T2"],
        }
    ]


def _code_rows(t1: pd.DataFrame, docs: str) -> list[dict[str, str]]:
    raw = t1[(t1["scaling"] == "none") & (t1["accounting"] == "exact")]
    bits = raw.pivot_table(index="model", columns="coder", values="bits_per_entry_mean")
    rows = []
    if {"huffman_gennorm", "huffman_norm"} <= set(bits.columns):
        g, n = bits["huffman_gennorm"], bits["huffman_norm"]
        gain = (n - g) / n
        m = str(gain.idxmin())
        against = f"the gain is {n[m] - g[m]:.2f} bits per entry ({100 * gain[m]:.1f}%) on {m}"
        if "huffman_empirical" in bits and (bits["huffman_empirical"] < g).any():
            e = bits["huffman_empirical"]
            against += "; a Huffman code of the counts themselves is shorter still: " + ", ".join(
                f"{k} {e[k]:.2f}" for k in bits.index
            )
        rows.append(
            {
                "question": "Does a Huffman code designed from the GenNorm fit compress "
                f"{_g('FP8', 'fp8-e5m2', docs)} gradients better than one from the normal fit?",
                "the paper": "yes",
                "this study": "reproduced" if (g < n).all() else "not reproduced",
                NUMBER: _by_model({k: f"{g[k]:.2f} against {n[k]:.2f}" for k in bits.index})
                + f" {_g('bits per entry', 'bits-per-entry', docs)}",
                "the evidence against": against,
                "from": names.TABLES["T1"],
            }
        )
    codes = [c for c in bits.columns if not is_bound(c) and c != "fp8"]
    if codes and {"entropy", "huffman_gennorm"} <= set(bits.columns):
        best = bits[codes].idxmin(axis=1)
        beats = all(bits.loc[k, best[k]] < bits.loc[k, "entropy"] for k in bits.index)
        number = (
            _by_model(
                {
                    k: f"{names.coder(best[k])} {bits.loc[k, best[k]]:.2f} against Huffman "
                    f"(GenNorm fit) {bits.loc[k, 'huffman_gennorm']:.2f}; no i.i.d. code goes "
                    f"below {bits.loc[k, 'entropy']:.2f}"
                    for k in bits.index
                }
            )
            + " bits per entry"
        )
        gap = bits["huffman_gennorm"] - bits["entropy"]
        rows.append(
            {
                "question": "Which code is shortest, and is an i.i.d. GenNorm code the answer? "
                f"({_g('i.i.d. entropy', 'iid-entropy', docs)}, "
                f"{_g('context mixing', 'context-mixing', docs)})",
                "the paper": "yes: GenNorm-designed Huffman codes",
                "this study": "no: a context model is shorter than any i.i.d. code"
                if beats
                else "yes: no code beats the i.i.d. entropy",
                NUMBER: number,
                "the evidence against": "among i.i.d. codes GenNorm is near the best: its "
                f"Huffman code is {gap.min():.2f}-{gap.max():.2f} bits per entry above the i.i.d. "
                "entropy",
                "from": names.TABLES["T1"],
            }
        )
    return rows


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
        f"{_num(r['loss_diff_mean'])} [{_end(r['decided_lo'], m)}, {_end(r['decided_hi'], m)}] nats"
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


def _paper_y(table: pd.DataFrame | None, t5: pd.DataFrame | None) -> list[dict[str, str]]:
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


def scope(verdicts: pd.DataFrame) -> str:
    """What a run's verdicts decide: how many of its questions have a word other than
    undecided and, for each undecided one, the difference its design detects now
    (``min_detectable``) and the warm starts it would need to detect the table's target
    (``units_for_target``; fewer than it has: the truth lies between the margin and what it
    detects)."""
    undecided = verdicts[verdicts["verdict"] == "undecided"]
    text = (
        f"What this run can decide: {len(verdicts) - len(undecided)} of its {len(verdicts)} "
        "declared questions."
    )
    if not undecided.empty:
        target = float(undecided["target"].iloc[0])
        need = "; ".join(
            f"{r['test_name']} against {r['reference_name']}: {r['min_detectable']:.3f}, "
            f"{r['units_for_target']:.0f}"
            for _, r in undecided.sort_values("units_for_target").iterrows()
        )
        text += (
            f" Each undecided one with the difference in nats its design detects (80% power at "
            f"its family's first Holm step) and the warm starts it would need to detect "
            f"{target:g} nats: {need}."
        )
    return text


def _limit(t6: pd.DataFrame | None, docs: str) -> list[dict[str, str]]:
    """How near the rate-distortion bound the nearest quantizer gets, per M (first model),
    from T6: the quantizer nearest at the most designed rates, its gaps there; against: the
    rates where another design is nearer."""
    if t6 is None or t6.empty or t6["gap_bits"].isna().all():
        return []
    t6 = first_model(t6)
    # the rates where designs compete (below one bit only the arithmetic-coded one goes)
    t6 = t6[t6.groupby(["M", "R"])["quantizer"].transform("size") > 1]
    t6 = t6.dropna(subset=["gap_bits"])
    parts, winners, others = [], [], []
    for M, rows in t6.groupby("M"):
        nearest = rows.loc[rows.groupby("R")["gap_bits"].idxmin()]
        counts = nearest["quantizer"].value_counts()
        name = min(counts.index, key=lambda n: (-counts[n], n))  # a tie: the first name
        own = nearest[nearest["quantizer"] == name]["gap_bits"]
        winners.append(DESIGN_NAMES.get(name, name))
        parts.append(
            f"M={M:g}: {DESIGN_NAMES.get(name, name)}, nearest at {len(own)} of "
            f"{len(nearest)} rates, {own.min():.2f}-{own.max():.2f} bits above R(D)"
        )
        for _, o in nearest[nearest["quantizer"] != name].iterrows():
            design = DESIGN_NAMES.get(o["quantizer"], o["quantizer"])
            unit = "bit" if o["R"] == 1 else "bits"
            others.append(
                f"at M={M:g}, {o['R']:g} {unit} {design} is nearer ({o['gap_bits']:.2f} bits)"
            )
    return [
        {
            "question": "(beyond both papers) How near the rate-distortion limit "
            f"({_g('R(D)', 'rd', docs)}) does the best quantizer get, on a real update tensor?",
            "the paper": "",
            "this study": "nearest: " + " / ".join(dict.fromkeys(winners)),
            NUMBER: "; ".join(parts) + " (one tensor, no interval)",
            "the evidence against": "; ".join(others[:2]) or "none: nearest at every rate",
            "from": names.TABLES["T6"],
        }
    ]


def _read(folder: Path, name: str) -> pd.DataFrame | None:
    path = folder / f"{name}.tsv"
    return pd.read_csv(path, sep="\t") if path.exists() else None


def answers(tables: str | Path, docs: str = "docs/") -> pd.DataFrame:
    """One row per question (module doc) from the tables folder ``tables`` (T1, T2,
    verdicts, T5, T6 as TSV; any of them may be missing); ``docs``: the docs folder as seen
    from where the table is shown (glossary links)."""
    folder = Path(tables)
    verdicts = _read(folder, "verdicts")
    if verdicts is not None and "model" in verdicts and not verdicts.empty:
        verdicts = first_model(verdicts)
    rows: list[dict[str, str]] = []
    t2, t1 = _read(folder, "T2"), _read(folder, "T1")
    if t2 is not None and not t2.empty:
        rows += _fit_rows(t2, docs)
    if t1 is not None and not t1.empty:
        rows += _code_rows(t1, docs)
    rows += _paper_y(verdicts, _read(folder, "T5"))
    rows += _limit(_read(folder, "T6"), docs)
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    if verdicts is not None and "decided_lo" in verdicts:
        check_agreement(verdicts)
    return out


def check_agreement(verdicts: pd.DataFrame) -> None:
    """ValueError naming every question whose shown interval contradicts its word: better
    needs it below 0, worse above 0, equivalent inside the margin, undecided holding 0 and
    reaching past the margin (or no interval)."""
    bad = []
    for _, r in verdicts.iterrows():
        lo, hi, m, v = r["decided_lo"], r["decided_hi"], r["margin"], r["verdict"]
        ok = {
            "better": hi < 0,
            "worse": lo > 0,
            "equivalent": -m < lo and hi < m,
            "undecided": not (np.isfinite(lo) and np.isfinite(hi))
            or (lo <= 0 <= hi and (lo <= -m or hi >= m)),
        }.get(v, False)
        if not ok:
            bad.append(f"{r['question']}: {v} with [{lo:.4g}, {hi:.4g}] (margin {m:g})")
    if bad:
        raise ValueError("word and interval disagree: " + "; ".join(bad))


def _intro(docs: str, margin: float | None) -> str:
    within = f"±{margin:g}" if margin is not None else "± the margin"
    return (
        f"How to read it: each word of paper Y is decided by a test adjusted for its "
        f"{_g('family', 'family', docs)} ({_g('Holm', 'holm', docs)}), and the interval shown "
        f"is the one it is decided on: **better** / **worse** when it lies below / above 0, "
        f"**{_g('equivalent', 'equivalent', docs)}** when it lies inside {within} nats, "
        f"**{_g('undecided', 'undecided', docs)}** otherwise. Nats of test loss, the compressor "
        f"minus its reference after one round from the same "
        f"{_g('warm start', 'warm-start', docs)} (negative: better), over warm starts. "
        f"Every term: [glossary]({docs}glossary.md).\n\n"
    )


def answers_markdown(table: pd.DataFrame, docs: str = "docs/", margin: float | None = None) -> str:
    """The table as Markdown, after a paragraph that states how its words are decided."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
    intro = textwrap.fill(_intro(docs, margin).strip(), width=100, break_long_words=False,
                          break_on_hyphens=False)  # fmt: skip
    return intro + "\n\n" + "\n".join(lines) + "\n"


def markdown_of(tables: str | Path, docs: str = "docs/") -> str:
    """:func:`answers_markdown` of :func:`answers` of the folder, with the verdicts' margin."""
    verdicts = _read(Path(tables), "verdicts")
    margin = None
    if verdicts is not None and "margin" in verdicts and not verdicts.empty:
        margin = float(verdicts["margin"].iloc[0])
    text = answers_markdown(answers(tables, docs), docs, margin)
    if verdicts is not None and "units_for_target" in verdicts and not verdicts.empty:
        text += "\n" + textwrap.fill(scope(first_model(verdicts)), width=100,
                                     break_long_words=False) + "\n"  # fmt: skip
    return text
