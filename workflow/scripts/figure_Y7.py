"""Snakemake script: figure Y7 (rate curves of the one-round study), its three parts."""

from gradcomp.logutil import log_to_file
from gradcomp.lossy.figures_paired import Y7_PARTS, figure_y7
from gradcomp.reporting import data_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
model, source = sm.wildcards.model, data_source_label(sm.input.summary)
figure_y7(
    list(sm.input.tables),
    dict(sm.params.compressor_kinds),
    {suffix: sm.output[f"png_{suffix}"] for suffix, _ in Y7_PARTS},
    titles={
        suffix: f"Y7{suffix} {model}: {what}, at the bits they spend\n{source}"
        for suffix, what in Y7_PARTS
    },  # fmt: skip
    kept_sets=dict(sm.params.kept_sets),
    baseline=sm.params.baseline,
    curves=dict(sm.params.curves),
)
