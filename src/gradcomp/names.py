"""Readers' names for what the config and the tables call by identifier: the one registry the
answers table, every figure and the report take their words from.

Identifiers (``cm_fast``, ``gennorm``, ``uniformk10``, ``epoch_avg``) are for configs and code;
a page a reader sees shows :func:`coder`, :func:`law`, :func:`kind`, :func:`variant`,
:func:`dump` or :data:`TABLES` instead. A name not registered comes back as it is (a user's
own coder or compressor keeps the name its author gave it).

>>> coder("cm_fast"), law("gennorm")
('context mixing (fast)', 'GenNorm')
>>> variant({"quantizer": "lloyd", "family": "gennorm", "sparsifier": "topk", "topk": 0.1}, 1, 2)
'GenNorm Lloyd M=2, 1 bit, top-K 10%'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CODERS", "DUMPS", "LAWS", "POSITIONS", "TABLES", "coder", "dump", "kind", "kind_titles",
    "law", "method", "variant",
]  # fmt: skip

#: Fitted laws (``lossless.fit.families``, a Lloyd quantizer's ``family``).
LAWS = {"gennorm": "GenNorm", "norm": "normal", "laplace": "Laplace", "dweibull": "double Weibull"}

#: Coders and bounds of T1 and L5 (:func:`gradcomp.coding.registry.builtin_specs`); a family's
#: coders are made by :func:`coder` from :data:`LAWS`.
CODERS = {
    "fp8": "FP8 bytes (8 bits)",
    "lz78": "LZ78",
    "zlib": "zlib",
    "bz2": "bzip2",
    "lzma": "LZMA",
    "lzma_raw": "LZMA (raw stream)",
    "lzma_shuffled": "LZMA (byte-shuffled)",
    "zstd": "Zstandard",
    "brotli": "Brotli",
    "zpaq": "ZPAQ -m5",
    "huffman_empirical": "Huffman (empirical counts)",
    "entropy": "i.i.d. entropy (bound)",
    "entropy_channel": "per-channel entropy (bound)",
    "entropy_context": "context entropy (bound)",
    "kt_context": "adaptive context code (bound)",
    "ans_context": "ANS, context model",
    "ans_gennorm_channel": "ANS, GenNorm per channel",
    "cm_context": "context mixing",
    "cm_fast": "context mixing (fast)",
}
_FAMILY_CODERS = {
    "huffman": "Huffman ({} fit)",
    "ans": "ANS ({} fit)",
    "xent": "{} cross-entropy (bound)",
}

#: Which gradient a lossless dump holds (``figures.lossless_kind``).
DUMPS = {"epoch_avg": "epoch-averaged gradient", "last_batch": "last batch's gradient"}

#: Where a fitted tensor sits in the model (:data:`gradcomp.lossless.positions.POSITIONS`).
POSITIONS = {"lower": "first layers", "middle": "middle layers", "upper": "last layers"}

#: The tables, as a page names them.
TABLES = {
    "T1": "T1, bits per entry by coder",
    "T2": "T2, fit quality by law",
    "T3": "T3, federated runs",
    "T4": "T4, the one-round paired study",
    "T5": "T5, BD-rates",
    "T6": "T6, distance to R(D)",
    "verdicts": "verdicts",
}


def law(name: str) -> str:
    """The law's name (``"norm"`` -> ``"normal"``)."""
    return LAWS.get(name, name)


def coder(name: str) -> str:
    """The coder's or bound's name (``"huffman_gennorm"`` -> ``"Huffman (GenNorm fit)"``)."""
    if name in CODERS:
        return CODERS[name]
    head, _, family = name.partition("_")
    if head in _FAMILY_CODERS and family in LAWS:
        return _FAMILY_CODERS[head].format(law(family))
    return name


def _kind_class(name: str) -> Any:
    from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS

    return QUANTIZERS.get(name) or COMPRESSORS.get(name)


def kind_titles() -> list[str]:
    """Every registered kind's reader's name."""
    from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS

    return [c.title for c in (*QUANTIZERS.values(), *COMPRESSORS.values()) if c.title]


def kind(name: str) -> str:
    """The quantizer's or compressor's kind, by the ``title`` its class gives
    (``"scaled_sign"`` -> ``"scaled sign"``; the registry of
    :mod:`gradcomp.compression.registry`).

    >>> kind("scaled_sign"), kind("mine")
    ('scaled sign', 'mine')
    """
    cls = _kind_class(name)
    return getattr(cls, "title", "") or name


def dump(name: str) -> str:
    """What a dump kind holds (``"epoch_avg"`` -> ``"epoch-averaged gradient"``)."""
    return DUMPS.get(name, name)


def _bits(rate: float) -> str:
    return f"{rate:g} bit" + ("" if rate == 1 else "s")


def method(spec: Mapping[str, Any], M: float | None = None) -> str:
    """The kind with its law, and M where the kind weighs the distortion.

    >>> method({"quantizer": "lloyd", "family": "gennorm"}, 2), method({"quantizer": "uniform"}, 0)
    ('GenNorm Lloyd M=2', 'uniform')
    """
    name = str(spec.get("compressor") or spec.get("quantizer") or "?")
    cls = _kind_class(name)
    text = kind(name)
    if spec.get("family") and getattr(cls, "takes_family", False):
        text = f"{law(str(spec['family']))} {text}"
    if M is not None and getattr(cls, "takes_M", False):
        text += f" M={M:g}"
    return text


def variant(spec: Mapping[str, Any], rate: float | None = None, M: float | None = None) -> str:
    """A compressor variant as a reader names it, from its spec (a config entry or checked
    spec): the kind (with its law), M where the kind weighs the distortion, the rate (bits
    per kept value; levels or target bits where the spec sets them; PowerSGD's rank), the
    kept set where some are dropped, and error feedback.

    >>> variant({"quantizer": "uniform", "levels": 3, "sparsifier": "topk", "topk": 0.452}, 2)
    'uniform, 3 levels, top-K 45.2%'
    >>> variant({"quantizer": "scaled_sign", "sparsifier": "none", "error_feedback": True})
    'scaled sign, dense, error feedback'
    """
    name = spec.get("compressor") or spec.get("quantizer") or "?"
    parts = [method(spec, M)]
    if name == "powersgd" and rate is not None:
        parts.append(f"rank {rate:g}")
    elif spec.get("levels"):
        parts.append(f"{spec['levels']} levels")
    elif spec.get("target_bits"):
        parts.append(f"{_bits(float(spec['target_bits'])).replace(' bit', ' target bit')}")
    elif rate is not None and getattr(_kind_class(str(name)), "fixed_rate", None) is None:
        parts.append(_bits(rate))
    sparsifier = spec.get("sparsifier", "topk" if spec.get("topk") else None)
    if spec.get("compressor") is not None or sparsifier == "none":
        parts.append("dense")
    elif spec.get("topk") is not None:
        where = {"randomk": "random-K"}.get(str(sparsifier), "top-K")
        parts.append(f"{where} {100 * float(spec['topk']):.4g}%")
    if spec.get("error_feedback"):
        parts.append("error feedback")
    return ", ".join(parts)
