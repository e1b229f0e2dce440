"""Snakemake script: the central warm start of paper Y's federation."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.warm_start import warm_start_stage

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
warm_start_stage(
    sm.input.data,
    dict(sm.params.settings),
    sm.output.state,
    threads=sm.threads,
    device=sm.resources.device,
)
