"""Snakemake script: one federated run of paper Y (model, compressor, R, M, seed)."""

from pathlib import Path

from gradcomp.compressors import build_compressor
from gradcomp.data import load_cifar10
from gradcomp.federated import FederatedSettings, run_federated, save_histograms, write_rounds
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
settings = dict(sm.params.settings)
settings["histogram_tensors"] = tuple(settings["histogram_tensors"])
spec = dict(sm.params.spec)
result = run_federated(
    load_cifar10(Path(sm.input.data)),
    FederatedSettings(**settings),
    # one compressor per user (error-feedback memory and channel noise are per user)
    lambda user: build_compressor({**spec, "seed": 1000 * settings["seed"] + user}),
)
write_rounds(result, Path(sm.output.rounds), Path(sm.output.uplink))
save_histograms(result, Path(sm.output.histograms))
