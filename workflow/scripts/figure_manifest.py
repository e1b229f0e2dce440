"""Snakemake script: every figure's measured row in one table (results/figures/manifest.tsv)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.catalogue import write_manifest

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
write_manifest(sm.input.pngs, sm.output.tsv, sm.params.identifiers)
