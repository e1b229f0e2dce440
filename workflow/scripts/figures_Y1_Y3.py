"""Snakemake script: figures Y1 (accuracy per round), Y2 (accuracy against bits), Y3 (per-bit
accuracy per round)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_y_rounds import figures_y1_y3
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figures_y1_y3(
    list(sm.input.rounds),
    dict(sm.params.compressor_kinds),
    sm.output.y1,
    sm.output.y2,
    sm.output.y3,
    model=sm.wildcards.model,
    source=figure_source_label(sm.input.summary),
    curves=dict(sm.params.curves),
    specs=dict(sm.params.specs),
    reference=sm.params.reference,
)
