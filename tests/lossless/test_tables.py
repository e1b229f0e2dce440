from __future__ import annotations

import pandas as pd
import pytest

from gradcomp.lossless.paper_l_tables import coding_rate_table
from gradcomp.reporting import summarise, to_markdown


def test_summarise_mean_sd_n() -> None:
    data = pd.DataFrame({"g": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]})
    out = summarise(data, by=("g",), metrics=("x",))
    assert out.set_index("g").loc["a", "x_mean"] == 2.0
    assert out.set_index("g").loc["a", "x_sd"] == pytest.approx(2**0.5)
    assert out.set_index("g").loc["a", "n"] == 2
    assert pd.isna(out.set_index("g").loc["b", "x_sd"])


def test_markdown_pairs_mean_and_sd() -> None:
    out = summarise(pd.DataFrame({"g": ["a", "a"], "x": [1.0, 3.0]}), by=("g",), metrics=("x",))
    md = to_markdown(out)
    assert md.splitlines()[0] == "| g | x | n |"
    assert "2 ± 1.41" in md  # 3 significant digits


def test_coding_rate_table_adds_bits_within_run() -> None:
    rows = []
    for run, scale in ((0, 1.0), (1, 2.0)):
        for tensor, numel, zeros in (("a", 100, 10), ("b", 300, 0)):
            rows.append(
                {
                    "model": "m",
                    "scaling": "none",
                    "accounting": "exact",
                    "coder": "c",
                    "run": run,
                    "tensor": tensor,
                    "numel": numel,
                    "total_bits": scale * 2 * numel,
                    "n_nonzero": numel - zeros * run,  # run 1: 10 entries of a on zero
                    "n_exact_zero": zeros * run // 2,
                    "n_saturated": 4 * run,
                }
            )
    table = coding_rate_table(pd.DataFrame(rows)).iloc[0]
    assert table["scaling"] == "none"
    assert table["bits_per_entry_mean"] == pytest.approx(3.0)  # runs at 2 and 4 bits/entry
    assert table["ratio_to_8bit_mean"] == pytest.approx(3.0 / 8)
    assert table["ratio_to_32bit_mean"] == pytest.approx(3.0 / 32)
    assert table["zero_share_mean"] == pytest.approx((0 + 10 / 400) / 2)
    assert table["exact_zero_share_mean"] == pytest.approx((0 + 5 / 400) / 2)
    assert table["saturated_share_mean"] == pytest.approx((0 + 8 / 400) / 2)
    assert table["runs"] == 2
