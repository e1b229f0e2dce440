"""Snakemake script: figures L3 (trimmed W2 per epoch) and L4 (GenNorm parameters) of one model."""

from gradcomp.figures import data_source_label, figure_l3, figure_l4
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
source = data_source_label(sm.input.summary)
figure_l3(list(sm.input.fits), sm.output.l3, model=sm.wildcards.model, source=source)
figure_l4(list(sm.input.fits), sm.output.l4, model=sm.wildcards.model, source=source)
