"""The coder registry: name -> coder (or bound) class and options, and the config entries of
``lossless.coding.coders`` (built-in names, or a user's class).

An entry is a built-in name (``"ans_context"``, ``"huffman_gennorm"``, ...) or a mapping
``{name: ..., class: "package.module:Class", options: {...}, color: ..., figure: ...}``. A
user's class subclasses :class:`~gradcomp.coding.base.Coder` in spirit: it has ``encode(x)
-> Bitstream`` and ``decode(stream, grid, fits) -> symbols`` (a coder), or ``bits(x)`` (a
bound); it is built as ``Class(**options)``. Adding a built-in coder: one module and one line
in :func:`builtin_specs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from gradcomp.coding.general_purpose import general_purpose_bits
from gradcomp.coding.gennorm_channel import GenNormChannelCoder
from gradcomp.coding.iid_coders import AnsModelCoder, HuffmanEmpiricalCoder, HuffmanModelCoder
from gradcomp.coding.zpaq import ZpaqSize
from gradcomp.plugins import check_constructor, import_class

__all__ = ["CoderSpec", "builtin_specs", "coder_specs"]

KEY = "lossless.coding.coders"


@dataclass(frozen=True)
class CoderSpec:
    """How to build one coder: ``cls(**options)``; ``color`` and ``figure`` for L5."""

    name: str
    cls: type
    options: Mapping[str, Any] = field(default_factory=dict)
    color: str = "0.5"
    figure: bool = False

    def build(self) -> Coder | Bound:
        coder = self.cls(**self.options)
        coder.name = self.name
        return coder

    @property
    def is_bound(self) -> bool:
        return not callable(getattr(self.cls, "encode", None))


def _spec(cls: type, **options: Any) -> CoderSpec:
    coder = cls(**options)
    return CoderSpec(coder.name, cls, options, coder.color, coder.in_figure)


def builtin_specs(families: Sequence[str] = ("gennorm", "norm", "laplace")) -> dict[str, CoderSpec]:
    """Every built-in coder and bound, in T1 and L5 order (``families``: the fitted families
    the model coders and cross-entropies are built for)."""
    specs = [
        _spec(Fp8Coder),
        _spec(Lz78Size),
        *[_spec(BytesCoder, method=m) for m in general_purpose_bits(b"")],
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


def _user_spec(entry: Mapping[str, Any], where: str) -> CoderSpec:
    unknown = set(entry) - {"name", "class", "options", "color", "figure"}
    if unknown:
        raise ValueError(f"config key '{where}': unknown keys {sorted(unknown)}")
    name, path = entry.get("name"), entry.get("class")
    if not isinstance(name, str) or not name:
        raise ValueError(f"config key '{where}.name': a coder entry needs a name")
    if path is None:
        raise ValueError(f"config key '{where}.class': a coder entry needs a class")
    try:
        cls = _load(path)
    except ValueError as exc:
        raise ValueError(f"config key '{where}.class': {exc}") from None
    options = dict(entry.get("options") or {})
    try:
        check_constructor(cls, options)
    except ValueError as exc:
        raise ValueError(f"config key '{where}.options': {exc}") from None
    color, figure = str(entry.get("color", "0.3")), bool(entry.get("figure", True))
    return CoderSpec(name, cls, options, color, figure)


def _load(path: str) -> type:
    """The class at ``"module:Class"``, with a coder's or a bound's methods."""
    cls = import_class(path)
    is_coder = all(callable(getattr(cls, m, None)) for m in ("encode", "decode"))
    if not (is_coder or callable(getattr(cls, "bits", None))):
        raise ValueError(f"{path} has neither encode and decode (a coder) nor bits (a bound)")
    return cls


def coder_specs(coding: Mapping[str, Any]) -> list[CoderSpec]:
    """The checked coders of a ``lossless.coding`` config section, in its order; ValueError
    naming the key (``lossless.coding.coders.<i>``) on a bad entry."""
    families = list(coding.get("families", ("gennorm", "norm", "laplace")))
    builtin = builtin_specs(families)
    entries = coding.get("coders")
    if entries is None:
        return list(builtin.values())
    out: list[CoderSpec] = []
    for i, entry in enumerate(entries):
        where = f"{KEY}.{i}"
        if isinstance(entry, str):
            if entry not in builtin:
                raise ValueError(
                    f"config key '{where}': unknown coder {entry!r} (built-in: "
                    f"{', '.join(builtin)}; or give a mapping with a class)"
                )
            out.append(builtin[entry])
        elif isinstance(entry, Mapping):
            out.append(_user_spec(entry, where))
        else:
            raise ValueError(f"config key '{where}': a coder name or a mapping, got {entry!r}")
    names = [s.name for s in out]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"config key '{KEY}': coders named twice: {duplicated}")
    return out
