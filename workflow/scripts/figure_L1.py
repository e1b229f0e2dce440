"""Snakemake script: figure L1 (histograms with fitted pdfs) of one model."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_l_laws import figure_l1
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_l1(
    sm.input.fits,
    sm.input.positions,
    sm.input.dump,
    sm.output.png,
    model=sm.wildcards.model,
    kind=sm.params.kind,
    bins=sm.params.bins,
    source=figure_source_label(sm.input.summary),
)
