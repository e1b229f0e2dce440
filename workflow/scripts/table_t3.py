"""Snakemake script: table T3 (final accuracy, uplink bits by part, per-bit accuracy)."""

from gradcomp.figures_lossy import table_t3
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_t3(
    list(sm.input.rounds),
    list(sm.input.uplink),
    dict(sm.params.quantizers),
    sm.output.tsv,
    sm.output.md,
)
