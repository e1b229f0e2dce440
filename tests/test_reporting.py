"""Table files: Markdown for reading (3 significant digits, shares in percent, intervals,
yes/no) and TSV at full precision, written one way for the whole pipeline.

The expected Markdown cells are written out by hand from the rule (3 significant digits of
the value, or of 100 x the value for a share); the TSV is read back with Python's ``csv``
and ``float`` and compared exactly with the numbers written."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from gradcomp.artifacts import write_tsv
from gradcomp.reporting import to_markdown, write_table


def cells(md: str) -> list[dict[str, str]]:
    """The Markdown table's rows as header -> cell (a parser written for the test)."""
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()]
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r, strict=True)) for r in body]


def test_three_significant_digits_and_mean_sd_pairs() -> None:
    """Planted bug: 4 digits (the old default) prints 0.0001541 and 5.555."""
    table = pd.DataFrame(
        {"coder": ["a", "b"], "bits_mean": [0.00015413, 5.5551], "bits_sd": [2.1213e-05, 0.0059]}
    )
    (row_a, row_b) = cells(to_markdown(table))
    assert row_a == {"coder": "a", "bits": "0.000154 ± 2.12e-05"}
    assert row_b == {"coder": "b", "bits": "5.56 ± 0.0059"}


def test_shares_and_fractions_as_percentages() -> None:
    """Columns named *share* / *frac*, and those listed in ``percent``, are fractions shown in
    percent; others are not (planted bug: the share printed as a plain fraction 0.0049)."""
    table = pd.DataFrame(
        {
            "zero_share_mean": [0.0049], "zero_share_sd": [0.000123],
            "kept_frac": [0.452], "acc": [0.6134], "loss": [0.6134],
        }
    )  # fmt: skip
    (row,) = cells(to_markdown(table, percent=["acc"]))
    assert row == {
        "zero_share": "0.49% ± 0.0123%", "kept_frac": "45.2%", "acc": "61.3%", "loss": "0.613",
    }  # fmt: skip


def test_interval_triplets_become_one_column() -> None:
    """``x_mean``, ``x_lo``, ``x_hi`` -> ``x`` as ``m [lo, hi]``; a ``_lo`` without its
    ``_mean`` stays a column (planted bug: lo and hi swapped, or left as own columns)."""
    table = pd.DataFrame(
        {
            "rate": [2, 4], "gain_mean": [1.2345e-8, -0.5], "gain_lo": [-2.0e-9, -0.61234],
            "gain_hi": [2.6789e-8, -0.38], "other_lo": [1.0, 2.0],
        }
    )  # fmt: skip
    md = to_markdown(table)
    assert md.splitlines()[0] == "| rate | gain | other_lo |"
    rows = cells(md)
    assert rows[0] == {"rate": "2", "gain": "1.23e-08 [-2e-09, 2.68e-08]", "other_lo": "1"}
    assert rows[1]["gain"] == "-0.5 [-0.612, -0.38]"


def test_booleans_nan_and_integers() -> None:
    """Booleans read yes / no (planted bug: False printed as an empty cell), NaN as a dash,
    integers exactly (no rounding of 552182 to 3 digits)."""
    table = pd.DataFrame({"flag": [True, False], "bits": [552182, 7], "x": [float("nan"), 1.0]})
    rows = cells(to_markdown(table))
    assert rows == [
        {"flag": "yes", "bits": "552182", "x": "–"},
        {"flag": "no", "bits": "7", "x": "1"},
    ]


def test_tsv_keeps_full_precision(tmp_path: Path) -> None:
    """Every float reads back bit for bit, NaN as nan (planted bug: a float format such as
    ``%.6g`` in the TSV, which loses 1/3 and 0.1 + 0.2)."""
    values = [1 / 3, 0.1 + 0.2, 1e-300, -2.5e17, float("nan"), float(np.float32(0.1))]
    table = pd.DataFrame(
        {"name": list("abcdef"), "x": values, "n": range(6), "ok": [True, False] * 3}
    )
    write_table(table, tmp_path / "t.tsv", tmp_path / "t.md", title="T")
    with open(tmp_path / "t.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert [r["name"] for r in rows] == list("abcdef")
    for r, v in zip(rows, values, strict=True):
        got = float(r["x"])
        assert (math.isnan(got) and math.isnan(v)) or got == v
    assert [r["n"] for r in rows] == [str(i) for i in range(6)]
    assert [r["ok"] for r in rows] == ["True", "False"] * 3
    back = pd.read_csv(tmp_path / "t.tsv", sep="\t")
    assert back["x"].iloc[:4].tolist() == values[:4] and back["ok"].dtype == bool
    md = (tmp_path / "t.md").read_text()
    assert md.startswith("# T\n\n") and "| a | 0.333 | 0 | yes |" in md


def test_tsv_from_rows_equals_tsv_from_frame(tmp_path: Path) -> None:
    """Rows as mappings (the training and federated logs) and a DataFrame give the same bytes;
    rows need their column names; a cell with a tab is refused."""
    rows = [{"b": 0.1, "a": 1, "c": "x"}, {"b": float("nan"), "a": 2, "c": "y"}]
    write_tsv(tmp_path / "rows.tsv", rows, ("a", "b", "c"))
    write_tsv(tmp_path / "frame.tsv", pd.DataFrame(rows)[["a", "b", "c"]])
    text = (tmp_path / "rows.tsv").read_text()
    assert text == "a\tb\tc\n1\t0.1\tx\n2\tnan\ty\n"
    assert (tmp_path / "frame.tsv").read_text() == text
    with pytest.raises(TypeError, match="columns"):
        write_tsv(tmp_path / "x.tsv", rows)
    with pytest.raises(ValueError, match="tab or newline"):
        write_tsv(tmp_path / "x.tsv", pd.DataFrame({"a": ["p\tq"]}))


def test_every_tsv_goes_through_write_tsv() -> None:
    """One definition of TSV writing: no module of the library or the workflow writes a
    table with ``to_csv`` (planted bug: a module going back to ``table.to_csv``)."""
    sources = [*(REPO / "src").rglob("*.py"), *(REPO / "workflow").rglob("*.py")]
    offenders = [p.name for p in sources if re.search(r"\.to_csv\(", p.read_text())]
    assert offenders == []


def test_markdown_is_at_most_ten_columns_counting_an_interval_once() -> None:
    """Ten columns render (an ``x_mean`` / ``x_lo`` / ``x_hi`` group is one of them); an
    eleventh is refused, naming the columns (planted bug: no limit, or the limit counted
    over the raw columns, which refuses a readable table of intervals)."""
    ten = pd.DataFrame({f"c{i}": [1.0] for i in range(9)})
    ten[["x_mean", "x_lo", "x_hi"]] = [[0.5, 0.4, 0.6]]
    assert to_markdown(ten).splitlines()[0].count("|") == 11
    with pytest.raises(ValueError, match=r"11 columns \(c0, .*, x, extra\)"):
        to_markdown(ten.assign(extra=1))
