"""How well the configured count sketches recover an update, and whether their error feedback
stays bounded.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_sketch.py [--rounds 30]``

1. Relative error ``||U(S(x)) - x|| / ||x||`` (sending nothing scores 1.0) on the Laplace test
   vector of :func:`gradcomp.compression.sketch_probe.probe_vector`, for the sketch entries
   of ``config/paper.yaml`` and ``config/m22.yaml`` at the sizes the cnn gives them (one
   sketch of its tensors over 1,000 entries, or one per tensor), beside the setups they
   replace: k = ceil(0.452 d) inherited from ``lossy.topk`` (paper.yaml's old R = 10 / 25 /
   100) and M22's release (top-K 60% before sketching, k = the non-zeros, its overflowing
   hash) and the same with a random hash. Each line also gives top-K alone at k (the error
   of sending the k largest entries exactly).
2. Error feedback over ``--rounds`` rounds of fresh Laplace updates (d = 20,000, R = 25 and
   100, 5 rows) at k/c = 0.1, 0.25, 0.5 under the two rules: ``||S_e|| / ||S(x)||``, the error
   sketch against one round's sketch, at the end and at its largest, and how far what was
   sent lags what was accumulated, ``||sum x_t - sum D_t|| / ||sum x_t||``.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

import torch
import yaml

from gradcomp.compression.count_sketch import CountSketch
from gradcomp.compression.sketch_probe import probe_vector, sketch_relative_error
from gradcomp.models import build_model

REPO = Path(__file__).resolve().parents[1]


def cnn_sizes(min_entries: int = 1000) -> list[int]:
    model = build_model("cnn")
    return [p.numel() for p in model.parameters() if p.numel() > min_entries]


def topk_alone(d: int, k: int) -> float:
    x = probe_vector(d)
    kept = torch.zeros_like(x)
    top = x.abs().topk(k).indices
    kept[top] = x[top]
    return float((kept - x).norm() / x.norm())


def report_sizes() -> None:
    sizes = cnn_sizes()
    whole = sum(sizes)
    print(f"cnn: sketched tensors {sizes} (update scope: d = {whole})")
    print("setup | d | rows x columns | k | k/c | relative error | top-K alone")
    for path in ("config/paper.yaml", "config/m22.yaml"):
        entries = yaml.safe_load((REPO / path).read_text())["lossy"]["compressors"]
        for e in entries:
            if e.get("compressor") != "count_sketch":
                continue
            for rate in e["rates"]:
                spec = {**CountSketch.options, **e}
                rows, ratio = int(spec["rows"]), float(spec["sketch_k_ratio"])
                ds = sizes if spec["sketch_scope"] == "tensor" else [whole]
                for d in ds:
                    c = math.ceil(rate * d / (100 * rows))
                    k = math.ceil(ratio * c)
                    err = sketch_relative_error(
                        d, rate, rows, ratio, spec["sketch_hash"], spec["sketch_topk"]
                    )
                    print(f"{path} R{rate} | {d} | {rows} x {c} | {k} | {k / c:.3f} | "
                          f"{err:.3f} | {topk_alone(d, k):.3f}")  # fmt: skip
    for rate in (10, 25, 100):  # paper.yaml's old entry: k inherited from topk 0.452
        c = math.ceil(rate * whole / 500)
        k = math.ceil(0.452 * whole)
        err = sketch_relative_error(whole, rate, 5, k / c)
        print(f"old paper.yaml R{rate} (k = 0.452 d) | {whole} | 5 x {c} | {k} | {k / c:.2f} | "
              f"{err:.3f} | {topk_alone(whole, k):.3f}")  # fmt: skip
    for hash_kind in ("m22_slip", "random"):  # M22's release: per tensor, k = non-zeros
        for d in sizes:
            c = math.ceil(d / 5)  # M22: floor(d / 5); one column more here
            err = sketch_relative_error(d, 100, 5, 0.6 * d / c + 1, hash_kind, 0.6)
            print(f"M22 release, {hash_kind} hash | {d} | 5 x {c} | nnz | ~3 | {err:.3f} | "
                  f"{topk_alone(d, math.ceil(0.6 * d)):.3f}")  # fmt: skip


def residuals(
    ratio: float, feedback: str, rounds: int, rate: int, d: int = 20_000
) -> tuple[float, float, float]:
    """(||S_e|| / ||S(x)|| at the end, its largest, ||sum x - sum D|| / ||sum x|| at the end)."""
    c = CountSketch(rate, rows=5, k_ratio=ratio, min_entries=0, error_feedback=True,
                    feedback=feedback, seed=1)  # fmt: skip
    h = c.hash_of(d, 0)
    ref = float(h.sketch(probe_vector(d, 0)).norm())
    worst, total, sent = 0.0, torch.zeros(d, dtype=torch.float64), torch.zeros(d)
    for t in range(rounds):
        x = probe_vector(d, 100 + t).to(torch.float32)
        payload, ctx = c.compress({"w": x})
        sent += c.decompress(payload, ctx)["w"]
        total += x.double()
        worst = max(worst, float(c.errors[("w",)].norm()) / ref)
    track = float((total - sent.double()).norm() / total.norm())
    return float(c.errors[("w",)].norm()) / ref, worst, track


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    report_sizes()
    logging.getLogger("gradcomp.compression.count_sketch").setLevel(logging.ERROR)
    print(f"\nerror feedback, {args.rounds} rounds of fresh Laplace updates, d = 20,000, 5 rows:")
    print("||S_e|| / ||S(x)|| at the end (largest); ||sum x - sum D|| / ||sum x|| at the end")
    for rate in (25, 100):
        for ratio in (0.1, 0.25, 0.5):
            cells = []
            for fb in ("zero", "subtract"):
                end, worst, track = residuals(ratio, fb, args.rounds, rate)
                cells.append(f"{fb} {end:.3g} ({worst:.3g}); {track:.3g}")
            print(f"R{rate} k/c = {ratio}: " + " | ".join(cells))


if __name__ == "__main__":
    main()
