"""Snakemake script: figure Y4 (update histograms before/after compression)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_distortion import figure_y4
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
run = sm.params.run
figure_y4(
    sm.input.snapshot,
    sm.output.png,
    tensors=list(run["tensors"]),
    bins=sm.params.bins,
    model=sm.wildcards.model,
    spec=run["spec"],
    rate=run["rate"],
    M=run["M"],
    source=figure_source_label(sm.input.summary),
)
