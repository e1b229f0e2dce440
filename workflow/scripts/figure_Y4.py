"""Snakemake script: figure Y4 (update histograms before/after compression)."""

from gradcomp.figures import data_source_label
from gradcomp.figures_lossy import figure_y4
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
run = sm.params.run
compressor = f"{run['compressor']} (R = {run['rate']}, M = {run['M']})"
figure_y4(
    sm.input.histograms,
    sm.output.png,
    bins=sm.params.bins,
    title=f"Y4 {sm.wildcards.model}: update of user 0 at the last round, before and after "
    f"{compressor}\n{data_source_label(sm.input.summary)}",
)
