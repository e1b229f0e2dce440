"""Snakemake script: one federated run of paper Y (model, compressor, R, M, seed)."""

from pathlib import Path

from gradcomp.compression.specs import CheckedSpec
from gradcomp.logutil import log_to_file
from gradcomp.lossy.federated_stage import federated_stage

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
federated_stage(
    Path(sm.input.data),
    dict(sm.params.settings),
    CheckedSpec.trusted(sm.params.spec),  # checked when the workflow started
    identity=dict(sm.params.identity),
    rounds_tsv=Path(sm.output.rounds),
    uplink_tsv=Path(sm.output.uplink),
    update_path=Path(sm.output.snapshot),
    kept_tsv=Path(sm.output.kept),
    warm_start=sm.input.get("warm_start"),
    threads=sm.threads,
    device=sm.resources.device,
)
