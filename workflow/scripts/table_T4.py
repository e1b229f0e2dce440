"""Snakemake script: table T4 (the one-round paired study)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.paper_y_tables import table_t4

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t4(
    list(sm.input.tables),
    sm.output.tsv,
    sm.output.md,
    baseline=sm.params.baseline,
    pairable=list(sm.params.pairable),
    margin=sm.params.margin,
    alpha=sm.params.alpha,
    kept_sets=dict(sm.params.kept_sets),
    curves=dict(sm.params.curves),
)
