"""Wall time per DDP training step with and without gradcomp's communication hook, 2 CPU ranks.

Two gloo ranks (torch.multiprocessing, one torch thread each) train the same model on
synthetic batches, once per configuration, all in one run: DDP's default all-reduce (no
hook), PyTorch's own PowerSGD hook (rank 4, all gradients in one bucket) for scale, and
gradcomp's hook with several compressor specs. A step is forward + backward (the hook runs
inside it) + Adam step, timed on rank 0 after ``--warmup`` steps. The configurations are
interleaved (``--rounds`` rounds of ``--steps`` steps each) so that a shared machine's
changing load hits them alike. Printed: the median ms per step, its ratio to the default
all-reduce of the same run, the hook's own time per step (compress, count, decode), the bits
each rank would send per step (the study's accounting, coded; the mean over the timed steps)
and the bytes the hook handed to the collectives per step (``StepBits.wire_bytes``). On an
unlimited loopback; bench/bench_ddp_wire.py measures on rate-limited links.

    python bench/bench_ddp_hook.py --model cnn --batch 32 --rounds 4 --steps 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
from torch.nn.parallel import DistributedDataParallel

from gradcomp.distributed import CompressionHookState, compression_hook
from gradcomp.models import build_model

WORLD = 2
#: name -> gradcomp spec, "default" (no hook) or "torch_powersgd"
CONFIGS = {
    "default": "default",
    "torch_powersgd_r4": "torch_powersgd",
    "none": {"quantizer": "none"},
    "float16": {"quantizer": "float16"},
    "lloyd_gennorm_R2_M2": {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2},
    "uniform_R2_top10": {"quantizer": "uniform", "rate": 2, "topk": 0.1},
    "qsgd_R4": {"quantizer": "qsgd", "rate": 4},
    "scaled_sign_ef": {"quantizer": "scaled_sign", "error_feedback": True},
    "powersgd_r4_ef": {"compressor": "powersgd", "rate": 4, "error_feedback": True},
}


def timed_hook(timer: list[float]):
    """gradcomp's hook, with the time of its synchronous part (compress, count, the sizes'
    exchange, launching the collectives) added to ``timer[0]`` (seconds)."""

    def hook(state, bucket):
        start = time.perf_counter()
        fut = compression_hook(state, bucket)
        timer[0] += time.perf_counter() - start
        return fut

    return hook


def setup(name: str, config, model_name: str):
    """(ddp, state or None, optimizer, timer) of one configuration."""
    model = build_model(model_name, seed=0)
    # PyTorch's PowerSGD hook launches its P and Q all-reduces from future callbacks, which
    # with gloo can interleave differently on the two ranks when there are several buckets
    # (a collective mismatch, seen here once): it gets all gradients in one bucket
    one_bucket = {"bucket_cap_mb": 64} if config == "torch_powersgd" else {}
    ddp = DistributedDataParallel(model, **one_bucket)
    state, timer = None, [0.0]
    if config == "torch_powersgd":
        ps = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=4, start_powerSGD_iter=2
        )
        ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    elif config != "default":
        state = CompressionHookState(config, model=model, log_every=0)
        ddp.register_comm_hook(state, timed_hook(timer))
    return ddp, state, torch.optim.Adam(model.parameters(), lr=1e-3), timer


def worker(rank: int, args: argparse.Namespace, store: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD,
        timeout=timedelta(seconds=600),
    )  # fmt: skip
    gen = torch.Generator().manual_seed(rank)
    x = torch.rand(args.batch, 3, 32, 32, generator=gen).contiguous(
        memory_format=torch.channels_last
    )
    y = torch.randint(0, 10, (args.batch,), generator=gen)
    runs = {name: setup(name, config, args.model) for name, config in CONFIGS.items()}
    times = {name: [] for name in CONFIGS}
    hook_s = {name: 0.0 for name in CONFIGS}
    # interleaved: each round runs every configuration, so that the machine's load drifts
    # over all of them alike; the first round is the warm-up
    for rnd in range(1 + args.rounds):
        for name, (ddp, _, opt, timer) in runs.items():
            timer[0] = 0.0
            for _ in range(args.steps if rnd else args.warmup):
                dist.barrier()
                start = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(ddp(x), y).backward()
                opt.step()
                if rnd:
                    times[name].append(time.perf_counter() - start)
            if rnd:
                hook_s[name] += timer[0]
    rows = []
    for name, (ddp, state, _, _) in runs.items():
        timed = state.history[args.warmup :] if state is not None else []
        rows.append(
            {
                "name": name,
                "ms": 1000 * statistics.median(times[name]),
                "hook_ms": 1000 * hook_s[name] / len(times[name]) if state else None,
                "bits": statistics.mean(h.rate.total_coded for h in timed) if timed else None,
                "entries": sum(p.numel() for p in ddp.module.parameters()),
                "wire": statistics.mean(h.wire_bytes for h in timed) if timed else None,
            }
        )
    if rank == 0:
        torch.save(rows, out)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="cnn")
    p.add_argument("--batch", type=int, default=32, help="images per rank and step")
    p.add_argument("--steps", type=int, default=5, help="timed steps per configuration and round")
    p.add_argument("--rounds", type=int, default=4, help="rounds over all configurations")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per configuration")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "rows.pt")
        mp.spawn(worker, args=(args, str(Path(tmp) / "store"), out), nprocs=WORLD)
        rows = torch.load(out, weights_only=False)
    base = next(r["ms"] for r in rows if r["name"] == "default")
    print(f"{args.model}, batch {args.batch} per rank, {WORLD} gloo CPU ranks, median of "
          f"{args.rounds} x {args.steps} interleaved steps")  # fmt: skip
    print(f"{'config':22s} {'ms/step':>8s} {'x default':>9s} {'hook ms':>8s} "
          f"{'bits/step/rank':>15s} {'bits/entry':>10s} {'wire bytes':>11s}")  # fmt: skip
    for r in rows:
        bits = "-" if r["bits"] is None else f"{r['bits']:.0f}"
        per = "-" if r["bits"] is None else f"{r['bits'] / r['entries']:.3f}"
        wire = "-" if r["wire"] is None else f"{r['wire']:.0f}"
        hook = "-" if r["hook_ms"] is None else f"{r['hook_ms']:.1f}"
        print(f"{r['name']:22s} {r['ms']:8.1f} {r['ms'] / base:9.2f} {hook:>8s} {bits:>15s} "
              f"{per:>10s} {wire:>11s}")  # fmt: skip


if __name__ == "__main__":
    main()
