"""gradcomp's compressors in real data-parallel training: a PyTorch DDP communication hook.

Usage (every rank, after ``torch.distributed.init_process_group``)::

    ddp = DistributedDataParallel(model)
    state = CompressionHookState(spec, model=model, seed=0)
    ddp.register_comm_hook(state, compression_hook)
    ...                                  # train as usual
    state.history[-1].rate.total_coded   # this rank's uplink bits of the last step

``spec`` is any compressor spec the config accepts (:mod:`gradcomp.compression.specs`:
``quantizer`` kinds with their sparsifier, error feedback and Huffman code, the ``compressor``
kinds PowerSGD and count sketch, a user's ``class``), built by the study's own
:func:`gradcomp.lossy.uplink.compressor_factory`: rank ``r`` gets the object user ``r`` gets in
a study run seeded ``seed`` (seed ``1000 seed + r``). That object lives in the hook state for
the whole training, so its error-feedback memory, PowerSGD's warm-started Q and its random
streams (stochastic rounding, random-K, channel noise) carry over from step to step as they do
from round to round in the study; a run is reproducible given ``seed``, the world size and the
bucket layout, and each rank's streams differ.

What one bucket does (the hook is called once per DDP gradient bucket, every step):

1. The bucket's gradients are named by the model's parameter names (``model.named_parameters()``,
   without DDP's ``module.`` prefix) and put, in the model's parameter order, into one update
   dict ``name -> tensor`` (float, each parameter's shape, contiguous copies): compression is
   *per parameter*, so ``min_entries``, the per-tensor quantizer and its per-tensor bit count
   apply exactly as in the study. Whole-update steps (global top-K, random-K's seed, count
   sketch's ``scope="update"``) span one bucket; a model whose gradients fit in one bucket
   (DDP's ``bucket_cap_mb`` at least the model's size in MB) is compressed as one update,
   exactly as the study compresses a user's update.
2. ``compress`` -> (payload, ctx); ``rate(payload, ctx)`` counts the bits this rank would send
   (:class:`~gradcomp.compression.rates.RateBreakdown`, the study's accounting); this rank's
   own ``decompress`` gives the decoded gradients, written back into the bucket.
3. The decoded bucket is divided by the world size and all-reduced (summed) asynchronously,
   as ``allreduce_hook`` does with the raw gradients; the returned future's value is the
   averaged bucket (shape and dtype of ``bucket.buffer()``): the mean over ranks of each
   rank's decoded gradients. That all-reduce is the hook's only collective, launched from the
   hook call (never from a future's callback), so every rank issues the same collectives in
   the same order.

What is exchanged, and why: the *decoded* float tensors, not the encoded bytes. Decoding is
done by the sender's own compressor object, which decodes every kind, a user class's
arbitrary payload included; the built-in kinds also have a byte format that a receiver
decodes alone (:mod:`gradcomp.compression.wire`), whose length each step records
(``StepBits.payload_bytes``), but exchanging those bytes is not done here yet. The
all-reduce of decoded tensors is also exact (with ``quantizer: none`` and no sparsifier the
hook trains bit for bit like DDP's default all-reduce) and is what an all-gather of every
rank's decoded tensors followed by the mean computes, at 2 (N - 1) / N rather than N - 1
times the bucket's bytes per rank. So the hook reproduces the *effect* of each compressor on
training and counts the bits it would send, but the wire carries float32: it saves no
bandwidth (``StepBits.wire_bytes`` says what was sent). docs/distributed.md has the measured
costs and what a bandwidth-saving exchange would need.

Bits are recorded per rank and step in ``state.history`` (:class:`StepBits`) and logged to the
``gradcomp.distributed`` logger every ``log_every`` steps.
"""

# No ``from __future__ import annotations``: DDP checks the hook's annotations as objects.
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from gradcomp.compression.rates import RateBreakdown
from gradcomp.compression.specs import check_spec
from gradcomp.compression.wire import encode_update, has_byte_format
from gradcomp.lossy.uplink import compressor_factory

__all__ = ["CompressionHookState", "StepBits", "compression_hook", "register_compression_hook"]

logger = logging.getLogger(__name__)


@dataclass
class StepBits:
    """One rank's traffic in one training step (all of that step's buckets).

    ``rate``: the bits the compressor would send, by part (study accounting; ``rate.total_coded``
    with the entropy code, ``rate.total_fixed`` at fixed width); ``payload_bytes``: the
    length of the compressed buckets in the uplink's byte format
    (:func:`gradcomp.compression.wire.encode_update`; None for a compressor without one),
    what an exchange of the payloads would send; ``wire_bytes``: bytes this rank actually
    handed to the all-reduce (the decoded float buckets); ``buckets``: buckets compressed.
    """

    step: int
    rate: RateBreakdown = field(default_factory=RateBreakdown)
    wire_bytes: int = 0
    buckets: int = 0
    payload_bytes: int | None = 0


class CompressionHookState:
    """The hook's state on one rank: the rank's compressor and its bit history.

    spec : a compressor spec (dict; :func:`gradcomp.compression.build_compressor` checks it and
        names the key at fault).
    model : the module wrapped by DDP (or the DDP module itself); its parameter names name the
        update tensors.
    seed : run seed; rank ``r`` uses the study's user-``r`` compressor of a run seeded ``seed``.
    process_group : the group DDP reduces over (None: the default group).
    log_every : log the bits every this many steps (0: never).
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        model: nn.Module,
        seed: int = 0,
        process_group: dist.ProcessGroup | None = None,
        log_every: int = 1,
    ):
        if not isinstance(spec, Mapping):
            raise TypeError(f"spec must be a mapping (a compressor spec), got {type(spec)}")
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model)}")
        if not (isinstance(log_every, int) and log_every >= 0):
            raise ValueError(f"log_every must be an integer >= 0, got {log_every!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        checked = check_spec(spec)  # SpecError naming the key at fault, before any group work
        if not dist.is_initialized():
            raise RuntimeError("CompressionHookState needs torch.distributed initialised first")
        self.process_group = process_group
        group = process_group if process_group is not None else dist.group.WORLD
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.spec = dict(spec)
        self.seed = int(seed)
        self.compressor = compressor_factory(checked, self.seed)(self.rank)
        inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
        named = [(n, p) for n, p in inner.named_parameters() if p.requires_grad]
        self.names = {id(p): n for n, p in named}
        self.order = {n: i for i, (n, _) in enumerate(named)}
        self.log_every = log_every
        self.step = 0
        self.history: list[StepBits] = []
        self._current = StepBits(0)

    def name_of(self, param: torch.Tensor) -> str:
        try:
            return self.names[id(param)]
        except KeyError:
            raise KeyError(
                f"a bucket parameter of shape {tuple(param.shape)} is not a trainable "
                "parameter of the model given to CompressionHookState (model)"
            ) from None

    def record(
        self, rate: RateBreakdown, wire_bytes: int, last: bool, payload_bytes: int | None = None
    ) -> None:
        """Add one bucket's bits; close the step after the last bucket."""
        cur = self._current
        cur.rate = cur.rate + rate
        cur.wire_bytes += wire_bytes
        if cur.payload_bytes is not None:
            cur.payload_bytes = None if payload_bytes is None else cur.payload_bytes + payload_bytes
        cur.buckets += 1
        if not last:
            return
        self.history.append(cur)
        if self.log_every and self.step % self.log_every == 0:
            logger.info(
                "rank %d step %d: %d bits coded (%d fixed) for %d entries, %d bytes on the wire",
                self.rank, self.step, cur.rate.total_coded, cur.rate.total_fixed,
                cur.rate.n_entries, cur.wire_bytes,
            )  # fmt: skip
        self.step += 1
        self._current = StepBits(self.step)


def _check_decoded(update: Mapping[str, torch.Tensor], decoded: Mapping[str, torch.Tensor]):
    for name, t in update.items():
        if name not in decoded:
            raise KeyError(f"the compressor's decompress returned no tensor {name!r}")
        if tuple(decoded[name].shape) != tuple(t.shape):
            raise ValueError(
                f"the compressor's decompress gave {name!r} shape {tuple(decoded[name].shape)}, "
                f"expected {tuple(t.shape)}"
            )


def compression_hook(
    state: CompressionHookState, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: compress this rank's bucket, decode it, average the decoded
    buckets over the ranks (see the module doc). Returns a future of the averaged
    ``bucket.buffer()`` (1-D, the bucket's dtype)."""
    group = state.process_group if state.process_group is not None else dist.group.WORLD
    buffer = bucket.buffer()
    grads = bucket.gradients()
    params = bucket.parameters()
    named = sorted(
        ((state.name_of(p), g) for p, g in zip(params, grads, strict=True)),
        key=lambda item: state.order[item[0]],
    )
    update = {n: g.detach().clone(memory_format=torch.contiguous_format) for n, g in named}
    compressor = state.compressor
    payload, ctx = compressor.compress(update)
    rate = compressor.rate(payload, ctx)
    n_bytes = len(encode_update(compressor, payload, ctx)) if has_byte_format(compressor) else None
    decoded = compressor.decompress(payload, ctx)
    _check_decoded(update, decoded)
    storage = buffer.untyped_storage().data_ptr()
    for name, g in named:
        if g.untyped_storage().data_ptr() != storage:
            raise RuntimeError(f"DDP's gradient of {name!r} is not a view into its bucket buffer")
        g.copy_(decoded[name].detach().to(g.dtype))  # written into the bucket buffer
    state.record(rate, buffer.numel() * buffer.element_size(), bucket.is_last(), n_bytes)
    buffer.div_(state.world_size)
    return (
        dist.all_reduce(buffer, group=group, async_op=True)
        .get_future()
        .then(lambda fut: fut.value()[0])
    )


def register_compression_hook(
    ddp_model: nn.parallel.DistributedDataParallel,
    spec: Mapping[str, Any],
    *,
    seed: int = 0,
    process_group: dist.ProcessGroup | None = None,
    log_every: int = 1,
) -> CompressionHookState:
    """Build the state for ``ddp_model`` and register :func:`compression_hook`; the state."""
    if not isinstance(ddp_model, nn.parallel.DistributedDataParallel):
        raise TypeError(f"ddp_model must be a DistributedDataParallel, got {type(ddp_model)}")
    state = CompressionHookState(
        spec, model=ddp_model.module, seed=seed, process_group=process_group, log_every=log_every
    )
    ddp_model.register_comm_hook(state, compression_hook)
    return state
