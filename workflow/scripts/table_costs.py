"""Snakemake script: the cost table (every benchmark file under results/benchmarks/)."""

import json
from pathlib import Path

from gradcomp.costs import table_costs
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
summary = json.loads(Path(sm.input.summary).read_text())
table_costs(
    sm.params.root,
    sm.output.tsv,
    sm.output.md,
    models=list(sm.params.models),
    images=int(summary["n_train"]),
    title=f"What each rule cost (wall seconds, peak memory MB) on {summary['n_train']} "
    f"training images: {summary['source']}",
)
