"""What the docs' generated blocks (:mod:`gradcomp.docblocks`) are made of: a run's tables
read by name, and Markdown tables, intervals and prose wrapped as the docs show them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp.answer_cells import first_model, num

__all__ = ["MissingTable", "and_list", "ci", "first_verdicts", "markdown_table", "read_table",
           "wrap"]  # fmt: skip


class MissingTable(Exception):
    """A block's table is not in the folder (another config, or a run not yet made)."""


def read_table(tables: Path, name: str) -> pd.DataFrame:
    """The run's table ``name`` (TSV) from the folder; :class:`MissingTable` where it is not."""
    path = tables / f"{name}.tsv"
    if not path.exists():
        raise MissingTable(name)
    return pd.read_csv(path, sep="\t", keep_default_na=True)


def first_verdicts(tables: Path) -> pd.DataFrame:
    """verdicts.tsv's rows of its first model (the one the docs quote)."""
    return first_model(read_table(tables, "verdicts"))


def ci(mean: float, lo: float, hi: float) -> str:
    """``mean [lo, hi]``, signed."""
    return f"{num(mean)} [{num(lo)}, {num(hi)}]"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table of ``rows`` under ``header``."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def wrap(text: str) -> str:
    """Prose wrapped at 100 columns (the docs' lines stay under 120)."""
    return textwrap.fill(text, 100, break_long_words=False, break_on_hyphens=False)


def and_list(words: Sequence[str]) -> str:
    """``a, b and c``."""
    words = list(words)
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)
