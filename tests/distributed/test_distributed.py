"""The DDP communication hook (gradcomp.distributed) on a real process group: two CPU ranks
with gloo, started by torch.multiprocessing, train a tiny network for a few steps once per
compressor, each rank keeping its local gradients and the bytes it handed to the collectives;
the test then checks each run against independent references:

(a) ``quantizer: none`` without a sparsifier trains bit for bit like DDP's own default
    all-reduce (a run of the same workers with no hook registered);
(b) with every kind whose bytes are gathered (and a user's class, decoded) the averaged
    gradient of every step equals the mean of the two ranks' decoded gradients, computed here
    in one process by the study's own uplink (:func:`gradcomp.lossy.uplink.send`) from the same
    model, batches and per-user compressors;
(b') for every kind, the averaged gradient equals the rank-order combination, computed here,
    of what the ranks sent: their bytes decoded by receivers built here, or for the linear
    kinds their float32 vectors summed and decoded by code written here (random-K's shared
    positions from the agreed seed, PowerSGD's P and Q from the ranks' local gradients,
    the count sketch's mean table unsketched);
(c) the bits the hook counted per rank and step equal the study's uplink row for the same
    update; the wire bytes equal the payloads' sizes plus the stated overhead (8 bytes of
    size per bucket and the padding to the longest rank's payload) or the float32 numbers
    all-reduced; parameters are identical on both ranks after the steps.

tests/distributed/test_distributed_faults.py runs three ranks and failures on one rank.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

from gradcomp.compression import RATE_FIELDS, RateBreakdown, SpecError
from gradcomp.compression.random_k import RandomK
from gradcomp.compression.sketch_hash import SketchHash
from gradcomp.compression.specs import user_seed
from gradcomp.distributed import CompressionHookState, compression_hook
from gradcomp.lossy.uplink import send
from gradcomp.wire import UpdateLayout, make_receiver
from gradcomp.wire.users import compressor_factory

WORLD, STEPS, BATCH, SEED, LR = 2, 3, 4, 5, 0.1
SMALL = {"min_entries": 100}  # quantize the two weight matrices (216 and 4608 entries)
ENTRIES = 4916  # trainable entries of tiny_net
SIZE_BYTES = 8  # the stated overhead per bucket of the byte exchange, besides padding
STATUS_BYTES = 4  # the linear exchanges' failure check per bucket (an int32 all-reduced)

#: ecsq below one bit: its adaptive arithmetic code
HALF_BIT = {"quantizer": "ecsq", "family": "gennorm", "rate": 1, "M": 0, "target_bits": 0.5}
#: run name -> compressor spec (None: DDP's default all-reduce, no hook)
SPECS = {
    "default": None,
    "none": {"quantizer": "none"},
    "float16": {"quantizer": "float16", **SMALL},
    "float8": {"quantizer": "float8", **SMALL},
    "uniform": {"quantizer": "uniform", "rate": 3, **SMALL},
    "lloyd_gennorm": {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2, **SMALL},
    "kmeans": {"quantizer": "kmeans", "rate": 2, "M": 2, **SMALL},
    "tcq": {"quantizer": "tcq", "family": "gennorm", "rate": 2, "states": 4, **SMALL},
    "ecsq": {"quantizer": "ecsq", "family": "gennorm", "rate": 2, "M": 2, **SMALL},
    "ecsq_half_bit": {**HALF_BIT, **SMALL},
    "gaussian_channel": {"quantizer": "gaussian_channel", "rate": 3, **SMALL},
    "qsgd": {"quantizer": "qsgd", "rate": 4, **SMALL},
    "terngrad": {"quantizer": "terngrad", **SMALL},
    "scaled_sign_ef": {"quantizer": "scaled_sign", "error_feedback": True, **SMALL},
    "topk_uniform": {"quantizer": "uniform", "rate": 2, "topk": 0.2, **SMALL},
    "randomk": {"quantizer": "uniform", "rate": 2, "sparsifier": "randomk", "topk": 0.3, **SMALL},
    "randomk_none": {"quantizer": "none", "sparsifier": "randomk", "topk": 0.3},
    "m22_memory": {
        "quantizer": "kmeans",
        "rate": 2,
        "topk": 0.3,
        "error_feedback": True,
        "memory_mode": "m22",
        **SMALL,
    },  # fmt: skip
    "powersgd_ef": {"compressor": "powersgd", "rate": 2, "error_feedback": True},
    "powersgd_bytes": {"compressor": "powersgd", "rate": 2, "error_feedback": True},
    # R = 100 cells per 100 entries: smaller sketches are refused (worse than sending nothing)
    "count_sketch": {"compressor": "count_sketch", "rate": 100, "min_entries": 100},
    "count_sketch_ef": {
        "compressor": "count_sketch",
        "rate": 100,
        "min_entries": 100,
        "error_feedback": True,
    },  # fmt: skip
    "user_class": {"class": "test_distributed:ScaledRound", "rate": 3},
    # per-tensor memory across several buckets (bucket_cap_mb below)
    "uniform_ef_buckets": {"quantizer": "uniform", "rate": 2, "error_feedback": True, **SMALL},
}
BUCKET_CAP_MB = {"uniform_ef_buckets": 0.004}
FORCED = {"powersgd_bytes": "bytes"}  # run name -> exchange (else "auto")
#: run name -> the exchange "auto" must choose
EXPECTED_EXCHANGE = {
    "none": "allreduce", "randomk_none": "randomk", "powersgd_ef": "powersgd",
    "count_sketch": "sketch", "user_class": "decoded",
}  # fmt: skip
#: runs that move at least the float32 bucket: lossless or decoded floats, the ideal
#: channel's stand-in values, sketches of as many cells as entries (R = 100)
NO_SAVING = {"none", "user_class", "gaussian_channel", "count_sketch", "count_sketch_ef"}
HOOKED = [name for name, spec in SPECS.items() if spec is not None]
LINEAR = [n for n, e in EXPECTED_EXCHANGE.items() if e not in ("bytes", "decoded")]
GATHERED = [n for n in HOOKED if n not in EXPECTED_EXCHANGE]  # the byte exchange


class ScaledRound:
    """docs/extending.md's user compressor: scale max|g|, round to 2L + 1 levels."""

    def __init__(self, rate: int, seed: int = 0):
        self.bits, self.L = rate, 2 ** (rate - 1) - 1

    def compress(self, update):
        scales = {n: g.abs().max().float().clamp_min(1e-30) for n, g in update.items()}
        ks = {n: torch.round(g / scales[n] * self.L).to(torch.int32) for n, g in update.items()}
        return (ks, scales), {n: g.dtype for n, g in update.items()}

    def decompress(self, payload, ctx):
        ks, scales = payload
        return {n: (k * scales[n] / self.L).to(ctx[n]) for n, k in ks.items()}

    def rate(self, payload, ctx):
        n = sum(k.numel() for k in payload[0].values())
        return RateBreakdown(
            payload_fixed_bits=self.bits * n, payload_huffman_bits=self.bits * n,
            side_bits=32 * len(payload[0]), n_entries=n, n_sent=n,
        )  # fmt: skip


def tiny_net() -> nn.Module:
    """Conv (216 + 8), dense 288 -> 16 (4608 + 16), dense 16 -> 4 (64 + 4); same init each call."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(288, 16), nn.ReLU(),
        nn.Linear(16, 4),
    )  # fmt: skip


SHAPES = {n: tuple(p.shape) for n, p in tiny_net().named_parameters()}


def _bits(rate) -> dict[str, int]:
    """A rate breakdown's fields and both totals, as the study's uplink rows hold them."""
    return {
        **dataclasses.asdict(rate),
        "bits_coded": rate.total_coded,
        "bits_fixed": rate.total_fixed,
    }


def batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(BATCH, 3, 8, 8, generator=g), torch.randint(0, 4, (BATCH,), generator=g)


def recording(buckets: list):
    """gradcomp's hook, appending each bucket's parameter names (model order) and this rank's
    local gradients (before the exchange) to ``buckets``."""

    def hook(state, bucket):
        names = [state.name_of(p) for p in bucket.parameters()]
        local = {n: g.detach().clone() for n, g in zip(names, bucket.gradients(), strict=True)}
        buckets.append({"names": sorted(names, key=state.order.get), "local": local})
        return compression_hook(state, bucket)

    return hook


def train(rank: int, spec, *, world: int, exchange: str = "auto", bucket_cap_mb=None) -> dict:
    """One run on this rank: STEPS steps of tiny_net, SGD; what the checks need."""
    model = tiny_net()
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)
    state, buckets = None, []
    if spec is not None:
        state = CompressionHookState(
            spec, model=model, seed=SEED, exchange=exchange, keep_bytes=True
        )
        ddp.register_comm_hook(state, recording(buckets))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    grads = []
    for step in range(STEPS):
        x, y = batch(rank, step)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(x), y).backward()
        grads.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
        opt.step()
    out = {"grads": grads, "params": {n: p.detach().clone() for n, p in model.named_parameters()}}
    if state is not None:
        h = state.history
        out.update(
            exchange=state.exchange, bits=[_bits(s.rate) for s in h],
            buckets=[s.buckets for s in h], payload_bytes=[s.payload_bytes for s in h],
            wire_bytes=[s.wire_bytes for s in h], rnds=[s.rnds for s in h],
            sent=[s.sent for s in h], calls=buckets,
        )  # fmt: skip
    return out


def start_group(rank: int, world: int, init_file: str, timeout_s: float) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
        timeout=timedelta(seconds=timeout_s),
    )  # fmt: skip


def worker(rank: int, init_file: str, out_dir: str) -> None:
    """One rank: every run of SPECS in turn; saves what :func:`train` returns, and the log."""
    start_group(rank, WORLD, init_file, 120)
    results = {}
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger("gradcomp.distributed").addHandler(handler)
    logging.getLogger("gradcomp.distributed").setLevel(logging.INFO)
    for name, spec in SPECS.items():
        messages.clear()
        results[name] = train(
            rank, spec, world=WORLD, exchange=FORCED.get(name, "auto"),
            bucket_cap_mb=BUCKET_CAP_MB.get(name),
        )  # fmt: skip
        results[name]["log"] = list(messages)
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()


def spawn(fn, world: int, out: Path, wall_s: float, *args) -> None:
    """Run ``fn(rank, init_file, out, *args)`` on ``world`` spawned ranks; fail the test (and
    kill them) after ``wall_s`` seconds."""
    ctx = mp.start_processes(
        fn, args=(str(out / "store"), str(out), *args), nprocs=world, join=False,
        start_method="spawn",
    )  # fmt: skip
    deadline = time.monotonic() + wall_s
    while not ctx.join(timeout=2):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                if p.is_alive():
                    os.kill(p.pid, 9)
            pytest.fail(f"the {world} DDP ranks did not finish within {wall_s} s")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[dict]:
    """Per rank: run name -> what :func:`train` returned, and "log"."""
    out = tmp_path_factory.mktemp("ddp")
    spawn(worker, WORLD, out, 240)  # generous: a busy 2-core machine
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


@contextmanager
def one_thread():
    """The ranks' thread count, so that the same ops round the same way here."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_REFERENCES: dict[str, list[dict]] = {}


def study_reference(name: str) -> list[dict]:
    """:func:`compute_reference` of run ``name``, computed once."""
    if name not in _REFERENCES:
        _REFERENCES[name] = compute_reference(SPECS[name], agreed=name in LINEAR)
    return _REFERENCES[name]


def compute_reference(spec: dict, *, agreed: bool = False) -> list[dict]:
    """The same training in one process through the study's uplink: per step, each rank's
    local gradient sent by user r's compressor (:func:`send`; with ``agreed``, every rank's
    is a user-0 compressor of its own, as the linear exchanges build them), the mean of the
    two reconstructions applied. Returns per step {"mean": name -> tensor, "rows": [row per
    rank]}."""
    model = tiny_net()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    make = compressor_factory(spec, SEED)
    users = [make(0 if agreed else r) for r in range(WORLD)]
    out = []
    with one_thread():
        for step in range(STEPS):
            sent = []
            for r in range(WORLD):
                model.zero_grad(set_to_none=True)
                x, y = batch(r, step)
                F.cross_entropy(model(x), y).backward()
                update = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
                receiver = make.receiver(0 if agreed else r, step)  # it decodes the bytes
                sent.append(
                    send(users[r], update, rnd=step, user=r, n_train=BATCH, receiver=receiver)
                )
            mean = {n: sum(s.recon[n].to(torch.float32) / WORLD for s in sent) for n in update}
            for n, p in model.named_parameters():
                p.grad = mean[n].clone()
            opt.step()
            out.append({"mean": mean, "rows": [s.row for s in sent]})
    return out


# ---------------------------------------------------------------- references from what was sent


def floats(data: bytes) -> torch.Tensor:
    return torch.from_numpy(np.frombuffer(data, dtype="<f4").copy())


def buckets_of(ranks: list[dict], name: str, step: int) -> list[tuple[list[str], int, list]]:
    """Per bucket of ``step``: (names in model order, update index, [rank r's sent parts])."""
    first = ranks[0][name]
    n_before = sum(first["buckets"][:step])
    out = []
    for b, rnd in enumerate(first["rnds"][step]):
        names = first["calls"][n_before + b]["names"]
        out.append((names, rnd, [ranks[r][name]["sent"][step][b] for r in range(len(ranks))]))
    return out


def gathered_mean(name: str, names: list[str], rnd: int, blobs: list[bytes]) -> dict:
    """The rank-order mean (float64 sum, one division) of each rank's bytes, decoded by its
    receiver built here."""
    layout = UpdateLayout.from_items((n, SHAPES[n], torch.float32) for n in names)
    total = None
    for r, data in enumerate(blobs):
        got = make_receiver(SPECS[name], layout, seed=SEED, user=r, rnd=rnd).decode(data)
        got = {n: t.to(torch.float64) for n, t in got.items()}
        total = got if total is None else {n: total[n] + got[n] for n in names}
    return {n: (total[n] / len(blobs)).to(torch.float32) for n in names}


def random_k_mean(name: str, names: list[str], rnd: int, parts: list[bytes]) -> dict:
    """The ranks' kept values summed, divided, at the positions of the agreed seed (user 0)."""
    spec = SPECS[name]
    shapes = {n: SHAPES[n] for n in names}
    k = math.ceil(spec["topk"] * sum(math.prod(s) for s in shapes.values()))
    seed = RandomK.mask_seed(user_seed(SEED, 0), rnd)
    masks = RandomK.masks_from_seed(seed, k, shapes)
    values = sum(floats(p) for p in parts[1:]) if len(parts) > 1 else 0
    mean = (floats(parts[0]) + values) / len(parts)
    out, start = {}, 0
    for n in names:
        t = torch.zeros(shapes[n])
        t[masks[n]] = mean[start : start + int(masks[n].sum())]
        start += int(masks[n].sum())
        out[n] = t
    return out


def sketch_mean(name: str, names: list[str], parts: list[bytes], locals_: list[dict]) -> dict:
    """The mean table of the agreed hashes unsketched (one sketch of the big tensors, FetchSGD
    scope); also checks each rank's table is the sketch of its local gradient."""
    spec = SPECS[name]
    big = [n for n in names if math.prod(SHAPES[n]) > spec["min_entries"]]
    small = [n for n in names if n not in big]
    d = sum(math.prod(SHAPES[n]) for n in big)
    rows = 5
    columns = math.ceil(spec["rate"] * d / (100 * rows))
    h = SketchHash(d, rows, columns, user_seed(SEED, 0) * 1_000_003 + 0, "random")
    for part, local in zip(parts, locals_, strict=True):
        x = torch.cat([local[n].reshape(-1).to(torch.float64) for n in big])
        assert torch.equal(
            floats(part)[: rows * columns], h.sketch(x).to(torch.float32).reshape(-1)
        )
    mean = sum(floats(p) for p in parts) / len(parts)
    table = mean[: rows * columns].reshape(rows, columns)
    flat = h.unsketch(table, min(d, math.ceil(0.25 * columns)))
    out, start = {}, 0
    for n in big:
        out[n] = flat[start : start + math.prod(SHAPES[n])].reshape(SHAPES[n]).to(torch.float32)
        start += math.prod(SHAPES[n])
    start = rows * columns
    for n in small:
        out[n] = mean[start : start + math.prod(SHAPES[n])].reshape(SHAPES[n])
        start += math.prod(SHAPES[n])
    return out


def powersgd_reference(ranks: list[dict], name: str) -> list[dict]:
    """PowerSGD with error feedback as PyTorch's hook computes it, from the ranks' local
    gradients: per matrix ``M_r = g_r + e_r``, ``P = orth(mean_r M_r Q)``, ``Q = mean_r M_r^T P``,
    gradient ``P Q^T``, ``e_r = M_r - P Q^T``; Q warm-started, first drawn from the agreed seed
    (user 0's generator, float64 normal, QR); vectors and small matrices averaged raw. Per
    step, name -> gradient."""
    rank = SPECS[name]["rate"]
    world = len(ranks)
    gen = torch.Generator().manual_seed(user_seed(SEED, 0))
    qs: dict[str, torch.Tensor] = {}
    errors = [{} for _ in range(world)]
    out = []
    with one_thread():
        for step in range(STEPS):
            names = ranks[0][name]["calls"][step]["names"]  # one bucket per step
            local = [ranks[r][name]["calls"][step]["local"] for r in range(world)]
            grads = {}
            for n in names:
                shape = SHAPES[n]
                rows, cols = shape[0], math.prod(shape[1:])
                r = min(rank, rows, cols) if len(shape) >= 2 else 0
                if not (r and 2 * (rows + cols) * r < rows * cols):
                    grads[n] = sum(loc[n] for loc in local) / world
                    continue
                ms = [
                    (local[k][n] + errors[k].get(n, 0.0)).reshape(rows, cols) for k in range(world)
                ]
                if n not in qs:
                    q0 = torch.randn(cols, r, generator=gen, dtype=torch.float64)
                    qs[n] = torch.linalg.qr(q0).Q.to(torch.float32)
                p = torch.linalg.qr(sum(m @ qs[n] for m in ms) / world).Q
                q = sum(m.T @ p for m in ms) / world
                approx = p @ q.T
                for k in range(world):
                    errors[k][n] = (ms[k] - approx).reshape(shape)
                qs[n] = q
                grads[n] = approx.reshape(shape)
            out.append(grads)
    return out


def combined_reference(ranks: list[dict], name: str) -> list[dict]:
    """Per step, name -> the gradient every rank should hold, from what the ranks sent."""
    exchange = EXPECTED_EXCHANGE.get(name, "bytes")
    if exchange == "powersgd":
        return powersgd_reference(ranks, name)
    out = []
    for step in range(STEPS):
        grads = {}
        n_before = sum(ranks[0][name]["buckets"][:step])
        for b, (names, rnd, sent) in enumerate(buckets_of(ranks, name, step)):
            parts = [s[0] for s in sent]
            if exchange == "bytes":
                grads.update(gathered_mean(name, names, rnd, parts))
            elif exchange == "randomk":
                grads.update(random_k_mean(name, names, rnd, parts))
            elif exchange == "sketch":
                locals_ = [r[name]["calls"][n_before + b]["local"] for r in ranks]
                grads.update(sketch_mean(name, names, parts, locals_))
        out.append(grads)
    return out


def expected_wire_bytes(ranks: list[dict], name: str, step: int) -> int:
    """What one rank hands to the collectives in ``step``, from the payloads' sizes."""
    exchange = EXPECTED_EXCHANGE.get(name, "bytes")
    status = STATUS_BYTES * len(ranks[0][name]["rnds"][step])  # the failure check per bucket
    if exchange in ("allreduce", "decoded"):
        return status + 4 * ENTRIES  # the float32 bucket
    if exchange == "bytes":
        return sum(
            SIZE_BYTES + max(len(s[0]) for s in sent)
            for _, _, sent in buckets_of(ranks, name, step)
        )
    if exchange == "randomk":
        return status + 4 * math.ceil(SPECS[name]["topk"] * ENTRIES)
    if exchange == "powersgd":
        total = 0
        for shape in SHAPES.values():
            rows, cols = shape[0], math.prod(shape[1:])
            r = min(SPECS[name]["rate"], rows, cols) if len(shape) >= 2 else 0
            low = r and 2 * (rows + cols) * r < rows * cols
            total += (rows + cols) * r if low else math.prod(shape)
        return status + 4 * total
    big = sum(math.prod(s) for s in SHAPES.values() if math.prod(s) > SPECS[name]["min_entries"])
    return status + 4 * (5 * math.ceil(SPECS[name]["rate"] * big / 500) + ENTRIES - big)


# ---------------------------------------------------------------------------------------- tests


@pytest.mark.slow
def test_none_trains_bit_for_bit_like_the_default_allreduce(runs) -> None:
    """(a) Planted bugs: the hook forgetting the division by the world size, or writing a
    lossy copy back, changes the gradients."""
    assert runs[0]["none"]["exchange"] == "allreduce"
    for rank in range(WORLD):
        hooked, default = runs[rank]["none"], runs[rank]["default"]
        for step in range(STEPS):
            for name, g in default["grads"][step].items():
                assert torch.equal(hooked["grads"][step][name], g), (rank, step, name)
        for name, p in default["params"].items():
            assert torch.equal(hooked["params"][name], p), (rank, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*GATHERED, "user_class"])
def test_averaged_gradient_is_the_mean_of_the_decoded_ones(runs, name) -> None:
    """(b) Planted bugs: every rank seeded alike (the stochastic kinds), a rank's bytes decoded
    by another rank's receiver, buckets named or ordered wrongly, state not carried across
    steps."""
    assert runs[0][name]["exchange"] == EXPECTED_EXCHANGE.get(name, "bytes")
    reference = study_reference(name)
    for rank in range(WORLD):
        for step, ref in enumerate(reference):
            got = runs[rank][name]["grads"][step]
            for n, mean in ref["mean"].items():
                assert torch.equal(got[n], mean), (name, rank, step, n, (got[n] - mean).abs().max())
    if name in BUCKET_CAP_MB:
        assert max(runs[0][name]["buckets"]) > 1  # the case really spans several buckets
    assert not all(  # the compressor did change the gradient
        torch.equal(runs[0][name]["grads"][0][n], g)
        for n, g in runs[0]["default"]["grads"][0].items()
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in HOOKED if n not in ("none", "user_class")])
def test_averaged_gradient_is_the_combination_of_what_was_sent(runs, name) -> None:
    """(b') Bit for bit, from the bytes and vectors the ranks handed to the collectives.
    Planted bugs: the decodes summed in another order or divided per rank, a receiver with the
    wrong update index (several buckets) or user, random-K or sketch draws per rank instead
    of the group's, PowerSGD's P not orthonormalised after its all-reduce, its Q not warm
    started from the averaged Q, its memory not fed the averaged approximation."""
    ranks = [runs[r] for r in range(WORLD)]
    assert ranks[0][name]["exchange"] == EXPECTED_EXCHANGE.get(name, FORCED.get(name, "bytes"))
    flat = [i for step in ranks[0][name]["rnds"] for i in step]
    assert flat == list(range(len(flat)))  # the update index counts buckets, on every rank
    for step, ref in enumerate(combined_reference(ranks, name)):
        assert set(ref) == set(SHAPES)
        for rank in range(WORLD):
            got = ranks[rank][name]["grads"][step]
            for n, mean in ref.items():
                assert torch.equal(got[n], mean), (name, rank, step, n, (got[n] - mean).abs().max())


@pytest.mark.slow
@pytest.mark.parametrize("name", HOOKED)
def test_bits_counted_equal_the_studys(runs, name) -> None:
    """(c) The hook's bits per rank and step, recorded and logged, equal the study's uplink row
    for the same update (its accounted bits), and, with one bucket, its payload bytes are the
    bytes the study's server decodes. Planted bugs: a bucket's bits dropped or counted twice,
    the fixed total logged as coded."""
    reference = study_reference(name)
    for rank in range(WORLD):
        bits = runs[rank][name]["bits"]
        assert len(bits) == STEPS
        logs = [m for m in runs[rank][name]["log"] if m.startswith("rank ")]
        for step, ref in enumerate(reference):
            row = ref["rows"][rank]
            for field in (*RATE_FIELDS, "bits_fixed"):
                assert bits[step][field] == row[field], (name, rank, step, field)
            assert bits[step]["bits_coded"] == row["bits_accounted"]
            assert bits[step]["n_entries"] == ENTRIES  # every trainable entry, once
            n_bytes = runs[rank][name]["payload_bytes"][step]
            if row["bits_source"] == "self-reported":  # the user class: no byte format
                assert n_bytes is None
            elif row["bits_source"] == "bytes" and name not in BUCKET_CAP_MB:
                assert 8 * n_bytes == row["bits_coded"], (name, rank, step)
            else:  # several buckets, each its own header; or the ideal channel's stand-ins
                assert 8 * n_bytes > row["bits_accounted"]
            acc = row["bits_accounted"]
            logged = f"rank {rank} step {step}: {acc} bits coded ({row['bits_fixed']}"
            assert logs[step].startswith(logged), logs


@pytest.mark.slow
@pytest.mark.parametrize("name", HOOKED)
def test_wire_bytes_are_the_payloads_plus_the_stated_overhead(runs, name) -> None:
    """(c) ``wire_bytes``: the sizes (8 bytes) and the padded payloads per bucket, or the
    float32 numbers all-reduced; for the byte exchange, a rank's payload is its byte-format
    payload (``payload_bytes``). Planted bugs: the padding or the sizes not counted, the raw
    tensors of PowerSGD left out, the unpadded length counted."""
    ranks = [runs[r] for r in range(WORLD)]
    for rank in range(WORLD):
        for step in range(STEPS):
            want = expected_wire_bytes(ranks, name, step)
            assert ranks[rank][name]["wire_bytes"][step] == want, (name, rank, step)
            if EXPECTED_EXCHANGE.get(name, "bytes") == "bytes":
                sent = [s[0] for s in ranks[rank][name]["sent"][step]]
                assert ranks[rank][name]["payload_bytes"][step] == sum(map(len, sent))
    if name not in NO_SAVING:
        assert max(ranks[0][name]["wire_bytes"]) < 4 * ENTRIES  # it does save bandwidth


@pytest.mark.slow
@pytest.mark.parametrize("name", SPECS)
def test_parameters_are_identical_on_every_rank(runs, name) -> None:
    """After the steps. Planted bug: a rank averaging its own decode with the others' in
    another order, or keeping its own reconstruction."""
    for n, p in runs[0][name]["params"].items():
        for rank in range(1, WORLD):
            assert torch.equal(runs[rank][name]["params"][n], p), (name, rank, n)


@pytest.mark.slow
def test_a_class_without_a_byte_format_is_decoded_and_said_so(runs) -> None:
    """The fallback is logged once per state, as a warning naming the class."""
    log = runs[0]["user_class"]["log"]
    assert sum("ScaledRound has no byte format" in m for m in log) == 1, log


def test_bad_spec_names_the_key() -> None:
    """The spec is checked before anything touches a process group."""
    with pytest.raises(SpecError, match="'quantizer'"):
        CompressionHookState({"quantizer": "zip"}, model=tiny_net())
    with pytest.raises(SpecError, match="'rate'"):
        CompressionHookState({"quantizer": "uniform"}, model=tiny_net())
    with pytest.raises(TypeError, match="seed"):
        CompressionHookState({"quantizer": "none"}, model=tiny_net(), seed="0")
    with pytest.raises(TypeError, match="model"):
        CompressionHookState({"quantizer": "none"}, model="net")
    with pytest.raises(ValueError, match="exchange"):
        CompressionHookState({"quantizer": "none"}, model=tiny_net(), exchange="gather")


@pytest.mark.slow
def test_example_trains_with_a_compressor(tmp_path) -> None:
    """examples/ddp_train.py under torchrun, 2 ranks, 3 steps of paper Y's CNN with GenNorm
    Lloyd at R = 2: it prints a loss and bits per step for each step and a test accuracy.
    Planted bug: the hook not registered (the spec ignored) sends 32 bits per entry."""
    import re
    import subprocess
    import sys

    from conftest import REPO, write_imagefolder_tree

    tree = write_imagefolder_tree(tmp_path / "data", n_train=40, n_test=20)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(REPO / "examples" / "ddp_train.py"), "--data", str(tree),
        "--cache", str(tmp_path / "cache.pt"), "--train-subset", "40", "--test-subset", "20",
        "--steps", "3", "--batch-size", "8", "--log-every", "1",
        "--spec", "{quantizer: lloyd, family: gennorm, rate: 2, M: 2}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    line = r"step (\d+): loss ([\d.]+), bits per step (\d+) per rank \(([\d.]+)"
    steps = re.findall(line, proc.stdout)
    assert [int(s[0]) for s in steps] == [0, 1, 2], proc.stdout
    for _, loss, bits, per_entry in steps:
        assert float(loss) > 0 and int(bits) > 0
        assert 1.0 < float(per_entry) < 2.5  # R = 2 plus side information, raw small tensors
    accuracy = re.search(r"test accuracy ([\d.]+) after 3 steps", proc.stdout)
    assert accuracy and 0.0 <= float(accuracy.group(1)) <= 1.0, proc.stdout
