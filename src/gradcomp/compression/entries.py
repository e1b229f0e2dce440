"""Config entries: an item of ``lossy.compressors`` describes a compressor over several rates
and M values; :func:`compressor_variants` expands the entries into one checked spec
(:func:`gradcomp.compression.specs.check_spec`) per (name, rate, M), a :class:`Variant`,
and :func:`variant_label` names each variant (``{name}/R{rate}_M{M}``: its run folder and
its label in tables), the one place that label is built.

A config entry takes ``name``, ``curve`` (the rate curve its variants join, default the
name), ``quantizer``, ``compressor``, ``class``, ``family``,
``lloyd_fit``, ``sparsifier``, ``topk``, ``error_feedback``, ``memory_mode``, ``memory_decay``,
``min_entries``, ``states`` and the option keys of :mod:`gradcomp.compression.specs`, and the
lists ``rates`` and ``M`` (default ``[0]``; integers, as they name the runs) whose product
gives the variants; the other spec keys that its kind takes come from the ``lossy`` section.
A ``class`` entry's keys other than ``name``, ``class``, ``rates`` and ``M`` are its
``options``; without ``rates`` its variant has rate 0 (path
``R0``) and no ``rate`` keyword.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gradcomp.compression.registry import QUANTIZERS, UPDATE_COMPRESSORS
from gradcomp.compression.specs import (
    OPTION_KEYS,
    SOURCE_KEYS,
    VARIANT_LABEL,
    SpecError,
    check_spec,
    is_number,
    variant_label,
)
from gradcomp.errors import ConfigError

__all__ = [
    "ENTRY_KEYS",
    "LOSSY_DEFAULTS",
    "VARIANT_LABEL",
    "Variant",
    "compressor_variants",
    "entry_kind",
    "variant_label",
]

#: Keys of a ``lossy.compressors`` entry; ``rates`` and ``M`` are lists there.
ENTRY_KEYS = (
    "name", "curve", "quantizer", "compressor", "class", "family", "lloyd_fit", "rates", "M",
    "sparsifier", "topk", "topk_budget_percent", "error_feedback", "memory_mode", "memory_decay",
    "min_entries", "states", *OPTION_KEYS,
)  # fmt: skip
#: Keys an entry takes over from the ``lossy`` section unless it sets them itself.
LOSSY_DEFAULTS = (
    "topk", "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip",
    "lloyd_fit",
)  # fmt: skip
_NAME = re.compile(r"^[a-z][a-z0-9]*$")


@dataclass(frozen=True)
class Variant:
    """One federated run's compressor: entry ``name`` at ``rate`` and ``M``, with its spec."""

    name: str
    rate: int
    M: int
    spec: dict[str, Any]
    #: the rate curve the variant joins (the entry's ``curve``, default its name)
    curve: str = ""

    def __post_init__(self) -> None:
        if not self.curve:
            object.__setattr__(self, "curve", self.name)

    @property
    def label(self) -> str:
        """``{name}/R{rate}_M{M}``: the run's folder, and the variant's label in tables."""
        return variant_label(self.name, self.rate, self.M)


def entry_kind(entry: Mapping[str, Any]) -> str:
    """What builds a config entry's compressor: its quantizer or compressor kind, or "class"."""
    if "class" in entry:
        return "class"
    return entry.get("quantizer") or entry.get("compressor") or ""


def _kind_keys(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``lossy`` section keys that the entry's kind takes over (see LOSSY_DEFAULTS)."""
    if "class" in entry:
        return ()
    cls = UPDATE_COMPRESSORS.get(entry.get("compressor"))
    if cls is None:
        return LOSSY_DEFAULTS
    takes = (*cls.spec_keys, *getattr(cls, "options", {}))
    return tuple(k for k in LOSSY_DEFAULTS if k in takes)


def _entry_errors(i: int, entry: Any, lossy: Mapping[str, Any]) -> tuple[list[str], list[Variant]]:
    where = f"lossy.compressors.{i}"
    if not isinstance(entry, Mapping):
        return [f"config key '{where}': must be a mapping, got {entry!r}"], []
    user = "class" in entry  # a user class: the other keys are its options
    errors = [
        f"config key '{where}.{key}': unknown key; allowed keys are {', '.join(ENTRY_KEYS)}"
        for key in entry
        if key not in ENTRY_KEYS and not user
    ]
    name = entry.get("name")
    if not (isinstance(name, str) and _NAME.match(name)):
        errors.append(f"config key '{where}.name': {name!r} is not lowercase letters and digits")
    given = [k for k in SOURCE_KEYS if k in entry]
    if len(given) != 1:
        errors.append(f"config key '{where}': give exactly one of {', '.join(SOURCE_KEYS)}")
    kind = entry.get("quantizer")
    cls = QUANTIZERS.get(kind)
    if "quantizer" in entry and cls is None:
        errors.append(f"config key '{where}.quantizer': {kind!r} is not one of {tuple(QUANTIZERS)}")
    if "compressor" in entry and entry["compressor"] not in UPDATE_COMPRESSORS:
        errors.append(
            f"config key '{where}.compressor': {entry['compressor']!r} is not one of "
            f"{tuple(UPDATE_COMPRESSORS)}"
        )
    lists = {}
    for key, default in (("rates", [None] if user else None), ("M", [None] if user else [0])):
        value = entry.get(key, default)
        if key == "rates" and cls is not None and cls.fixed_rate is not None:
            if value is not None:
                errors.append(f"config key '{where}.rates': {kind} has a fixed rate, give none")
            value = [cls.fixed_rate]
        if not (isinstance(value, list) and value and len(set(map(str, value))) == len(value)):
            errors.append(f"config key '{where}.{key}': needs a non-empty list of distinct values")
            value = []
        lists[key] = value
    errors += [
        f"config key '{where}.M': {M!r} is not an integer (M names the run, R{{rate}}_M{{M}})"
        for M in lists["M"]
        if M is not None and not (is_number(M) and math.isfinite(M) and float(M).is_integer())
    ]
    if errors:
        return errors, []
    defaults = {k: lossy.get(k) for k in _kind_keys(entry)}
    fields = {k: v for k, v in entry.items() if k not in ("rates", "M", "curve")}
    curve = entry.get("curve", name)
    if not (isinstance(curve, str) and _NAME.match(curve)):
        return [f"config key '{where}.curve': {curve!r} is not lowercase letters and digits"], []
    if user:
        fields = {"name": name, "class": entry["class"]}
        fields["options"] = {
            k: v for k, v in entry.items() if k not in (*fields, "rates", "M", "curve")
        }
    variants = []
    for rate in lists["rates"]:
        for M in lists["M"]:
            spec = {**defaults, **fields, "rate": rate, "M": M}
            try:
                check_spec(spec)
            except SpecError as err:
                key = {"rate": "rates", "options": "class"}.get(err.key, err.key)
                if key not in entry and key in LOSSY_DEFAULTS:
                    key = f"lossy.{key}"
                else:
                    key = f"{where}.{key}"
                return [f"config key '{key}': {err.message}"], []
            variants.append(Variant(name, int(rate or 0), int(M or 0), spec, curve))
    return [], variants


def compressor_variants(lossy: Mapping[str, Any]) -> list[Variant]:
    """Every (name, rate, M) of ``lossy["compressors"]``, each with its checked spec.

    Raises :class:`gradcomp.errors.ConfigError` listing every bad entry, with the config key
    at fault (e.g. ``config key 'lossy.compressors.2.rates': ...``).
    """
    errors, variants, names = [], [], set()
    for i, entry in enumerate(lossy.get("compressors", [])):
        errs, found = _entry_errors(i, entry, lossy)
        errors += errs
        variants += found
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name in names:
            errors.append(f"config key 'lossy.compressors.{i}.name': {name!r} is used twice")
        names.add(name)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    return variants
