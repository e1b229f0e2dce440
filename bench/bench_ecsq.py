"""What the entropy-constrained quantizer's design costs against GenNorm Lloyd's, per tensor
and per round, on a real update: a federated run's snapshot, each tensor's kept entries
(top-K as the run kept them), every tensor the pipeline compresses (more than 1,000 entries).

Each quantizer encodes each tensor with its design caches emptied first (a fresh law per
tensor and round, as in a federated run: no design is reused), in CPU seconds
(``time.process_time``, one thread), best of ``--repeat``; the ratio ECSQ / Lloyd is the
number to read. Both at the same designed rate R and M.

    python bench/bench_ecsq.py results/lossy/cnn/gennorm/R4_M2/seed0/update.safetensors \
        --rates 2 3 --M 2
"""

from __future__ import annotations

import argparse
import time

import torch
from threadpoolctl import threadpool_limits

from gradcomp.compression import ecsq_quantizer
from gradcomp.compression.ecsq_quantizer import ECSQQuantizer
from gradcomp.compression.lloyd_quantizer import LloydQuantizer, forget_designs
from gradcomp.lossy.distortion_study import kept_entries
from gradcomp.lossy.run_files import read_snapshot


def cpu_seconds(quantizer, kept: torch.Tensor, full: torch.Tensor, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        forget_designs()
        ecsq_quantizer.ecsq_levels.cache_clear()
        t0 = time.process_time()
        quantizer.encode(kept, "bench", full=full)
        best = min(best, time.process_time() - t0)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshot", help="a federated run's update.safetensors")
    ap.add_argument("--rates", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--M", type=float, default=2.0)
    ap.add_argument("--min-entries", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    names = [n for n, t in read_snapshot(args.snapshot)["before"].items()
             if t.numel() > args.min_entries]  # fmt: skip
    print(f"{len(names)} tensors of {args.snapshot}; CPU seconds, best of {args.repeat}")
    print(f"{'R':>2} {'tensor':<18} {'entries':>8} {'lloyd [s]':>10} {'ecsq [s]':>9} {'ratio':>7}")
    tensors = {name: [torch.from_numpy(a) for a in kept_entries(args.snapshot, name)]
               for name in names}  # fmt: skip
    with threadpool_limits(1):
        for rate in args.rates:
            total = [0.0, 0.0]
            for name, (kept, full) in tensors.items():
                lloyd = cpu_seconds(LloydQuantizer(rate, "gennorm", args.M), kept, full,
                                    args.repeat)  # fmt: skip
                ecsq = cpu_seconds(ECSQQuantizer(rate, "gennorm", args.M), kept, full,
                                   args.repeat)  # fmt: skip
                total[0] += lloyd
                total[1] += ecsq
                print(f"{rate:>2} {name:<18} {kept.numel():>8} {lloyd:>10.3f} {ecsq:>9.3f} "
                      f"{ecsq / lloyd:>6.0f}x")  # fmt: skip
            print(f"{rate:>2} {'one round':<18} {'':>8} {total[0]:>10.3f} {total[1]:>9.3f} "
                  f"{total[1] / total[0]:>6.0f}x")  # fmt: skip


if __name__ == "__main__":
    main()
