"""A missing value stays missing in every table's aggregation, with its reason, never a 0 or
the statistic of the rows that are left: T1 with a coder whose every size is NaN (zpaq where
it is not installed) and one whose size is NaN in one tensor, the strict group sums against
a loop written here, and the summaries and uplink sums the other tables use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gradcomp import reporting
from gradcomp.coding.zpaq import ZpaqSize
from gradcomp.lossless.paper_l_tables import T1_COLUMNS, coding_rate_table


def coding_rows(coder, bits, run):
    return [
        {"model": "cnn", "scaling": "none", "accounting": "exact", "coder": coder, "run": run,
         "length": "bound" if coder == "zpaq" else "stream", "total_bits": b, "numel": 1000,
         "n_nonzero": 990, "n_exact_zero": 0, "n_saturated": 0}
        for b in bits
    ]  # fmt: skip


def test_t1_shows_an_all_nan_coder_as_missing_with_its_reason(monkeypatch):
    """zpaq without the program: every size NaN, so T1 says missing and why, where the
    group sums of pandas gave 0 +- 0 bits first in the block. A coder with one NaN tensor
    is missing too (not the sum of its other tensors). Planted bugs that fail it: sum()
    without the NaN mask (0 bits); the mean over runs skipping a NaN run."""
    monkeypatch.setattr("shutil.which", lambda name: None)
    rows = (coding_rows("zpaq", [np.nan, np.nan], 0) + coding_rows("zpaq", [np.nan], 1)
            + coding_rows("fp8", [8000.0, 8000.0], 0) + coding_rows("fp8", [8000.0], 1)
            + coding_rows("lzma", [5000.0, np.nan], 0)
            + coding_rows("lzma", [5000.0], 1))  # fmt: skip
    table = coding_rate_table(pd.DataFrame(rows, columns=list(T1_COLUMNS))).set_index("coder")
    assert np.isnan(table.loc["zpaq", "bits_per_entry_mean"])
    assert np.isnan(table.loc["zpaq", "bits_per_entry_sd"])
    assert table.loc["zpaq", "missing"] == ZpaqSize.unavailable()
    assert "not installed" in table.loc["zpaq", "missing"]
    assert np.isnan(table.loc["lzma", "bits_per_entry_mean"])  # one run has a NaN tensor
    assert table.loc["lzma", "missing"] == "a size in coding.tsv is NaN"
    assert table.loc["fp8", "bits_per_entry_mean"] == pytest.approx(8.0)
    assert table.loc["fp8", "missing"] == ""
    md = reporting.to_markdown(table.reset_index()[["coder", "bits_per_entry_mean"]])
    assert "| zpaq | – |" in md and "| zpaq | 0 |" not in md


def test_strict_sums_equal_a_loop_and_keep_nan():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"g": rng.integers(0, 5, 200), "h": rng.integers(0, 2, 200),
                         "x": rng.normal(size=200)})  # fmt: skip
    data.loc[rng.choice(200, 7, replace=False), "x"] = np.nan
    got = reporting.strict_sums(data, ["g", "h"], ["x"])["x"]
    for (g, h), part in data.groupby(["g", "h"]):
        want = part["x"].to_numpy().sum()  # numpy: any NaN gives NaN
        assert (np.isnan(want) and np.isnan(got[(g, h)])) or got[(g, h)] == pytest.approx(want)


def test_summarise_leaves_no_partial_mean():
    data = pd.DataFrame({"k": ["a", "a", "b", "b"], "v": [1.0, np.nan, 2.0, 4.0]})
    out = reporting.summarise(data, by=["k"], metrics=["v"]).set_index("k")
    assert np.isnan(out.loc["a", "v_mean"]) and np.isnan(out.loc["a", "v_sd"])
    assert out.loc["b", "v_mean"] == 3.0 and out.loc["b", "n"] == 2
