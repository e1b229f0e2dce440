"""The coder registry: name -> coder (or bound) class and options, and coder entries (built-in
names, or a user's class) turned into :class:`CoderSpec` by :func:`coder_specs`.

An entry is a built-in name (``"ans_context"``, ``"huffman_gennorm"``, ...) or a mapping
``{name: ..., class: "package.module:Class", options: {...}}``. A
user's class subclasses :class:`~gradcomp.coding.base.Coder` in spirit: it has ``encode(x)
-> Bitstream`` and ``decode(stream, grid, fits) -> symbols`` (a coder), or ``bits(x)`` (a
bound); it is built as ``Class(**options)``. Adding a built-in coder: one module and one line
in :func:`builtin_specs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gradcomp.coding.base import Bound, Coder
from gradcomp.coding.bounds import (
    ChannelEntropy,
    ContextEntropy,
    CrossEntropy,
    Entropy,
    KTContextBits,
)
from gradcomp.coding.byte_coders import BytesCoder, Fp8Coder, Lz78Size, ShuffledLzmaSize
from gradcomp.coding.cm import CMCoder
from gradcomp.coding.cm_fast import CMFastCoder
from gradcomp.coding.context import ContextCoder
from gradcomp.coding.general_purpose import METHODS
from gradcomp.coding.gennorm_channel import GenNormChannelCoder
from gradcomp.coding.iid_coders import AnsModelCoder, HuffmanEmpiricalCoder, HuffmanModelCoder
from gradcomp.coding.zpaq import ZpaqSize
from gradcomp.plugins import check_constructor, import_class

__all__ = ["CoderEntryError", "CoderSpec", "builtin_specs", "coder_specs"]


class CoderEntryError(ValueError):
    """A bad coder entry: ``index`` in the list (None: the list as a whole), ``key`` within
    the entry ("" for the entry itself), and what is wrong."""

    def __init__(self, index: int | None, key: str, message: str):
        self.index, self.key, self.message = index, key, message
        super().__init__(f"coder entry {index} {key}: {message}" if index is not None else message)


@dataclass(frozen=True)
class CoderSpec:
    """How to build one coder: ``cls(**options)``, named ``name``."""

    name: str
    cls: type
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def __reduce__(self):
        return (CoderSpec, (self.name, self.cls, dict(self.options)))

    @classmethod
    def trusted(cls, plain: Mapping[str, Any]) -> CoderSpec:
        """The spec of :meth:`plain`'s dict (a workflow job's param, checked when the workflow
        started): the class imported, its options not checked again."""
        return cls(plain["name"], import_class(plain["class"]), dict(plain["options"]))

    def plain(self) -> dict[str, Any]:
        """Plain data (name, ``"module:Class"``, options) that :meth:`trusted` turns back."""
        path = f"{self.cls.__module__}:{self.cls.__qualname__}"
        return {"name": self.name, "class": path, "options": dict(self.options)}

    def build(self) -> Coder | Bound:
        coder = self.cls(**self.options)
        coder.name = self.name
        return coder

    @property
    def is_bound(self) -> bool:
        return not callable(getattr(self.cls, "encode", None))


def _spec(cls: type, **options: Any) -> CoderSpec:
    return CoderSpec(cls(**options).name, cls, options)


def builtin_specs(families: Sequence[str] = ("gennorm", "norm", "laplace")) -> dict[str, CoderSpec]:
    """Every built-in coder and bound, in T1 and L5 order (``families``: the fitted families
    the model coders and cross-entropies are built for)."""
    specs = [
        _spec(Fp8Coder),
        _spec(Lz78Size),
        *[_spec(BytesCoder, method=m) for m in METHODS],
        _spec(ShuffledLzmaSize),
        _spec(ZpaqSize),
        *[_spec(HuffmanModelCoder, family=f) for f in families],
        *[_spec(CrossEntropy, family=f) for f in families],
        *([_spec(AnsModelCoder, family="gennorm")] if "gennorm" in families else []),
        _spec(HuffmanEmpiricalCoder),
        _spec(Entropy),
        _spec(GenNormChannelCoder),
        _spec(ChannelEntropy),
        _spec(ContextCoder),
        _spec(ContextEntropy),
        _spec(KTContextBits),
        _spec(CMCoder),
        _spec(CMFastCoder),
    ]
    return {s.name: s for s in specs}


def _user_spec(i: int, entry: Mapping[str, Any]) -> CoderSpec:
    unknown = set(entry) - {"name", "class", "options"}
    if unknown:
        raise CoderEntryError(i, "", f"unknown keys {sorted(unknown)}")
    name, path = entry.get("name"), entry.get("class")
    if not isinstance(name, str) or not name:
        raise CoderEntryError(i, "name", "a coder entry needs a name")
    if path is None:
        raise CoderEntryError(i, "class", "a coder entry needs a class")
    try:
        cls = _load(path)
    except ValueError as exc:
        raise CoderEntryError(i, "class", str(exc)) from None
    options = dict(entry.get("options") or {})
    try:
        check_constructor(cls, options)
    except ValueError as exc:
        raise CoderEntryError(i, "options", str(exc)) from None
    return CoderSpec(name, cls, options)


def _load(path: str) -> type:
    """The class at ``"module:Class"``, with a coder's or a bound's methods."""
    cls = import_class(path)
    is_coder = all(callable(getattr(cls, m, None)) for m in ("encode", "decode"))
    if not (is_coder or callable(getattr(cls, "bits", None))):
        raise ValueError(f"{path} has neither encode and decode (a coder) nor bits (a bound)")
    return cls


def coder_specs(
    entries: Sequence[Any] | None, families: Sequence[str] = ("gennorm", "norm", "laplace")
) -> list[CoderSpec]:
    """The checked coders of ``entries`` (built-in names or mappings), in order; None: every
    built-in for the fitted ``families``. :class:`CoderEntryError` on a bad entry."""
    builtin = builtin_specs(list(families))
    if entries is None:
        return list(builtin.values())
    out: list[CoderSpec] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            if entry not in builtin:
                raise CoderEntryError(
                    i, "", f"unknown coder {entry!r} (built-in: {', '.join(builtin)}; or give "
                    "a mapping with a class)",
                )  # fmt: skip
            out.append(builtin[entry])
        elif isinstance(entry, Mapping):
            out.append(_user_spec(i, entry))
        else:
            raise CoderEntryError(i, "", f"a coder name or a mapping, got {entry!r}")
    names = [s.name for s in out]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CoderEntryError(None, "", f"coders named twice: {duplicated}")
    return out
