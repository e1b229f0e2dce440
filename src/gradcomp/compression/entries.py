"""Compressor entries: an entry describes a compressor over several rates and M values;
:func:`expand_entries` expands a list of entries into one checked spec
(:func:`gradcomp.compression.specs.check_spec`) per (name, rate, M), a :class:`Variant`,
and :func:`variant_label` names each variant (``{name}/R{rate}_M{M}``: its run folder and
its label in tables), the one place that label is built.

An entry takes ``name``, ``curve`` (the rate curve its variants join, default the
name), ``quantizer``, ``compressor``, ``class``, ``family``,
``lloyd_fit``, ``sparsifier``, ``topk``, ``error_feedback``, ``memory_mode``, ``memory_decay``,
``min_entries``, ``states`` and the registered kinds' options (:func:`entry_keys`), and the
lists ``rates`` and ``M`` (default ``[0]``; integers, as they name the runs) whose product
gives the variants; the spec keys of ``defaults`` that its kind takes fill what it does not
set. A ``class`` entry's keys other than ``name``, ``class``, ``rates`` and ``M`` are its
``options``; without ``rates`` its variant has rate 0 (path ``R0``) and no ``rate`` keyword.

Bad entries raise :class:`EntryError`, whose problems name the entry's index and key (the
workflow's study turns them into messages naming the config key).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.compression.specs import (
    SOURCE_KEYS,
    CheckedSpec,
    SpecError,
    check_spec,
    is_number,
    option_keys,
    variant_label,
)
from gradcomp.errors import did_you_mean

__all__ = [
    "EntryError",
    "EntryProblem",
    "Variant",
    "entry_keys",
    "entry_kind",
    "expand_entries",
    "variant_label",
]

#: Keys of a compressor entry besides the kinds' options; ``rates`` and ``M`` are lists there.
BASE_ENTRY_KEYS = (
    "name", "curve", "quantizer", "compressor", "class", "family", "lloyd_fit", "rates", "M",
    "sparsifier", "topk", "topk_budget_percent", "error_feedback", "memory_mode", "memory_decay",
    "min_entries", "states",
)  # fmt: skip


def entry_keys() -> tuple[str, ...]:
    """Every key of a compressor entry: :data:`BASE_ENTRY_KEYS`, then the registered kinds'
    options (:func:`~gradcomp.compression.checked_spec.option_keys`)."""
    return (*BASE_ENTRY_KEYS, *option_keys())


_NAME = re.compile(r"^[a-z][a-z0-9]*$")


@dataclass(frozen=True)
class Variant:
    """One federated run's compressor: entry ``name`` at ``rate`` and ``M``, with its spec."""

    name: str
    rate: int
    M: int
    spec: CheckedSpec
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


class EntryProblem(NamedTuple):
    """What is wrong with entry ``index``: its ``key`` ("" for the entry as a whole), or a key
    of ``defaults`` it took over (``inherited``)."""

    index: int  # type: ignore[assignment]  # a field named like tuple.index, which it hides
    key: str
    message: str
    inherited: bool = False


class EntryError(ValueError):
    """Bad compressor entries; ``problems`` lists every one found."""

    def __init__(self, problems: Sequence[EntryProblem]):
        self.problems = list(problems)
        super().__init__("; ".join(f"entry {p.index} {p.key}: {p.message}" for p in problems))


def _kind_defaults(entry: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``defaults`` that the entry's kind takes (all of them for a quantizer kind,
    none for a user's class)."""
    if "class" in entry:
        return {}
    kind: Any = entry.get("compressor")  # None (no such class) for a quantizer entry
    cls = COMPRESSORS.get(kind)
    if cls is None:
        return dict(defaults)
    takes = (*cls.spec_keys, *getattr(cls, "options", {}))
    return {k: v for k, v in defaults.items() if k in takes}


def _applying(entry: Mapping[str, Any], inherited: Mapping[str, Any]) -> dict[str, Any]:
    """The inherited defaults that act on the entry: a section default that the entry's own
    keys or kind make moot (a keep fraction under ``sparsifier: none`` or a bit budget, a
    memory decay without error feedback, a fit or slip for a kind without one) does not
    apply to it, where the same key given by the entry itself is refused
    (:func:`~gradcomp.compression.specs.check_spec`)."""
    out = {k: v for k, v in inherited.items() if k not in entry and v is not None}
    merged = {**out, **{k: v for k, v in entry.items() if v is not None}}
    cls = QUANTIZERS.get(entry.get("quantizer"))  # type: ignore[arg-type]
    drop = set()
    if entry.get("sparsifier") == "none":
        drop |= {"topk", "topk_budget_percent"}
    if merged.get("topk_budget_percent") is not None:
        drop.add("topk")
    if not merged.get("error_feedback", False):
        drop.add("memory_decay")
    if cls is not None and not cls.lloyd_fits:
        drop.add("lloyd_fit")
    if cls is not None and not cls.takes_slip:
        drop.add("slip")
    return {k: v for k, v in out.items() if k not in drop}


def _entry_problems(
    i: int, entry: Any, defaults: Mapping[str, Any]
) -> tuple[list[EntryProblem], list[Variant]]:
    if not isinstance(entry, Mapping):
        return [EntryProblem(i, "", f"must be a mapping, got {entry!r}")], []
    user = "class" in entry  # a user class: the other keys are its options
    keys = entry_keys()
    problems = [
        EntryProblem(
            i, key, f"unknown key{did_you_mean(key, keys)}; allowed keys are {', '.join(keys)}"
        )
        for key in entry
        if key not in keys and not user
    ]
    name = entry.get("name")
    if not (isinstance(name, str) and _NAME.match(name)):
        problems.append(EntryProblem(i, "name", f"{name!r} is not lowercase letters and digits"))
    given = [k for k in SOURCE_KEYS if k in entry]
    if len(given) != 1:
        problems.append(EntryProblem(i, "", f"give exactly one of {', '.join(SOURCE_KEYS)}"))
    kind: Any = entry.get("quantizer")  # None (no such class) for a compressor entry
    cls = QUANTIZERS.get(kind)
    if "quantizer" in entry and cls is None:
        problems.append(EntryProblem(i, "quantizer", f"{kind!r} is not one of {tuple(QUANTIZERS)}"))
    if "compressor" in entry and entry["compressor"] not in COMPRESSORS:
        problems.append(
            EntryProblem(
                i, "compressor",
                f"{entry['compressor']!r} is not one of {tuple(COMPRESSORS)}",
            )
        )  # fmt: skip
    lists = {}
    for key, default in (("rates", [None] if user else None), ("M", [None] if user else [0])):
        value = entry.get(key, default)
        if key == "rates" and cls is not None and cls.fixed_rate is not None:
            if value is not None:
                problems.append(EntryProblem(i, "rates", f"{kind} has a fixed rate, give none"))
            value = [cls.fixed_rate]
        if not (isinstance(value, list) and value and len(set(map(str, value))) == len(value)):
            problems.append(EntryProblem(i, key, "needs a non-empty list of distinct values"))
            value = []
        lists[key] = value
    problems += [
        EntryProblem(i, "M", f"{M!r} is not an integer (M names the run, R{{rate}}_M{{M}})")
        for M in lists["M"]
        if M is not None and not (is_number(M) and math.isfinite(M) and float(M).is_integer())
    ]
    if problems:
        return problems, []
    inherited = _applying(entry, _kind_defaults(entry, defaults))
    fields = {k: v for k, v in entry.items() if k not in ("rates", "M", "curve")}
    curve = entry.get("curve", name)
    if not (isinstance(curve, str) and _NAME.match(curve)):
        return [EntryProblem(i, "curve", f"{curve!r} is not lowercase letters and digits")], []
    if user:
        fields = {"name": name, "class": entry["class"]}
        fields["options"] = {
            k: v for k, v in entry.items() if k not in (*fields, "rates", "M", "curve")
        }
    variants = []
    for rate in lists["rates"]:
        for M in lists["M"]:
            try:
                spec = check_spec({**inherited, **fields, "rate": rate, "M": M})
            except SpecError as err:
                key = {"rate": "rates", "options": "class"}.get(err.key, err.key)
                from_defaults = key not in entry and key in inherited
                message = err.message
                if err.other is not None and err.other not in entry and err.other in inherited:
                    message += f" ({err.other} is the section's default: set it in the entry)"
                return [EntryProblem(i, key, message, from_defaults)], []
            # name: a str, checked above (a problem returns early)
            variants.append(Variant(cast(str, name), int(rate or 0), int(M or 0), spec, curve))
    return [], variants


def expand_entries(
    entries: Sequence[Any], defaults: Mapping[str, Any] | None = None
) -> list[Variant]:
    """Every (name, rate, M) of compressor ``entries``, each with its checked spec, in order;
    ``defaults``: spec keys an entry's kind takes over where the entry does not set them.

    Raises :class:`EntryError` listing every bad entry (its index and key).
    """
    problems, variants, names = [], [], set()
    for i, entry in enumerate(entries):
        found, expanded = _entry_problems(i, entry, defaults or {})
        problems += found
        variants += expanded
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name in names:
            problems.append(EntryProblem(i, "name", f"{name!r} is used twice"))
        names.add(name)
    if problems:
        raise EntryError(problems)
    return variants
