"""The answers table (gradcomp.answers): the README's block is what the module makes of the
tables in docs/tables (the decisive run's paper Y); its words follow the tables it reads
(hand-made tables where the answer is known); the interval shown agrees with the word on the
page itself (verdict tables made by the real procedure on simulated studies, read back from the
Markdown); each claim carries the contrary finding the tables hold; a missing table leaves
its questions out."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gradcomp.answer_cells import NUMBER
from gradcomp.answers import answers, answers_markdown, check_agreement, markdown_of
from gradcomp.answers_paper_y import PAPER_Y, decided
from gradcomp.docblocks import begin, end
from gradcomp.statistics.verdict_simulation import default_scenario, replicate

REPO = Path(__file__).resolve().parents[1]
MARGIN = 0.004


def test_the_readme_block_is_what_docs_tables_give():
    """Planted bug: a number edited by hand in the README (the block then differs)."""
    readme = (REPO / "README.md").read_text()
    opening = begin("answers", "README.md")
    block = readme.split(opening, 1)[1].split(end("answers"), 1)[0].strip("\n")
    assert block == markdown_of(REPO / "docs/tables").strip("\n")
    assert readme[: readme.index(opening)].count("\n") < 40  # the answers on the first screen


def t1(gennorm: float, norm: float, cm: float, entropy: float) -> pd.DataFrame:
    rows = [("huffman_gennorm", gennorm), ("huffman_norm", norm), ("cm_fast", cm),
            ("entropy", entropy)]  # fmt: skip
    return pd.DataFrame(
        [{"model": "cnn", "scaling": "none", "accounting": "exact", "coder": c,
          "bits_per_entry_mean": b} for c, b in rows]
        + [{"model": "cnn", "scaling": "none", "accounting": "slip", "coder": "huffman_norm",
            "bits_per_entry_mean": 1.0}]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("bits", "huffman", "shortest"),
    [((5.6, 5.7, 5.4, 5.55), "reproduced", "no: a context model"),
     ((5.8, 5.7, 5.7, 5.65), "not reproduced", "yes: no code beats")],
)  # fmt: skip
def test_paper_l_words_follow_t1(tmp_path, bits, huffman, shortest):
    """GenNorm's Huffman code below Norm's: reproduced, else not (the slip accounting's rows
    are not read); a context coder below the i.i.d. entropy: no i.i.d. code is the answer;
    against it, GenNorm's Huffman code's distance to the i.i.d. entropy."""
    t1(*bits).to_csv(tmp_path / "T1.tsv", sep="\t", index=False)
    table = answers(tmp_path)
    assert table.iloc[0]["this study"] == huffman
    assert table.iloc[1]["this study"].startswith(shortest)
    gap = bits[0] - bits[3]
    assert (
        f"{gap:.2f}-{gap:.2f} bits per entry above the i.i.d. entropy"
        in (table.iloc[1]["the evidence against"])
    )
    if huffman == "reproduced":
        assert "5.60 against 5.70" in table.iloc[0][NUMBER]
        assert "context mixing (fast) 5.40" in table.iloc[1][NUMBER]  # a reader's name
        assert "0.10 bits per entry (1.8%)" in table.iloc[0]["the evidence against"]


def test_the_fit_row_names_the_cells_where_gennorm_fits_worse(tmp_path):
    """T2 (hand-made): GenNorm's tails better in 2 of 2 cells, but its trimmed W2 4x the
    normal law's on the first layers, where Laplace fits best."""
    rows = []
    for pos, w2 in (("lower", {"gennorm": 0.8, "norm": 0.2, "laplace": 0.1}),
                    ("upper", {"gennorm": 0.1, "norm": 0.3, "laplace": 0.2})):  # fmt: skip
        for fam, w in w2.items():
            tail = 0.5 if fam == "gennorm" else 2
            rows.append({"model": "cnn", "kind": "epoch_avg", "position": pos, "family": fam,
                         "w2_mean": w, "tail_log10_err_mean": tail})  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "T2.tsv", sep="\t", index=False)
    row = answers(tmp_path).iloc[0]
    assert row["this study"] == "reproduced"
    assert "first layers of cnn 4.0x (best there: Laplace)" in row["the evidence against"]
    assert "last layers" not in row["the evidence against"]


def verdict_row(label, verdict, mean, lo, hi, **extra):
    test = label.split()[0]
    row = {
        "model": "cnn", "question": label, "family": "one bit", "test": test,
        "test_curve": test.removesuffix("k10"), "test_point": label.split()[0] + "/R1_M2",
        "test_name": f"{test} name", "reference": "uniform", "reference_M": 0,
        "reference_name": "uniform on the same kept set", "match": "kept_set", "M": 2,
        "rate": 1, "loss_diff_mean": mean, "decided_lo": lo, "decided_hi": hi,
        "loss_diff_lo": lo, "loss_diff_hi": hi, "acc_diff_mean": -mean / 4,
        "bits_per_entry": 1.586, "margin": MARGIN, "min_detectable": 0.01, "verdict": verdict,
    }  # fmt: skip
    row.update(extra)
    return row


def test_paper_y_claims_carry_the_contrary_verdicts(tmp_path):
    """GenNorm M2 better than uniform at 45.2%, worse on top-K 10% (same curve) and M2
    against M0 undecided: both come into the claim's row; float32 rows state the bits saved
    and the accuracy per bit; a question not in the table is left out."""
    rows = [
        verdict_row("gennorm R1 M2 on top-K 45.2% vs uniform M0, kept set", "better",
                    -0.1, -0.15, -0.05),
        verdict_row("gennormk10 R1 M2 on top-K 10% vs uniform M0, kept set", "worse",
                    0.027, 0.01, 0.04),
        verdict_row("gennorm R1 M2 on top-K 45.2% vs gennorm M0, kept set", "undecided",
                    -0.008, -0.02, 0.004, reference="gennorm", reference_M=0),
        verdict_row("uniform R1 M0 on top-K 45.2% vs uncompressed", "worse", 0.1, 0.04, 0.16,
                    match="exact", reference="exact", M=0, acc_diff_mean=-0.026),
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    t5 = [
        {
            "model": "cnn",
            "curve": c,
            "M": 2,
            "baseline": b,
            "bd_rate_mean": 40.0,
            "verdict": "more bits",
        }
        for c, b in (("gennorm", "uniform"), ("gennorm", "other"))
    ]
    pd.DataFrame(t5).to_csv(tmp_path / "T5.tsv", sep="\t", index=False)  # fmt: skip
    table = answers(tmp_path).set_index("question")
    claim = table.loc[PAPER_Y[4][0]]
    assert claim["the evidence against"].count("BD-rate +40%") == 1  # against uniform only
    assert claim["this study"] == "better"
    assert (
        "worse for gennormk10 name: +0.027 [+0.010, +0.040] nats" in (claim["the evidence against"])
    )
    assert "M=2 against M=0 is undecided" in claim["the evidence against"]
    m_row = table.loc[PAPER_Y[7][0]]
    assert m_row["this study"].startswith("undecided (the interval holds 0")
    first = table.loc[PAPER_Y[0][0]]
    assert "+0.100 [+0.040, +0.160] nats of test loss, -2.6 accuracy points" in first[NUMBER]
    # 2.6 points for 32 - 1.586 bits per entry saved
    assert f"{2.6 / (32 - 1.586):.3f} points per bit per entry" in first[NUMBER]
    assert len(table) == 3  # the top-K 10% question is no README row of its own


def test_a_question_against_one_configuration_reads_with_both_bits(tmp_path):
    """A question against one reference configuration (``reference_rate``) in a family of
    its own: its README row asks about both configurations at their own bits and its number
    states both, never "the same bits"; it is no evidence against the curve question of the
    same test (nor that against it); T5 is no evidence against it (the curves at the same
    loss; here BD-rate says the test's curve needs more bits, against "better"). Planted
    bugs that fail it: reference_rate ignored in the rows taken as "the same test against
    the same reference"; T5's BD-rate taken as evidence against it; the number saying "at
    the same bits"."""
    one = "ecsq R2 M2 on top-K 45.2% (0.50 bits) vs gennorm R1 M2 (1.00 bits), same kept set"
    rows = [
        verdict_row(one, "better", -0.02, -0.03, -0.01, family="coded bits", test="ecsq",
                    test_curve="gennorm", test_point="ecsq/R2_M2", test_name="ecsq name",
                    reference="gennorm", reference_M=2, reference_rate=1, rate=2,
                    bits_per_entry=0.5, reference_bits=1.0,
                    reference_name="GenNorm Lloyd M=2, 1 bit on the same kept set"),
        verdict_row("ecsq R2 M2 on top-K 45.2% vs gennorm M2, kept set", "worse", 0.03, 0.01,
                    0.05, family="coded bits", test="ecsq", test_curve="gennorm",
                    test_point="ecsq/R2_M2", reference="gennorm", reference_M=2,
                    reference_rate=None, rate=2, bits_per_entry=0.5),
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    t5 = [{"model": "cnn", "curve": "gennorm", "M": 2, "baseline": "gennorm",
           "bd_rate_mean": 40.0, "verdict": "more bits"}]  # fmt: skip
    pd.DataFrame(t5).to_csv(tmp_path / "T5.tsv", sep="\t", index=False)
    table = answers(tmp_path)
    direct = table[table["question"].str.contains("at its 1.00")]
    assert len(direct) == 1 and len(table) == 2
    (row,) = direct.to_dict("records")
    assert row["question"] == (
        "(beyond both papers) Does ecsq name at 0.50 bits per entry beat GenNorm Lloyd M=2, "
        "1 bit on the same kept set at its 1.00?"
    )
    assert row["this study"] == "better"
    assert row[NUMBER].endswith("at 0.50 bits per entry against the reference's 1.00")
    assert row["the evidence against"] == "none found in the verdicts"
    curve = table[~table.index.isin(direct.index)].iloc[0]
    assert curve[NUMBER].endswith("at the same 0.50 bits per entry")
    assert curve["the evidence against"] == "none found in the verdicts"


def test_a_design_against_float32_and_single_configurations_reads_in_one_row(tmp_path):
    """A family that asks one test against float32 and against single reference
    configurations at their own bits (the one-coded-bit questions of config/decisive.yaml)
    reads as one row per test curve: its word against float32 per M, every comparison's
    interval with both bits, and as evidence against it the comparisons whose word runs the
    other way and the undecided ones. Planted bugs that fail it: one row per question (the
    generic "beyond" rows), the M dropped from the words, the worse comparison left out of
    the evidence against, an undecided one called decided."""
    fam = dict(family="one coded bit", test="ecsqb05", test_curve="ecsqb05",
               test_point="ecsqb05/R1_M2", rate=1, bits_per_entry=1.35)  # fmt: skip
    lloyd = dict(reference="gennorm", reference_M=2, reference_rate=1, reference_bits=1.58,
                 reference_name="GenNorm Lloyd M=2, 1 bit on the same kept set")  # fmt: skip
    uniform = dict(reference="uniform", reference_M=0, reference_rate=1, reference_bits=1.58,
                   reference_name="uniform, 1 bit on the same kept set")  # fmt: skip
    exact = dict(reference="none", reference_M=0, reference_rate=None, match="exact",
                 reference_name="uncompressed")  # fmt: skip
    name = "GenNorm entropy-constrained M={}, 0.5 target bits, top-K 45.2%"
    rows = []
    for M, w_exact, w_lloyd in ((0, "equivalent", "worse"), (2, "worse", "undecided")):
        label = f"ecsqb05 R1 M{M}"
        common = {**fam, "M": M, "test_name": name.format(M)}
        rows += [
            verdict_row(f"{label} vs uncompressed", w_exact, *((0.0, -0.002, 0.002) if M == 0
                        else (0.005, 0.001, 0.009)), **common, **exact),
            verdict_row(f"{label} vs gennorm R1 M2", w_lloyd, 0.004, 0.001 if w_lloyd ==
                        "worse" else -0.002, 0.008, **common, **lloyd),
            verdict_row(f"{label} vs uniform R1 M0", "better", -0.1, -0.12, -0.08, **common,
                        **uniform),
        ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    table = answers(tmp_path)
    assert len(table) == 1
    (row,) = table.to_dict("records")
    assert "GenNorm entropy-constrained, 0.5 target bits, top-K 45.2%" in row["question"]
    assert row["this study"] == "M=0: equivalent to float32; M=2: worse than float32"
    assert row[NUMBER].count("nats") == 6 and "1.35 bits per entry" in row[NUMBER]
    assert "GenNorm Lloyd M=2, 1 bit at 1.58" in row[NUMBER]
    against = row["the evidence against"]
    assert against.startswith("M=0 worse than GenNorm Lloyd M=2, 1 bit at 1.58")
    assert "M=2 undecided against GenNorm Lloyd M=2, 1 bit at 1.58" in against
    assert "uniform" not in against  # better than uniform runs the same way as the word


def shown_intervals(markdown: str) -> list[tuple[str, float, float, float]]:
    """(word, lo, hi, margin) of every paper-Y row as the page shows it (read from the
    Markdown alone: the first bracket of the number column, the word's first token)."""
    margin = float(re.search(r"inside ±([0-9.]+) nats", markdown).group(1))
    out = []
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 6 or "nats of test loss" not in cells[3]:
            continue
        lo, hi = re.search(r"\[([-+0-9.e]+), ([-+0-9.e]+)\]", cells[3]).groups()
        out.append((cells[2].split()[0], float(lo), float(hi), margin))
    return out


def agrees(word, lo, hi, m):
    return {
        "better": hi < 0, "worse": lo > 0, "equivalent": -m < lo and hi < m,
        "undecided": lo <= 0 <= hi and (lo <= -m or hi >= m),
    }[word]  # fmt: skip


@pytest.fixture(scope="module")
def simulated():
    """Verdict tables made by the real procedure on simulated studies: no difference (a
    wide margin: equivalents), 1.5 and 6 margins off (better, worse, undecided), relabelled
    as the README's questions."""
    s = default_scenario()
    n = len(s.questions())
    runs = [
        replicate(s, 40, 2, 3, seed=11, shift=0.0, margin=3 * MARGIN),
        replicate(s, 16, 1, 4, seed=12, shift=1.5 * MARGIN * (-1.0) ** np.arange(n),
                  margin=MARGIN),
        replicate(s, 16, 1, 4, seed=13, shift=6 * MARGIN * (-1.0) ** np.arange(n),
                  margin=MARGIN),
    ]  # fmt: skip
    return [t.dropna(subset=["p"]) for run in runs for _, t in run.groupby("rep")]


@pytest.mark.slow
def test_the_page_never_shows_a_word_its_interval_contradicts(simulated, tmp_path):
    """Read back from the Markdown: every paper-Y row's shown interval agrees with its word,
    over studies where every verdict occurs (and rounding never puts an end on the wrong
    side of 0 or the margin)."""
    words = set()
    labels = [label for _, _, label in PAPER_Y]
    for i, table in enumerate(simulated):
        t = table.head(len(labels)).copy()
        t["question"] = labels[: len(t)]
        t.to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
        shown = shown_intervals(markdown_of(tmp_path))
        assert len(shown) == len(t), i
        for word, lo, hi, m in shown:
            words.add(word)
            assert agrees(word, lo, hi, m), (i, word, lo, hi, m)
    assert words == {"better", "worse", "equivalent", "undecided"}


@pytest.mark.slow
def test_the_unadjusted_interval_is_refused(simulated):
    """Planted bug: the raw 95% interval under the adjusted word. Some simulated rows then
    disagree, and the table is refused naming the question."""
    refused = 0
    for table in simulated:
        t = table.assign(decided_lo=table["loss_diff_lo"], decided_hi=table["loss_diff_hi"])
        try:
            check_agreement(t)
        except ValueError as e:
            assert "word and interval disagree" in str(e)
            refused += 1
    assert refused > 0
    for table in simulated:
        check_agreement(table)  # the real columns: never refused


def test_no_table_gives_the_header_alone(tmp_path):
    page = answers_markdown(answers(tmp_path / "none"))
    assert sum(line.startswith("|") for line in page.splitlines()) == 2  # header only


def test_the_limit_row_names_the_quantizer_nearest_the_bound_at_most_rates(tmp_path):
    """From T6 (hand-made): per M, the quantizer with the smallest gap at the most rates and
    its gaps there, the rates where another is nearer against it; unreached gaps (NaN) are
    not counted, nor a rate where one design alone has a row (planted bug: the mean gap over
    all quantizers, or the first model's rows mixed with the second's)."""
    rows = []
    gaps = {1: (0.15, 0.2), 2: (0.1, 0.3), 3: (0.15, 0.4), 4: (float("nan"), 0.6),
            5: (0.5, 0.3)}  # fmt: skip
    for R, (a, b) in gaps.items():
        rows += [{"model": "cnn", "M": 2, "R": R, "quantizer": "a", "gap_bits": a},
                 {"model": "cnn", "M": 2, "R": R, "quantizer": "b", "gap_bits": b},
                 {"model": "zzz", "M": 2, "R": R, "quantizer": "b", "gap_bits": 0.01}]  # fmt: skip
    # below one bit only one design goes (arithmetic-coded): no rate it is "nearest" at
    rows.append({"model": "cnn", "M": 2, "R": 0.5, "quantizer": "b", "gap_bits": 0.01})
    pd.DataFrame(rows).to_csv(tmp_path / "T6.tsv", sep="\t", index=False)
    row = answers(tmp_path).iloc[0]
    assert row["this study"] == "nearest: a"
    assert "M=2: a, nearest at 3 of 5 rates, 0.10-0.15 bits above R(D)" in row[NUMBER]
    assert "at M=2, 4 bits b is nearer (0.60 bits)" in row["the evidence against"]


def test_the_m_question_lists_every_m_with_its_word_and_the_contrary_rate(tmp_path):
    """Several M against M=0 at one rate make one row: the best of the better ones named,
    each M's interval listed, and against it each M's word against float32 and another
    rate's opposite word; one M alone makes no M row (the paper's own row covers it)."""

    def vs0(M, rate, verdict, mean):
        label = f"gennorm R{rate} M{M} on top-K 45.2% vs gennorm M0, kept set"
        return verdict_row(label, verdict, mean, mean - 0.002, mean + 0.002, M=M, rate=rate,
                           reference="gennorm", test_name=f"GenNorm M={M} R{rate}",
                           reference_name="GenNorm Lloyd M=0 on the same kept set",
                           family="M against M0")  # fmt: skip

    rows = [vs0(1, 1, "better", -0.005), vs0(2, 1, "better", -0.009),
            vs0(3, 1, "undecided", -0.002), vs0(2, 2, "worse", 0.006),
            verdict_row("gennorm R1 M2 on top-K 45.2% vs uncompressed", "worse", 0.01, 0.005,
                        0.015, match="exact", reference="exact", M=2, rate=1)]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    table = answers(tmp_path)
    m_rows = table[table["question"].str.startswith("Which weight M")]
    assert len(m_rows) == 1  # rate 2 has one M only
    row = m_rows.iloc[0]
    assert row["this study"] == "M=2 buys the most; better: M=1, M=2"
    assert "M=3: -0.002 [-0.004, +0.000" in row[NUMBER]
    assert "against float32 at the same bits: M=2 worse" in row["the evidence against"]
    assert "worse for GenNorm M=2 R2: +0.006 [+0.004, +0.008] nats" in row["the evidence against"]


def test_the_default_says_what_it_cannot_decide(tmp_path):
    """The scope line counts the decided questions and lists each undecided one with the
    difference it detects and the warm starts it would need for the target."""
    rows = [
        verdict_row("gennorm R1 M2 on top-K 45.2% vs uniform M0, kept set", "better",
                    -0.1, -0.15, -0.05),
        verdict_row("gennorm R1 M2 on top-K 45.2% vs gennorm M0, kept set", "undecided",
                    -0.008, -0.02, 0.004, units_for_target=37.0, target=0.005,
                    min_detectable=0.016),
    ]  # fmt: skip
    rows[0].update(units_for_target=3.0, target=0.005)
    pd.DataFrame(rows).to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    text = markdown_of(tmp_path)
    assert "What this run can decide: 1 of its 2 declared questions." in text
    assert "detect 0.005 nats: gennorm name against uniform on the same kept set: 0.016, 37." in (
        " ".join(text.split())
    )


def test_two_configurations_that_decode_alike_read_as_no_difference():
    """A decided interval of float noise around 0 (the entropy-constrained design at one bit
    and M=2 is GenNorm Lloyd's two levels: the same losses on every warm start) reads as the
    same loss, not as +0.0000 [-1e-09, +1e-09]; a small real difference still reads as its
    interval (planted bug: a threshold on the margin's scale would hide it)."""
    same = {"margin": 0.004, "loss_diff_mean": 3e-18, "decided_lo": -1.2e-9, "decided_hi": 1.2e-9}
    assert decided(same) == "0 [the same test loss on every warm start] nats"
    small = {"margin": 0.004, "loss_diff_mean": 1e-4, "decided_lo": -2e-5, "decided_hi": 2.2e-4}
    assert decided(small).startswith("+0.0001 [-0.00002, +0.0002")
