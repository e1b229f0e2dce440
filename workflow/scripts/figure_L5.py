"""Snakemake script: figure L5 (compressed size / FP8 per epoch and coder) of one model."""

from gradcomp.logutil import log_to_file
from gradcomp.lossless.figures import figure_l5
from gradcomp.reporting import data_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_l5(
    list(sm.input.coding),
    sm.input.positions,
    sm.output.png,
    model=sm.wildcards.model,
    coders={c["name"]: c["color"] for c in sm.params.coders},
    source=data_source_label(sm.input.summary),
)
