"""Snakemake script: table T3 (final accuracy, uplink bits by part, per-bit accuracy)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.paper_y_tables import table_t3

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t3(
    list(sm.input.rounds),
    list(sm.input.uplink),
    dict(sm.params.compressor_kinds),
    sm.output.tsv,
    sm.output.md,
    baseline=sm.params.baseline,
    pairable=list(sm.params.pairable),
    kept_sets=dict(sm.params.kept_sets),
    curves=dict(sm.params.curves),
)
