"""The DDP hook on a one-rank group: NCCL on one GPU (``--device cuda``), or gloo on the CPU.

For each exchange of :mod:`gradcomp.distributed` (``allreduce``, ``bytes``, ``randomk``,
``powersgd``, ``sketch``) three steps of paper Y's CNN on random images, 8 per step: the
exchange the spec chose, the gradients finite and on the model's device, ``wire_bytes``
counted; with ``quantizer: none`` the gradients bit for bit those of DDP without a hook (one
rank: the mean is the rank's own). Prints one line per spec and exits non-zero on a failure.
scripts/gpu_check.sh runs it (``--tiny``: on the CPU with gloo).

Written without a GPU: the NCCL run is untested (docs/distributed.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from gradcomp.distributed import register_compression_hook
from gradcomp.models import build_model

SPECS = {
    "allreduce": {"quantizer": "none"},
    "bytes": {"quantizer": "uniform", "rate": 2, "topk": 0.1},
    "randomk": {"quantizer": "none", "sparsifier": "randomk", "topk": 0.1},
    "powersgd": {"compressor": "powersgd", "rate": 4, "error_feedback": True},
    "sketch": {"compressor": "count_sketch", "rate": 100},
}


def grads_of(spec, device: torch.device, steps: int = 3) -> tuple[list[dict], object]:
    model = build_model("cnn", seed=0).to(device)
    ddp = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )
    state = register_compression_hook(ddp, spec, log_every=0) if spec is not None else None
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    out = []
    for step in range(steps):
        g = torch.Generator().manual_seed(step)
        x = torch.rand(8, 3, 32, 32, generator=g).to(device)
        y = torch.randint(0, 10, (8,), generator=g).to(device)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(x), y).backward()
        out.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
        opt.step()
    return out, state


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = p.parse_args()
    device = torch.device("cuda:0" if args.device == "cuda" else "cpu")
    backend = "nccl" if args.device == "cuda" else "gloo"
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group(
            backend, init_method=f"file://{Path(tmp) / 'store'}", rank=0, world_size=1
        )
        failures = 0
        plain, _ = grads_of(None, device)
        for want, spec in SPECS.items():
            start = time.perf_counter()
            try:
                grads, state = grads_of(spec, device)
                assert state.exchange == want, f"exchange {state.exchange}, expected {want}"
                for step in grads:
                    for name, g in step.items():
                        assert g.device == device, f"{name} on {g.device}"
                        assert torch.isfinite(g).all(), f"{name} not finite"
                if want == "allreduce":
                    for a, b in zip(grads, plain, strict=True):
                        assert all(torch.equal(a[n], b[n]) for n in a), "none != DDP default"
                wire = [h.wire_bytes for h in state.history]
                assert all(w > 0 for w in wire), wire
                status = f"ok, {wire[-1]:,} wire bytes per step"
            except Exception as err:  # report every spec, then fail
                failures += 1
                status = f"FAILED: {type(err).__name__}: {err}"
            print(
                f"ddp_hook_check {backend} {want:9s} {time.perf_counter() - start:6.1f} s {status}"
            )
        dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
