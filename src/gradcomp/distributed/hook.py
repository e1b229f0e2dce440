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
:func:`gradcomp.wire.users.compressor_factory`: rank ``r`` gets the object user ``r`` gets in
a study run seeded ``seed`` (seed ``1000 seed + r``). That object lives in the hook state for
the whole training, so its error-feedback memory, PowerSGD's warm-started Q and its random
streams (stochastic rounding, random-K, channel noise) carry over from step to step as they do
from round to round in the study; a run is reproducible given ``seed``, the world size and the
bucket layout, and each rank's streams differ (except for the linear exchanges below, where
every rank has user 0's object: the group's agreed seed).

What one bucket does (the hook is called once per DDP gradient bucket, every step):

1. The bucket's gradients are named by the model's parameter names (``model.named_parameters()``,
   without DDP's ``module.`` prefix) and put, in the model's parameter order, into one update
   dict ``name -> tensor`` (float, each parameter's shape, contiguous copies): compression is
   *per parameter*, so ``min_entries``, the per-tensor quantizer and its per-tensor bit count
   apply exactly as in the study. Whole-update steps (global top-K, random-K's seed, count
   sketch's ``scope="update"``) span one bucket; a model whose gradients fit in one bucket
   (DDP's ``bucket_cap_mb`` at least the model's size in MB) is compressed as one update,
   exactly as the study compresses a user's update. The bucket's update index ``rnd`` is the
   number of buckets this state compressed before it (the same on every rank, since every
   rank runs the same buckets in the same order).
2. The exchange (``state.exchange``, chosen from the spec; ``exchange="auto"``):

   - ``"bytes"`` (:mod:`gradcomp.distributed.exchange`), every kind with a byte format whose
     compressed form cannot be summed: each rank's bytes
     (:func:`gradcomp.wire.encode_update`) are all-gathered, sizes first, then
     padded to the longest; every rank decodes every rank's bytes with the receiver of that
     rank (:func:`gradcomp.wire.make_receiver`, user = the sender's rank) and
     averages the decodes in rank order, so every rank holds the same gradients;
   - ``"allreduce"``, ``"randomk"``, ``"powersgd"``, ``"sketch"``
     (:mod:`gradcomp.distributed.linear`): linear compressed forms, all-reduced: the float32
     bucket for ``quantizer: none`` (DDP's default, bit for bit), random-K's kept values,
     PowerSGD's P and Q (PyTorch's ``powerSGD_hook``), count sketch tables. All ranks then
     draw alike: their compressor is the study's user 0's (the group's agreed seed);
   - ``"decoded"``, a user's class without a byte format (``to_bytes`` / ``from_bytes``): its
     own ``decompress``, divided by the world size and all-reduced as float32 (logged once as
     a warning: it saves no bandwidth). ``exchange="decoded"`` forces it for any spec (the
     effect of a compressor on training, without its bytes on the wire).

   ``exchange="bytes"`` forces the byte exchange for a linear kind too (each rank then has
   its own seed, as a study's users do).
3. Every exchange returns a future of the averaged bucket (shape and dtype of
   ``bucket.buffer()``). Its collectives are launched from the hook call, never from a
   future's callback (callbacks only decode and write the buffer), so every rank issues the
   same collectives in the same order; sizes, bytes and the float vectors are tensors on the
   bucket's device (uint8 for sizes and bytes), ready for NCCL. A compress or encode that
   raises on one rank (a bucket with NaN or infinite gradients included: refused before
   encoding) is told to the others through the sizes (the byte exchange) or a one-int32
   status (every other exchange); bytes that do not decode, or decode to NaN or infinite
   values (checked before the average), fail on every rank alike
   (:class:`~gradcomp.wire.update.WireFormatError`). Either way the bucket is refused
   on every rank: its future raises the error, so ``backward()`` raises it on every rank
   after DDP's reducer has closed the step (raised in the hook itself, the next step would
   die in the reducer's INTERNAL ASSERT), the refusal is in ``state.refusals`` and
   ``StepBits.refused``, and the update index is skipped alike by every rank's compressor.
   Catch it, zero the gradients and skip the optimizer step, as GradScaler skips an inf:
   the next steps train normally (docs/distributed.md). Set the process group's
   ``timeout``: a rank that dies outright leaves the others waiting for it that long.

``StepBits.wire_bytes`` is what this rank handed to the collectives per step (sizes, padded
payloads, or the status and the all-reduced floats); ``StepBits.payload_bytes`` the length
of its payloads in the byte format. docs/distributed.md has the costs measured on
rate-limited links.

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
from gradcomp.distributed.exchange import STATUS_BYTES, agree, exchange_bytes, refused
from gradcomp.distributed.linear import LINEAR_EXCHANGES, finite_mean, linear_exchange_of
from gradcomp.wire import encode_update, has_byte_format
from gradcomp.wire.users import compressor_factory

__all__ = [
    "EXCHANGES",
    "CompressionHookState",
    "StepBits",
    "compression_hook",
    "register_compression_hook",
]

logger = logging.getLogger(__name__)

#: Values of ``exchange``: chosen from the spec, or forced.
EXCHANGES = ("auto", "bytes", "decoded")


@dataclass
class StepBits:
    """One rank's traffic in one training step (all of that step's buckets).

    ``rate``: the bits the compressor would send, by part (study accounting; ``rate.total_coded``
    with the entropy code, ``rate.total_fixed`` at fixed width); ``payload_bytes``: the
    length of the compressed buckets in the uplink's byte format
    (:func:`gradcomp.wire.encode_update`; None for a compressor without one);
    ``wire_bytes``: bytes this rank handed to the collectives (sizes and padded payloads, the
    all-reduced float32 vectors, or the float buckets); ``buckets``: buckets compressed;
    ``rnds``: their update indices; ``sent``: with ``keep_bytes``, per bucket the list of what
    this rank handed to its payload collectives, as bytes (its encoded payload; for a linear
    exchange its float32 vectors before the sum, PowerSGD's P part then its Q part), else
    empty; ``refused``: a bucket of the step was refused (the step is to be skipped).
    """

    step: int
    rate: RateBreakdown = field(default_factory=RateBreakdown)
    wire_bytes: int = 0
    buckets: int = 0
    payload_bytes: int | None = 0
    rnds: list[int] = field(default_factory=list)
    sent: list[list[bytes]] = field(default_factory=list)
    refused: bool = False


class CompressionHookState:
    """The hook's state on one rank: the rank's compressor and its bit history.

    spec : a compressor spec (dict; :func:`gradcomp.compression.build_compressor` checks it and
        names the key at fault).
    model : the module wrapped by DDP (or the DDP module itself); its parameter names name the
        update tensors.
    seed : run seed; rank ``r`` uses the study's user-``r`` compressor of a run seeded
        ``seed`` (user 0's on every rank for the linear exchanges, module doc).
    process_group : the group DDP reduces over (None: the default group).
    exchange : ``"auto"`` (from the spec, module doc), ``"bytes"`` or ``"decoded"``.
    keep_bytes : keep what each bucket handed to the collectives (``StepBits.sent``), for tests.
    log_every : log the bits every this many steps (0: never).
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        model: nn.Module,
        seed: int = 0,
        process_group: dist.ProcessGroup | None = None,
        exchange: str = "auto",
        keep_bytes: bool = False,
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
        if exchange not in EXCHANGES:
            raise ValueError(f"exchange must be one of {EXCHANGES}, got {exchange!r}")
        checked = check_spec(spec)  # SpecError naming the key at fault, before any group work
        if not dist.is_initialized():
            raise RuntimeError("CompressionHookState needs torch.distributed initialised first")
        self.process_group = process_group
        self.group = process_group if process_group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self.group)
        self.world_size = dist.get_world_size(self.group)
        self.spec = dict(spec)
        self.checked = checked
        self.seed = int(seed)
        linear = linear_exchange_of(checked) if exchange == "auto" else None
        self.compressor = compressor_factory(checked, self.seed)(0 if linear else self.rank)
        if linear is not None:
            self.exchange = linear
        elif exchange == "decoded":
            self.exchange = "decoded"
        elif has_byte_format(self.compressor):
            self.exchange = "bytes"
        elif exchange == "bytes":
            raise ValueError(
                f"exchange 'bytes' needs a byte format; {type(self.compressor).__name__} has "
                "none (to_bytes, and from_bytes on its class)"
            )
        else:
            self.exchange = "decoded"
            logger.warning(
                "%s has no byte format (to_bytes / from_bytes): the DDP hook all-reduces its "
                "decoded float32 gradients, which saves no bandwidth",
                type(self.compressor).__name__,
            )
        inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
        named = [(n, p) for n, p in inner.named_parameters() if p.requires_grad]
        self.names = {id(p): n for n, p in named}
        self.order = {n: i for i, (n, _) in enumerate(named)}
        self.keep_bytes = bool(keep_bytes)
        self.log_every = log_every
        self.step = 0
        self.calls = 0  # buckets compressed so far: the next bucket's update index
        self.cache: dict[str, Any] = {}
        self.history: list[StepBits] = []
        self._current = StepBits(0)
        #: (step, update index, error) of each refused bucket (:meth:`refuse`)
        self.refusals: list[tuple[int, int, BaseException]] = []

    def name_of(self, param: torch.Tensor) -> str:
        try:
            return self.names[id(param)]
        except KeyError:
            raise KeyError(
                f"a bucket parameter of shape {tuple(param.shape)} is not a trainable "
                "parameter of the model given to CompressionHookState (model)"
            ) from None

    def refuse(self, error: BaseException, rnd: int, last: bool | None) -> None:
        """A bucket refused on every rank (:func:`~gradcomp.distributed.exchange.refused`):
        recorded in :attr:`refusals` and logged; its update index ``rnd`` is skipped by the
        compressor (one that refused before counting it is moved past it, so that every
        rank's next bytes carry the same index); with ``last`` not None the bucket is counted
        (no bits) and, if it is the step's last, the step closed."""
        step = self.step if last is not None else self.history[-1].step if self.history else 0
        self.refusals.append((step, rnd, error))
        logger.warning(
            "rank %d step %d: bucket (update %d) refused on every rank, skip this step: %s: %s",
            self.rank, step, rnd, type(error).__name__, error,
        )  # fmt: skip
        step_of = getattr(self.compressor, "step", None)
        if isinstance(step_of, int) and step_of == rnd:
            setattr(self.compressor, "step", rnd + 1)  # noqa: B010 (any compressor type)
        if last is None:
            if self.history:
                self.history[-1].refused = True
            return
        self._current.refused = True
        self.record(RateBreakdown(), 0, last, None, rnd=rnd)

    def record(
        self,
        rate: RateBreakdown,
        wire_bytes: int,
        last: bool,
        payload_bytes: int | None = None,
        sent: list[bytes] | None = None,
        rnd: int | None = None,
    ) -> None:
        """Add one bucket's bits; close the step after the last bucket."""
        cur = self._current
        cur.rate = cur.rate + rate
        cur.wire_bytes += wire_bytes
        if cur.payload_bytes is not None:
            cur.payload_bytes = None if payload_bytes is None else cur.payload_bytes + payload_bytes
        cur.buckets += 1
        if rnd is not None:
            cur.rnds.append(rnd)
        if self.keep_bytes:
            cur.sent.append(list(sent or []))
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


def _exchange_decoded(state: CompressionHookState, bucket, update, named, rnd: int):
    """The rank's own decode, divided by the world size and all-reduced (float32), after the
    ranks agree that every compress succeeded (:func:`agree`)."""
    buffer = bucket.buffer()
    compressor = state.compressor
    failure = None
    try:
        payload, ctx = compressor.compress(update)
        rate = compressor.rate(payload, ctx)
        n_bytes = (
            len(encode_update(compressor, payload, ctx)) if has_byte_format(compressor) else None
        )
        decoded = compressor.decompress(payload, ctx)
        _check_decoded(update, decoded)
    except Exception as err:  # told to the other ranks before it is raised here
        failure = err
    error = agree(state, bucket, rnd, failure)
    if error is not None:
        return refused(state, bucket, rnd, error)
    for name, g in named:
        g.copy_(decoded[name].detach().to(g.device, g.dtype))  # written into the bucket buffer
    wire = buffer.numel() * buffer.element_size() + STATUS_BYTES
    state.record(rate, wire, bucket.is_last(), n_bytes, rnd=rnd)
    buffer.div_(state.world_size)
    work = dist.all_reduce(buffer, group=state.group, async_op=True)
    return work.get_future().then(finite_mean(state, rnd))


_EXCHANGES = {**LINEAR_EXCHANGES, "bytes": exchange_bytes, "decoded": _exchange_decoded}


def compression_hook(
    state: CompressionHookState, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: compress this rank's bucket and exchange it
    (``state.exchange``, see the module doc). Returns a future of the averaged
    ``bucket.buffer()`` (1-D, the bucket's dtype), the same on every rank."""
    buffer = bucket.buffer()
    params = bucket.parameters()
    named = sorted(
        ((state.name_of(p), g) for p, g in zip(params, bucket.gradients(), strict=True)),
        key=lambda item: state.order[item[0]],
    )
    storage = buffer.untyped_storage().data_ptr()
    for name, g in named:
        if g.untyped_storage().data_ptr() != storage:
            raise RuntimeError(f"DDP's gradient of {name!r} is not a view into its bucket buffer")
    update = {n: g.detach().clone(memory_format=torch.contiguous_format) for n, g in named}
    rnd = state.calls
    state.calls += 1
    return _EXCHANGES[state.exchange](state, bucket, update, named, rnd)


def register_compression_hook(
    ddp_model: nn.parallel.DistributedDataParallel,
    spec: Mapping[str, Any],
    *,
    seed: int = 0,
    process_group: dist.ProcessGroup | None = None,
    exchange: str = "auto",
    keep_bytes: bool = False,
    log_every: int = 1,
) -> CompressionHookState:
    """Build the state for ``ddp_model`` and register :func:`compression_hook`; the state."""
    if not isinstance(ddp_model, nn.parallel.DistributedDataParallel):
        raise TypeError(f"ddp_model must be a DistributedDataParallel, got {type(ddp_model)}")
    state = CompressionHookState(
        spec, model=ddp_model.module, seed=seed, process_group=process_group,
        exchange=exchange, keep_bytes=keep_bytes, log_every=log_every,
    )  # fmt: skip
    ddp_model.register_comm_hook(state, compression_hook)
    return state
