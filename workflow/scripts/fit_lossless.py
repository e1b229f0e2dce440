"""Snakemake script: fit every dumped tensor of one run -> fits.tsv."""

from gradcomp.atomic import write_text
from gradcomp.fit_table import fit_run
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
table = fit_run(
    list(sm.input.dumps),
    model=sm.wildcards.model,
    run=int(sm.wildcards.run),
    families=sm.params.families,
    floc=sm.params.floc,
    min_entries=sm.params.min_entries,
    kinds=sm.params.kinds,
    positions=dict(sm.params.positions),
    seed=sm.params.seed,
)
write_text(sm.output.fits, table.to_csv(sep="\t", index=False))
