"""Both papers' questions answered in one short table, from the run's own tables.

:func:`answers` reads T1 and T2 (paper L), verdicts.tsv (paper Y) and T6 (the distance to the
rate-distortion limit) from a tables folder and
gives one row per question: the question in the paper's words, the paper's answer, this
study's answer (a verdict word where a question was tested), the number behind it and
where it comes from. The workflow writes it as ``results/tables/answers.md``; the README
carries the default run's copy between two markers, which ``python -m gradcomp.answers
TABLES README.md`` rewrites (a test checks that the README's block is what this module
makes of ``docs/tables``, the default run's tables).

A question whose table or row is missing (another config) is left out, never guessed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["BEGIN", "END", "answers", "answers_markdown", "with_answers"]

BEGIN = (
    "<!-- answers: written by gradcomp.answers from results/tables (the workflow's "
    "answers.md); python -m gradcomp.answers results/tables README.md rewrites this block -->"
)
END = "<!-- end of answers -->"
COLUMNS = ("question", "the paper", "this study", "the number [95% interval]", "from")


def _num(x: float, digits: int = 3) -> str:
    if abs(x) < 0.001:
        return f"{x:+.4f}"
    return f"{x:+.{digits}f}"


def _by_model(values: dict[str, str]) -> str:
    return "; ".join(f"{m} {v}" for m, v in values.items())


def _paper_l(t1: pd.DataFrame | None, t2: pd.DataFrame | None) -> list[dict[str, str]]:
    rows = []
    if t2 is not None:
        cells = t2[t2["kind"] == "epoch_avg"].pivot_table(
            index=["model", "position"], columns="family", values="tail_log10_err_mean"
        )
        if {"gennorm", "norm"} <= set(cells.columns):
            lower = (cells["gennorm"] < cells["norm"]).sum()
            w2 = t2[t2["kind"] == "epoch_avg"].groupby("family")["w2_mean"].median()
            rows.append({
                "question": "Are gradient entries better modelled by a GenNorm than by a normal "
                "law, especially in the tails?",
                "the paper": "yes",
                "this study": "reproduced" if lower >= 0.75 * len(cells) else "not reproduced",
                "the number [95% interval]": f"tail error lower for GenNorm in {lower} of "
                f"{len(cells)} (model, depth) cells; median trimmed W2 {w2['gennorm']:.2f} "
                f"against {w2['norm']:.2f}",
                "from": "T2",
            })  # fmt: skip
    if t1 is not None:
        raw = t1[(t1["scaling"] == "none") & (t1["accounting"] == "exact")]
        bits = raw.pivot_table(index="model", columns="coder", values="bits_per_entry_mean")
        if {"huffman_gennorm", "huffman_norm"} <= set(bits.columns):
            wins = (bits["huffman_gennorm"] < bits["huffman_norm"]).all()
            rows.append({
                "question": "Does a Huffman code designed from the GenNorm model compress the "
                "quantized gradient better than one designed from the normal model?",
                "the paper": "yes",
                "this study": "reproduced" if wins else "not reproduced",
                "the number [95% interval]": _by_model({
                    m: f"{r['huffman_gennorm']:.2f} against {r['huffman_norm']:.2f}"
                    for m, r in bits.iterrows()}) + " bits per entry (FP8)",
                "from": "T1",
            })  # fmt: skip
        context = [c for c in ("cm_fast", "cm_context", "ans_context") if c in bits.columns]
        if context and "entropy" in bits.columns:
            best = context[0]
            below = (bits[best] < bits["entropy"]).all()
            rows.append({
                "question": "DNN gradient lossless compression: can GenNorm be the answer?",
                "the paper": "yes: GenNorm-designed Huffman codes",
                "this study": "not as an i.i.d. law" if below else "yes",
                "the number [95% interval]": _by_model({
                    m: f"{r[best]:.2f} ({best}) against {r['entropy']:.2f} (i.i.d. entropy)"
                    for m, r in bits.iterrows()}) + " bits per entry",
                "from": "T1",
            })  # fmt: skip
    return rows


#: Paper Y's rows: (question, the paper's answer, the verdicts' question label).
PAPER_Y = [
    ("How much accuracy can one bit buy? Uniform quantization, against sending float32",
     "the per-bit accuracy (defined; no number per quantizer)",
     "uniform R1 M0 on top-K 45.2% vs uncompressed"),
    ("... GenNorm Lloyd, M = 2 (the paper's weighted distortion)", "",
     "gennorm R1 M2 on top-K 45.2% vs uncompressed"),
    ("... GenNorm Lloyd, M = 0 (Lloyd-Max)", "", "gennorm R1 M0 on top-K 45.2% vs uncompressed"),
    ("... weighted k-means (the data-optimal reference)", "",
     "kmeans R1 M2 on top-K 45.2% vs uncompressed"),
    ("At one bit, does the M-weighted GenNorm quantizer beat uniform at the same bits?",
     "GenNorm quantizers with M > 0 (validated on CIFAR-10)",
     "gennorm R1 M2 on top-K 45.2% vs uniform M0, kept set"),
    ("... at two bits per kept value", "", "gennorm R2 M2 on top-K 45.2% vs uniform M0, kept set"),
    ("... at four bits per kept value", "", "gennorm R4 M2 on top-K 45.2% vs uniform M0, kept set"),
    ("Does M = 2 buy more than M = 0 at one bit?", "M > 0 spends resolution on large entries",
     "gennorm R1 M2 on top-K 45.2% vs gennorm M0, kept set"),
    ("(beyond both papers) Does the quantizer made for coded bits (entropy-constrained, M = 2) "
     "beat GenNorm Lloyd M = 2 at the same bits? 2 target bits per kept value", "",
     "ecsq R2 M2 on top-K 45.2% vs gennorm M2, kept set"),
    ("... 3 target bits per kept value", "", "ecsq R3 M2 on top-K 45.2% vs gennorm M2, kept set"),
    ("... and uniform? 2 target bits per kept value", "",
     "ecsq R2 M2 on top-K 45.2% vs uniform M0, kept set"),
    ("... 3 target bits per kept value", "", "ecsq R3 M2 on top-K 45.2% vs uniform M0, kept set"),
]  # fmt: skip


def _paper_y(verdicts: pd.DataFrame | None) -> list[dict[str, str]]:
    if verdicts is None or verdicts.empty:
        return []
    rows = []
    for question, paper, label in PAPER_Y:
        found = verdicts[verdicts["question"] == label]
        if found.empty:
            continue
        r = found.iloc[0]
        number = (
            f"{_num(r['loss_diff_mean'])} [{_num(r['loss_diff_lo'])}, {_num(r['loss_diff_hi'])}] "
            f"nats of test loss, {100 * r['acc_diff_mean']:+.1f} accuracy points, at "
            f"{r['bits_per_entry']:.2f} bits per entry"
        )
        rows.append({"question": question, "the paper": paper, "this study": r["verdict"],
                     "the number [95% interval]": number,
                     "from": f"verdicts ({r['family']})"})  # fmt: skip
    field = verdicts[verdicts["family"] == "field"]
    if not field.empty:
        words = field.groupby("test")["verdict"].agg(lambda v: "/".join(dict.fromkeys(v)))
        rows.append({
            "question": "(beyond both papers) The field's compressors against uniform's "
            "operational curve",
            "the paper": "",
            "this study": "; ".join(f"{t} {w}" for t, w in words.items()),
            "the number [95% interval]": "per rate in verdicts.md",
            "from": "verdicts (field)",
        })  # fmt: skip
    return rows


def _limit(t6: pd.DataFrame | None) -> list[dict[str, str]]:
    """How near the rate-distortion bound the nearest quantizer gets, per M (first model),
    from T6: the quantizer nearest at the most designed rates, its gaps there."""
    if t6 is None or t6.empty or t6["gap_bits"].isna().all():
        return []
    t6 = t6[t6["model"] == sorted(t6["model"])[0]].dropna(subset=["gap_bits"])
    parts, winners = [], []
    for M, rows in t6.groupby("M"):
        nearest = rows.loc[rows.groupby("R")["gap_bits"].idxmin()]
        counts = nearest["quantizer"].value_counts()
        name = min(counts.index, key=lambda n: (-counts[n], n))  # a tie: the first name
        own = nearest[nearest["quantizer"] == name]["gap_bits"]
        winners.append(name)
        parts.append(f"M = {M:g}: {name}, nearest at {len(own)} of {len(nearest)} rates, "
                     f"{own.min():.2f}-{own.max():.2f} bits above R(D)")  # fmt: skip
    return [{
        "question": "(beyond both papers) How near the rate-distortion limit does the best "
        "quantizer get, on a real update tensor?",
        "the paper": "",
        "this study": " / ".join(dict.fromkeys(winners)) + " nearest",
        "the number [95% interval]": "; ".join(parts) + " (one tensor, no interval)",
        "from": "T6",
    }]  # fmt: skip


def _read(folder: Path, name: str) -> pd.DataFrame | None:
    path = folder / f"{name}.tsv"
    return pd.read_csv(path, sep="\t") if path.exists() else None


def answers(tables: str | Path) -> pd.DataFrame:
    """One row per question (module doc) from the tables folder ``tables`` (T1.tsv, T2.tsv,
    verdicts.tsv, T6.tsv; any of them may be missing)."""
    folder = Path(tables)
    verdicts = _read(folder, "verdicts")
    if verdicts is not None and "model" in verdicts:
        verdicts = verdicts[verdicts["model"] == sorted(verdicts["model"])[0]]
    rows = _paper_l(_read(folder, "T1"), _read(folder, "T2")) + _paper_y(verdicts)
    rows += _limit(_read(folder, "T6"))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def answers_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown (the cells as they are)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def with_answers(readme: str, table_md: str) -> str:
    """``readme`` with the block between :data:`BEGIN` and :data:`END` replaced by
    ``table_md``; ValueError naming the marker that is missing."""
    for marker in (BEGIN, END):
        if marker not in readme:
            raise ValueError(f"the README has no marker {marker!r}")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table_md}{END}{tail}"


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m gradcomp.answers TABLES README``: rewrite the README's answers block."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        raise SystemExit("usage: python -m gradcomp.answers TABLES_FOLDER README.md")
    readme = Path(args[1])
    readme.write_text(with_answers(readme.read_text(), answers_markdown(answers(args[0]))))


if __name__ == "__main__":
    main()
