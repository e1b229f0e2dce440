"""Snakemake script: the lower / middle / upper tensor of one model -> positions.tsv."""

from pathlib import Path

from gradcomp.logutil import log_to_file
from gradcomp.lossless.positions import positions_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
positions_table(
    Path(sm.input.dump),
    Path(sm.output.positions),
    model=sm.wildcards.model,
    skip_below=sm.params.skip_below,
    overrides=dict(sm.params.overrides),
)
