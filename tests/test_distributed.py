"""The DDP communication hook (gradcomp.distributed) on a real process group: two CPU ranks
with gloo, started by torch.multiprocessing, train a tiny network for a few steps once per
compressor; the test then checks each run against independent references:

(a) ``quantizer: none`` without a sparsifier trains bit for bit like DDP's own default
    all-reduce (a run of the same workers with no hook registered);
(b) with every built-in compressor kind (and a user's class) the averaged gradient of every
    step equals the mean of the two ranks' decoded gradients, computed here in one process
    by the study's own uplink (:func:`gradcomp.lossy.uplink.send`) from the same model,
    batches and per-user compressors;
(c) the bits the hook counted per rank and step equal the study's uplink row for the same
    update.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

from gradcomp.compression import RATE_FIELDS, RateBreakdown, SpecError
from gradcomp.distributed import CompressionHookState, register_compression_hook
from gradcomp.lossy.uplink import compressor_factory, send

WORLD, STEPS, BATCH, SEED, LR = 2, 3, 4, 5, 0.1
SMALL = {"min_entries": 100}  # quantize the two weight matrices (216 and 4608 entries)

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
    "gaussian_channel": {"quantizer": "gaussian_channel", "rate": 3, **SMALL},
    "qsgd": {"quantizer": "qsgd", "rate": 4, **SMALL},
    "terngrad": {"quantizer": "terngrad", **SMALL},
    "scaled_sign_ef": {"quantizer": "scaled_sign", "error_feedback": True, **SMALL},
    "topk_uniform": {"quantizer": "uniform", "rate": 2, "topk": 0.2, **SMALL},
    "randomk": {"quantizer": "uniform", "rate": 2, "sparsifier": "randomk", "topk": 0.3, **SMALL},
    "m22_memory": {
        "quantizer": "kmeans",
        "rate": 2,
        "topk": 0.3,
        "error_feedback": True,
        "memory_mode": "m22",
        **SMALL,
    },  # fmt: skip
    "powersgd_ef": {"compressor": "powersgd", "rate": 2, "error_feedback": True},
    # R = 100 cells per 100 entries: smaller sketches are refused (worse than sending nothing)
    "count_sketch": {"compressor": "count_sketch", "rate": 100, "min_entries": 100},
    "user_class": {"class": "test_distributed:ScaledRound", "rate": 3},
    # per-tensor memory across several buckets (bucket_cap_mb below)
    "uniform_ef_buckets": {"quantizer": "uniform", "rate": 2, "error_feedback": True, **SMALL},
}
BUCKET_CAP_MB = {"uniform_ef_buckets": 0.004}
HOOKED = [name for name, spec in SPECS.items() if spec is not None]


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


def worker(rank: int, init_file: str, out_dir: str) -> None:
    """One rank: every run of SPECS in turn; saves grads per step, final params and bits."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD,
        timeout=timedelta(seconds=300),
    )  # fmt: skip
    results = {}
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger("gradcomp.distributed").addHandler(handler)
    logging.getLogger("gradcomp.distributed").setLevel(logging.INFO)
    for name, spec in SPECS.items():
        messages.clear()
        model = tiny_net()
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=BUCKET_CAP_MB.get(name))
        state = register_compression_hook(ddp, spec, seed=SEED) if spec is not None else None
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        grads = []
        for step in range(STEPS):
            x, y = batch(rank, step)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(ddp(x), y).backward()
            grads.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
            opt.step()
        results[name] = {
            "grads": grads,
            "params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "bits": None if state is None else [_bits(h.rate) for h in state.history],
            "buckets": None if state is None else [h.buckets for h in state.history],
            "payload_bytes": None if state is None else [h.payload_bytes for h in state.history],
            "log": list(messages),
        }
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[dict]:
    """Per rank: run name -> {"grads": [step -> name -> tensor], "params", "bits", "buckets"}."""
    out = tmp_path_factory.mktemp("ddp")
    ctx = mp.start_processes(
        worker, args=(str(out / "store"), str(out)), nprocs=WORLD, join=False,
        start_method="spawn",
    )  # fmt: skip
    deadline = time.monotonic() + 240  # generous: a busy 2-core machine
    while not ctx.join(timeout=5):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                if p.is_alive():
                    os.kill(p.pid, 9)
            pytest.fail("the two DDP ranks did not finish within 240 s")
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
        _REFERENCES[name] = compute_reference(SPECS[name])
    return _REFERENCES[name]


def compute_reference(spec: dict) -> list[dict]:
    """The same training in one process through the study's uplink: per step, each rank's
    local gradient sent by user r's compressor (:func:`send`), the mean of the two
    reconstructions applied. Returns per step {"mean": name -> tensor, "rows": [row per rank]}."""
    model = tiny_net()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    make = compressor_factory(spec, SEED)
    users = [make(r) for r in range(WORLD)]
    out = []
    with one_thread():
        for step in range(STEPS):
            sent = []
            for r in range(WORLD):
                model.zero_grad(set_to_none=True)
                x, y = batch(r, step)
                F.cross_entropy(model(x), y).backward()
                update = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
                receiver = make.receiver(r, step)  # the server decodes the bytes
                sent.append(
                    send(users[r], update, rnd=step, user=r, n_train=BATCH, receiver=receiver)
                )
            mean = {n: sum(s.recon[n].to(torch.float32) / WORLD for s in sent) for n in update}
            for n, p in model.named_parameters():
                p.grad = mean[n].clone()
            opt.step()
            out.append({"mean": mean, "rows": [s.row for s in sent]})
    return out


@pytest.mark.slow
def test_none_trains_bit_for_bit_like_the_default_allreduce(runs) -> None:
    """(a) Planted bugs: the hook forgetting the division by the world size, or writing a
    lossy copy back, changes the gradients."""
    for rank in range(WORLD):
        hooked, default = runs[rank]["none"], runs[rank]["default"]
        for step in range(STEPS):
            for name, g in default["grads"][step].items():
                assert torch.equal(hooked["grads"][step][name], g), (rank, step, name)
        for name, p in default["params"].items():
            assert torch.equal(hooked["params"][name], p), (rank, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", HOOKED)
def test_averaged_gradient_is_the_mean_of_the_decoded_ones(runs, name) -> None:
    """(b) Planted bugs: every rank seeded alike (the stochastic kinds), the decoded gradients
    not written back, buckets named or ordered wrongly, state not carried across steps."""
    reference = study_reference(name)
    for rank in range(WORLD):
        for step, ref in enumerate(reference):
            got = runs[rank][name]["grads"][step]
            for n, mean in ref["mean"].items():
                assert torch.equal(got[n], mean), (name, rank, step, n, (got[n] - mean).abs().max())
    if name in BUCKET_CAP_MB:
        assert max(runs[0][name]["buckets"]) > 1  # the case really spans several buckets
    if name != "none":  # the compressor did change the gradient
        assert not all(
            torch.equal(runs[0][name]["grads"][0][n], g)
            for n, g in runs[0]["default"]["grads"][0].items()
        )


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
        for step, ref in enumerate(reference):
            row = ref["rows"][rank]
            for field in (*RATE_FIELDS, "bits_fixed"):
                assert bits[step][field] == row[field], (name, rank, step, field)
            assert bits[step]["bits_coded"] == row["bits_accounted"]
            assert bits[step]["n_entries"] == 4916  # every trainable entry, once
            n_bytes = runs[rank][name]["payload_bytes"][step]
            if row["bits_source"] == "self-reported":  # the user class: no byte format
                assert n_bytes is None
            elif row["bits_source"] == "bytes" and name not in BUCKET_CAP_MB:
                assert 8 * n_bytes == row["bits_coded"], (name, rank, step)
            else:  # several buckets, each its own header; or the ideal channel's stand-ins
                assert 8 * n_bytes > row["bits_accounted"]
            acc = row["bits_accounted"]
            logged = f"rank {rank} step {step}: {acc} bits coded ({row['bits_fixed']}"
            assert runs[rank][name]["log"][step].startswith(logged), runs[rank][name]["log"]


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
