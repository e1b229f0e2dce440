"""Snakemake script: Y5's distortion study on the kept entries of one real update tensor."""

from pathlib import Path

from gradcomp.logutil import log_to_file
from gradcomp.lossy.distortion_study import distortion_study

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
distortion_study(
    Path(sm.input.snapshot),
    Path(sm.output.rd),
    tensor=sm.params.tensor,
    rates=sm.params.rates,
    Ms=sm.params.Ms,
    low_bits=sm.params.low_bits,
    slip=sm.params.slip,
)
