"""Snakemake script: a warm start of paper Y's federation, or the common pre-training the
warm starts continue (input ``initial`` present: this job continues it)."""

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
    initial=sm.input.get("initial"),
)
