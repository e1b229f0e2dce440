"""Artifacts on disk: atomic writes (nothing half-written is ever left under a final name),
TSV tables and torch files."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def write_tsv(path: str | Path, rows: list[dict[str, object]], columns: tuple[str, ...]) -> None:
    """Write ``rows`` as a tab-separated table (temporary file, then rename)."""
    lines = ["\t".join(columns)] + ["\t".join(_fmt(row[c]) for c in columns) for row in rows]
    write_text(path, "\n".join(lines) + "\n")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return str(value)


def read_tables(paths) -> pd.DataFrame:
    """Concatenate TSV tables (e.g. every run's fits.tsv); a ``position`` column keeps ``""``."""
    frames = [pd.read_csv(p, sep="\t", keep_default_na=True) for p in paths]
    data = pd.concat(frames, ignore_index=True)
    if "position" in data:
        data["position"] = data["position"].fillna("")
    return data
