"""Snakemake script: code every fitted tensor of one run with every coder -> coding.tsv."""

import pandas as pd

from gradcomp.atomic import write_text
from gradcomp.coding_table import code_run
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
coding = sm.params.coding
table = code_run(
    list(sm.input.dumps),
    pd.read_csv(sm.input.fits, sep="\t", keep_default_na=True).fillna({"position": ""}),
    model=sm.wildcards.model,
    run=int(sm.wildcards.run),
    families=coding["families"],
    grid_name=coding["grid"],
    kinds=coding["kinds"],
    accountings=coding["accountings"],
    general_purpose=coding["general_purpose"],
)
write_text(sm.output.coding, table.to_csv(sep="\t", index=False))
