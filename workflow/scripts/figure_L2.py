"""Snakemake script: figure L2 (tail probabilities) of one model."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_l_laws import figure_l2
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_l2(
    sm.input.fits,
    sm.input.positions,
    sm.input.dump,
    sm.output.png,
    coding_tsv=sm.input.coding,
    model=sm.wildcards.model,
    kind=sm.params.kind,
    source=figure_source_label(sm.input.summary),
)
