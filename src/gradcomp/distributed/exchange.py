"""The DDP hook's byte exchange: every rank's payload bytes to every rank, decoded by each.

One bucket, on every rank (:func:`exchange_bytes`):

1. the rank's compressor encodes its bucket (:func:`gradcomp.wire.encode_update`);
2. **sizes**: each rank's byte count, an int64 viewed as 8 uint8 (:data:`SIZE_BYTES`), is
   all-gathered (``all_gather_single``), so every rank knows every length; a rank whose
   compress or encode raised sends :data:`FAILED` instead and raises its own error after the
   gather, and the others raise naming it, so a failure on one rank stops every rank at once
   rather than at the group's timeout;
3. **bytes**: each rank's bytes, zero-padded to the largest length, are all-gathered as one
   uint8 tensor of ``world x max`` bytes on the bucket's device (asynchronously);
4. every rank decodes every rank's bytes with a receiver built from what it knew before
   training (:func:`gradcomp.wire.make_receiver`: the spec, the bucket's layout,
   the run seed, the sender's rank as the user, and the update's index ``rnd``, the number of
   buckets compressed before this one, the same on every rank), sums the decodes in rank
   order in float64 and divides by the world size once: every rank computes the same numbers
   in the same order, so all ranks hold identical gradients, bit for bit.

Why this pattern (GRACE's ``Allgather`` communicator, over ``torch.distributed``): payloads
have data-dependent lengths (Huffman-coded indices, top-K positions) and cannot be summed on
the wire, so a reduction collective does not apply; an all-gather of padded bytes needs one
size exchange and one collective, and every rank decodes what the compressor sent, once
compressed, with no second quantisation of partial sums. The alternatives scale better with
ranks but change what is computed: a reduce-scatter of decoded chunks followed by a
re-encoded all-gather (Bagua's ByteGrad, CGX) quantises twice; a parameter server
concentrates the traffic on one node; ``all_gather_object`` pickles through the host. The
all-gather's cost is ``(N - 1)`` times the payload received per rank, against ``2 (N - 1) / N``
times the float32 bucket for DDP's all-reduce, so it wins while the payload is smaller than
``2 / N`` of the bucket (a 16x smaller payload up to N = 32).

``wire_bytes`` per bucket: ``SIZE_BYTES + max_r len(bytes_r)`` (this rank's sizes tensor and
its padded bytes: what it hands to the two collectives); the overhead over the payload is the
8-byte size and the padding up to the longest rank's payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist

from gradcomp.compression.inputs import NonFiniteUpdateError
from gradcomp.wire import UpdateLayout, encode_update, make_receiver
from gradcomp.wire.records import check_finite

__all__ = [
    "FAILED",
    "SIZE_BYTES",
    "STATUS_BYTES",
    "agree",
    "agree_or_raise",
    "decode_mean",
    "exchange_bytes",
    "gather_sizes",
    "refused",
]

#: Bytes of one rank's size in the sizes all-gather (an int64, little-endian uint8 view).
SIZE_BYTES = 8
#: The size a rank sends when its compress or encode failed; when its bucket held NaN or
#: infinite values (:class:`~gradcomp.compression.inputs.NonFiniteUpdateError`).
FAILED = -1
NON_FINITE = -2
#: A linear exchange's status of a rank whose bucket held non-finite values (any other
#: failure: 1); the statuses are summed, so both counts come back.
NON_FINITE_STATUS = 1 << 16
#: Bytes of one rank's status in a linear exchange's failure check (an int32).
STATUS_BYTES = 4

# torch 2.14 renamed all_gather_into_tensor (the older name warns)
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


class PeerFailedError(RuntimeError):
    """Another rank could not compress or encode its part of the bucket."""


def gather_sizes(size: int, device: torch.device, group: Any, world: int) -> list[int]:
    """All ranks' ``size`` (int64 each, sent as :data:`SIZE_BYTES` uint8 on ``device``), in
    rank order. Synchronous: the padded length must be known before the bytes go."""
    mine = torch.tensor([size], dtype=torch.int64).view(torch.uint8).to(device)
    out = torch.empty(world * SIZE_BYTES, dtype=torch.uint8, device=device)
    _all_gather(out, mine, group=group)
    return out.cpu().view(torch.int64).tolist()


def _peer_failed(
    state: Any, bucket: dist.GradBucket, rnd: int, who: str, non_finite: bool = False
) -> PeerFailedError:
    why = "had NaN or infinite gradients in" if non_finite else "could not compress or encode"
    return PeerFailedError(
        f"{who} {why} bucket {bucket.index()} (update {rnd}); rank {state.rank} stops too"
    )


def _status(failure: BaseException | None) -> int:
    if failure is None:
        return 0
    return NON_FINITE_STATUS if isinstance(failure, NonFiniteUpdateError) else 1


def agree(
    state: Any, bucket: dist.GradBucket, rnd: int, failure: BaseException | None
) -> BaseException | None:
    """The linear exchanges' failure check before their all-reduces: every rank's status (1
    if its compress raised ``failure``, else 0; :data:`STATUS_BYTES` on the bucket's device)
    summed across ranks, synchronously. The error of the bucket, the same decision on every
    rank: the rank's own ``failure``, a :class:`PeerFailedError` on the others, or None; a
    bucket with an error is refused on every rank (:func:`refused`), so that none waits in an
    all-reduce its peer never joins."""
    flag = torch.tensor([_status(failure)], dtype=torch.int32)
    flag = flag.to(bucket.buffer().device)
    dist.all_reduce(flag, group=state.group)
    if failure is not None:
        return failure
    total = int(flag.item())
    if total:
        non_finite, other = divmod(total, NON_FINITE_STATUS)
        n = non_finite or other
        return _peer_failed(
            state, bucket, rnd, f"{n} of the {state.world_size} ranks", non_finite=bool(non_finite)
        )
    return None


def agree_or_raise(
    state: Any, bucket: dist.GradBucket, rnd: int, failure: BaseException | None
) -> None:
    """:func:`agree`, raising its error (outside a DDP hook: inside one, return
    :func:`refused` instead, or PyTorch's reducer cannot run the next step)."""
    error = agree(state, bucket, rnd, failure)
    if error is not None:
        raise error


def refused(
    state: Any, bucket: dist.GradBucket, rnd: int, error: BaseException
) -> torch.futures.Future:
    """The future of a bucket refused on every rank (a NaN or infinite gradient, a compress
    that raised, on any rank: every rank decides alike): ``error`` raised from the future's
    callback, so that ``backward()`` raises it on every rank after DDP's reducer has closed
    the step (an error raised in the hook itself leaves the reducer mid-step and the next
    step dies in an INTERNAL ASSERT). The bucket is filled with NaN, the refusal recorded
    (``state.refusals``), and the compressor's update index moved past ``rnd`` on every
    rank, so that the next step trains normally: skip it as GradScaler skips an inf
    (docs/distributed.md)."""
    buffer = bucket.buffer()
    buffer.fill_(float("nan"))
    state.refuse(error, rnd, bucket.is_last())
    done: torch.futures.Future = torch.futures.Future()
    done.set_result(buffer)

    def fail(_: torch.futures.Future) -> torch.Tensor:
        raise error

    return done.then(fail)


def decode_mean(
    spec: Mapping[str, Any],
    layout: UpdateLayout,
    blobs: list[bytes],
    *,
    seed: int,
    rnd: int,
) -> dict[str, torch.Tensor]:
    """The mean of ``blobs`` (rank r's bytes at index r) decoded by their receivers: name ->
    tensor (CPU, the layout's shape and dtype), summed in rank order in float64, divided by
    the number of ranks once."""
    acc: dict[str, torch.Tensor] = {}
    for user, data in enumerate(blobs):
        decoded = make_receiver(spec, layout, seed=seed, user=user, rnd=rnd).decode(data)
        for name, shape, _ in layout:
            t = decoded.get(name)
            if t is None or tuple(t.shape) != shape:
                got = "nothing" if t is None else f"shape {tuple(t.shape)}"
                raise ValueError(
                    f"rank {user}'s bytes decoded to {got} for {name!r}, expected shape {shape}"
                )
            check_finite(t, f"rank {user}'s tensor {name!r}")  # before the average
            if name in acc:
                acc[name].add_(t)  # t is promoted to float64 inside the kernel, exactly
            else:
                acc[name] = t.to(torch.float64, copy=True)
    return {n: acc[n].div_(len(blobs)).to(d) for n, _, d in layout}


def exchange_bytes(state: Any, bucket: dist.GradBucket, update, named, rnd: int):
    """Steps 1-4 of the module doc for one bucket; a future of the averaged bucket buffer.
    ``state``: the :class:`~gradcomp.distributed.CompressionHookState`; ``update``: name ->
    this rank's gradient; ``named``: (name, gradient view into the buffer) in order."""
    buffer = bucket.buffer()
    device, group, world = buffer.device, state.group, state.world_size
    compressor = state.compressor
    failure: BaseException | None = None
    data = b""
    try:
        payload, ctx = compressor.compress(update)
        rate = compressor.rate(payload, ctx)
        data = encode_update(compressor, payload, ctx)
    except Exception as err:  # told to the other ranks before it is raised here
        failure = err
    size = len(data)
    if failure is not None:
        size = NON_FINITE if isinstance(failure, NonFiniteUpdateError) else FAILED
    sizes = gather_sizes(size, device, group, world)
    if failure is not None:
        return refused(state, bucket, rnd, failure)
    failed = [r for r, s in enumerate(sizes) if s < 0]
    if failed:
        non_finite = any(sizes[r] == NON_FINITE for r in failed)
        error = _peer_failed(state, bucket, rnd, f"rank(s) {failed}", non_finite=non_finite)
        return refused(state, bucket, rnd, error)
    longest = max(sizes)
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    padded = padded.to(device)
    gathered = torch.empty(world * longest, dtype=torch.uint8, device=device)
    work = _all_gather(gathered, padded, group=group, async_op=True)
    layout = UpdateLayout.of(update)
    state.record(rate, SIZE_BYTES + longest, bucket.is_last(), len(data), sent=[data], rnd=rnd)
    spec, seed = state.checked, state.seed

    def finish(fut: torch.futures.Future) -> torch.Tensor:
        fut.wait()
        host = gathered.cpu().numpy()
        blobs = [host[r * longest : r * longest + s].tobytes() for r, s in enumerate(sizes)]
        try:  # every rank decodes the same bytes: the same refusal everywhere
            mean = decode_mean(spec, layout, blobs, seed=seed, rnd=rnd)
        except Exception as err:
            buffer.fill_(float("nan"))
            state.refuse(err, rnd, None)
            raise
        for name, g in named:
            g.copy_(mean[name].to(g.device, g.dtype))
        return buffer

    assert work is not None  # async_op=True always returns its work handle
    return work.get_future().then(finish)
