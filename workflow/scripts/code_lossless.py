"""Snakemake script: code every fitted tensor of one run with every coder -> coding.tsv
(plus the streamed rows of the tensors without a dump, with lossless.coding.stream)."""

from gradcomp.coding.registry import CoderSpec
from gradcomp.logutil import log_to_file
from gradcomp.lossless.code_lossless import code_lossless

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
coding = sm.params.coding
streamed = list(sm.input.streamed)  # [] when no model of the config streams
code_lossless(
    list(sm.input.dumps),
    sm.input.fits,
    sm.output.coding,
    model=sm.wildcards.model,
    run=int(sm.wildcards.run),
    families=coding["families"],
    grid_name=coding["grid"],
    kinds=coding["kinds"],
    accountings=coding["accountings"],
    scalings=coding["scalings"],
    general_purpose=coding["general_purpose"],
    coders=[CoderSpec.trusted(c) for c in sm.params.coders],  # checked by the workflow
    verify=coding["verify"],
    streamed_tsv=streamed[0] if streamed else None,
)
