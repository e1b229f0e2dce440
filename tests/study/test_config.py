from __future__ import annotations

import copy

import pytest
import yaml

from conftest import REPO
from gradcomp.study.config import ConfigError, validate_config

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


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        (("lossless", "epochs"), -1, "lossless.epochs"),
        (("lossless", "models"), ["Alex-Net"], "lossless.models.0"),  # not a name (an unknown
        # one is the study's check: tests/workflow/test_user_model.py)
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


def _differences(filled, config, path: str = "") -> list[str]:
    """Key paths where ``filled`` (the schema's defaults) and ``config`` disagree."""
    if isinstance(filled, dict) and isinstance(config, dict):
        return [
            d
            for key in sorted(set(filled) | set(config))
            for d in _differences(
                filled.get(key, "<absent>"),
                config.get(key, "<absent>"),
                f"{path}.{key}" if path else key,
            )  # fmt: skip
        ]
    return [] if filled == config else [f"{path}: schema {filled!r}, config {config!r}"]


def test_the_schemas_defaults_are_the_default_config(default_config: dict) -> None:
    """config/config.yaml is the source (what ``snakemake --cores 2`` runs; docs/results.md
    states its results): an empty config filled in is that config, key by key, so a library
    user, a test or a config file that leaves a key out gets what the default study runs."""
    filled = validate_config({}, SCHEMA)
    assert _differences(filled, validate_config(default_config, SCHEMA)) == []


def _schema_defaults(node: dict, config, path: str = "") -> list[str]:
    """Key paths where the schema has a default and the config file a value too."""
    found = []
    for key, sub in node.get("properties", {}).items():
        if isinstance(config, dict) and key in config:
            where = f"{path}.{key}" if path else key
            found += [where] if "default" in sub else []
            found += _schema_defaults(sub, config[key], where)
    return found


def test_each_default_has_one_home(default_config: dict) -> None:
    """No key has a default both in the schema and in config/config.yaml (the schema keeps
    only those the file cannot hold: in list items, in sections it leaves out). Planted bug
    that fails it: ``default: 0.452`` put back on the schema's lossy.topk."""
    assert _schema_defaults(yaml.safe_load(SCHEMA.read_text()), default_config) == []
