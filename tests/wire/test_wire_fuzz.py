"""Every decoder fed random, truncated, extended and mutated messages under random agreed
facts (property-based, hypothesis): it raises WireFormatError (AgreedFactError included) or
returns the layout's tensors, names, shapes and dtypes, and the latter only where the bytes
carry the sender's header and every record's checksum: never another exception, a hang (a
deadline per example) or another shape. Planted bugs that fail it: a record's checksum not
checked (a mutated body then decodes into other values or raises an IndexError); a short
record read past its end (struct.error / IndexError instead of a named error)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcomp.compression.specs import check_spec
from gradcomp.wire import UpdateLayout, WireFormatError, encode_update, make_receiver
from gradcomp.wire.users import compressor_factory

SEED, USER, RND = 2, 1, 0
SPECS = {
    "uniform": {"quantizer": "uniform", "rate": 2, "topk": 0.3, "min_entries": 50},
    "lloyd": {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2, "topk": 0.3,
              "min_entries": 50},
    "kmeans": {"quantizer": "kmeans", "rate": 2, "M": 2, "min_entries": 50},
    "qsgd": {"quantizer": "qsgd", "rate": 3, "sparsifier": "none", "min_entries": 50},
    "terngrad": {"quantizer": "terngrad", "sparsifier": "none", "min_entries": 50},
    "scaled_sign": {"quantizer": "scaled_sign", "sparsifier": "none", "min_entries": 50},
    "float8": {"quantizer": "float8", "topk": 0.5, "min_entries": 50},
    "tcq": {"quantizer": "tcq", "family": "gennorm", "rate": 1, "topk": 0.3, "min_entries": 50},
    "ecsq": {"quantizer": "ecsq", "family": "gennorm", "rate": 2, "M": 2, "topk": 0.3,
             "min_entries": 50},
    "ecsq_0.5": {"quantizer": "ecsq", "family": "gennorm", "rate": 1, "M": 0, "target_bits": 0.5,
                 "sparsifier": "none", "min_entries": 50},
    "ecsq_data": {"quantizer": "ecsq_data", "rate": 2, "M": 2, "topk": 0.3, "min_entries": 50},
    "randomk": {"quantizer": "none", "sparsifier": "randomk", "topk": 0.2, "min_entries": 50},
    "powersgd": {"compressor": "powersgd", "rate": 2},
    "count_sketch": {"compressor": "count_sketch", "rate": 100},
}  # fmt: skip


def update() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(11)
    return {"w": torch.randn(24, 10, generator=gen), "b": torch.randn(12, generator=gen)}


def sent(name: str) -> tuple[dict, bytes, UpdateLayout]:
    spec = check_spec(SPECS[name])
    c = compressor_factory(spec, SEED)(USER)
    payload, ctx = c.compress(update())
    return spec, encode_update(c, payload, ctx), UpdateLayout.of(update())


SENT = {name: sent(name) for name in SPECS}

mutations = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 10_000)),
    st.tuples(st.just("extend"), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(1, 255)),
    st.tuples(st.just("random"), st.binary(max_size=400)),
    st.tuples(st.just("none")),
)


def mutate(data: bytes, how: tuple) -> bytes:
    if how[0] == "truncate":
        return data[: how[1] % max(len(data), 1)]
    if how[0] == "extend":
        return data + how[1]
    if how[0] == "flip":
        i = how[1] % len(data)
        return data[:i] + bytes([data[i] ^ how[2]]) + data[i + 1 :]
    if how[0] == "random":
        return how[1]
    return data


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SPECS))
@settings(max_examples=60, deadline=2000, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(how=mutations, seed=st.integers(0, 3), user=st.integers(0, 2), rnd=st.integers(0, 2))
def test_a_decoder_names_what_is_wrong_or_returns_the_layout(name, how, seed, user, rnd):
    spec, data, layout = SENT[name]
    bytes_in = mutate(data, how)
    receiver = make_receiver(spec, layout, seed=seed, user=user, rnd=rnd)
    try:
        got = receiver.decode(bytes_in)
    except WireFormatError as err:
        assert str(err)  # a message, never None
        return
    assert list(got) == list(layout.names)
    for n, shape, dtype in layout:
        assert tuple(got[n].shape) == shape and got[n].dtype == dtype
    # decoded: the sender's facts and every byte the checks cover (an extension would have
    # been refused as bytes left over; a flip elsewhere as a failed checksum)
    assert (seed, user, rnd) == (SEED, USER, RND)
    assert how[0] == "none" or bytes_in == data


@pytest.mark.parametrize("name", list(SPECS))
def test_every_single_byte_change_is_refused_by_name(name):
    """Each byte of the message changed in turn (XOR 0x5A), and each length cut: every one
    refused with a WireFormatError, none decoded."""
    spec, data, layout = SENT[name]
    receiver = make_receiver(spec, layout, seed=SEED, user=USER, rnd=RND)
    for i in range(len(data)):
        with pytest.raises(WireFormatError):
            receiver.decode(data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1 :])
        with pytest.raises(WireFormatError):
            receiver.decode(data[:i])
