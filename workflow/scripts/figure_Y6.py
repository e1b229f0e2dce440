"""Snakemake script: figure Y6 (the one-round paired study, with the verdicts' marks)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_verdicts import figure_y6
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y6(
    list(sm.input.tables),
    dict(sm.params.compressor_kinds),
    sm.output.png,
    verdicts=sm.input.verdicts,
    model=sm.wildcards.model,
    curves=dict(sm.params.curves),
    kept_sets=dict(sm.params.kept_sets),
    specs=dict(sm.params.specs),
    source=figure_source_label(sm.input.summary),
)
