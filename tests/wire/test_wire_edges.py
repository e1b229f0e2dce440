"""Issue 54, items 1 and 4: a finite update decodes finite or is refused by name (the sender's
:class:`OutOfRangeUpdateError`, a :class:`NonFiniteUpdateError`; float8's documented,
counted and logged saturation); a receiver refuses NaN or infinite values planted in a
record with its CRC fixed (:class:`NonFiniteDecodeError`, a :class:`WireFormatError`)."""

from __future__ import annotations

import logging
import zlib

import numpy as np
import pytest
import torch

from gradcomp.coding.fields import WireFormatError
from gradcomp.compression.build import build_compressor
from gradcomp.compression.inputs import NonFiniteUpdateError, OutOfRangeUpdateError
from gradcomp.compression.specs import check_spec, user_seed
from gradcomp.wire import UpdateLayout, encode_update, make_receiver
from gradcomp.wire.records import HEADER_BYTES, NonFiniteDecodeError

#: every built-in kind (small tensors raw: ``min_entries`` 25)
KINDS = {
    "none": {"quantizer": "none"},
    "float16": {"quantizer": "float16"},
    "float8": {"quantizer": "float8"},
    "uniform": {"quantizer": "uniform", "rate": 2},
    "lloyd": {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2},
    "kmeans": {"quantizer": "kmeans", "rate": 2, "M": 2},
    "gaussian_channel": {"quantizer": "gaussian_channel", "rate": 2},
    "qsgd": {"quantizer": "qsgd", "rate": 4},
    "terngrad": {"quantizer": "terngrad"},
    "scaled_sign": {"quantizer": "scaled_sign"},
    "tcq": {"quantizer": "tcq", "family": "gennorm", "rate": 2},
    "ecsq": {"quantizer": "ecsq", "family": "gennorm", "rate": 2, "M": 2},
    "ecsq_data": {"quantizer": "ecsq_data", "rate": 2},
    "powersgd": {"compressor": "powersgd", "rate": 2},
    "count_sketch": {"compressor": "count_sketch", "rate": 100},
}
#: the 11 kinds the issue found decoding inf from a float64 update beyond float32's range
ISSUE_KINDS = ["none", "float16", "float8", "uniform", "lloyd", "gaussian_channel",
               "scaled_sign", "ecsq", "ecsq_data", "powersgd", "count_sketch"]  # fmt: skip


def spec_of(kind: str) -> dict:
    spec = KINDS[kind]
    return {**spec, "min_entries": 25} if "quantizer" in spec else dict(spec)


def update(scale: float = 1.0, dtype=torch.float64) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "w": torch.randn(40, 30, generator=g, dtype=torch.float64).mul(scale).to(dtype),
        "b": torch.randn(20, generator=g, dtype=torch.float64).mul(scale).to(dtype),
    }


def sender(kind: str):
    return build_compressor(check_spec(spec_of(kind)).with_seed(user_seed(0, 0)))


def decodes_finite_or_refuses(kind: str, up: dict[str, torch.Tensor]) -> str:
    """``"refused"`` (by name) or ``"finite"`` (sender's and receiver's decodes both finite);
    any other outcome fails."""
    c = sender(kind)
    try:
        payload, ctx = c.compress(up)
    except OutOfRangeUpdateError as err:
        assert isinstance(err, NonFiniteUpdateError) and err.tensor in up, err
        return "refused"
    own = c.decompress(payload, ctx)
    got = make_receiver(spec_of(kind), UpdateLayout.of(up), seed=0, user=0, rnd=0).decode(
        encode_update(c, payload, ctx)
    )
    for name in up:
        assert bool(torch.isfinite(own[name]).all()), (kind, name)
        assert bool(torch.isfinite(got[name]).all()), (kind, name)
    return "finite"


def test_issue54_float16_above_65504_is_refused_by_name() -> None:
    """The issue's case: ``float16`` with ``min_entries`` 100, an update times 1e7 (3,294
    entries decoded as inf)."""
    g = torch.Generator().manual_seed(0)
    up = {"w": torch.randn(64, 64, generator=g) * 1e-2 * 1e7}  # gradients ~1e-2, times 1e7
    c = build_compressor({"quantizer": "float16", "min_entries": 100})
    with pytest.raises(OutOfRangeUpdateError, match=r"'w'.*float16.*65504"):
        c.compress(up)
    assert c.step == 0  # refused before the update counted


@pytest.mark.parametrize("kind", ISSUE_KINDS)
def test_issue54_float64_beyond_float32_decodes_finite_or_is_refused(kind) -> None:
    assert decodes_finite_or_refuses(kind, update(1e40)) == "refused"


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("scale", [1e30, 1e37, 1e200])
def test_issue54_every_kind_decodes_finite_or_refuses_by_name(kind, scale) -> None:
    """Every kind, float64 updates at the edge of float32's range and far beyond; float32
    updates up to its largest numbers."""
    decodes_finite_or_refuses(kind, update(scale))
    if scale < 1e38:
        decodes_finite_or_refuses(kind, update(scale, torch.float32))


def test_issue54_float8_saturation_is_counted_and_logged(caplog) -> None:
    c = sender("float8")
    with caplog.at_level(logging.WARNING, logger="gradcomp.compression.float8"):
        payload, _ = c.compress(update(1e6))  # beyond E5M2's 57344
    saturated = payload["w"].quantized.saturated
    assert saturated > 0 and c.quantize.quantizer.saturated == saturated
    assert any("saturated" in r.getMessage() and "'w'" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- receivers check what they decode


def plant(data: bytes, offset: int, raw: bytes) -> bytes:
    """``raw`` written at ``offset`` of the first record's body, its CRC fixed."""
    length = int.from_bytes(data[HEADER_BYTES : HEADER_BYTES + 4], "little")
    body_at = HEADER_BYTES + 8
    body = bytearray(data[body_at : body_at + length])
    body[offset : offset + len(raw)] = raw
    crc = zlib.crc32(bytes(body)).to_bytes(4, "little")
    return data[: HEADER_BYTES + 4] + crc + bytes(body) + data[body_at + length :]


#: kind -> byte offset of a float32 value in the first record's body (a tensor of the update
#: or its sketch): a value kind's first value, a level kind's side value (uniform's min)
FLOAT_AT = {"none": 1, "uniform": 1, "powersgd": 0, "count_sketch": 0, "scaled_sign": 1}


@pytest.mark.parametrize("kind", sorted(FLOAT_AT))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_issue54_receivers_refuse_planted_nan_and_inf(kind, bad) -> None:
    up = update(1e-2, torch.float32)
    c = sender(kind)
    payload, ctx = c.compress(up)
    data = encode_update(c, payload, ctx)
    receiver = make_receiver(spec_of(kind), UpdateLayout.of(up), seed=0, user=0, rnd=0)
    receiver.decode(data)  # the sent bytes decode
    bad_data = plant(data, FLOAT_AT[kind], np.array([bad], dtype="<f4").tobytes())
    with pytest.raises(NonFiniteDecodeError) as info:
        receiver.decode(bad_data)
    assert isinstance(info.value, WireFormatError) and "NaN or infinite" in str(info.value)


def test_issue54_a_raw_record_with_nan_is_refused_naming_its_tensor() -> None:
    """A raw float32 tensor (``min_entries``) of a quantizing kind: the second record."""
    up = update(1e-2, torch.float32)
    spec = spec_of("lloyd")
    c = sender("lloyd")
    payload, ctx = c.compress(up)
    data = encode_update(c, payload, ctx)
    first = int.from_bytes(data[HEADER_BYTES : HEADER_BYTES + 4], "little")
    second_at = HEADER_BYTES + 8 + first
    length = int.from_bytes(data[second_at : second_at + 4], "little")
    body = bytearray(data[second_at + 8 : second_at + 8 + length])
    body[1:5] = np.array([np.nan], dtype="<f4").tobytes()
    bad = (data[:second_at] + data[second_at : second_at + 4]
           + zlib.crc32(bytes(body)).to_bytes(4, "little") + bytes(body))  # fmt: skip
    receiver = make_receiver(spec, UpdateLayout.of(up), seed=0, user=0, rnd=0)
    with pytest.raises(NonFiniteDecodeError, match="tensor 'b'"):
        receiver.decode(bad)
