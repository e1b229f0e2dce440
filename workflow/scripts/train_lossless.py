"""Snakemake script: train one (model, run) of paper L and dump gradients per epoch (and,
with lossless.coding.stream, code every tensor into coded_all.tsv)."""

from pathlib import Path

from gradcomp.logutil import log_to_file
from gradcomp.lossless.train import train_lossless

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
coded = list(sm.output.coded)  # [] when no model of the config streams
train_lossless(
    Path(sm.input.data),
    dict(sm.params.settings),
    dump_paths=[Path(p) for p in sm.output.dumps],
    log_path=Path(sm.output.log_tsv),
    state_dir=Path(sm.params.state_dir),
    threads=sm.threads,
    device=sm.resources.device,
    coded_path=Path(coded[0]) if coded else None,
)
