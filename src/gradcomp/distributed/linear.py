"""The DDP hook's exchanges for compressed forms that are linear: summed on the wire.

A compressed form is linear when the receiver's decode of a sum of payloads is the decode of
the summed gradient: then one all-reduce of the payloads replaces the gathering of every
rank's bytes, at ``2 (N - 1) / N`` times the payload per rank whatever the world size N. It
needs every rank to compress with the same draws (the same random-K positions, the same
sketch hashes, the same initial PowerSGD Q): the "seed agreed in advance" of the DDP group is
the run seed's user 0, so every rank's compressor of these kinds is the object the study
builds for user 0 (:func:`~gradcomp.wire.users.compressor_factory` ``(spec, seed)(0)``),
each with its own error-feedback memory. In a federated round every user has its own seed
and its bytes are decoded one by one; in DDP the ranks agree on one.

Kinds and what travels (float32, on the bucket's device):

- :func:`exchange_allreduce`, ``quantizer: none`` without a sparsifier: the bucket itself,
  multiplied by 1 / N and all-reduced, exactly DDP's built-in default (bit for bit);
- :func:`exchange_random_k`, ``quantizer: none`` with ``sparsifier: randomk``: the K kept
  values (scaled by 1/p unless error feedback is on) at the positions of the shared seed,
  summed, divided by N and put back; the other entries are zero. With a value quantizer the
  codes carry per-rank scales and are not summable: those go through the byte exchange;
- :func:`exchange_powersgd`, ``compressor: powersgd``, as PyTorch's ``powerSGD_hook``: per
  matrix ``M`` (n x m, with the rank's error-feedback memory added) ``P = M Q`` with the
  shared warm-started Q; all-reduce the Ps (and, in the same vector, the tensors PowerSGD
  sends raw), divide by N, orthonormalise P (reduced QR); ``Q = M^T P``; all-reduce the Qs,
  divide by N; the gradient is ``P Q^T`` on every rank, the memory ``M - P Q^T``, and the
  averaged Q is the next step's warm start (the same on every rank);
- :func:`exchange_sketch`, ``compressor: count_sketch`` without ``sketch_topk`` and without
  error feedback: the sketch tables and the raw tensors summed, divided by N, and the mean
  table unsketched (:meth:`~gradcomp.compression.count_sketch.CountSketch.decompress`), as
  FetchSGD's server does with the users' sketches. With ``sketch_topk`` (the k sent depends
  on each rank's data) or error feedback (each rank's own unsketch feeds its memory) the
  rank's bytes are gathered instead.

The first collective of PowerSGD is waited for in the hook (its result is needed before Q);
every last collective is asynchronous and the averaged bucket is written in its future's
callback. Before them, random-K, PowerSGD and the count sketch all-reduce one int32 status
per bucket (:func:`~gradcomp.distributed.exchange.agree`): a rank whose compress raised
stops every rank at once instead of leaving them in an all-reduce it never joins. ``wire_bytes``
is that status (4 bytes) plus 4 x the float32 numbers all-reduced. Sketch hashing and the
random-K masks run on the CPU (:mod:`~gradcomp.compression.sketch_hash`,
:class:`~gradcomp.compression.random_k.RandomK`); the all-reduced vectors live on the
bucket's device.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist

from gradcomp.compression.count_sketch import Sketched
from gradcomp.compression.inputs import checked_update
from gradcomp.compression.powersgd import LowRank
from gradcomp.distributed.exchange import STATUS_BYTES, agree, refused
from gradcomp.wire import encode_update
from gradcomp.wire.records import check_finite

__all__ = [
    "LINEAR_EXCHANGES",
    "exchange_allreduce",
    "exchange_powersgd",
    "exchange_random_k",
    "exchange_sketch",
    "linear_exchange_of",
]

FLOAT_BYTES = 4


def finite_mean(state: Any, rnd: int, where: str = "the all-reduced bucket"):
    """The callback of an all-reduce's future: its tensor, checked finite before it becomes
    the gradient (the same sum on every rank: the same refusal everywhere)."""

    def check(fut: torch.futures.Future) -> torch.Tensor:
        out = fut.value()[0]
        try:
            check_finite(out, where)
        except Exception as err:
            state.refuse(err, rnd, None)
            raise
        return out

    return check


def linear_exchange_of(spec) -> str | None:
    """The linear exchange of a checked spec (a key of :data:`LINEAR_EXCHANGES`), or None."""
    if spec["compressor"] == "powersgd":
        return "powersgd"
    if spec["compressor"] == "count_sketch":
        return "sketch" if spec["sketch_topk"] is None and not spec["error_feedback"] else None
    if spec["quantizer"] == "none":
        return {"none": "allreduce", "randomk": "randomk"}.get(spec["sparsifier"])
    return None


def exchange_allreduce(state: Any, bucket: dist.GradBucket, update, named, rnd: int):
    """``quantizer: none``: DDP's default, the bucket times 1 / N, all-reduced, after the
    ranks agree that every compress succeeded (a NaN bucket is refused on its rank)."""
    buffer = bucket.buffer()
    failure = None
    try:
        payload, ctx = state.compressor.compress(update)
        n_bytes = len(encode_update(state.compressor, payload, ctx))
        rate = state.compressor.rate(payload, ctx)
    except Exception as err:  # told to the other ranks before it is raised here
        failure = err
    error = agree(state, bucket, rnd, failure)
    if error is not None:
        return refused(state, bucket, rnd, error)
    wire = buffer.numel() * buffer.element_size() + STATUS_BYTES
    state.record(rate, wire, bucket.is_last(), n_bytes, rnd=rnd)
    # DDP's reducer multiplies by 1 / N as it copies into the bucket (not the same bits as a
    # division when N is not a power of 2)
    buffer.mul_(1.0 / state.world_size)
    work = dist.all_reduce(buffer, group=state.group, async_op=True)
    return work.get_future().then(finite_mean(state, rnd))


def exchange_random_k(state: Any, bucket: dist.GradBucket, update, named, rnd: int):
    """``quantizer: none`` with random-K: the kept values summed at the shared positions."""
    buffer = bucket.buffer()
    compressor = state.compressor
    failure = None
    try:
        payload, ctx = compressor.compress(update)
        rate = compressor.rate(payload, ctx)
        n_bytes = len(encode_update(compressor, payload, ctx))
        decoded = compressor.decompress(payload, ctx)
        masks = {n: m.to(buffer.device) for n, m in compressor.kept_masks(payload, ctx).items()}
        values = torch.cat(
            [decoded[n].to(buffer.device, torch.float32)[masks[n]] for n, _ in named]
        ).contiguous()
    except Exception as err:  # told to the other ranks before it is raised here
        failure = err
    error = agree(state, bucket, rnd, failure)
    if error is not None:
        return refused(state, bucket, rnd, error)
    sent = [values.cpu().numpy().tobytes()] if state.keep_bytes else None
    wire = STATUS_BYTES + FLOAT_BYTES * values.numel()
    state.record(rate, wire, bucket.is_last(), n_bytes, sent, rnd)
    work = dist.all_reduce(values, group=state.group, async_op=True)
    summed = finite_mean(state, rnd, "the all-reduced kept values")

    def finish(fut: torch.futures.Future) -> torch.Tensor:
        mean = summed(fut) / state.world_size
        start = 0
        for name, g in named:
            kept = int(masks[name].sum())
            g.zero_()
            g[masks[name]] = mean[start : start + kept].to(g.dtype)
            start += kept
        return buffer

    return work.get_future().then(finish)


def _powersgd_p(state: Any, update, device):
    """(matrices, raw tensors, ctx, payload shapes, the P vector) of one bucket: per matrix
    ``P = M Q`` (the memory added to M), the raw tensors after the Ps."""
    ps = state.compressor
    memory = ps.memory
    mats, raws, ctx, payload = {}, {}, {}, {}
    for name, t in checked_update(update, "the DDP hook").items():
        if memory is not None:
            t = memory.compensate(t, name)
        t = t.to(device, torch.float32)
        shape = tuple(t.shape)
        ctx[name] = (shape, update[name].dtype)
        r = ps.matrix_rank(shape)
        if r:
            m = t.reshape(shape[0], -1)
            q = ps.start_q(name, m.shape[1], r).to(device, torch.float32)
            mats[name] = (t, m, m @ q)
            payload[name] = LowRank(p=torch.empty(shape[0], r), q=torch.empty(m.shape[1], r))
        else:
            raws[name] = t
            payload[name] = LowRank(raw=torch.empty(t.numel()))
    first = torch.cat(
        [p.reshape(-1) for _, _, p in mats.values()] + [t.reshape(-1) for t in raws.values()]
    )
    return mats, raws, ctx, payload, first


def exchange_powersgd(state: Any, bucket: dist.GradBucket, update, named, rnd: int):
    """PowerSGD with P and Q all-reduced (module doc)."""
    buffer = bucket.buffer()
    ps, world, group, device = state.compressor, state.world_size, state.group, buffer.device
    memory = ps.memory
    failure = None
    try:
        mats, raws, ctx, payload, first = _powersgd_p(state, update, device)
    except Exception as err:  # told to the other ranks before it is raised here
        failure = err
    error = agree(state, bucket, rnd, failure)
    if error is not None:
        return refused(state, bucket, rnd, error)
    keep = [first.cpu().numpy().tobytes()] if state.keep_bytes else None
    dist.all_reduce(first, group=group)
    first /= world
    try:  # the same sum on every rank: the same refusal everywhere
        check_finite(first, "the all-reduced P vector")
    except Exception as err:
        return refused(state, bucket, rnd, err)
    start, ps_ = 0, {}
    for name, (_, _, p) in mats.items():
        ps_[name] = torch.linalg.qr(first[start : start + p.numel()].reshape(p.shape)).Q
        start += p.numel()
    mean_raw = {}
    for name, t in raws.items():
        mean_raw[name] = first[start : start + t.numel()].reshape(t.shape)
        start += t.numel()
        if memory is not None:
            memory.update(t, name, t)  # sent exactly: no residual
    qs = {name: m.T @ ps_[name] for name, (_, m, _) in mats.items()}
    second = torch.cat([q.reshape(-1) for q in qs.values()]) if qs else torch.zeros(0)
    second = second.to(device)
    if keep is not None:
        keep.append(second.cpu().numpy().tobytes())
    rate = ps.rate(payload, {n: (c[0], c[1]) for n, c in ctx.items()})
    wire = STATUS_BYTES + FLOAT_BYTES * (first.numel() + second.numel())
    state.record(rate, wire, bucket.is_last(), _powersgd_bytes(state, ps, payload, ctx), keep, rnd)
    work = dist.all_reduce(second, group=group, async_op=True)

    summed = finite_mean(state, rnd, "the all-reduced Q vector")

    def finish(fut: torch.futures.Future) -> torch.Tensor:
        mean_q = summed(fut) / world
        start, out = 0, {}
        for name, (t, _, _) in mats.items():
            q = mean_q[start : start + qs[name].numel()].reshape(qs[name].shape)
            start += q.numel()
            ps.q_memory[name] = q
            out[name] = (ps_[name] @ q.T).reshape(t.shape)
            if memory is not None:
                memory.update(t, name, out[name])
        out.update(mean_raw)
        for name, g in named:
            g.copy_(out[name].to(g.dtype))
        return buffer

    return work.get_future().then(finish)


def _powersgd_bytes(state, ps, payload, ctx) -> int:
    """The byte-format length of a PowerSGD payload of this bucket's shapes (it depends on
    the shapes alone; encoded once per layout with zeros)."""
    key = tuple((n, c[0]) for n, c in ctx.items())
    cache = state.cache.setdefault("powersgd_bytes", {})
    if key not in cache:
        zeros = {}
        for name, p in payload.items():
            if p.raw is not None:
                zeros[name] = LowRank(raw=torch.zeros(math.prod(ctx[name][0])))
            else:
                zeros[name] = LowRank(p=torch.zeros(p.p.shape), q=torch.zeros(p.q.shape))
        cache[key] = len(encode_update(ps, zeros, ctx))
    return cache[key]


def exchange_sketch(state: Any, bucket: dist.GradBucket, update, named, rnd: int):
    """Count sketch: the tables (and raw tensors) summed, the mean table unsketched."""
    buffer = bucket.buffer()
    sketch = state.compressor
    failure = None
    try:
        payload, ctx = sketch.compress(update)
        rate, n_bytes = sketch.rate(payload, ctx), len(encode_update(sketch, payload, ctx))
        parts = [s.table.reshape(-1) for s in payload["sketches"]]
        parts += [t.reshape(-1) for t in payload["raw"].values()]
        flat = torch.cat(parts).to(buffer.device, torch.float32) if parts else torch.zeros(0)
    except Exception as err:  # told to the other ranks before it is raised here
        failure = err
    error = agree(state, bucket, rnd, failure)
    if error is not None:
        return refused(state, bucket, rnd, error)
    sent = [flat.cpu().numpy().tobytes()] if state.keep_bytes else None
    wire = STATUS_BYTES + FLOAT_BYTES * flat.numel()
    state.record(rate, wire, bucket.is_last(), n_bytes, sent, rnd)
    work = dist.all_reduce(flat, group=state.group, async_op=True)
    summed = finite_mean(state, rnd, "the all-reduced sketches")

    def finish(fut: torch.futures.Future) -> torch.Tensor:
        mean = (summed(fut) / state.world_size).cpu()
        start, sketches, raw = 0, [], {}
        for s in payload["sketches"]:
            table = mean[start : start + s.table.numel()].reshape(s.table.shape)
            start += s.table.numel()
            sketches.append(Sketched(table, s.names, s.d, s.seed, s.k))
        for name, t in payload["raw"].items():
            raw[name] = mean[start : start + t.numel()].reshape(t.shape)
            start += t.numel()
        out = sketch.decompress({"sketches": sketches, "raw": raw}, ctx)
        for name, g in named:
            g.copy_(out[name].to(g.device, g.dtype))
        return buffer

    return work.get_future().then(finish)


#: exchange name -> the function of one bucket (state, bucket, update, named, rnd) -> future
LINEAR_EXCHANGES = {
    "allreduce": exchange_allreduce,
    "randomk": exchange_random_k,
    "powersgd": exchange_powersgd,
    "sketch": exchange_sketch,
}
