"""A new compressor kind is one class: defined here, its option declared on it, registered
with :func:`gradcomp.compression.registry.register`, it passes the config schema, spec
checking and building, and no list of the library or the schema is edited for it (the
schema's kinds and entry keys, the spec's option keys, the refusal messages and the update
header's kind code are read from the registry and the class). Its bytes go through the wire and
a receiver built from the spec alone decodes them."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
import yaml

from conftest import REPO
from gradcomp.coding.fields import WireFormatError
from gradcomp.compression import build_compressor
from gradcomp.compression.registry import QUANTIZERS, register
from gradcomp.compression.specs import SpecError, check_spec, option_keys, user_seed
from gradcomp.compression.value_quantizers import (
    QuantizedValues,
    ValueQuantizer,
    as_sent,
    level_values,
    read_side_floats,
    write_side_floats,
)
from gradcomp.errors import ConfigError
from gradcomp.study import build_study
from gradcomp.study.config import validate_config
from gradcomp.wire import UpdateLayout, encode_update, make_receiver

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


class ToyTernary(ValueQuantizer):
    """``toy_ternary``: every sent value to the nearest of -a, 0 and a, a = ``toy_scale``
    times the largest magnitude (one float32 of side information), a 2-bit index."""

    kind = "toy_ternary"
    title = "toy ternary"
    fixed_rate = 2
    wire_code = 200  # its byte in the update header
    options: ClassVar[dict[str, object]] = {"toy_scale": 1.0}

    def __init__(self, scale: float):
        self.scale = float(scale)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["toy_scale"])

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1
        return None if ok else f"must be a number in (0, 1], got {value!r}"

    def n_symbols(self) -> int:
        return 3

    def encode(self, values, name=""):
        a = as_sent(self.scale * float(values.abs().max())) or 1.0
        return level_values(self.kind, values, self._levels(a), {"a": a})

    @staticmethod
    def _levels(a: float) -> np.ndarray:
        return np.array([-a, 0.0, a])

    def write_side(self, q, w):
        write_side_floats(w, q.side, ("a",))

    def read_side(self, r, n, *, name, step):
        a = read_side_floats(r, ("a",))["a"]
        return QuantizedValues(self.kind, n, levels=self._levels(a), side={"a": a}, value_bits=2)


@pytest.fixture
def toy() -> Iterator[type[ToyTernary]]:
    """The toy kind, registered for one test (the registry is left as it was)."""
    register(ToyTernary)
    try:
        yield ToyTernary
    finally:
        del QUANTIZERS[ToyTernary.kind]


def with_entry(entry: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(DEFAULT)
    config["lossy"]["compressors"] = [*config["lossy"]["compressors"], entry]
    return config


ENTRY = {"name": "toy", "quantizer": "toy_ternary", "toy_scale": "0.5"}


def test_the_schema_refuses_the_toy_kind_until_it_is_registered() -> None:
    index = len(DEFAULT["lossy"]["compressors"])
    with pytest.raises(ConfigError, match=rf"'lossy.compressors.{index}.quantizer'"):
        validate_config(with_entry(ENTRY), SCHEMA)


def test_the_schema_takes_the_registered_kind_and_its_option(toy) -> None:
    """Its option is typed by its default, so a command-line string is converted; the study
    expands the entry into its variant."""
    config = validate_config(with_entry(ENTRY), SCHEMA)
    assert config["lossy"]["compressors"][-1]["toy_scale"] == 0.5
    assert "toy" not in SCHEMA.read_text()  # the schema file names no kind
    study = build_study(config)
    assert [v.label for v in study.lossy.variants if v.name == "toy"] == ["toy/R2_M0"]


def test_spec_checking_takes_its_option_and_refuses_it_elsewhere(toy) -> None:
    assert "toy_scale" in option_keys()
    spec = check_spec({"quantizer": "toy_ternary", "toy_scale": 0.25})
    assert spec["toy_scale"] == 0.25 and spec["rate"] == 2
    assert check_spec({"quantizer": "toy_ternary"})["toy_scale"] == 1.0
    with pytest.raises(SpecError, match="'toy_scale': must be a number in"):
        check_spec({"quantizer": "toy_ternary", "toy_scale": 2})
    with pytest.raises(SpecError, match="'toy_scale': uniform does not take toy_scale"):
        check_spec({"quantizer": "uniform", "rate": 2, "toy_scale": 0.5})
    with pytest.raises(SpecError, match="'rate': toy_ternary sends 2 bits per entry, not 3"):
        check_spec({"quantizer": "toy_ternary", "rate": 3})


def test_build_compressor_builds_it(toy) -> None:
    compressor = build_compressor({"quantizer": "toy_ternary", "toy_scale": 0.5, "min_entries": 0})
    update = {"w": torch.linspace(-1.0, 1.0, 9)}
    payload, ctx = compressor.compress(update)
    out = compressor.decompress(payload, ctx)["w"]
    assert sorted(set(out.tolist())) == [-0.5, 0.0, 0.5]
    assert compressor.rate(payload, ctx).n_entries == 9


def test_its_bytes_decode_with_what_the_receiver_knows(toy) -> None:
    """The header carries the class's code; the receiver, built from the spec, the layout and
    the seeds alone, rebuilds the sender's values bit for bit, and refuses another kind's
    bytes by the code (planted bugs: a header that writes no code, a receiver that reads the
    side value as float64)."""
    spec = check_spec({"quantizer": "toy_ternary", "toy_scale": 0.5, "min_entries": 0})
    update = {"w": torch.randn(40, generator=torch.Generator().manual_seed(0)), "b": torch.ones(3)}
    compressor = build_compressor(spec.with_seed(user_seed(seed=0, user=0)))
    payload, ctx = compressor.compress(update)
    data = encode_update(compressor, payload, ctx)
    assert data[3] == ToyTernary.wire_code
    receiver = make_receiver(spec, UpdateLayout.of(update), seed=0, user=0, rnd=0)
    sent = compressor.decompress(payload, ctx)
    got = receiver.decode(data)
    assert all(torch.equal(got[k], sent[k]) for k in update)
    other_spec = check_spec({"quantizer": "uniform", "rate": 2, "min_entries": 0})
    uniform = build_compressor(other_spec.with_seed(user_seed(seed=0, user=0)))
    other = encode_update(uniform, *uniform.compress(update))
    with pytest.raises(WireFormatError, match="'uniform' bytes, the spec says 'toy_ternary'"):
        receiver.decode(other)


def test_registering_a_taken_name_or_code_is_refused(toy) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(ToyTernary)
    clash = type("Clash", (ToyTernary,), {"kind": "toy_clash", "wire_code": 9})
    with pytest.raises(ValueError, match="wire_code 9 is 'terngrad'"):
        register(clash)
