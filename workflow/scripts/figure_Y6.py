"""Snakemake script: figure Y6 (the one-round paired study)."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.figures_paired import figure_y6
from gradcomp.reporting import data_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y6(
    list(sm.input.tables),
    dict(sm.params.compressor_kinds),
    sm.output.png,
    baseline=sm.params.baseline,
    pairable=list(sm.params.pairable),
    kept_sets=dict(sm.params.kept_sets),
    curves=dict(sm.params.curves),
    title=f"Y6 {sm.wildcards.model}: every compressor on the same updates, one round\n"
    f"(95% intervals over warm starts; *: differs from {sm.params.baseline} at the same R, "
    f"Holm-adjusted)\n{data_source_label(sm.input.summary)}",
)
