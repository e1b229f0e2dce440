"""The uplink's byte format (gradcomp.compression.wire): every built-in compressor's payload as
bytes that a receiver decodes alone, the framing the bits obey, and the errors of bad bytes.

The property test draws a kind (every value quantizer with its options, PowerSGD, count
sketch) x sparsifier x memory mode x rate and updates with zeros, ties, constant, tiny,
subnormal and huge values, empty kept sets and zero-entry tensors. Two users compress two
updates each; every update is encoded before any is decoded, and the decodes run in the
reverse order, by receivers built from the spec, the layout, the seeds and the update's index
only. A decoder that read an item from the sender's side instead of the bytes (a shared
cache, a module global, the last payload) then gets the other user's item and the equality
fails; one whose item is missing from the bytes breaks the framing's lower bound.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcomp.compression import check_spec
from gradcomp.compression.lloyd_quantizer import _lloyd_levels
from gradcomp.compression.sketch_hash import cached_hash
from gradcomp.compression.wire import (
    HEADER_BYTES,
    RECORD_BYTES,
    UpdateLayout,
    WireFormatError,
    bits_source,
    encode_update,
    make_receiver,
)
from gradcomp.lossy.uplink import compressor_factory

SEED = 5
MIN_ENTRIES = 16
#: Most bits per record beyond the accounted ones: a flags byte (of which the accounting
#: charges at most its 2-bit position code) and at most 7 padding bits in each of a
#: positions field, a design / state byte, a code table and a payload bitstream.
SLACK_PER_RECORD = 8 + 4 * 7

PATTERNS = ("normal", "laplace", "zeros", "constant", "ties", "tiny", "subnormal", "huge", "sparse")


def values(rng: np.random.Generator, pattern: str, shape: tuple[int, ...]) -> torch.Tensor:
    n = int(np.prod(shape, dtype=np.int64))
    scale = 10.0 ** rng.uniform(-4, 0)
    x = {
        "normal": lambda: scale * rng.standard_normal(n),
        "laplace": lambda: scale * rng.laplace(size=n),
        "zeros": lambda: np.zeros(n),
        "constant": lambda: np.full(n, -scale),
        "ties": lambda: scale * rng.integers(-2, 3, n),
        "tiny": lambda: 1e-30 * rng.standard_normal(n),
        "subnormal": lambda: 1e-40 * rng.standard_normal(n),
        "huge": lambda: 1e30 * rng.standard_normal(n),
        "sparse": lambda: scale * rng.standard_normal(n) * (rng.random(n) < 0.1),
    }[pattern]()
    return torch.from_numpy(x.astype(np.float32)).reshape(shape)


LEVEL_KINDS = ("uniform", "lloyd", "kmeans", "float8", "terngrad", "scaled_sign")


QUANTIZER_KINDS = ("none", "float16", "float8", "uniform", "lloyd", "kmeans", "gaussian_channel",
                   "qsgd", "terngrad", "scaled_sign", "tcq")  # fmt: skip


@st.composite
def quantizer_specs(draw, kind: str, sparsifier: str) -> dict:
    """A ``quantizer`` spec of ``kind`` and ``sparsifier``: its options, rate, memory mode and
    Huffman flag drawn."""
    spec: dict = {"quantizer": kind, "min_entries": MIN_ENTRIES, "huffman": draw(st.booleans())}
    if kind == "float8":
        spec.update(
            float8_format=draw(st.sampled_from(("e5m2", "e4m3"))),
            float8_scaling=draw(st.sampled_from(("none", "amax"))),
            float8_ties=draw(st.sampled_from(("even", "upper"))),
        )
    if kind in ("uniform", "kmeans", "gaussian_channel", "lloyd"):
        spec["rate"] = draw(st.integers(1, 3))
    if kind in ("uniform", "gaussian_channel", "lloyd"):
        spec["slip"] = draw(st.booleans())
    if kind in ("lloyd", "tcq"):
        spec["family"] = draw(st.sampled_from(("norm", "laplace", "gennorm", "dweibull")))
    if kind in ("lloyd", "kmeans", "tcq"):
        spec["M"] = draw(st.sampled_from((0, 2)))
    if kind == "lloyd":
        spec["lloyd_fit"] = draw(st.sampled_from(("update", "survivors")))
    if kind == "qsgd":
        spec.update(rate=draw(st.integers(2, 4)), bucket_size=draw(st.sampled_from((7, 64, 512))))
    if kind == "tcq":
        spec.update(rate=draw(st.integers(1, 2)), states=draw(st.sampled_from((4, 8))))
    spec["sparsifier"] = sparsifier
    if sparsifier != "none":
        spec["topk"] = draw(st.sampled_from((0.02, 0.3, 1.0)))
    modes = ("none", "residual", "m22", "m22_slip") if kind in LEVEL_KINDS else ("none", "residual")
    mode = draw(st.sampled_from(modes))
    if mode != "none":
        spec.update(error_feedback=True, memory_mode=mode)
    return spec


@st.composite
def update_specs(draw, kind: str) -> dict:
    """A ``compressor`` spec of ``kind`` (powersgd, count_sketch), its options drawn."""
    if kind == "powersgd":
        return {"compressor": "powersgd", "rate": draw(st.integers(1, 3)),
                "error_feedback": draw(st.booleans())}  # fmt: skip
    return {
        "compressor": "count_sketch",
        "rate": draw(st.sampled_from((100, 200))),
        "rows": draw(st.sampled_from((3, 5))),
        "min_entries": MIN_ENTRIES,
        "sketch_scope": draw(st.sampled_from(("update", "tensor"))),
        "sketch_topk": draw(st.sampled_from((None, 0.6))),
        "sketch_feedback": draw(st.sampled_from(("zero", "subtract"))),
        "sketch_hash": draw(st.sampled_from(("random", "polynomial"))),
        "error_feedback": draw(st.booleans()),
    }


@st.composite
def updates(draw) -> list[dict[str, torch.Tensor]]:
    """Four updates of one layout (two users, two rounds), each tensor its own pattern."""
    shapes = {
        "w": (draw(st.integers(MIN_ENTRIES + 1, 300)),),
        "v": (draw(st.integers(2, 12)), draw(st.integers(9, 30))),
        "b": (draw(st.integers(1, MIN_ENTRIES)),),
    }
    if draw(st.booleans()):
        shapes["e"] = (0,)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return [
        {n: values(rng, draw(st.sampled_from(PATTERNS)), s) for n, s in shapes.items()}
        for _ in range(4)
    ]


def framing_bits(n_records: int) -> int:
    return 8 * (HEADER_BYTES + RECORD_BYTES * n_records)


def check_round_trip(spec: dict, ups: list[dict[str, torch.Tensor]]) -> None:
    checked = check_spec(spec)
    layout = UpdateLayout.of(ups[0])
    make = compressor_factory(checked, SEED)
    senders = [make(user) for user in (0, 1)]
    for step in (0, 1):
        sent = []
        for user, sender in enumerate(senders):
            payload, ctx = sender.compress(ups[2 * step + user])
            own = sender.decompress(payload, ctx)
            data = encode_update(sender, payload, ctx)
            sent.append((user, own, data, sender.rate(payload, ctx).total(True)))
        _lloyd_levels.cache_clear()  # the receiver designs its own levels
        cached_hash.cache_clear()
        for user, own, data, accounted in reversed(sent):
            receiver = make_receiver(checked, layout, seed=SEED, user=user, rnd=step)
            got = receiver.decode(bytearray(data))
            assert list(got) == list(own)
            for name, t in own.items():
                assert got[name].dtype == t.dtype and got[name].shape == t.shape
                assert torch.equal(got[name].view(torch.int32), t.cpu().view(torch.int32)), name
            if bits_source(senders[user]) == "ideal":
                continue
            n_records = len(receiver_records(checked, layout))
            spare = 8 * len(data) - accounted - framing_bits(n_records)
            assert 0 <= spare <= SLACK_PER_RECORD * n_records, (spare, n_records)


def receiver_records(spec, layout: UpdateLayout) -> list[str]:
    """The records an update of ``layout`` has: one per tensor, or per sketch and raw tensor
    (counted here from the count sketch's own grouping rule, min_entries and scope)."""
    if spec["compressor"] != "count_sketch":
        return list(layout.names)
    big = [n for n in layout.names if layout.numel(n) > spec["min_entries"]]
    sketches = [[n] for n in big] if spec["sketch_scope"] == "tensor" else ([big] if big else [])
    return [*map(str, sketches), *(n for n in layout.names if n not in big)]


CASES = [(k, sp) for k in QUANTIZER_KINDS for sp in ("none", "topk", "randomk")]
CASES += [("powersgd", None), ("count_sketch", None)]
PROPERTY = settings(
    max_examples=6, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("kind, sparsifier", CASES)
def test_decode_of_the_bytes_is_the_senders_reconstruction(kind, sparsifier):
    """Every built-in kind x sparsifier, with drawn memory modes, rates and options:
    decode(bytes) equals the sender's own reconstruction bit for bit, and 8 x len(bytes) is
    the accounted bits plus the header and record framing plus at most the stated slack."""
    specs = update_specs(kind) if sparsifier is None else quantizer_specs(kind, sparsifier)

    @PROPERTY
    @given(spec=specs, ups=updates())
    def property_holds(spec, ups):
        check_round_trip(spec, ups)

    property_holds()
