"""Config validation against the workflow's JSON schema, with messages that name the key.

The schema (``workflow/schemas/config.schema.yaml``) gives every key a type,
a range and a description, and defaults that are filled in here. All errors
are collected and reported at once, before any job starts, as
``config key 'lossless.epochs': -1 is less than the minimum of 1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

from gradcomp.errors import ConfigError, did_you_mean

__all__ = ["ConfigError", "DefaultFillingValidator", "key_path", "validate_config"]


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


def validate_config(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """Validate ``config`` in place (filling defaults) and return it; raise :class:`ConfigError`.

    Strings that the schema wants as numbers or booleans are converted first
    (see :func:`_coerce_strings`).
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = DefaultFillingValidator(schema)
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
