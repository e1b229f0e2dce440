"""The checks of a compressor spec's keys, one group of keys each, for
:func:`~gradcomp.compression.specs.check_spec`: each returns the checked value (the default
filled in) or raises :class:`~gradcomp.compression.checked_spec.SpecError` naming the key.
Which kinds take a key is read from the kinds' classes (``takes_M``, ``takes_family``,
``states_allowed``, ``lloyd_fits``, ``takes_slip``, ``options``), so are the messages that
name them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gradcomp.compression.checked_spec import (
    DEFAULT_TOPK,
    MAX_M,
    MAX_SEED,
    SPARSIFIERS,
    SpecError,
    is_int,
    is_number,
    option_keys,
    spec_keys,
)
from gradcomp.compression.lloyd_quantizer import FIT_TO, LLOYD_FAMILIES
from gradcomp.compression.memory import MEMORY_MODES
from gradcomp.compression.registry import QUANTIZERS

__all__ = [
    "Given",
    "check_common",
    "check_family",
    "check_lloyd_fit",
    "check_memory_mode",
    "check_min_entries",
    "check_options",
    "check_M",
    "check_rate",
    "check_sparsifier",
    "check_states",
    "check_together",
    "check_variant_flags",
    "full_spec",
    "kinds_with",
    "moot",
]


class Given(dict):
    """A spec's keys given (not None); ``full``: it has every key (a checked spec's plain
    dict, possibly edited), so it may restate what check_spec fills in."""

    full = False


def kinds_with(attribute: str) -> str:
    """The quantizer kinds whose class has ``attribute`` set (a key only they take)."""
    return ", ".join(k for k, c in QUANTIZERS.items() if getattr(c, attribute, None))


def moot(s: Mapping[str, Any], key: str, filled: Any, other: str, why: str) -> None:
    """SpecError naming ``key`` and ``other`` when ``key`` is given but ``other`` makes it
    moot (``why``); a spec with every key (a checked spec's plain dict) may restate the
    value check_spec fills in there (``filled``)."""
    if key not in s or (getattr(s, "full", False) and s[key] == filled):
        return
    raise SpecError(key, f"{why}, so {key} {s[key]!r} would be dropped: give one of {key} "
                    f"and {other}", other)  # fmt: skip


def check_family(s: Mapping[str, Any], kind: str, cls: type[Any]) -> str | None:
    """The fitted law of a kind that takes one (required there, refused elsewhere)."""
    family = s.get("family")
    if cls.takes_family:
        if family not in LLOYD_FAMILIES:
            raise SpecError(
                "family", f"{family!r} is not one of {LLOYD_FAMILIES} ({kind} needs one)"
            )
    elif family is not None:
        raise SpecError(
            "family", f"only {kinds_with('takes_family')} quantizers take a family, not {kind}"
        )
    return family


def check_lloyd_fit(s: Mapping[str, Any], kind: str, cls: type[Any]) -> str:
    """What a law is fitted to: one of the kind's ``lloyd_fits`` (moot for a kind with none)."""
    lloyd_fit = s.get("lloyd_fit", "update")
    if lloyd_fit not in FIT_TO:
        raise SpecError("lloyd_fit", f"{lloyd_fit!r} is not one of {FIT_TO}")
    fits = getattr(cls, "lloyd_fits", ())
    if not fits:
        why = f"quantizer {kind!r} fits no law (lloyd_fit is for {kinds_with('lloyd_fits')})"
        moot(s, "lloyd_fit", "update", "quantizer", why)
    elif lloyd_fit not in fits:
        raise SpecError("lloyd_fit", f"quantizer {kind!r} fits its law to {' or '.join(fits)} "
                        f"only, not {lloyd_fit!r}", "quantizer")  # fmt: skip
    return lloyd_fit


def check_variant_flags(s: Mapping[str, Any], kind: str, cls: type[Any]) -> None:
    """``slip`` and ``huffman: false``, refused where the kind makes them moot."""
    if s.get("slip") and not getattr(cls, "takes_slip", False):
        why = f"quantizer {kind!r} has no slip variant (slip is for {kinds_with('takes_slip')})"
        moot(s, "slip", False, "quantizer", why)
    if not cls.huffman_acts and s.get("huffman") is False:
        moot(s, "huffman", True, "quantizer",
             f"quantizer {kind!r} sends no index that a Huffman code would shorten")  # fmt: skip


def check_rate(s: Mapping[str, Any], kind: str, cls: type[Any]) -> int:
    """Bits per sent value: the kind's fixed rate, or an integer in its range (default 1..16)."""
    rate = s.get("rate")
    if cls.fixed_rate is not None:
        if rate is not None and rate != cls.fixed_rate:
            raise SpecError("rate", f"{kind} sends {cls.fixed_rate} bits per entry, not {rate}")
        return int(cls.fixed_rate)
    low, high = getattr(cls, "min_rate", 1), getattr(cls, "max_rate", 16)
    if not (is_int(rate) and low <= rate <= high):
        raise SpecError("rate", f"{kind} needs an integer rate in {low}..{high} bits, got {rate!r}")
    return int(rate)


def check_states(s: Mapping[str, Any], kind: str, cls: type[Any]) -> int | None:
    """Trellis states of a kind with ``states_allowed`` (default 8), refused elsewhere."""
    states = s.get("states")
    allowed_states = getattr(cls, "states_allowed", None)
    if allowed_states is not None:
        states = 8 if states is None else states
        if not (is_int(states) and states in allowed_states):
            raise SpecError("states", f"{kind} takes states in {allowed_states}, got {states!r}")
    elif states is not None:
        raise SpecError(
            "states", f"only {kinds_with('states_allowed')} quantizers take states, not {kind}"
        )
    return None if states is None else int(states)


def check_memory_mode(s: Mapping[str, Any], kind: str, cls: type[Any]) -> str:
    """The error-feedback memory: a mode of :data:`MEMORY_MODES` (others need a memory)."""
    memory_mode = s.get("memory_mode", "residual")
    if memory_mode not in MEMORY_MODES:
        raise SpecError("memory_mode", f"{memory_mode!r} is not one of {MEMORY_MODES}")
    if memory_mode != "residual" and not s.get("error_feedback", False):
        raise SpecError("memory_mode", f"{memory_mode} is a memory: it needs error_feedback true")
    if memory_mode == "m22_slip" and not cls.nearest_labels:
        raise SpecError(
            "memory_mode", f"m22_slip relabels values by their nearest level, which {kind} "
            "does not send (its indices are not nearest-level labels)"
        )  # fmt: skip
    return memory_mode


def check_M(M: float, kind: str, cls: type[Any]) -> None:
    """M (checked a number by :func:`check_common`) for the kind: 0 unless it takes M, and
    at most :data:`MAX_M`."""
    if not cls.takes_M and M != 0:
        raise SpecError("M", f"only {kinds_with('takes_M')} quantizers take M, not {kind}")
    if M > MAX_M:
        raise SpecError("M", f"must be at most {MAX_M}, got {M!r}: the weights "
                        f"|g / max|g||^M of entries down to 2^-16 of the largest stay normal "
                        f"float64 numbers only up to M = {MAX_M}")  # fmt: skip


def check_sparsifier(s: Mapping[str, Any], rate: int) -> tuple[str, float, Any]:
    """The sparsifier, its keep fraction (``topk_budget_percent`` applied) and the budget."""
    sparsifier = s.get("sparsifier", "topk" if {"topk", "topk_budget_percent"} & set(s) else "none")
    if sparsifier not in SPARSIFIERS:
        raise SpecError("sparsifier", f"{sparsifier!r} is not one of {SPARSIFIERS}")
    topk = s.get("topk", DEFAULT_TOPK)
    if not (is_number(topk) and 0 < topk <= 1):
        raise SpecError("topk", f"must be a fraction in (0, 1], got {topk!r}")
    budget = s.get("topk_budget_percent")
    if budget is not None:
        if not (is_number(budget) and budget > 0):
            raise SpecError("topk_budget_percent", f"must be a number > 0, got {budget!r}")
        topk = min(1.0, budget / (100.0 * rate))
        moot(s, "topk", topk, "topk_budget_percent", f"topk_budget_percent {budget!r} sets "
             f"the keep fraction (P / (100 rate) = {topk:g} at rate {rate})")  # fmt: skip
    if sparsifier == "none":
        for key in ("topk", "topk_budget_percent"):
            moot(s, key, None, "sparsifier", "sparsifier 'none' sends every entry")
    return sparsifier, topk, budget


def check_min_entries(s: Mapping[str, Any]) -> int:
    """Tensors smaller than this are sent raw (default 1000)."""
    min_entries = s.get("min_entries", 1000)
    if not (is_int(min_entries) and min_entries >= 0):
        raise SpecError("min_entries", f"must be an integer >= 0, got {min_entries!r}")
    return int(min_entries)


def check_options(s: Mapping[str, Any], kind: str, cls: type[Any]) -> dict[str, Any]:
    """The kind's own options (class attribute ``options``: key -> default), checked by the
    class's ``check_option``; another kind's option keys are refused, and so are its options
    that act on the error-feedback memory (``feedback_options``) without ``error_feedback``."""
    takes = getattr(cls, "options", {})
    for key in option_keys():
        if key in s and key not in takes:
            raise SpecError(key, f"{kind} does not take {key}")
    if not s.get("error_feedback", False):
        for key in getattr(cls, "feedback_options", ()):
            why = f"{key} acts on the error-feedback memory, and error_feedback is not true"
            moot(s, key, takes[key], "error_feedback", why)
    out = {}
    for key, default in takes.items():
        value = s.get(key, default)
        problem = cls.check_option(key, value)
        if problem is not None:
            raise SpecError(key, problem)
        out[key] = value
    return out


def check_common(s: Mapping[str, Any], default_decay: float = 1.0) -> dict[str, Any]:
    """The checked keys every kind may take: M, the flags, memory decay and seed."""
    M = s.get("M", 0)
    if not (is_number(M) and M >= 0 and math.isfinite(M)):
        raise SpecError("M", f"must be a number >= 0, got {M!r}")
    for key in ("error_feedback", "slip", "huffman"):
        if key in s and not isinstance(s[key], bool):
            raise SpecError(key, f"must be true or false, got {s[key]!r}")
    decay = s.get("memory_decay", default_decay)
    if not (is_number(decay) and 0 <= decay <= 1):
        raise SpecError("memory_decay", f"must be in [0, 1], got {decay!r}")
    if not s.get("error_feedback", False):
        moot(s, "memory_decay", default_decay, "error_feedback",
             "without error_feedback true there is no memory to decay")  # fmt: skip
    seed = s.get("seed", 0)
    if not (is_int(seed) and 0 <= seed <= MAX_SEED):
        raise SpecError("seed", f"must be an integer in 0..{MAX_SEED} (2^43 - 1), got {seed!r}")
    return {
        "M": float(M),
        "error_feedback": s.get("error_feedback", False),
        "memory_decay": float(decay),
        "slip": s.get("slip", False),
        "seed": int(seed),
        "huffman": s.get("huffman", True),
    }


def check_together(cls: type[Any], spec: Mapping[str, Any]) -> None:
    """The kind's check of its keys together (class method ``check_together(spec) -> (key,
    why) | None``), if it has one."""
    together = getattr(cls, "check_together", None)
    problem = together(spec) if together is not None else None
    if problem is not None:
        raise SpecError(*problem)


def full_spec(common: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """Every key of :func:`~gradcomp.compression.checked_spec.spec_keys`: ``values``, then
    ``common``, else None."""
    return {k: values.get(k, common.get(k)) for k in spec_keys()}
