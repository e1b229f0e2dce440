"""Encode + decode of paper Y's CNN update in the uplink's byte format, per compressor, beside
``pickle`` of the same payload and a float32 copy of the update, all in one run.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_wire.py --updates
results/lossy/cnn/none/R32_M0/seed*/update.safetensors``

The updates are the default study's own: each full run's last-round update of user 0
(``update.safetensors``, "before": 552,874 entries of the cnn, BatchNorm statistics
included); two of them are the two users (1.1 M entries). Without ``--updates`` a synthetic
update of the cnn's shapes (GenNorm shape 0.8 entries) is used, and the output says so.

Per compressor (the default config's kinds at one rate each, and M22's float8, TCQ and
count sketch): each user's update is compressed once (not timed), then, best of
``--repeat``, timed in CPU seconds (``time.process_time``) and wall ms:

- ``wire``: ``encode_update`` then a receiver's ``decode`` (built from the spec, the layout and
  the seeds, as the server does), checked bit for bit against the sender's reconstruction
  (once, before timing); the Lloyd design cache is cleared between encode and decode, so the
  receiver designs its levels as one on another machine would (a count sketch's hashes,
  the same every round, stay cached);
- ``pickle``: ``pickle.dumps`` then ``pickle.loads`` of the payload (protocol 5; the Huffman
  codes' cached decode trees dropped first, as they do not pickle);
- ``float32 copy``: the update's tensors into one float32 bytes object and back into tensors.

Printed: bytes sent (wire and pickle) and the accounted bits (the by-part RateBreakdown),
8 x bytes / accounted, encode + decode ms for both users, entries (of both users) per CPU
second, and the ratios wire / pickle and wire / float32 copy of the CPU time.
"""

from __future__ import annotations

import argparse
import glob
import math
import pickle
import time

import numpy as np
import torch

from gradcomp.compression import check_spec
from gradcomp.compression.lloyd_quantizer import forget_designs
from gradcomp.wire import UpdateLayout, check_same_bits, encode_update, make_receiver
from gradcomp.wire.users import compressor_factory

SEED = 0
SPECS = {
    "none (top-K float32)": {"quantizer": "none", "topk": 0.452},
    "dense float32": {"quantizer": "none"},
    "float16": {"quantizer": "float16", "topk": 0.452},
    "float8 (M22)": {"quantizer": "float8", "float8_ties": "upper", "topk": 0.6},
    "uniform R2": {"quantizer": "uniform", "rate": 2, "topk": 0.452},
    "uniform R2 random-K": {"quantizer": "uniform", "rate": 2, "topk": 0.452,
                            "sparsifier": "randomk"},
    "gennorm R4 M2": {"quantizer": "lloyd", "family": "gennorm", "rate": 4, "M": 2,
                      "topk": 0.452},
    "kmeans R2 M2": {"quantizer": "kmeans", "rate": 2, "M": 2, "topk": 0.452},
    "tcq R2": {"quantizer": "tcq", "family": "gennorm", "rate": 2, "topk": 0.452},
    "channel R2 (ideal)": {"quantizer": "gaussian_channel", "rate": 2, "topk": 0.452},
    "qsgd R4": {"quantizer": "qsgd", "rate": 4},
    "qsgd R2": {"quantizer": "qsgd", "rate": 2},
    "terngrad": {"quantizer": "terngrad"},
    "signef": {"quantizer": "scaled_sign", "error_feedback": True},
    "powersgd R2": {"compressor": "powersgd", "rate": 2, "error_feedback": True},
    "sketch (M22)": {"compressor": "count_sketch", "rate": 100, "rows": 5,
                     "sketch_scope": "tensor", "sketch_topk": 0.6},
}  # fmt: skip


def load_updates(patterns: list[str]) -> tuple[list[dict[str, torch.Tensor]], str]:
    from gradcomp.lossy.run_files import read_snapshot

    paths = sorted(p for pattern in patterns for p in glob.glob(pattern))
    if len(paths) >= 2:
        return [read_snapshot(p)["before"] for p in paths[:2]], ", ".join(paths[:2])
    from gradcomp.models import build_model

    model = build_model("cnn")
    rng = np.random.default_rng(0)
    out = []
    for _ in range(2):
        upd = {}
        for name, t in model.state_dict().items():
            if t.is_floating_point():
                g = rng.gamma(1 / 0.8, size=t.numel()) ** (1 / 0.8) * rng.choice([-1, 1], t.numel())
                upd[name] = torch.from_numpy((1e-3 * g).astype(np.float32)).reshape(t.shape)
        out.append(upd)
    return out, "SYNTHETIC (no --updates found): GenNorm(0.8) entries of the cnn's shapes"


def best(fn, repeat: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of the fastest of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def picklable(payload):
    """The payload with its Huffman codes' cached decode trees dropped (a bitarray decodetree
    does not pickle; the code rebuilds it on its next decode)."""
    for p in payload.values() if isinstance(payload, dict) else ():
        code = getattr(p, "code", None)
        if code is not None and hasattr(code, "_tree"):
            code._tree = None
    return payload


def float32_copy(updates):
    for u in updates:
        flat = torch.cat([t.reshape(-1).to(torch.float32) for t in u.values()])
        data = flat.numpy().tobytes()
        back, start = torch.from_numpy(np.frombuffer(data, dtype=np.float32).copy()), 0
        for t in u.values():
            back[start : start + t.numel()].reshape(t.shape)
            start += t.numel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", nargs="*", default=[
        "results/lossy/cnn/none/R32_M0/seed*/update.safetensors"])  # fmt: skip
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None, help="compressor names to run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    updates, source = load_updates(args.updates)
    entries = sum(t.numel() for u in updates for t in u.values())
    layout = UpdateLayout.of(updates[0])
    print(f"updates: {source}; {entries} entries (2 users), 1 torch thread")
    base_cpu, base_wall = best(lambda: float32_copy(updates), args.repeat)
    print(f"float32 copy: {1e3 * base_wall:.1f} ms, {entries / base_cpu / 1e6:.1f} M entries "
          "per CPU second")  # fmt: skip
    print("compressor | bytes | pickle bytes | 8 bytes / accounted | wire ms | wire M entries "
          "per CPU s | pickle ms | wire / pickle CPU | wire / float32 copy CPU")  # fmt: skip
    for name, spec in SPECS.items():
        if args.only and name not in args.only:
            continue
        checked = check_spec(spec)
        make = compressor_factory(checked, SEED)
        sent = []
        for user, u in enumerate(updates):
            c = make(user)
            payload, ctx = c.compress(u)
            own = {n: t.cpu() for n, t in c.decompress(payload, ctx).items()}
            sent.append((user, c, payload, ctx, own, c.rate(payload, ctx).total(True)))
        data = {user: encode_update(c, p, x) for user, c, p, x, _, _ in sent}
        for user, _, _, _, own, _ in sent:
            receiver = make_receiver(checked, layout, seed=SEED, user=user, rnd=0)
            check_same_bits(own, receiver.decode(data[user]), f"{name} user {user}")

        def wire(sent=sent, checked=checked):
            for user, c, p, x, _, _ in sent:
                blob = encode_update(c, p, x)
                forget_designs()  # the receiver designs the levels itself
                make_receiver(checked, layout, seed=SEED, user=user, rnd=0).decode(blob)

        for _, _, p, _, _, _ in sent:
            picklable(p)

        def pickled(sent=sent):
            for _, _, p, _, _, _ in sent:
                pickle.loads(pickle.dumps(p, protocol=5))

        w_cpu, w_wall = best(wire, args.repeat)
        p_cpu, p_wall = best(pickled, args.repeat)
        n_bytes = sum(len(d) for d in data.values())
        p_bytes = sum(len(pickle.dumps(p, protocol=5)) for _, _, p, _, _, _ in sent)
        accounted = sum(a for *_, a in sent)
        print(
            f"{name} | {n_bytes} | {p_bytes} | {8 * n_bytes / accounted:.5f} | "
            f"{1e3 * w_wall:.1f} | {entries / w_cpu / 1e6:.1f} | {1e3 * p_wall:.1f} | "
            f"{w_cpu / p_cpu:.2f} | {w_cpu / base_cpu:.1f}"
        )
    assert math.isfinite(base_cpu)


if __name__ == "__main__":
    main()
