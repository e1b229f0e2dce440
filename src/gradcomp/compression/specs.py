"""Compressor specs: the one place where a compressor's settings are checked and built.

A *spec* is a plain dict describing one compressor at one rate and M (what one federated run
uses); :func:`build_compressor` turns it into an :class:`UpdateCompressor`. A *config entry*
(an item of ``lossy.compressors``) describes a compressor over several rates and M values;
:func:`compressor_variants` expands the entries into one checked spec per (name, rate, M).
Both the workflow (before any job starts, with config key paths in the messages) and the
library (on every build) go through :func:`check_spec`.

Spec keys (``None`` means absent):

- ``quantizer`` (required): a kind of :data:`gradcomp.compression.value_quantizers.QUANTIZERS`.
- ``family``: the fitted law of a ``lloyd`` quantizer (required there, refused elsewhere).
- ``lloyd_fit``: ``"update"`` (default: fit the tensor's whole update, design for its law
  beyond the top-K threshold) or ``"survivors"`` (the paper's code: fit the kept values as
  if untruncated); ``lloyd`` only.
- ``rate``: bits per sent value, an integer in 1..16 for kinds without a fixed rate; kinds
  with one (none: 32, float16: 16) accept only that value.
- ``M``: weight exponent >= 0 of the |g|^M distortion (kinds that take M; others only 0).
- ``sparsifier``: ``"topk"`` (global top-K) or ``"none"`` (dense, no positions); default
  ``"topk"`` when a ``topk`` fraction is given, else ``"none"``.
- ``topk``: keep fraction in (0, 1] of top-K (paper Y: 0.452, the ``lossy.topk`` default).
- ``topk_budget_percent``: P > 0; keep P / (100 rate) instead (capped at 1).
- ``min_entries``: integer >= 0, default 1000: smaller tensors are sent raw at 32 bits.
- ``error_feedback`` (bool, default False), ``memory_decay`` (in [0, 1], default 1).
- ``slip`` (bool, default False): the authors' uniform 2^R + 1 levels and one-iteration Lloyd.
- ``seed`` (int, default 0): the Gaussian channel's noise.
- ``huffman`` (bool, default True): entropy-code level indices with a real Huffman bitstream.
- ``name``: a label (lowercase letters and digits in a config entry).

A config entry takes ``name``, ``quantizer``, ``family``, ``lloyd_fit``, ``sparsifier``,
``topk``, ``error_feedback`` as above, and the lists ``rates`` and ``M`` (default ``[0]``) whose
product gives the variants; the other spec keys come from the ``lossy`` section.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradcomp.compression.lloyd_quantizer import FIT_TO, LLOYD_FAMILIES
from gradcomp.compression.memory import ResidualMemory
from gradcomp.compression.registry import QUANTIZERS
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.update_compression import Quantize, UpdateCompressor
from gradcomp.compression.value_quantizers import ValueQuantizer

__all__ = [
    "SPARSIFIERS",
    "SPEC_KEYS",
    "SpecError",
    "Variant",
    "build_compressor",
    "check_spec",
    "compressor_variants",
    "make_quantizer",
]

SPARSIFIERS = ("topk", "none")
SPEC_KEYS = (
    "name", "quantizer", "family", "lloyd_fit", "rate", "M", "sparsifier", "topk",
    "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip", "seed",
    "huffman",
)  # fmt: skip
#: Keys of a ``lossy.compressors`` entry; ``rates`` and ``M`` are lists there.
ENTRY_KEYS = (
    "name", "quantizer", "family", "lloyd_fit", "rates", "M", "sparsifier", "topk",
    "error_feedback",
)  # fmt: skip
#: Keys an entry takes over from the ``lossy`` section unless it sets them itself.
LOSSY_DEFAULTS = (
    "topk", "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip",
    "lloyd_fit",
)  # fmt: skip
_NAME = re.compile(r"^[a-z][a-z0-9]*$")


class SpecError(ValueError):
    """A compressor spec is invalid; ``key`` names the offending key."""

    def __init__(self, key: str, message: str):
        self.key, self.message = key, message
        super().__init__(f"compressor spec key {key!r}: {message}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def check_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec with defaults filled in and the top-K fraction resolved; raises :class:`SpecError`.

    The result has every key of :data:`SPEC_KEYS`; ``topk`` is the keep fraction actually
    used (``topk_budget_percent`` applied) or None when ``sparsifier`` is ``"none"``.
    """
    if not isinstance(spec, Mapping):
        raise TypeError("compressor spec must be a mapping")
    for key in spec:
        if key not in SPEC_KEYS:
            raise SpecError(key, f"unknown key; allowed keys are {', '.join(SPEC_KEYS)}")
    s = {k: v for k, v in spec.items() if v is not None}

    kind = s.get("quantizer")
    if kind not in QUANTIZERS:
        raise SpecError("quantizer", f"{kind!r} is not one of {tuple(QUANTIZERS)}")
    cls = QUANTIZERS[kind]

    family = s.get("family")
    if cls.takes_family:
        if family not in LLOYD_FAMILIES:
            raise SpecError(
                "family", f"{family!r} is not one of {LLOYD_FAMILIES} ({kind} needs one)"
            )
    elif family is not None:
        raise SpecError("family", f"only lloyd quantizers take a family, not {kind}")
    lloyd_fit = s.get("lloyd_fit", "update")
    if lloyd_fit not in FIT_TO:
        raise SpecError("lloyd_fit", f"{lloyd_fit!r} is not one of {FIT_TO}")

    rate = s.get("rate")
    if cls.fixed_rate is not None:
        if rate is not None and rate != cls.fixed_rate:
            raise SpecError("rate", f"{kind} sends {cls.fixed_rate} bits per entry, not {rate}")
        rate = cls.fixed_rate
    elif not (_is_int(rate) and 1 <= rate <= 16):
        raise SpecError("rate", f"{kind} needs an integer rate in 1..16 bits, got {rate!r}")

    M = s.get("M", 0)
    if not (_is_number(M) and M >= 0 and math.isfinite(M)):
        raise SpecError("M", f"must be a number >= 0, got {M!r}")
    if not cls.takes_M and M != 0:
        raise SpecError("M", f"only lloyd quantizers take M, not {kind}")

    for key in ("error_feedback", "slip", "huffman"):
        if key in s and not isinstance(s[key], bool):
            raise SpecError(key, f"must be true or false, got {s[key]!r}")

    sparsifier = s.get("sparsifier", "topk" if {"topk", "topk_budget_percent"} & set(s) else "none")
    if sparsifier not in SPARSIFIERS:
        raise SpecError("sparsifier", f"{sparsifier!r} is not one of {SPARSIFIERS}")
    topk = s.get("topk", 1.0)
    if not (_is_number(topk) and 0 < topk <= 1):
        raise SpecError("topk", f"must be a fraction in (0, 1], got {topk!r}")
    budget = s.get("topk_budget_percent")
    if budget is not None:
        if not (_is_number(budget) and budget > 0):
            raise SpecError("topk_budget_percent", f"must be a number > 0, got {budget!r}")
        topk = min(1.0, budget / (100.0 * rate))

    min_entries = s.get("min_entries", 1000)
    if not (_is_int(min_entries) and min_entries >= 0):
        raise SpecError("min_entries", f"must be an integer >= 0, got {min_entries!r}")
    decay = s.get("memory_decay", 1.0)
    if not (_is_number(decay) and 0 <= decay <= 1):
        raise SpecError("memory_decay", f"must be in [0, 1], got {decay!r}")
    seed = s.get("seed", 0)
    if not _is_int(seed):
        raise SpecError("seed", f"must be an integer, got {seed!r}")

    return {
        "name": str(s.get("name", kind)),
        "quantizer": kind,
        "family": family,
        "lloyd_fit": lloyd_fit,
        "rate": int(rate),
        "M": float(M),
        "sparsifier": sparsifier,
        "topk": float(topk) if sparsifier == "topk" else None,
        "topk_budget_percent": budget,
        "min_entries": int(min_entries),
        "error_feedback": s.get("error_feedback", False),
        "memory_decay": float(decay),
        "slip": s.get("slip", False),
        "seed": int(seed),
        "huffman": s.get("huffman", True),
    }


def make_quantizer(
    spec: Mapping[str, Any], *, fit_fn: Callable[..., Any] | None = None
) -> ValueQuantizer:
    """The value quantizer of a checked spec (see :func:`check_spec`), from the registry."""
    return QUANTIZERS[spec["quantizer"]].from_spec(spec, fit_fn=fit_fn)


def build_compressor(
    spec: Mapping[str, Any],
    *,
    fit_fn: Callable[..., Any] | None = None,
    entropy_coder: Callable[[np.ndarray], Any] | None = None,
) -> UpdateCompressor:
    """An :class:`UpdateCompressor` from a spec (see the module doc); raises :class:`SpecError`."""
    s = check_spec(spec)
    return UpdateCompressor(
        Quantize(make_quantizer(s, fit_fn=fit_fn), s["min_entries"]),
        topk=TopK(s["topk"]) if s["topk"] is not None else None,
        memory=ResidualMemory(s["memory_decay"]) if s["error_feedback"] else None,
        huffman=s["huffman"],
        entropy_coder=entropy_coder,
        name=s["name"],
    )


@dataclass(frozen=True)
class Variant:
    """One federated run's compressor: entry ``name`` at ``rate`` and ``M``, with its spec."""

    name: str
    rate: int
    M: int
    spec: dict[str, Any]


def _entry_errors(i: int, entry: Any, lossy: Mapping[str, Any]) -> tuple[list[str], list[Variant]]:
    where = f"lossy.compressors.{i}"
    if not isinstance(entry, Mapping):
        return [f"config key '{where}': must be a mapping, got {entry!r}"], []
    errors = [
        f"config key '{where}.{key}': unknown key; allowed keys are {', '.join(ENTRY_KEYS)}"
        for key in entry
        if key not in ENTRY_KEYS
    ]
    name = entry.get("name")
    if not (isinstance(name, str) and _NAME.match(name)):
        errors.append(f"config key '{where}.name': {name!r} is not lowercase letters and digits")
    kind = entry.get("quantizer")
    cls = QUANTIZERS.get(kind)
    if cls is None:
        errors.append(f"config key '{where}.quantizer': {kind!r} is not one of {tuple(QUANTIZERS)}")
    lists = {}
    for key, default in (("rates", None), ("M", [0])):
        value = entry.get(key, default)
        if key == "rates" and cls is not None and cls.fixed_rate is not None:
            if value is not None:
                errors.append(f"config key '{where}.rates': {kind} has a fixed rate, give none")
            value = [cls.fixed_rate]
        if not (isinstance(value, list) and value and len(set(map(str, value))) == len(value)):
            errors.append(f"config key '{where}.{key}': needs a non-empty list of distinct values")
            value = []
        lists[key] = value
    if errors:
        return errors, []
    variants = []
    for rate in lists["rates"]:
        for M in lists["M"]:
            spec = {k: lossy.get(k) for k in LOSSY_DEFAULTS}
            spec.update({k: v for k, v in entry.items() if k not in ("rates", "M")})
            spec.update(rate=rate, M=M)
            try:
                check_spec(spec)
            except SpecError as err:
                key = {"rate": "rates"}.get(err.key, err.key)
                if key not in entry and key in LOSSY_DEFAULTS:
                    key = f"lossy.{key}"
                else:
                    key = f"{where}.{key}"
                return [f"config key '{key}': {err.message}"], []
            variants.append(Variant(name, int(rate), int(M), spec))
    return [], variants


def compressor_variants(lossy: Mapping[str, Any]) -> list[Variant]:
    """Every (name, rate, M) of ``lossy["compressors"]``, each with its checked spec.

    Raises :class:`gradcomp.config.ConfigError` listing every bad entry, with the config key
    at fault (e.g. ``config key 'lossy.compressors.2.rates': ...``).
    """
    from gradcomp.config import ConfigError

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
