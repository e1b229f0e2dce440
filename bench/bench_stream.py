"""CPU cost of whole-model coding in the training job (lossless.coding.stream), per coded
entry and epoch.

Run: ``.venv/bin/python bench/bench_stream.py --models cnn resnet20 [--epochs 1 2]
[--runs results/lossless/*/run0]``

For each model: random gradients of every trainable tensor (GenNorm(0.8) entries, each
tensor its own scale 2**uniform(-16, -8), float32 torch tensors on the CPU), coded by
:class:`~gradcomp.lossless.stream.GradientStreamer` with the settings of
``config/config.yaml`` (schema defaults for absent keys, ``--configfile`` on top), one
worker, torch on one thread. Each ``--epochs`` value is coded as that epoch (epoch 1 is
in the default ``lossless.coding.sample``, so it writes every coder's stream for the sampled
tensors; epoch 2 codes every tensor from its counts). Prints the process CPU seconds and
microseconds per coded entry (entries of the tensors coded, ``epoch_avg`` only).

``--runs``: the same on the real gradients of a workflow run, the epoch-average tensors of
its dumps (``<run>/grads/epoch*.safetensors``), each coded as its own epoch (epoch 1 with
the sample's streams); the model is the run folder's parent's name.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.stats
import torch
import yaml

from gradcomp.lossless.dumps import read_dump
from gradcomp.lossless.stream import GradientStreamer
from gradcomp.models import build_model
from gradcomp.study import load_study

REPO = Path(__file__).resolve().parents[1]


def gradients(model: str, seed: int) -> dict[str, torch.Tensor]:
    """GenNorm(0.8) float32 entries of every trainable tensor's shape, each its own scale."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, p in build_model(model, seed=0).named_parameters():
        scale = 2.0 ** rng.uniform(-16, -8)
        values = scipy.stats.gennorm.rvs(0.8, scale=scale, size=p.numel(), random_state=rng)
        out[name] = torch.from_numpy(values.astype(np.float32).reshape(p.shape))
    return out


def merged(base: dict, top: dict) -> dict:
    """``top`` on ``base``, mappings merged key by key (as Snakemake's --configfile)."""
    out = dict(base)
    for key, value in top.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merged(out[key], value) if both else value
    return out


def real_gradients(run: Path) -> list[tuple[int, dict[str, torch.Tensor]]]:
    """(epoch, the epoch-average tensors) of every dump of a workflow run
    (``results/lossless/<model>/run<r>/grads/epoch*.safetensors``), in epoch order."""
    dumps = [read_dump(p) for p in sorted(run.glob("grads/epoch*.safetensors"))]
    if not dumps:
        raise SystemExit(f"{run}: no grads/epoch*.safetensors")
    return sorted((d.epoch, d.tensors["epoch_avg"]) for d in dumps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["cnn", "resnet20"])
    ap.add_argument("--epochs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=Path, nargs="*", default=[])
    ap.add_argument("--configfile", type=Path, nargs="*", default=[])
    args = ap.parse_args()
    torch.set_num_threads(1)
    config: dict = {}
    for path in [REPO / "config/config.yaml", *args.configfile]:
        config = merged(config, yaml.safe_load(path.read_text()))
    settings = load_study(config, REPO / "workflow/schemas/config.schema.yaml").lossless.stream
    jobs = [(m, [(e, g) for e in args.epochs]) for m, g in
            ((m, gradients(m, seed=0)) for m in args.models)]  # fmt: skip
    jobs += [(run.parent.name, real_gradients(run)) for run in args.runs]
    print(f"{'model':>10} {'epoch':>5} {'entries':>10} {'rows':>6} {'cpu_s':>8} {'us/entry':>9}")
    for model, epochs in jobs:
        with GradientStreamer(settings, model=model, run=0, workers=1) as streamer:
            for epoch, grads in epochs:
                c0 = time.process_time()
                table = streamer.code({"epoch_avg": grads}, epoch=epoch, n_batches=79)
                cpu = time.process_time() - c0
                entries = int(table.drop_duplicates("tensor")["numel"].sum())
                print(f"{model:>10} {epoch:>5} {entries:>10} {len(table):>6} {cpu:>8.2f} "
                      f"{1e6 * cpu / entries:>9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
