"""Training-step throughput of the pipeline against plain PyTorch loops, in one run.

Prints images/s of
  plain-nchw   a textbook loop (float batch, model, loss, backward, step), NCHW layout;
  plain-cl     the same loop with model and batches in channels_last;
  pipeline     gradcomp.training.train_epoch (channels_last, uint8 data held as tensors,
               gradient accumulation for the dumps), augmentation off;
  pipeline+aug the same with paper L's augmentation on;
and the ratios pipeline / plain-cl (target >= 0.95) and plain-cl / plain-nchw, then
the cost of the gradient dump (accumulation + safetensors write) as a share of
epoch time (target <= 5%). Each figure is the best of --repeats passes.

    python bench/bench_train.py --model cnn --batch 32 --images 2048
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from gradcomp.data import Cifar10
from gradcomp.lossless.dumps import write_dump
from gradcomp.lossless.train import GradientAccumulator, select_parameters
from gradcomp.models import build_model
from gradcomp.training import train_epoch


def synthetic_data(n: int) -> Cifar10:
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, 10, (n,), generator=gen)
    return Cifar10(images, labels, images[:256], labels[:256], "synthetic")


def plain_epoch(model, optimizer, data: Cifar10, batch: int, channels_last: bool) -> float:
    """A textbook loop over pre-shuffled indices; returns seconds."""
    model.train()
    perm = torch.randperm(len(data.train_labels))
    t0 = time.perf_counter()
    for idx in perm.split(batch):
        x = data.train_images[idx].float() / 255
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        loss = F.cross_entropy(model(x), data.train_labels[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - t0


def best_of(repeats: int, fn) -> float:
    return min(fn() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--images", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = synthetic_data(args.images)
    device = torch.device("cpu")
    n = args.images

    def fresh(channels_last: bool):
        model = build_model(args.model, seed=0)
        if not channels_last:
            model = model.to(memory_format=torch.contiguous_format)
        return model, torch.optim.SGD(model.parameters(), lr=0.01)

    results: dict[str, float] = {}
    for name, cl in (("plain-nchw", False), ("plain-cl", True)):
        model, opt = fresh(cl)
        plain_epoch(model, opt, data, args.batch, cl)  # warm-up
        results[name] = n / best_of(
            args.repeats, lambda m=model, o=opt, c=cl: plain_epoch(m, o, data, args.batch, c)
        )

    model, opt = fresh(True)
    params = select_parameters(model, ("*",))
    gen = torch.Generator().manual_seed(0)
    dump_dir = Path(tempfile.mkdtemp(prefix="gradcomp-bench-"))

    def pipeline(augment: bool, dump: bool) -> float:
        acc = GradientAccumulator(params) if dump else None
        t0 = time.perf_counter()
        train_epoch(
            model,
            opt,
            data.train_images,
            data.train_labels,
            batch_size=args.batch,
            generator=gen,
            device=device,
            augment=augment,
            reduction="mean",  # the plain loop's loss
            after_backward=acc.add if dump else None,
        )
        if dump:
            write_dump(dump_dir / "epoch.safetensors", acc.result(), {"epoch": 1})
        return time.perf_counter() - t0

    pipeline(False, True)  # warm-up
    with_dump = best_of(args.repeats, lambda: pipeline(False, True))
    without_dump = best_of(args.repeats, lambda: pipeline(False, False))
    results["pipeline"] = n / with_dump
    results["pipeline+aug"] = n / best_of(args.repeats, lambda: pipeline(True, True))

    # direct cost of the dump: the accumulation adds of one epoch plus one write
    acc = GradientAccumulator(params)
    for p in params.values():
        p.grad = torch.randn_like(p)
    n_batches = -(-n // args.batch)
    t0 = time.perf_counter()
    for _ in range(n_batches):
        acc.add()
    write_dump(dump_dir / "epoch.safetensors", acc.result(), {"epoch": 1})
    direct = time.perf_counter() - t0

    r = results
    print(f"model {args.model}, batch {args.batch}, {n} images, {args.threads} threads")
    print(f"best of {args.repeats} passes")
    for name, ips in r.items():
        print(f"  {name:<13} {ips:8.1f} images/s")
    print(f"  pipeline / plain-cl       = {r['pipeline'] / r['plain-cl']:.3f}  (target >= 0.95)")
    print(f"  plain-cl / plain-nchw     = {r['plain-cl'] / r['plain-nchw']:.3f}")
    print(f"  augmentation cost         = {1 - r['pipeline+aug'] / r['pipeline']:.1%} of a step")
    print(f"  dump share (direct)       = {direct / with_dump:.2%} of epoch time  (target <= 5%)")
    print(
        f"  dump share (with-without) = {(with_dump - without_dump) / with_dump:.2%} of epoch time"
    )


if __name__ == "__main__":
    main()
