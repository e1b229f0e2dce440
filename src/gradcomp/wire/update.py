"""The uplink's byte format: one user's compressed update as one ``bytes`` object, decoded by a
receiver from those bytes and what it knew before the first round.

Sender: :func:`encode_update` (the kind's format, :data:`ENCODERS`). Receiver:
:func:`make_receiver` builds a :class:`Receiver` from the spec, the update's
:class:`UpdateLayout` (names, shapes, dtypes in order), the run seed, the user and the
update's index; never from the sender's compressor or its ctx. Random draws the receiver must
repeat (random-K's positions, the released Lloyd's initial levels) derive from the user's
compressor seed (:func:`~gradcomp.compression.specs.user_seed`) and the update's index; a
count sketch's hashes from the user's seed alone.

The modules under it (:mod:`gradcomp.wire` has the map): the fields and their errors
(:mod:`gradcomp.coding.fields`), the header and the framed records
(:mod:`~gradcomp.wire.records`: :data:`HEADER_BYTES` = 16 bytes per update,
:data:`RECORD_BYTES` = 8 per record) and the kinds' layouts. docs/wire.md has the table per
kind.

So ``8 len(bytes)`` = the accounted bits (:class:`~gradcomp.compression.rates.RateBreakdown`
with the entropy code) + the framing above + padding: at most 7 bits per bit field, and the
unaccounted bits of a byte-wide flag (a quantizer pipeline's per-tensor flags byte, Lloyd's
design flag, TCQ's initial state). Truncated, corrupted or foreign bytes raise
:class:`WireFormatError` naming the tensor and the field; bytes made under another layout,
spec, seed, user or update index than the receiver's, :class:`AgreedFactError` naming the
fact (the header binds them: :class:`~gradcomp.wire.records.Agreed`).

A user's class takes part with ``to_bytes(payload, ctx) -> bytes`` and a class method
``from_bytes(data, layout, *, rnd, **constructor keywords) -> dict[str, Tensor]``; its bytes
are its own format (no header added). A class without them still runs: its bits are
self-reported (:func:`bits_source`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import torch

from gradcomp.coding.fields import WireFormatError
from gradcomp.compression.agreed_values import AgreedValueError, check_agreed_int
from gradcomp.compression.build import make_quantizer
from gradcomp.compression.count_sketch import CountSketch
from gradcomp.compression.powersgd import LowRank, PowerSGD
from gradcomp.compression.specs import MAX_SEED, CheckedSpec, check_spec, user_seed
from gradcomp.compression.tensor_compression import TensorCtx, TensorPayload
from gradcomp.compression.update_compression import PipelineCompressor
from gradcomp.wire.low_rank import LowRankReceiver, encode_low_rank
from gradcomp.wire.pipeline import PipelineReceiver, encode_pipeline
from gradcomp.wire.records import (
    FORMAT_VERSION,
    HEADER_BYTES,
    KIND_CODES,
    RECORD_BYTES,
    AgreedFactError,
    UpdateLayout,
)
from gradcomp.wire.sketch import SketchReceiver, encode_sketches
from gradcomp.wire.user_receiver import UserReceiver

__all__ = [
    "FORMAT_VERSION",
    "AgreedFactError",
    "AgreedValueError",
    "HEADER_BYTES",
    "KIND_CODES",
    "RECORD_BYTES",
    "DecodeMismatchError",
    "PayloadError",
    "Receiver",
    "UpdateLayout",
    "WireFormatError",
    "bits_source",
    "check_same_bits",
    "encode_update",
    "has_byte_format",
    "make_receiver",
]


#: The built-in kinds' byte formats: a compressor's class -> its encoder (``(compressor,
#: payload, ctx) -> bytes``), and a ``compressor`` kind -> its receiver's constructor
#: (``(spec, layout, *, rnd)``; a ``quantizer`` kind's is :class:`PipelineReceiver`).
ENCODERS: dict[type, Callable[[Any, Any, Any], bytes]] = {
    PipelineCompressor: encode_pipeline,
    PowerSGD: encode_low_rank,
    CountSketch: encode_sketches,
}
RECEIVERS: dict[str, Callable[..., Any]] = {
    PowerSGD.kind: LowRankReceiver.of,
    CountSketch.kind: SketchReceiver.of,
}


def _encoder(compressor: Any) -> Callable[[Any, Any, Any], bytes] | None:
    """The built-in encoder of ``compressor`` (None for a user's class)."""
    return next((e for cls, e in ENCODERS.items() if isinstance(compressor, cls)), None)


class Receiver(Protocol):
    """The server's decoder of one user's update: bytes in, the layout's tensors (CPU) out."""

    def decode(self, data: bytes | bytearray | memoryview) -> dict[str, torch.Tensor]: ...


class DecodeMismatchError(RuntimeError):
    """The receiver's decode of the bytes is not the sender's reconstruction, bit for bit."""


class PayloadError(TypeError):
    """:func:`encode_update` got a ``payload`` or ``ctx`` (``argument``) that is not what the
    compressor's own ``compress`` returned (another kind's, or another update's)."""

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(f"encode_update argument {argument!r}: {message}")


def _check_payload(compressor: Any, payload: Any, ctx: Any) -> None:
    """:class:`PayloadError` unless ``payload`` and ``ctx`` have the shape of a built-in
    compressor's ``compress`` result, for the tensors it compressed."""
    kind = type(compressor).__name__
    for argument, value in (("payload", payload), ("ctx", ctx)):
        if not isinstance(value, Mapping):
            raise PayloadError(argument, f"{kind}.compress returns a mapping, got {value!r:.80}")
    same = list(payload) == list(ctx)
    if isinstance(compressor, (PowerSGD, PipelineCompressor)) and not same:
        raise PayloadError("ctx", f"names {list(ctx)} are not the payload's {list(payload)}")
    if isinstance(compressor, PowerSGD):
        wrong = [n for n, p in payload.items() if not isinstance(p, LowRank)]
        if wrong:
            raise PayloadError("payload", f"{wrong[0]!r} is not PowerSGD's (a LowRank)")
        return
    if isinstance(compressor, PipelineCompressor):
        for name, p in payload.items():
            if not isinstance(p, TensorPayload) or not isinstance(ctx[name], TensorCtx):
                raise PayloadError("payload", f"{name!r} is not a quantizer pipeline's")
            coder = compressor._coders.get(name)
            if coder is None or p.quantized.kind not in (coder.quantizer.kind, "none"):
                raise PayloadError("payload", f"{name!r} was not compressed by this {kind} "
                                   f"({p.quantized.kind} values)")  # fmt: skip
        return
    # the other built-in kind, a count sketch: its sketches and its raw tensors
    if set(payload) != {"sketches", "raw"}:
        raise PayloadError("payload", f"a count sketch's payload has 'sketches' and 'raw', "
                           f"not {sorted(map(str, payload))}")  # fmt: skip


def _bits(t: torch.Tensor) -> torch.Tensor:
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.detach().cpu().contiguous().view(ints[t.element_size()])


def check_same_bits(
    expected: Mapping[str, torch.Tensor], got: Mapping[str, torch.Tensor], where: str
) -> None:
    """Raise :class:`DecodeMismatchError` naming ``where`` and the first tensor that differs
    (names, shape, dtype or any bit, NaNs and signed zeros included)."""
    if list(expected) != list(got):
        raise DecodeMismatchError(f"{where}: decoded tensors {list(got)} are not {list(expected)}")
    for name, e in expected.items():
        g = got[name]
        if g.shape != e.shape or g.dtype != e.dtype:
            raise DecodeMismatchError(
                f"{where}: tensor {name!r} decoded as {g.dtype} {tuple(g.shape)}, the sender's "
                f"reconstruction is {e.dtype} {tuple(e.shape)}"
            )
        diff = (_bits(e) != _bits(g)).reshape(-1)
        if bool(diff.any()):
            first = int(diff.nonzero()[0])
            raise DecodeMismatchError(
                f"{where}: tensor {name!r} decoded from the bytes differs from the sender's "
                f"reconstruction in {int(diff.sum())} entries (first at flat index {first}: "
                f"{float(g.reshape(-1)[first])!r} instead of {float(e.reshape(-1)[first])!r})"
            )


def has_byte_format(compressor: Any) -> bool:
    """Whether ``compressor`` writes bytes a receiver decodes: a built-in kind (its format
    here, :data:`ENCODERS`) or a user's class with ``to_bytes`` on the object and
    ``from_bytes`` on its class."""
    if _encoder(compressor) is not None:
        return True
    if not callable(getattr(compressor, "to_bytes", None)):
        return False
    return callable(getattr(type(compressor), "from_bytes", None))


def bits_source(compressor: Any) -> str:
    """Where a compressor's bits come from: ``"bytes"`` (8 x the bytes a receiver decodes),
    ``"ideal"`` (an ideal channel's rate; its values travel as a stand-in) or
    ``"self-reported"`` (its own ``rate``, no byte format)."""
    if not has_byte_format(compressor):
        return "self-reported"
    return "ideal" if getattr(compressor, "ideal", False) else "bytes"


def encode_update(compressor: Any, payload: Any, ctx: Any) -> bytes:
    """The payload of ``compressor.compress`` as bytes (a built-in kind's format, or a user
    class's ``to_bytes``)."""
    if not has_byte_format(compressor):
        raise TypeError(
            f"{type(compressor).__name__} has no byte format (to_bytes, and from_bytes on "
            "its class): its bits are self-reported"
        )
    encoder = _encoder(compressor)
    if encoder is not None:
        _check_payload(compressor, payload, ctx)
        return encoder(compressor, payload, ctx)
    data = compressor.to_bytes(payload, ctx)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{type(compressor).__name__}.to_bytes returned {type(data).__name__}")
    return bytes(data)


def make_receiver(
    spec: Mapping[str, Any], layout: UpdateLayout, *, seed: int, user: int, rnd: int
) -> Receiver:
    """The receiver of user ``user``'s update number ``rnd`` (0 for the first update its
    compressor sends: round r of a full run is r - 1) in a run seeded ``seed``, for
    compressor ``spec`` (checked here unless it is a
    :class:`~gradcomp.compression.specs.CheckedSpec`; its own seed is replaced by the user's,
    :func:`~gradcomp.compression.specs.user_seed`) and updates of ``layout``.

    Example: the receiver of user 0's first update rebuilds the sender's values bit for bit::

        >>> import torch
        >>> from gradcomp.compression import build_compressor
        >>> from gradcomp.compression.specs import check_spec, user_seed
        >>> spec = {"quantizer": "uniform", "rate": 2, "topk": 0.5, "min_entries": 0}
        >>> sender = build_compressor(check_spec(spec).with_seed(user_seed(3, 0)))
        >>> update = {"w": torch.randn(8, 8, generator=torch.Generator().manual_seed(0))}
        >>> payload, ctx = sender.compress(update)
        >>> receiver = make_receiver(spec, UpdateLayout.of(update), seed=3, user=0, rnd=0)
        >>> got = receiver.decode(encode_update(sender, payload, ctx))
        >>> torch.equal(got["w"], sender.decompress(payload, ctx)["w"])
        True
    """
    if not isinstance(layout, UpdateLayout):
        raise AgreedValueError(
            "layout", f"must be an UpdateLayout (UpdateLayout.of(update) or .from_items), got "
            f"a {type(layout).__name__}"
        )  # fmt: skip
    seed, user, rnd = (check_agreed_int(k, v) for k, v in (("seed", seed), ("user", user),
                                                           ("rnd", rnd)))  # fmt: skip
    checked = spec if isinstance(spec, CheckedSpec) else check_spec(spec)
    if user_seed(seed, user) > MAX_SEED:
        raise AgreedValueError("seed", f"the user's compressor seed 1000 seed + user = "
                               f"{user_seed(seed, user)} is above {MAX_SEED}")  # fmt: skip
    own = checked.with_seed(user_seed(seed, user))
    if own["compressor"] is not None:
        return RECEIVERS[own["compressor"]](own, layout, rnd=int(rnd))
    if own["class"] is not None:
        return UserReceiver(own, layout, rnd=int(rnd))
    return PipelineReceiver(own, layout, make_quantizer(own), rnd=int(rnd))
