"""The uplink's byte format (gradcomp.wire): every built-in compressor's payload as
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

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcomp.compression import check_spec
from gradcomp.compression.inputs import OutOfRangeUpdateError
from gradcomp.compression.lloyd_quantizer import forget_designs
from gradcomp.compression.sketch_hash import cached_hash
from gradcomp.wire import (
    HEADER_BYTES,
    RECORD_BYTES,
    UpdateLayout,
    WireFormatError,
    bits_source,
    encode_update,
    make_receiver,
)
from gradcomp.wire.users import compressor_factory

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
                   "qsgd", "terngrad", "scaled_sign", "tcq", "ecsq", "ecsq_data")  # fmt: skip


def test_the_property_tests_cover_every_registered_quantizer_kind() -> None:
    """A kind added to the registry without its strategy here is named (it was: ecsq)."""
    from gradcomp.compression.registry import QUANTIZERS

    assert sorted(QUANTIZER_KINDS) == sorted(QUANTIZERS)


@st.composite
def quantizer_specs(draw, kind: str, sparsifier: str) -> dict:
    """A ``quantizer`` spec of ``kind`` and ``sparsifier``: its options, rate, memory mode and
    Huffman flag drawn."""
    from gradcomp.compression.registry import QUANTIZERS

    spec: dict = {"quantizer": kind, "min_entries": MIN_ENTRIES}
    if QUANTIZERS[kind].huffman_acts:  # no huffman: false where it would be dropped
        spec["huffman"] = draw(st.booleans())
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
    if kind in ("lloyd", "tcq", "ecsq"):
        spec["family"] = draw(st.sampled_from(("norm", "laplace", "gennorm", "dweibull")))
    if kind in ("lloyd", "kmeans", "tcq", "ecsq", "ecsq_data"):
        spec["M"] = draw(st.sampled_from((0, 2)))
    if kind in ("ecsq", "ecsq_data"):  # designed for its entropy code: no fixed-width indices
        spec.update(rate=draw(st.integers(1, 3)), huffman=True)
        if draw(st.booleans()):
            spec["target_bits"] = spec["rate"] - draw(st.sampled_from((0.0, 0.5)))
            spec["target_bits"] = max(1.0, spec["target_bits"])
        if kind == "ecsq" and spec["rate"] == 1 and draw(st.booleans()):
            spec["target_bits"] = draw(st.sampled_from((0.05, 0.5)))  # the adaptive code
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
    feedback = draw(st.booleans())  # sketch_feedback only with error feedback
    return {
        "compressor": "count_sketch",
        "rate": draw(st.sampled_from((100, 200))),
        "rows": draw(st.sampled_from((3, 5))),
        "min_entries": MIN_ENTRIES,
        "sketch_scope": draw(st.sampled_from(("update", "tensor"))),
        "sketch_topk": draw(st.sampled_from((None, 0.6))),
        "sketch_feedback": draw(st.sampled_from(("zero", "subtract"))) if feedback else None,
        "sketch_hash": draw(st.sampled_from(("random", "polynomial"))),
        "error_feedback": feedback,
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
            try:
                payload, ctx = sender.compress(ups[2 * step + user])
            except OutOfRangeUpdateError as err:  # float16 above 65504 ("huge"): refused
                assert checked["quantizer"] == "float16", err
                assert (
                    float(ups[2 * step + user][err.tensor].abs().max()) > 65504
                    or (checked["error_feedback"])
                ), err
                return
            own = sender.decompress(payload, ctx)
            data = encode_update(sender, payload, ctx)
            sent.append((user, own, data, sender.rate(payload, ctx).total(True)))
        forget_designs()  # the receiver designs its own levels
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


#: The entropy-constrained designs take seconds a case: the slow tier runs them.
CASES = [
    pytest.param(k, sp, marks=pytest.mark.slow) if k.startswith("ecsq") else (k, sp)
    for k in QUANTIZER_KINDS
    for sp in ("none", "topk", "randomk")
]
CASES += [("powersgd", None), pytest.param("count_sketch", None, marks=pytest.mark.slow)]
PROPERTY = settings(
    max_examples=6, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip


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


# ---- bad bytes --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("target", [0.05, 0.5, 1.5])
@pytest.mark.parametrize("sparsifier", ["none", "topk", "randomk"])
def test_ecsq_below_one_and_a_half_bits_round_trips(target, sparsifier) -> None:
    """``ecsq`` with its adaptive code (no table, a varint-framed stream): two users, two
    rounds, each decode the sender's reconstruction and the bytes the accounted bits plus
    framing (:func:`check_round_trip`)."""
    spec = {"quantizer": "ecsq", "family": "gennorm", "rate": math.ceil(target), "M": 0,
            "target_bits": target,
            "min_entries": MIN_ENTRIES, "sparsifier": sparsifier}  # fmt: skip
    if sparsifier != "none":
        spec["topk"] = 0.3
    ups = [{n: t * (1 + k) for n, t in small_update(k % 2).items()} for k in range(4)]
    check_round_trip(spec, ups)


def small_update(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"conv.weight": 0.01 * torch.randn(8, 4, 3, 3, generator=g),
            "fc.weight": 0.01 * torch.randn(10, 40, generator=g),
            "fc.bias": 0.01 * torch.randn(10, generator=g)}  # fmt: skip


BAD_BYTES_SPECS = [
    {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "topk": 0.3, "min_entries": 20},
    {"quantizer": "qsgd", "rate": 3, "min_entries": 20},
    {"quantizer": "ecsq", "family": "gennorm", "rate": 1, "M": 0, "target_bits": 0.5,
     "min_entries": 20},
    {"compressor": "powersgd", "rate": 2},
    {"compressor": "count_sketch", "rate": 100, "min_entries": 20, "sketch_topk": 0.6},
]  # fmt: skip


def sent(spec: dict, seed: int = 0):
    update = small_update(seed)
    c = compressor_factory(spec, SEED)(0)
    payload, ctx = c.compress(update)
    return update, c.decompress(payload, ctx), encode_update(c, payload, ctx)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", BAD_BYTES_SPECS, ids=lambda s: s.get("quantizer") or s["compressor"]
)
def test_truncated_corrupted_and_foreign_bytes_name_the_tensor_and_the_field(spec):
    """Prefixes cut in the header and at 25 random places, 25 random single flipped bits,
    another kind's bytes and another layout's all raise WireFormatError naming where and
    which field; never a wrong update. Planted bug that fails it: a reader that zero-fills
    what is missing, or a record read without its CRC check."""
    update, own, data = sent(spec)
    receiver = make_receiver(spec, UpdateLayout.of(update), seed=SEED, user=0, rnd=0)
    assert all(torch.equal(receiver.decode(data)[n], own[n]) for n in own)
    rng = np.random.default_rng(1)
    cuts = sorted({0, 1, 7, 8, 12, len(data) - 1, *rng.integers(0, len(data), 25).tolist()})
    for cut in cuts:
        with pytest.raises(WireFormatError) as err:
            receiver.decode(data[:cut])
        assert "field" in str(err.value) and (
            "tensor" in str(err.value) or "header" in str(err.value) or "sketch" in str(err.value)
        )
    for pos in rng.choice(len(data), 25, replace=False):
        bad = bytearray(data)
        bad[pos] ^= 1 << int(rng.integers(8))
        with pytest.raises(WireFormatError) as err:
            receiver.decode(bad)
        where = err.value.where
        assert where == "header" or any(n in where for n in update), where
    other = BAD_BYTES_SPECS[(BAD_BYTES_SPECS.index(spec) + 1) % len(BAD_BYTES_SPECS)]
    with pytest.raises(WireFormatError, match="header, field 'kind'"):
        receiver.decode(sent(other)[2])
    renamed = {f"x.{n}": t for n, t in update.items()}
    foreign = make_receiver(spec, UpdateLayout.of(renamed), seed=SEED, user=0, rnd=0)
    with pytest.raises(WireFormatError, match="header, field 'layout'"):
        foreign.decode(data)


def test_a_record_with_a_valid_checksum_but_a_bad_field_names_the_field():
    """A record re-framed with a correct CRC (a sender writing another layout) is caught by
    the field checks: a reserved flag bit, then a position count beyond the tensor."""
    import zlib

    spec = {**BAD_BYTES_SPECS[0], "topk": 0.05}
    update, _, data = sent(spec)
    receiver = make_receiver(spec, UpdateLayout.of(update), seed=SEED, user=0, rnd=0)
    start = HEADER_BYTES  # the first record: conv.weight
    length = int.from_bytes(data[start : start + 4], "little")
    body = bytearray(data[start + RECORD_BYTES : start + RECORD_BYTES + length])

    def reframed(new_body: bytes) -> bytes:
        head = len(new_body).to_bytes(4, "little") + zlib.crc32(new_body).to_bytes(4, "little")
        return data[:start] + head + bytes(new_body) + data[start + RECORD_BYTES + length :]

    flags = bytearray(body)
    flags[0] |= 0x80
    with pytest.raises(WireFormatError, match=r"tensor 'conv.weight', field 'flags'"):
        receiver.decode(reframed(flags))
    assert body[0] == 3  # 5% kept: the gap code
    count = bytearray(body)
    count[1:5] = (10**6).to_bytes(4, "little")
    with pytest.raises(WireFormatError, match=r"tensor 'conv.weight', field 'positions count'"):
        receiver.decode(reframed(count))


# ---- the audit's findings ----------------------------------------------------------------


def test_sketch_topk_sends_its_data_dependent_k():
    """With sketch_topk, k = min(k_of(d), the sketch's non-zeros) depends on the data: it is
    sent (32 bits per sketch) and the receiver unsketches to it. Old behaviour: the decoder
    read k off the sender's object, no bit paid for it (a 32-bit seed was charged once per
    update instead). Reference: the receiver's unsketch at k_of(d), which differs."""
    from gradcomp.compression.count_sketch import CountSketch

    spec = {"compressor": "count_sketch", "rate": 100, "min_entries": 20, "sketch_topk": 0.1,
            "sketch_scope": "tensor"}  # fmt: skip
    update = small_update(3)
    update["fc.weight"][:, 5:] = 0  # 50 non-zeros: k = 50 * 0.1 share of the global top-K
    c = compressor_factory(spec, SEED)(0)
    payload, ctx = c.compress(update)
    ks = [(s.k, c.k_of(s.d)) for s in payload["sketches"]]
    assert len(ks) == 2 and any(k < full for k, full in ks)
    assert c.rate(payload, ctx).side_bits == 32 * len(ks)
    data = encode_update(c, payload, ctx)
    got = make_receiver(spec, UpdateLayout.of(update), seed=SEED, user=0, rnd=0).decode(data)
    own = c.decompress(payload, ctx)
    assert all(torch.equal(got[n], own[n]) for n in own)
    plain = CountSketch.from_spec(check_spec(spec).with_seed(SEED * 1000))
    fc = next(s for s in payload["sketches"] if s.names == ("fc.weight",))
    at_full_k = plain.hash_of(fc.d, 1).unsketch(fc.table, plain.k_of(fc.d))
    assert not torch.equal(at_full_k.reshape(10, 40).float(), got["fc.weight"])


def test_lloyd_fallback_is_flagged_in_the_format():
    """A constant tensor cannot be fitted: the Lloyd quantizer falls back to uniform min-max
    levels, says so in a design byte (charged 1 bit) and sends min and max. Old behaviour:
    kind lloyd with side {min, max} and no flag, so a receiver could not tell which levels to
    build. Reference: uniform levels of the constant, by hand; a record whose flag is cleared
    is refused (its fields do not parse as the law's), not decoded as a wrong update."""
    import zlib

    spec = {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "min_entries": 20}
    update = {"w": torch.full((50,), 0.25), "v": 0.01 * torch.randn(60)}
    c = compressor_factory(spec, SEED)(0)
    payload, ctx = c.compress(update)
    q = payload["w"].quantized
    assert q.fallback and q.side == {"min": 0.25, "max": 0.25} and np.all(q.levels == 0.25)
    assert c.rate_per_tensor(payload, ctx)["w"].side_bits == 2 * 32 + 1
    data = encode_update(c, payload, ctx)
    receiver = make_receiver(spec, UpdateLayout.of(update), seed=SEED, user=0, rnd=0)
    assert torch.equal(receiver.decode(data)["w"], torch.full((50,), 0.25))
    start = HEADER_BYTES
    length = int.from_bytes(data[start : start + 4], "little")
    body = bytearray(data[start + RECORD_BYTES : start + RECORD_BYTES + length])
    assert body[1] == 1  # after the flags byte: design = uniform fallback
    body[1] = 0
    head = len(body).to_bytes(4, "little") + zlib.crc32(body).to_bytes(4, "little")
    cleared = data[:start] + head + bytes(body) + data[start + RECORD_BYTES + length :]
    with pytest.raises(WireFormatError, match=r"tensor 'w', field "):
        receiver.decode(cleared)


def test_side_values_are_used_at_the_precision_they_are_sent():
    """The sender quantizes with the levels the receiver rebuilds from the float32 side
    values: Lloyd's levels are the design of the rounded parameters, k-means' levels and
    uniform's min / max are float32 numbers. Old behaviour: Lloyd parameters and k-means
    levels charged at 32 bits but used at float64. Reference: lloyd_design called here on
    the float32 parameters."""
    from gradcomp.quantization.lloyd import lloyd_design

    g = torch.Generator().manual_seed(2)
    update = {"w": (0.01 * torch.randn(4000, generator=g)).double() ** 3}  # float64 values
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    lloyd = compressor_factory(
        {"quantizer": "lloyd", "family": "gennorm", "rate": 3, "M": 2, "topk": 0.3}, SEED
    )(0)
    q = lloyd.compress(update)[0]["w"].quantized
    assert not q.fallback and all(f32(v) == v for v in q.side.values())
    params = {"beta": q.side["beta"], "loc": 0.0, "scale": q.side["scale"]}
    expected = lloyd_design("gennorm", params, 8, 2.0, tau=q.side["tau"]).levels
    assert np.array_equal(q.levels, expected)
    kmeans = compressor_factory({"quantizer": "kmeans", "rate": 3, "M": 2}, SEED)(0)
    q = kmeans.compress(update)[0]["w"].quantized
    assert np.array_equal(q.levels.astype(np.float32).astype(np.float64), q.levels)
    q = compressor_factory({"quantizer": "uniform", "rate": 3}, SEED)(0).compress(update)[0]["w"]
    lo, hi = float(update["w"].min()), float(update["w"].max())
    assert q.quantized.side == {"min": f32(lo), "max": f32(hi)} and f32(lo) != lo
    assert np.array_equal(q.quantized.levels, np.linspace(f32(lo), f32(hi), 8))


@pytest.mark.parametrize("slip", [False, True])
def test_the_gaussian_channel_is_labelled_ideal_and_charged_its_mutual_information(slip):
    """Its rows say bits_source = ideal and keep the accounted (ideal) bits; the released
    forward channel is charged 1/2 log2(1 + 2^(2R)) bits per value. Old behaviour: R bits
    per value for both, counted like a code. Reference: the formula, by hand."""
    import math

    from gradcomp.lossy.uplink import send

    spec = {"quantizer": "gaussian_channel", "rate": 1, "slip": slip, "min_entries": 20}
    make = compressor_factory(spec, SEED)
    update = small_update(4)
    row = send(make(0), update, rnd=1, user=0, n_train=1, receiver=make.receiver(0, 0)).row
    assert row["bits_source"] == "ideal" and row["bits_coded"] == row["bits_accounted"]
    per_value = 0.5 * math.log2(1 + 2**2) if slip else 1.0
    assert row["payload_fixed_bits"] == sum(math.ceil(n * per_value) for n in (8 * 4 * 9, 400))
    assert row["side_bits"] == 2 * 2 * 32 and row["raw_bits"] == 32 * 10


# ---- the study ---------------------------------------------------------------------------


def test_rows_count_the_bytes_sent_and_a_wrong_decode_stops_the_run():
    """send(): bits_coded is 8 x the bytes (those of a twin compressor of the same seed,
    encoded here), bits_accounted the RateBreakdown total, and a receiver whose decode differs
    in one bit raises DecodeMismatchError naming user, round and tensor."""
    from gradcomp.lossy.uplink import send
    from gradcomp.wire import DecodeMismatchError

    spec = {"quantizer": "uniform", "rate": 2, "topk": 0.3, "min_entries": 20}
    make = compressor_factory(spec, SEED)
    update = small_update(5)
    twin = make(1)
    payload, ctx = twin.compress(update)
    row = send(make(1), update, rnd=1, user=1, n_train=1, receiver=make.receiver(1, 0)).row
    assert row["bits_source"] == "bytes"
    assert row["bits_coded"] == 8 * len(encode_update(twin, payload, ctx))
    assert row["bits_accounted"] == twin.rate(payload, ctx).total(True) < row["bits_coded"]

    class OneBitOff:
        def __init__(self, inner):
            self.inner = inner

        def decode(self, data):
            out = self.inner.decode(data)
            out["fc.weight"].view(torch.int32).reshape(-1)[7] ^= 1
            return out

    def flipping(layout):
        return OneBitOff(make.receiver(1, 0)(layout))

    with pytest.raises(DecodeMismatchError, match=r"user 1, round 1: tensor 'fc.weight'"):
        send(make(1), update, rnd=1, user=1, n_train=1, receiver=flipping)


@pytest.mark.slow
def test_a_federated_run_decoded_from_bytes_trains_as_the_senders_reconstruction():
    """A full run whose server decodes every update from its bytes ends in the same state, bit
    for bit, as one that aggregates the senders' own reconstructions, and its rows say bytes
    (the other: self-reported, its accounted bits)."""
    from conftest import make_tiny_cifar
    from gradcomp.lossy.federated import FederatedSettings, run_federated

    spec = check_spec({"quantizer": "lloyd", "family": "gennorm", "rate": 2, "topk": 0.3,
                       "error_feedback": True, "sparsifier": "randomk"})  # fmt: skip
    s = FederatedSettings(model="mlp", seed=SEED, rounds=2, local_epochs=1, batch_size=32,
                          validate_users=False, eval_batch_size=64)  # fmt: skip
    data = make_tiny_cifar()
    decoded = run_federated(data, s, compressor_factory(spec, SEED))
    own = run_federated(data, s, lambda u: compressor_factory(spec, SEED)(u))
    assert all(torch.equal(decoded.final_state[k], own.final_state[k]) for k in own.final_state)
    assert {r["bits_source"] for r in decoded.uplink} == {"bytes"}
    assert {r["bits_source"] for r in own.uplink} == {"self-reported"}
    for a, b in zip(decoded.uplink, own.uplink, strict=True):
        assert a["bits_accounted"] == b["bits_accounted"] == b["bits_coded"] < a["bits_coded"]
    assert decoded.rounds[-1]["cumulative_bits_coded"] == sum(
        r["bits_coded"] for r in decoded.uplink
    )


#: The codes given up to format 3's first kinds: the bytes of a past run decode only if they
#: never change (a new kind needs no line here: its class's ``wire_code`` is checked unique).
ASSIGNED = {
    "none": 1, "float16": 2, "float8": 3, "uniform": 4, "lloyd": 5, "kmeans": 6,
    "gaussian_channel": 7, "qsgd": 8, "terngrad": 9, "scaled_sign": 10, "tcq": 11, "ecsq": 12,
    "ecsq_data": 13,
    "powersgd": 32, "count_sketch": 33,
}  # fmt: skip


def test_every_compressor_kind_has_a_byte_format_in_the_wire_package() -> None:
    """Each registered ``compressor`` kind has its encoder and its receiver in
    gradcomp.wire.update (the kinds do not import the wire: it dispatches to their formats;
    planted bug: a kind registered without a format)."""
    from gradcomp.compression.registry import COMPRESSORS
    from gradcomp.wire.update import ENCODERS, RECEIVERS

    assert sorted(RECEIVERS) == sorted(COMPRESSORS)
    assert [k for k, cls in COMPRESSORS.items() if cls not in ENCODERS] == []


def test_every_kind_has_one_stable_code_and_docs_wire_md_lists_it() -> None:
    """Every registered quantizer and compressor kind's class sets its own header code
    (``wire_code``, not inherited), no two share one, a code once given keeps its kind, and
    docs/wire.md's table is the same mapping (planted bugs: a kind registered without a code,
    a subclass inheriting its parent's, two kinds renumbered, the docs' table stale)."""
    import re

    from conftest import REPO
    from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
    from gradcomp.wire.records import KIND_CODES

    kinds = {**QUANTIZERS, **COMPRESSORS}
    own = sorted(k for k, cls in kinds.items() if "wire_code" not in vars(cls))
    assert not own, f"kinds whose class does not set its own wire_code: {own}"
    codes = [cls.wire_code for cls in kinds.values()]
    assert len(set(codes)) == len(codes), f"two kinds share a wire code: {sorted(codes)}"
    assert all(0 < c < 256 for c in codes)
    assert KIND_CODES == {k: cls.wire_code for k, cls in kinds.items()}
    changed = {k: (c, KIND_CODES.get(k)) for k, c in ASSIGNED.items() if KIND_CODES.get(k) != c}
    assert not changed, f"assigned codes changed (old, new): {changed}"
    table = (REPO / "docs/wire.md").read_text()
    documented = {k: int(c) for k, c in re.findall(r"\| `(\w+)` \| (\d+) ", table)}
    documented |= {k: int(c) for k, c in re.findall(r"\| `(\w+)` \| (\d+) \|$", table, re.M)}
    assert documented == KIND_CODES
