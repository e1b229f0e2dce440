"""A new compressor kind is one class: defined here, its option declared on it, registered
with :func:`gradcomp.compression.registry.register`, it passes the config schema, spec
checking and building, and no list of the library or the schema is edited for it (the
schema's kinds and entry keys, the spec's option keys and the refusal messages are read from
the registry). Its byte format (a wire kind code) is not part of this: it has none."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
import yaml

from conftest import REPO
from gradcomp.compression import build_compressor
from gradcomp.compression.registry import QUANTIZERS, register
from gradcomp.compression.specs import SpecError, check_spec, option_keys
from gradcomp.compression.value_quantizers import ValueQuantizer, as_sent, level_values
from gradcomp.errors import ConfigError
from gradcomp.study import build_study
from gradcomp.study.config import validate_config

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


class ToyTernary(ValueQuantizer):
    """``toy_ternary``: every sent value to the nearest of -a, 0 and a, a = ``toy_scale``
    times the largest magnitude (one float32 of side information), a 2-bit index."""

    kind = "toy_ternary"
    title = "toy ternary"
    fixed_rate = 2
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
        return level_values(self.kind, values, np.array([-a, 0.0, a]), {"a": a})


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


def test_registering_a_taken_name_is_refused(toy) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(ToyTernary)
