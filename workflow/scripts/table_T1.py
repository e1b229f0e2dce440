"""Snakemake script: table T1 (bits per entry by coder and model)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossless.paper_l_tables import table_t1

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t1(list(sm.input.coding), sm.output.tsv, sm.output.md)
