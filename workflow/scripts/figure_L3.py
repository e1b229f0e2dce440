"""Snakemake script: figure L3 (trimmed W2 of each fit per epoch) of one model."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_l_epochs import figure_l3
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_l3(
    list(sm.input.fits),
    sm.input.positions,
    sm.output.png,
    model=sm.wildcards.model,
    source=figure_source_label(sm.input.summary),
)
