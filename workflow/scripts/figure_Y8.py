"""Snakemake script: figure Y8 (what a coded bit buys against the distortion weight M)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_m import figure_y8
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y8(
    list(sm.input.tables),
    dict(sm.params.compressor_kinds),
    sm.output.png,
    model=sm.wildcards.model,
    source=figure_source_label(sm.input.summary),
    specs=dict(sm.params.specs),
    kept_sets=dict(sm.params.kept_sets),
    baseline=sm.params.baseline,
    curves=dict(sm.params.curves),
)
