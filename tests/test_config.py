from __future__ import annotations

import copy

import pytest
import yaml

from conftest import REPO
from gradcomp.config import ConfigError, validate_config

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"


@pytest.fixture
def default_config() -> dict:
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def test_default_config_is_valid(default_config: dict) -> None:
    validate_config(default_config, SCHEMA)


def test_every_schema_key_has_a_description() -> None:
    schema = yaml.safe_load(SCHEMA.read_text())

    def walk(node, path):
        for key, sub in node.get("properties", {}).items():
            assert "description" in sub, f"{path}{key} lacks a description"
            assert "type" in sub or "$ref" in sub, f"{path}{key} lacks a type"
            walk(sub, f"{path}{key}.")

    walk(schema, "")


def test_defaults_are_filled() -> None:
    config = validate_config({}, SCHEMA)
    assert config["cifar10"] == "download"
    assert config["lossless"]["batch_size"] == 64


@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        (("lossless", "epochs"), -1, "lossless.epochs"),
        (("lossless", "models"), ["alexnet"], "lossless.models.0"),
        (("data", "train_subset"), "many", "data.train_subset"),
        (("lossless", "lr"), 0, "lossless.lr"),
        (("device",), "tpu", "device"),
        (("lossless", "coding", "stream"), "yes", "lossless.coding.stream"),
    ],
)
def test_bad_values_name_the_key(default_config: dict, path, value, key) -> None:
    config = copy.deepcopy(default_config)
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        validate_config(config, SCHEMA)


def test_unknown_key_is_reported(default_config: dict) -> None:
    default_config["lossless"]["epoks"] = 3
    with pytest.raises(ConfigError, match="'lossless.epoks': unknown key"):
        validate_config(default_config, SCHEMA)


def test_strings_from_nested_command_line_values_are_converted(default_config: dict) -> None:
    # snakemake --config figures='{histogram_bins: 40}' gives {'histogram_bins': '40'}
    default_config["figures"] = {"histogram_bins": "40"}
    default_config["lossless"]["lr"] = "0.05"
    default_config["lossless"]["augment"] = "false"
    validate_config(default_config, SCHEMA)
    assert default_config["figures"]["histogram_bins"] == 40
    assert (
        default_config["lossless"]["lr"] == 0.05 and default_config["lossless"]["augment"] is False
    )
    default_config["lossless"]["epochs"] = "many"
    with pytest.raises(ConfigError, match="'lossless.epochs'"):
        validate_config(default_config, SCHEMA)
