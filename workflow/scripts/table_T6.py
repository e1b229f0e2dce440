"""Snakemake script: table T6 (each quantizer's distance to the rate-distortion bound)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.distortion_study import table_t6

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t6(list(sm.input.rd), sm.output.tsv, sm.output.md)
