"""Snakemake script: figures Y7a-Y7c (rate curves of the one-round study), one question each."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_rate_curves import Y7_PARTS, figure_y7
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y7(
    list(sm.input.tables),
    dict(sm.params.compressor_kinds),
    {suffix: sm.output[f"png_{suffix}"] for suffix, _ in Y7_PARTS},
    model=sm.wildcards.model,
    source=figure_source_label(sm.input.summary),
    kept_sets=dict(sm.params.kept_sets),
    baseline=sm.params.baseline,
    curves=dict(sm.params.curves),
    specs=dict(sm.params.specs),
)
