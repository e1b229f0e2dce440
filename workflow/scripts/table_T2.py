"""Snakemake script: table T2 (fit quality per family, model and tensor position)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossless.paper_l_tables import table_t2

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t2(list(sm.input.fits), list(sm.input.positions), sm.output.tsv, sm.output.md)
