"""Tensor positions: the three tensors paper L's figures follow.

``lower`` (near the input), ``middle`` and ``upper`` (near the output). By default they are
the first, middle and last fitted weight tensors (two or more dimensions) in the model's
order; a config may name them (``lossless.positions``). Positions are only labels: the fit
and coding tables cover every tensor, and the figures and tables join the positions table
(``positions.tsv``, columns ``tensor``, ``position``) written by :func:`positions_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp.artifacts import read_tables, write_tsv
from gradcomp.lossless.dumps import GradientDump, read_dump

__all__ = ["POSITIONS", "positions_table", "read_with_positions", "tensor_positions"]

POSITIONS = ("lower", "middle", "upper")


def tensor_positions(
    dump: GradientDump, *, skip_below: int, overrides: dict[str, str] | None = None
) -> dict[str, str]:
    """``{position: tensor name}`` for :data:`POSITIONS` (see the module docstring).

    Raises ValueError if an override names a tensor that is not in the dump.
    """
    tensors = dump.tensors["epoch_avg"]
    weights = [n for n, t in tensors.items() if t.ndim >= 2 and t.numel() >= skip_below]
    if not weights:
        weights = [n for n, t in tensors.items() if t.numel() >= skip_below] or list(tensors)
    chosen = dict(
        zip(POSITIONS, (weights[0], weights[len(weights) // 2], weights[-1]), strict=True)
    )
    for position, name in (overrides or {}).items():
        if position not in POSITIONS:
            raise ValueError(f"unknown tensor position {position!r}; use {', '.join(POSITIONS)}")
        if name not in tensors:
            raise ValueError(
                f"tensor position {position}: {name!r} is not among the dumped tensors "
                f"({', '.join(list(tensors)[:8])}, ...)"
            )
        chosen[position] = name
    return chosen


def positions_table(
    dump_path: Path,
    out_tsv: Path,
    *,
    model: str,
    skip_below: int,
    overrides: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Write the positions of ``model``'s tensors (read from any of its dumps) as TSV with
    columns ``model``, ``position``, ``tensor``."""
    chosen = tensor_positions(read_dump(dump_path), skip_below=skip_below, overrides=overrides)
    table = pd.DataFrame(
        {"model": model, "position": list(chosen), "tensor": list(chosen.values())}
    )
    write_tsv(out_tsv, table)
    return table


def read_with_positions(
    paths: Sequence[str | Path], positions_tsvs: Sequence[str | Path]
) -> pd.DataFrame:
    """Concatenate TSV tables (fits, coding) and add each row's ``position`` ("" for none),
    joined on (model, tensor) with the positions tables of the models involved."""
    data = read_tables(paths)
    positions = read_tables(positions_tsvs)[["model", "tensor", "position"]]
    data = data.merge(positions, on=["model", "tensor"], how="left")
    data["position"] = data["position"].fillna("")
    return data
