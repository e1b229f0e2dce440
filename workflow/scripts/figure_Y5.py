"""Snakemake script: figure Y5 (M-weighted distortion vs rate with the BA bound)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_distortion import figure_y5
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y5(
    sm.input.rd,
    sm.output.png,
    model=sm.wildcards.model,
    tensor=sm.params.tensor,
    source=figure_source_label(sm.input.summary),
)
