"""Snakemake script: figure Y4 (update histograms before/after compression)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_distortion import figure_y4
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y4(
    sm.input.snapshot,
    sm.output.png,
    run=sm.params.run,
    bins=sm.params.bins,
    model=sm.wildcards.model,
    source=figure_source_label(sm.input.summary),
)
