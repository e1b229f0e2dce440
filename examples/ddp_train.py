"""Data-parallel training with a gradcomp compressor on every gradient: a runnable example.

Trains paper Y's CNN (or another model of :mod:`gradcomp.models`) on CIFAR-10 with PyTorch
DDP, every rank's gradient buckets compressed by the compressor of ``--spec`` (a compressor
spec as the config writes one, in YAML or JSON flow style) through
:func:`gradcomp.distributed.register_compression_hook`; prints the loss and the bits each
rank would send per step (the study's accounting), then the test accuracy. Two CPU ranks::

    torchrun --standalone --nproc_per_node 2 examples/ddp_train.py \\
        --data ../shared/data/cifar10-jpeg --cache /tmp/cifar10.pt \\
        --spec '{quantizer: lloyd, family: gennorm, rate: 2, M: 2}' --steps 200

``--spec none`` trains with DDP's default all-reduce (no hook), for comparison. ``--data`` is an
image-folder tree ``{train,test}/<class>/*`` or a torchvision ``cifar-10-batches-py``
folder; rank 0 decodes it once into ``--cache`` (a stratified ``--train-subset`` /
``--test-subset``), the other ranks wait and load the cache. Each rank draws its own
minibatches (``--batch-size`` images per rank and step); Adam, as paper Y's local training.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel

from gradcomp.data import load_cifar10, prepare_cifar10
from gradcomp.distributed import register_compression_hook
from gradcomp.models import MODELS, build_model
from gradcomp.training import evaluate, to_float_batch


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="image-folder tree or cifar-10-batches-py")
    p.add_argument("--cache", required=True, help="cache file of the decoded subset (.pt)")
    p.add_argument(
        "--spec",
        default="{quantizer: lloyd, family: gennorm, rate: 2, M: 2}",
        help="compressor spec (YAML/JSON mapping), or 'none' for DDP's all-reduce",
    )
    p.add_argument("--model", default="cnn", choices=sorted(MODELS))
    p.add_argument("--steps", type=int, default=200, help="training steps (every rank)")
    p.add_argument("--batch-size", type=int, default=32, help="images per rank and step")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument("--train-subset", type=int, default=10_000)
    p.add_argument("--test-subset", type=int, default=2_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10, help="print every this many steps")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    args = p.parse_args(argv)
    if args.spec.strip().lower() == "none":
        args.spec = None
    else:
        args.spec = yaml.safe_load(args.spec)
        if not isinstance(args.spec, dict):
            p.error(f"--spec must be a mapping such as '{{quantizer: none}}', got {args.spec!r}")
    for key in ("steps", "batch_size", "train_subset", "test_subset", "log_every", "threads"):
        if getattr(args, key) < 1:
            p.error(f"--{key.replace('_', '-')} must be >= 1")
    return args


def load_data(args: argparse.Namespace, rank: int):
    cache = Path(args.cache)
    if rank == 0 and not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        prepare_cifar10(
            args.data, cache, download_root=cache.parent,
            train_subset=args.train_subset, test_subset=args.test_subset, seed=args.seed,
        )  # fmt: skip
    dist.barrier()
    return load_cifar10(cache)


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.WARNING)
    data = load_data(args, rank)
    device = torch.device("cpu")

    model = build_model(args.model, seed=args.seed)  # the same start on every rank
    ddp = DistributedDataParallel(model)
    state = None
    if args.spec is not None:
        state = register_compression_hook(ddp, args.spec, seed=args.seed, log_every=0)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(1000 * args.seed + rank)  # each rank its own batches
    n = len(data.train_labels)
    if rank == 0:
        print(f"{world} ranks, {args.model}, spec {args.spec}, {n} training images", flush=True)

    step_times = []
    for step in range(args.steps):
        idx = torch.randint(0, n, (args.batch_size,), generator=gen)
        x, y = to_float_batch(data.train_images[idx], device), data.train_labels[idx]
        model.train()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        step_times.append(time.perf_counter() - start)
        # every rank's bits of this step (the study's accounting), summed over the ranks
        bits = torch.tensor(
            [state.history[-1].rate.total_coded if state else 32 * sum(
                p.numel() for p in model.parameters()), loss.item()], dtype=torch.float64
        )  # fmt: skip
        dist.all_reduce(bits)
        if rank == 0 and (step % args.log_every == 0 or step == args.steps - 1):
            print(
                f"step {step}: loss {bits[1].item() / world:.4f}, "
                f"bits per step {bits[0].item() / world:.0f} per rank "
                f"({bits[0].item() / world / sum(p.numel() for p in model.parameters()):.3f} "
                f"per entry), {step_times[-1] * 1000:.1f} ms",
                flush=True,
            )
    if rank == 0:
        _, acc = evaluate(model, data.test_images, data.test_labels, batch_size=256, device=device)
        mean_ms = 1000 * sum(step_times) / len(step_times)
        print(f"test accuracy {acc:.4f} after {args.steps} steps; {mean_ms:.1f} ms per step")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
