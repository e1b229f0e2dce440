"""Snakemake script: figures L5 (paper L's three coders) and L5b (the other coders), the
compressed size / FP8 per epoch, of one model."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.paper_l_coded_size import figure_l5
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_l5(
    list(sm.input.coding),
    sm.input.positions,
    sm.output.png,
    sm.output.png_b,
    model=sm.wildcards.model,
    coders={c["name"]: c["color"] for c in sm.params.coders},
    source=figure_source_label(sm.input.summary),
)
