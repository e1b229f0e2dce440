"""Snakemake script: figure Y4 (update histograms before/after compression)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.figures import figure_y4
from gradcomp.reporting import data_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
run = sm.params.run
compressor = f"{run['compressor']} (R = {run['rate']}, M = {run['M']})"
figure_y4(
    sm.input.snapshot,
    sm.output.png,
    tensors=list(run["tensors"]),
    bins=sm.params.bins,
    title=f"Y4 {sm.wildcards.model}: kept update entries of user 0 at the last round, "
    f"before and after {compressor}\n{data_source_label(sm.input.summary)}",
)
