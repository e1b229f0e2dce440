"""The ``federated`` rule's stage: one federated run of paper Y
(:func:`~gradcomp.lossy.federated.run_federated`) with one compressor per user, and its files
(:mod:`gradcomp.lossy.run_files`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradcomp.data import load_cifar10
from gradcomp.lossy.federated import FederatedResult, FederatedSettings, run_federated
from gradcomp.lossy.run_files import save_snapshot, write_rounds
from gradcomp.lossy.warm_start import load_warm_start
from gradcomp.wire.users import compressor_factory

__all__ = ["federated_stage"]


def federated_stage(
    data_path: Path,
    settings: dict[str, Any],
    spec: Mapping[str, object],
    *,
    identity: Mapping[str, object],
    rounds_tsv: Path,
    uplink_tsv: Path,
    update_path: Path,
    kept_tsv: Path | None = None,
    warm_start: Path | None = None,
    threads: int = 1,
    device: str = "cpu",
) -> FederatedResult:
    """The ``federated`` stage: one run of :func:`~gradcomp.lossy.federated.run_federated`
    with the compressor ``spec`` (one per user,
    :func:`gradcomp.wire.users.compressor_factory`),
    and its files (``kept_tsv``: the per-round, per-user, per-tensor kept fractions, if given),
    whose rows carry the run's model and seed (from ``settings``) and ``identity``'s
    compressor, rate, M and warm start.

    ``settings`` are :class:`~gradcomp.lossy.federated.FederatedSettings` keywords other than
    ``threads`` and ``device``, which say where the job runs; ``warm_start``: a
    :func:`gradcomp.lossy.warm_start.warm_start_stage` file to start from.
    """
    full = FederatedSettings(**settings, threads=int(threads), device=device)
    result = run_federated(
        load_cifar10(Path(data_path)),
        full,
        compressor_factory(spec, full.seed),
        initial_state=load_warm_start(warm_start) if warm_start else None,
    )
    write_rounds(
        result,
        {**identity, "model": full.model, "seed": full.seed},
        Path(rounds_tsv),
        Path(uplink_tsv),
        None if kept_tsv is None else Path(kept_tsv),
    )
    save_snapshot(result.snapshot, Path(update_path))
    return result
