"""Snakemake script: the verdicts of the primary questions (results/tables/verdicts)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.verdict_tables import table_verdicts

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table_verdicts(
    list(sm.input.tables),
    sm.output.tsv,
    sm.output.md,
    questions=list(sm.params.questions),
    curves=dict(sm.params.curves),
    kept_sets=dict(sm.params.kept_sets),
    margin=sm.params.margin,
    alpha=sm.params.alpha,
    power=sm.params.power,
    target=sm.params.target,
    names=dict(sm.params.names),
)
