"""Config validation against the workflow's JSON schema, with messages that name the key.

The schema (``workflow/schemas/config.schema.yaml``) gives every key a type,
a range and a description. A key left out is filled in from the defaults file the schema
names (its ``defaults_file``, ``config/config.yaml``), and from the schema's own defaults
where that file cannot hold one (inside list items, in sections it leaves out): each default
has one home. All errors are collected and reported at once, before any job starts, as
``config key 'lossless.epochs': -1 is less than the minimum of 1``.

The lists the code defines (compressor kinds, fit families, memory modes, dump kinds...)
are not copied into the schema: where it says ``enum_from: <name>``, :func:`load_schema`
puts the code's list (:func:`code_lists`), and a compressor entry takes every option of the
registered kinds (:func:`~gradcomp.compression.checked_spec.option_keys`), so that a kind
registered later validates without the schema changing.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

from gradcomp.compression.checked_spec import SPARSIFIERS, option_keys
from gradcomp.compression.lloyd_quantizer import FIT_TO
from gradcomp.compression.memory import MEMORY_MODES
from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.distributions import FAMILIES
from gradcomp.errors import ConfigError, did_you_mean
from gradcomp.lossless.code_lossless import ACCOUNTINGS
from gradcomp.lossless.dumps import DUMP_KINDS
from gradcomp.quantization.grids import GRIDS, SCALINGS

__all__ = [
    "ConfigError",
    "DefaultFillingValidator",
    "code_lists",
    "fill_defaults",
    "key_path",
    "load_schema",
    "validate_config",
]


def _with_defaults(validator_class):
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = sub["default"]
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})


DefaultFillingValidator = _with_defaults(Draft202012Validator)


def key_path(error) -> str:
    """Dotted path of the config key an error is about (``<top level>`` for the root)."""
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        parts.append(extra[0] if extra else "?")
    return ".".join(parts) or "<top level>"


def _coerce_strings(config: dict[str, Any], validator) -> None:
    """Turn strings into the numbers or booleans the schema asks for, in place.

    Snakemake parses nested ``--config`` values (``--config figures='{histogram_bins: 40}'``)
    with YAML's BaseLoader, which keeps every scalar a string, also inside lists and
    mappings (``lossy={compressors: [{name: x, rates: [2]}]}`` gives ``rates: ['2']``). Every
    string where the schema asks for another type is read as YAML and replaced when that gives
    a non-string, at any depth (the keys of a ``lossy.compressors`` entry are typed in the
    schema for this); a string that stays a string is left for the validation to report.
    """
    changed = True
    while changed:
        changed = False
        for err in validator.iter_errors(config):
            path = err.absolute_path
            if err.validator != "type" or not isinstance(err.instance, str) or not path:
                continue
            try:
                value = yaml.safe_load(err.instance)
            except yaml.YAMLError:
                continue
            if isinstance(value, str):
                continue
            node = config
            *parents, last = path
            for part in parents:
                node = node[part]
            node[last] = value
            changed = True


def code_lists() -> dict[str, list[Any]]:
    """The lists a schema's ``enum_from`` names, read from the code when asked (so a kind
    registered after import is among them)."""
    return {
        "quantizer_kinds": list(QUANTIZERS),
        "compressor_kinds": list(COMPRESSORS),
        "families": list(FAMILIES),
        "lloyd_fits": list(FIT_TO),
        "sparsifiers": list(SPARSIFIERS),
        "memory_modes": list(MEMORY_MODES),
        "dump_kinds": list(DUMP_KINDS),
        "accountings": list(ACCOUNTINGS),
        "scalings": list(SCALINGS),
        # the fixed grids a name selects (uniform's takes bits and a range)
        "grids": [g for g in GRIDS if g != "uniform"],
    }


def _fill_enums(node: Any, lists: dict[str, list[Any]]) -> None:
    """Replace every ``enum_from: <name>`` of ``node`` (at any depth) by ``enum: <list>``."""
    if isinstance(node, dict):
        if "enum_from" in node:
            node["enum"] = lists[node.pop("enum_from")]
        for sub in node.values():
            _fill_enums(sub, lists)
    elif isinstance(node, list):
        for sub in node:
            _fill_enums(sub, lists)


def _option_property(key: str) -> dict[str, Any]:
    """A kind's option that the schema does not describe: typed by its default (untyped
    when the default is None), described by the kinds that take it."""
    kinds: list[Any] = [c for c in (*QUANTIZERS.values(), *COMPRESSORS.values())
                        if key in getattr(c, "options", {})]  # fmt: skip
    default = kinds[0].options[key]
    types = {bool: "boolean", int: "integer", float: "number", str: "string"}
    out: dict[str, Any] = {"description": f"an option of {', '.join(c.kind for c in kinds)}"}
    if type(default) in types:
        out["type"] = types[type(default)]
    return out


def load_schema(schema_path: str | Path) -> dict[str, Any]:
    """The schema of ``schema_path`` with the code's lists put in (:func:`code_lists`) and
    every registered kind's option a key of a compressor entry."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    _fill_enums(schema, code_lists())
    entry = schema.get("definitions", {}).get("compressor_entry", {}).get("properties")
    if entry is not None:
        for key in option_keys():
            entry.setdefault(key, _option_property(key))
    return schema


def _fill_from(config: dict[str, Any], defaults: dict[str, Any], schema: dict[str, Any]) -> None:
    """Keys of ``defaults`` that ``config`` leaves out, put in (in place, in the schema's
    order), descending into the sections whose keys the schema fixes (``properties``); a
    free mapping (models, rules) or a list is taken whole or not at all, as a schema default
    would be."""
    for key, sub in schema.get("properties", {}).items():
        if key not in defaults:
            continue
        value = defaults[key]
        if isinstance(value, dict) and "properties" in sub:
            node = config.setdefault(key, {})
            if isinstance(node, dict):
                _fill_from(node, value, sub)
        elif key not in config:
            config[key] = copy.deepcopy(value)


def fill_defaults(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """``config`` with the keys it leaves out filled in (in place) from the schema's
    ``defaults_file`` (relative to the schema); the schema's own defaults come with the
    validation (:func:`validate_config`)."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    name = schema.get("defaults_file")
    if name is not None:
        defaults = yaml.safe_load((Path(schema_path).parent / name).read_text()) or {}
        _fill_from(config, defaults, schema)
    return config


def validate_config(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """Validate ``config`` in place (filling defaults: :func:`fill_defaults`, then the
    schema's own) and return it; raise :class:`ConfigError`.

    Strings that the schema wants as numbers or booleans are converted first
    (see :func:`_coerce_strings`).
    """
    fill_defaults(config, schema_path)
    validator = DefaultFillingValidator(load_schema(schema_path))
    _coerce_strings(config, validator)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for err in errors:
            if err.validator == "additionalProperties":
                key = key_path(err).rsplit(".", 1)[-1]
                hint = did_you_mean(key, err.schema.get("properties", {})) or " (misspelled?)"
                lines.append(f"config key '{key_path(err)}': unknown key{hint}")
            else:
                lines.append(f"config key '{key_path(err)}': {err.message}")
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))
    return config
