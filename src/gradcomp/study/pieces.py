"""The study's typed pieces built from config sections: compressor variants, coder specs,
stream settings, and frozen copies of the rest.

The library (:mod:`gradcomp.compression.entries`, :mod:`gradcomp.coding.registry`,
:mod:`gradcomp.lossless.stream`) takes typed arguments and raises errors about them; here
those errors become messages naming the config key (``config key 'lossy.compressors.2.rates':
...``), and the config's layout (which ``lossy`` keys an entry inherits, which coder keys are
presentation) is known. :func:`freeze` makes a section read-only all the way down;
:func:`plain` turns a frozen value back into lists and dicts, as a workflow param.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from gradcomp.coding.registry import CoderEntryError, CoderSpec, coder_specs
from gradcomp.compression.entries import EntryError, Variant, expand_entries
from gradcomp.compression.specs import CheckedSpec
from gradcomp.errors import ConfigError
from gradcomp.lossless.stream import SAMPLE, StreamSettings

__all__ = [
    "CODER_PRESENTATION",
    "LOSSY_DEFAULTS",
    "compressor_entries",
    "compressor_variants",
    "configured_coders",
    "freeze",
    "l5_coders",
    "plain",
    "stream_settings",
    "streams",
]

#: Keys a ``lossy.compressors`` entry takes over from the ``lossy`` section unless it sets them.
LOSSY_DEFAULTS = (
    "topk", "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip",
    "lloyd_fit",
)  # fmt: skip
#: Keys of a ``lossless.coding.coders`` mapping that only say how L5 draws the coder.
CODER_PRESENTATION = ("color", "figure")
_CODERS = "lossless.coding.coders"


def freeze(value: Any) -> Any:
    """``value`` read-only all the way down: mappings as ``MappingProxyType``, lists as tuples."""
    if isinstance(value, Mapping) and not isinstance(value, CheckedSpec):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """A frozen value as plain lists and dicts (checked specs as their dicts): a param."""
    if isinstance(value, CheckedSpec):
        return value.plain()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def compressor_entries(lossy: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A ``lossy`` section's compressor entries: ``compressors``, then ``more_compressors``
    (entries added to the list without repeating it)."""
    return [*lossy.get("compressors", []), *lossy.get("more_compressors", [])]


def _entry_key(lossy: Mapping[str, Any], index: int) -> str:
    """The config key of entry ``index`` of :func:`compressor_entries`."""
    n = len(lossy.get("compressors", []))
    return f"lossy.compressors.{index}" if index < n else f"lossy.more_compressors.{index - n}"


def compressor_variants(lossy: Mapping[str, Any]) -> list[Variant]:
    """Every (name, rate, M) of a ``lossy`` section's compressor entries
    (:func:`compressor_entries`), each with its checked spec; :class:`ConfigError` naming
    the key of every bad entry."""
    defaults = {k: lossy[k] for k in LOSSY_DEFAULTS if k in lossy}
    try:
        return expand_entries(compressor_entries(lossy), defaults)
    except EntryError as err:
        lines = []
        for p in err.problems:
            where = _entry_key(lossy, p.index) + (f".{p.key}" if p.key else "")
            lines.append(f"config key '{f'lossy.{p.key}' if p.inherited else where}': {p.message}")
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines)) from None


def configured_coders(coding: Mapping[str, Any]) -> tuple[CoderSpec, ...]:
    """The checked coders of a ``lossless.coding`` section, in its order (``coders: null``:
    every built-in); :class:`ConfigError` naming ``lossless.coding.coders.<i>``."""
    entries = coding.get("coders")
    if entries is not None:
        entries = [
            {k: v for k, v in e.items() if k not in CODER_PRESENTATION}
            if isinstance(e, Mapping)
            else e
            for e in entries
        ]
    try:
        return tuple(coder_specs(entries, coding.get("families", ("gennorm", "norm", "laplace"))))
    except CoderEntryError as err:
        where = _CODERS if err.index is None else f"{_CODERS}.{err.index}"
        where += f".{err.key}" if err.key else ""
        raise ConfigError(f"invalid config:\n  config key '{where}': {err.message}") from None


def l5_coders(
    coding: Mapping[str, Any], coders: Sequence[CoderSpec]
) -> tuple[tuple[str, str], ...]:
    """(name, colour) of the coders L5 draws, in order. ``coders: null`` (every built-in):
    :data:`gradcomp.palette.L5_CODERS`; a list: every entry it names but a user's
    with ``figure: false``. Colours from :func:`gradcomp.palette.coder_colors`, a
    user's ``color`` where given; no coder is dropped for want of one."""
    from gradcomp.palette import L5_CODERS, coder_colors

    entries = coding.get("coders")
    user = {e["name"]: e for e in entries or () if isinstance(e, Mapping)}
    names = [c.name for c in coders]
    if entries is None:
        names = [n for n in names if n in L5_CODERS]
    names = [n for n in names if user.get(n, {}).get("figure", True)]
    given = {n: str(user[n]["color"]) for n in names if user.get(n, {}).get("color")}
    return tuple(coder_colors(names, given).items())


def streams(lossless: Mapping[str, Any], model: str) -> bool:
    """Whether ``model``'s training job codes every tensor itself (``lossless.coding.stream``;
    ``auto``: when ``lossless.dump_tensors`` restricts the model's dumps)."""
    mode = lossless["coding"].get("stream", "auto")
    if mode != "auto":
        return bool(mode)
    patterns = (lossless.get("dump_tensors") or {}).get(model)
    return patterns is not None and "*" not in patterns


def stream_settings(lossless: Mapping[str, Any], coders: Sequence[CoderSpec]) -> StreamSettings:
    """The streamed coding of a ``lossless`` section (its ``coding`` and ``fit``), with the
    checked ``coders`` (None where ``coding.coders`` is null: every built-in)."""
    coding, fit = lossless["coding"], lossless["fit"]
    sample = {**SAMPLE, **(coding.get("sample") or {})}
    return StreamSettings(
        families=coding["families"], grid=coding["grid"], kinds=coding["kinds"],
        accountings=coding["accountings"], scalings=coding["scalings"],
        general_purpose=coding["general_purpose"],
        coders=None if coding.get("coders") is None else tuple(coders),
        verify=coding["verify"], floc=fit["floc"], zero_atom=fit["zero_atom"],
        skip_below=fit["skip_below"], sample_tensors=sample["tensors"],
        sample_epochs=sample["epochs"],
    )  # fmt: skip
