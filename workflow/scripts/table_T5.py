"""Snakemake script: table T5 (BD-rate of every compressor's rate curve against the baseline)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.bd_rate_table import table_t5

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t5(
    list(sm.input.tables),
    sm.output.tsv,
    sm.output.md,
    baseline=sm.params.baseline,
    curves=dict(sm.params.curves),
)
