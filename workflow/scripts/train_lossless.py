"""Snakemake script: train one (model, run) of paper L and dump gradients per epoch."""

from pathlib import Path

from gradcomp.data import load_cifar10
from gradcomp.logutil import log_to_file
from gradcomp.train import TrainSettings, train_with_dumps

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
settings = dict(sm.params.settings)
settings["dump_tensors"] = tuple(settings["dump_tensors"])
data = load_cifar10(Path(sm.input.data))
train_with_dumps(
    data,
    TrainSettings(**settings),
    dump_paths=[Path(p) for p in sm.output.dumps],
    log_path=Path(sm.output.log_tsv),
    state_dir=Path(sm.params.state_dir),
    extra_metadata={"data_source": data.source},
)
