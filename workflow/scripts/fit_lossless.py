"""Snakemake script: fit every dumped tensor of one run -> fits.tsv."""

from gradcomp.logutil import log_to_file
from gradcomp.lossless.fit_lossless import fit_lossless

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
fit_lossless(
    list(sm.input.dumps),
    sm.output.fits,
    model=sm.wildcards.model,
    run=int(sm.wildcards.run),
    families=sm.params.families,
    floc=sm.params.floc,
    skip_below=sm.params.skip_below,
    kinds=sm.params.kinds,
    seed=sm.params.seed,
    zero_atom=sm.params.zero_atom,
)
