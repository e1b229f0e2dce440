"""The answers table's columns and how its numbers read (:mod:`gradcomp.answers`,
:mod:`gradcomp.answers_paper_y`, :mod:`gradcomp.docblocks`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["COLUMNS", "NUMBER", "first_model", "num"]

NUMBER = "the number [interval the word is decided on]"
COLUMNS = ("question", "the paper", "this study", NUMBER, "the evidence against", "from")


def num(x: float, digits: int = 3) -> str:
    """``x`` signed, to ``digits`` decimals (4 below 0.001; inf, -inf, n/a)."""
    if not np.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "n/a")
    if abs(x) < 0.001:
        return f"{x:+.4f}"
    return f"{x:+.{digits}f}"


def first_model(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``table`` (with a ``model`` column) for its first model by name: the one
    the answers and the docs quote."""
    return table[table["model"] == sorted(table["model"])[0]]
