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

import textwrap
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from gradcomp import names
from gradcomp.answer_cells import COLUMNS, NUMBER, first_model
from gradcomp.answers_paper_y import paper_y_rows
from gradcomp.lossy.distortion_study import DESIGN_NAMES
from gradcomp.plotting.palette import is_bound

__all__ = ["answers", "answers_markdown", "check_agreement", "markdown_of", "scope"]


def _g(term: str, anchor: str, docs: str) -> str:
    """``term`` linked to its glossary entry."""
    return f"[{term}]({docs}glossary.md#{anchor})"


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
    rows += paper_y_rows(verdicts, _read(folder, "T5"))
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
