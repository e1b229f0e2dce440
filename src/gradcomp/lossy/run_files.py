"""Files of one federated run: round, uplink and kept tables, each with the run's identity
as its first columns (:data:`RUN_IDENTITY`), and the last-round update snapshot (writing and
reading only; the ``federated`` stage that runs and writes them is
:mod:`gradcomp.lossy.federated_stage`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import torch

from gradcomp.artifacts import atomic_path, write_tsv
from gradcomp.lossy.federated import KEPT_COLUMNS, ROUND_COLUMNS, UPLINK_COLUMNS, FederatedResult

__all__ = ["RUN_IDENTITY", "read_snapshot", "save_snapshot", "write_rounds"]

SNAPSHOT_PARTS = ("before", "after", "kept")
#: The identity columns that lead every table of a federated run (warm start: its seed, -1
#: for a run from scratch).
RUN_IDENTITY = ("model", "compressor", "rate", "M", "warm_start", "seed")


def write_rounds(
    result: FederatedResult,
    identity: Mapping[str, object],
    rounds_tsv: Path,
    uplink_tsv: Path,
    kept_tsv: Path | None = None,
) -> None:
    """Write the round rows, the uplink rows and (given ``kept_tsv``) the per-tensor kept
    rows as TSV tables (atomically), each row led by ``identity`` (:data:`RUN_IDENTITY`)."""
    head = {k: identity[k] for k in RUN_IDENTITY}
    for path, rows, columns in (
        (rounds_tsv, result.rounds, ROUND_COLUMNS),
        (uplink_tsv, result.uplink, UPLINK_COLUMNS),
        (kept_tsv, result.kept, KEPT_COLUMNS),
    ):
        if path is not None:
            write_tsv(path, [{**head, **row} for row in rows], (*RUN_IDENTITY, *columns))


def save_snapshot(snapshot: dict[str, dict[str, torch.Tensor]], path: Path) -> None:
    """Save a last-round update snapshot (:attr:`FederatedResult.snapshot`) as safetensors.

    Keys ``before/<name>``, ``after/<name>`` (float32) and ``kept/<name>`` (bool), in the
    entry's shape; the metadata key ``gradcomp`` holds the names in order as JSON. Written
    to a temporary file, then renamed.
    """
    from safetensors.torch import save_file

    names = list(snapshot.get("before", {}))
    flat = {
        f"{part}/{name}": snapshot[part][name].detach().to("cpu").contiguous()
        for part in SNAPSHOT_PARTS
        for name in names
    }
    header = {"gradcomp": json.dumps({"names": names}, sort_keys=True)}
    with atomic_path(path) as tmp:
        save_file(flat, str(tmp), metadata=header)


def read_snapshot(path: str | Path) -> dict[str, dict[str, torch.Tensor]]:
    """Read a :func:`save_snapshot` file back as ``{"before": ..., "after": ..., "kept": ...}``."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as fh:
        names = json.loads((fh.metadata() or {}).get("gradcomp", "{}")).get("names", [])
    flat = load_file(str(path))
    return {part: {n: flat[f"{part}/{n}"] for n in names} for part in SNAPSHOT_PARTS}
