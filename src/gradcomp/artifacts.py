"""Artifacts on disk: atomic writes (nothing half-written is ever left under a final name),
TSV tables and torch files."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` if the block succeeds.

    The temporary file keeps ``path``'s suffix (some writers choose the format
    by it) and is removed if the block raises, whatever the exception.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}"
    )
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def atomic_torch_save(obj, out: str | Path) -> None:
    """``torch.save`` that leaves no partial file behind."""
    import torch

    with atomic_path(out) as tmp:
        torch.save(obj, tmp)


def write_tsv(
    path: str | Path,
    table: pd.DataFrame | Sequence[Mapping[str, object]],
    columns: Sequence[str] | None = None,
) -> None:
    """Write ``table`` as a tab-separated file at full precision (temporary file, then rename).

    The one way every TSV of the pipeline is written. ``table``: a DataFrame (``columns``
    picks and orders its columns; default all) or rows as mappings (``columns`` required).
    Cells: floats as their shortest round-trip decimal (``repr``), NaN as ``nan``, None as
    an empty cell, booleans as ``True`` / ``False``; a text cell holding a tab or newline is
    refused (it would break the table).
    """
    if isinstance(table, pd.DataFrame):
        columns = list(table.columns) if columns is None else list(columns)
        rows = table[columns].itertuples(index=False, name=None)
    elif columns is None:
        raise TypeError("write_tsv: rows given as mappings need the column names (columns=)")
    else:
        rows = ([row[c] for c in columns] for row in table)
    lines = ["\t".join(map(str, columns))]
    lines += ["\t".join(_cell(v, path) for v in row) for row in rows]
    write_text(path, "\n".join(lines) + "\n")


def _cell(value: object, path: str | Path) -> str:
    """One TSV cell at full precision (see :func:`write_tsv`)."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else str(value)
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, np.integer):
        return str(int(value))
    text = str(value)
    if "\t" in text or "\n" in text:
        raise ValueError(f"{path}: a cell holds a tab or newline: {text!r}")
    return text


def read_tables(paths) -> pd.DataFrame:
    """Concatenate TSV tables (e.g. every run's fits.tsv); a ``position`` column keeps ``""``."""
    frames = [pd.read_csv(p, sep="\t", keep_default_na=True) for p in paths]
    data = pd.concat(frames, ignore_index=True)
    if "position" in data:
        data["position"] = data["position"].fillna("")
    return data
