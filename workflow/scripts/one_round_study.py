"""Snakemake script: the one-round paired study of every compressor along one trajectory."""

from gradcomp.compression.specs import CheckedSpec
from gradcomp.logutil import log_to_file
from gradcomp.lossy.one_round import one_round_stage

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
one_round_stage(
    sm.input.data,
    dict(sm.params.settings),
    # the specs were checked when the workflow started
    [{**v, "spec": CheckedSpec.trusted(v["spec"])} for v in sm.params.variants],
    reference=sm.params.reference,
    out_tsv=sm.output.table,
    seeds=list(sm.params.seeds),
    warm_start=sm.input.get("warm_start"),
    warm_start_seed=sm.params.warm_start_seed,
    threads=sm.threads,
    device=sm.resources.device,
)
