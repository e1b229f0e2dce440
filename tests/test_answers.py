"""The answers table (gradcomp.answers): the README's block is what the module makes of the
default run's tables (docs/tables), its words follow the tables it reads (hand-made tables
where the answer is known), and a missing table leaves its questions out."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gradcomp.answers import BEGIN, END, answers, answers_markdown, main, with_answers

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_block_is_the_default_runs_answers():
    """Planted bug: a number edited by hand in the README (the block then differs)."""
    readme = (REPO / "README.md").read_text()
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    assert block == answers_markdown(answers(REPO / "docs/tables")).strip("\n")
    assert readme.index(BEGIN) < readme.index("## What comes out")  # the answers come first


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
    ("bits", "huffman", "question_l"),
    [((5.6, 5.7, 5.4, 5.65), "reproduced", "not as an i.i.d. law"),
     ((5.8, 5.7, 5.7, 5.65), "not reproduced", "yes")],
)  # fmt: skip
def test_paper_l_words_follow_t1(tmp_path, bits, huffman, question_l):
    """GenNorm's Huffman code below Norm's: reproduced, else not (the slip accounting's rows
    are not read); a context coder below the i.i.d. entropy: "not as an i.i.d. law"."""
    t1(*bits).to_csv(tmp_path / "T1.tsv", sep="\t", index=False)
    table = answers(tmp_path).set_index("from")
    assert list(table["this study"]) == [huffman, question_l]
    assert (
        "5.60 against 5.70" in table.iloc[0]["the number [95% interval]"] or huffman != "reproduced"
    )


def test_paper_y_rows_come_from_the_verdicts_and_missing_ones_are_left_out(tmp_path):
    verdicts = pd.DataFrame([{
        "model": "cnn", "question": "uniform R1 M0 on top-K 45.2% vs uncompressed",
        "family": "one bit", "rate": 1, "test": "uniform", "loss_diff_mean": 0.1,
        "loss_diff_lo": 0.04, "loss_diff_hi": 0.16, "acc_diff_mean": -0.026,
        "bits_per_entry": 1.586, "verdict": "worse",
    }])  # fmt: skip
    verdicts.to_csv(tmp_path / "verdicts.tsv", sep="\t", index=False)
    table = answers(tmp_path)
    assert len(table) == 1  # no T1, T2, field rows or other questions: left out
    row = table.iloc[0]
    assert row["this study"] == "worse"
    assert row["the number [95% interval]"].startswith("+0.100 [+0.040, +0.160] nats")
    assert "-2.6 accuracy points" in row["the number [95% interval]"]


def test_with_answers_replaces_the_block_and_names_a_missing_marker(tmp_path):
    text = f"# x\n\n{BEGIN}\nold\n{END}\ntail\n"
    assert with_answers(text, "new\n") == f"# x\n\n{BEGIN}\nnew\n{END}\ntail\n"
    with pytest.raises(ValueError, match="end of answers"):
        with_answers(f"{BEGIN}\n", "new\n")
    readme = tmp_path / "README.md"
    readme.write_text(text)
    main([str(REPO / "docs/tables"), str(readme)])
    assert "| question | the paper |" in readme.read_text()


def test_the_limit_row_names_the_quantizer_nearest_the_bound_at_most_rates(tmp_path):
    """From T6 (hand-made): per M, the quantizer with the smallest gap at the most rates and
    its gaps there; unreached gaps (NaN) are not counted (planted bug: the mean gap over all
    quantizers, or the first model's rows mixed with the second's)."""
    rows = []
    gaps = {1: (0.15, 0.2), 2: (0.1, 0.3), 3: (0.15, 0.4), 4: (float("nan"), 0.6)}
    for R, (a, b) in gaps.items():
        rows += [{"model": "cnn", "M": 2, "R": R, "quantizer": "a", "gap_bits": a},
                 {"model": "cnn", "M": 2, "R": R, "quantizer": "b", "gap_bits": b},
                 {"model": "zzz", "M": 2, "R": R, "quantizer": "b", "gap_bits": 0.01}]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "T6.tsv", sep="\t", index=False)
    row = answers(tmp_path).set_index("from").loc["T6"]
    assert row["this study"] == "a nearest"
    assert (
        "M = 2: a, nearest at 3 of 4 rates, 0.10-0.15 bits above R(D)"
        in (row["the number [95% interval]"])
    )
