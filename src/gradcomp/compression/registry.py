"""Name-to-class registries, one per spec key: :data:`QUANTIZERS`, the value quantizers (the
kinds a spec's ``quantizer`` names; each is run inside a
:class:`~gradcomp.compression.update_compression.PipelineCompressor`), and :data:`COMPRESSORS`,
the self-contained compressors (the kinds a spec's ``compressor`` names: PowerSGD, count
sketch), which take a whole update themselves. A kind is one class, its options declared on it
(``options``: key -> default, ``check_option``); :func:`register` adds one, and spec checking,
building and the config schema take it from here."""

from __future__ import annotations

from typing import Any

from gradcomp.compression.count_sketch import CountSketch
from gradcomp.compression.ecsq_data_quantizer import ECSQDataQuantizer
from gradcomp.compression.ecsq_quantizer import ECSQQuantizer
from gradcomp.compression.float8 import Float8
from gradcomp.compression.gaussian_channel import GaussianChannel
from gradcomp.compression.kmeans_quantizer import KMeansQuantizer
from gradcomp.compression.lloyd_quantizer import LloydQuantizer
from gradcomp.compression.powersgd import PowerSGD
from gradcomp.compression.qsgd import QSGD
from gradcomp.compression.scaled_sign import ScaledSign
from gradcomp.compression.tcq_quantizer import TCQQuantizer
from gradcomp.compression.terngrad import TernGrad
from gradcomp.compression.value_quantizers import (
    Float16,
    PassThrough,
    UniformQuantizer,
    ValueQuantizer,
)

__all__ = ["COMPRESSORS", "QUANTIZERS", "kind_codes", "register"]

#: Value quantizers by kind.
QUANTIZERS: dict[str, type[ValueQuantizer]] = {
    cls.kind: cls
    for cls in (
        PassThrough,
        Float16,
        Float8,
        UniformQuantizer,
        LloydQuantizer,
        KMeansQuantizer,
        GaussianChannel,
        QSGD,
        TernGrad,
        ScaledSign,
        TCQQuantizer,
        ECSQQuantizer,
        ECSQDataQuantizer,
    )
}

#: Self-contained compressor kinds, a spec's ``compressor`` (built by ``cls.from_spec(spec)``;
#: keys in ``cls.spec_keys``).
COMPRESSORS: dict[str, type[Any]] = {cls.kind: cls for cls in (PowerSGD, CountSketch)}


def kind_codes() -> dict[str, int]:
    """Kind -> its header code (its class's ``wire_code``), for every kind registered now."""
    return {kind: cls.wire_code for kind, cls in {**QUANTIZERS, **COMPRESSORS}.items()}


def register(cls: type) -> type:
    """Add kind ``cls`` under its ``kind`` name and return it (a class decorator too): a
    :class:`ValueQuantizer` subclass to :data:`QUANTIZERS`, another class (``from_spec``,
    ``spec_keys``, ``max_rate``) to :data:`COMPRESSORS`. A name taken is refused, and so is
    a header code (class attribute ``wire_code``, 1-255; 0: the kind has no byte format of
    its own) that another kind carries."""
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{cls.__name__} has no kind name (class attribute kind)")
    if kind in QUANTIZERS or kind in COMPRESSORS:
        raise ValueError(f"kind {kind!r} is already registered")
    code = getattr(cls, "wire_code", 0)
    if not isinstance(code, int) or not 0 <= code <= 255:
        raise ValueError(
            f"{cls.__name__}.wire_code must be an int in 1-255 (0: none), got {code!r}"
        )
    taken = {c: k for k, c in kind_codes().items()}
    if code and code in taken:
        raise ValueError(f"{cls.__name__}.wire_code {code} is {taken[code]!r}'s")
    if issubclass(cls, ValueQuantizer):
        QUANTIZERS[kind] = cls
    else:
        COMPRESSORS[kind] = cls
    return cls
