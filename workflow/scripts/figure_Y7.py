"""Snakemake script: figure Y7 (rate curves of the one-round study)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.figures_paired import figure_y7
from gradcomp.reporting import data_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y7(
    list(sm.input.tables),
    dict(sm.params.compressor_kinds),
    sm.output.png,
    baseline=sm.params.baseline,
    curves=dict(sm.params.curves),
    title=f"Y7 {sm.wildcards.model}: compressors at the bits they spend, one round from the "
    "same updates (mean and 95% interval over warm starts, seeds nested; dashed: the baseline "
    f"{sm.params.baseline}, dotted: its operational curve)\n" + data_source_label(sm.input.summary),
)
