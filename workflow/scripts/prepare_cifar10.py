"""Snakemake script: CIFAR-10 source -> one cached tensor file (+ a JSON summary)."""

from pathlib import Path

from gradcomp.data import prepare_cifar10
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
prepare_cifar10(
    sm.params.source,
    Path(sm.output.cache),
    download_root=Path(sm.params.download_root),
    train_subset=sm.params.train_subset,
    test_subset=sm.params.test_subset,
    pretrain_subset=sm.params.pretrain_subset,
    seed=sm.params.seed,
    summary_path=Path(sm.output.summary),
)
