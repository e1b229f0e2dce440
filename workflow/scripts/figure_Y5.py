"""Snakemake script: figure Y5 (M-weighted distortion vs rate with the BA bound)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.figures import figure_y5
from gradcomp.reporting import data_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y5(
    sm.input.rd,
    sm.output.png,
    title=f"Y5 {sm.wildcards.model}: M-weighted distortion on the kept entries of "
    f"{sm.params.tensor} and the rate-distortion bound\n{data_source_label(sm.input.summary)}",
)
