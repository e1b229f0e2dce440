"""The framing of the uplink's byte format (:mod:`gradcomp.wire`): the header and
the records of one update, and the :class:`UpdateLayout` a receiver knows before the first
round.

- header, :data:`HEADER_BYTES` = 16: magic ``b"GW"``, format version (:data:`FORMAT_VERSION`),
  the kind's code (:data:`KIND_CODES`), the CRC-32 of the layout (a receiver for another
  model refuses the bytes), then the 32-bit checks (CRC-32) of what sender and receiver
  agree on outside the bytes (:class:`Agreed`): the compressor spec, and the seed, user and
  update index, so that a receiver holding another fact refuses the bytes naming it
  (:class:`AgreedFactError`) instead of decoding them into wrong values (a wrong fact
  passes with probability about 2^-32; format 2 had 16-bit checks and 12 header bytes);
- then the records in order (one per tensor; a count sketch: one per sketch, then one per raw
  tensor), each :data:`RECORD_BYTES` = 8 bytes of framing (u32 length, CRC-32 of the body)
  before its body, the kind's fields (:mod:`~gradcomp.coding.fields`).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from gradcomp.coding.fields import FieldReader, WireFormatError
from gradcomp.compression.agreed_values import AgreedValueError
from gradcomp.compression.registry import kind_codes

__all__ = [
    "AgreedFactError",
    "NonFiniteDecodeError",
    "check_finite",
    "Agreed",
    "FORMAT_VERSION",
    "HEADER_BYTES",
    "KIND_CODES",
    "RECORD_BYTES",
    "UpdateLayout",
    "read_records",
    "sender_agreed",
    "write_records",
]

MAGIC = b"GW"
FORMAT_VERSION = 3
HEADER_BYTES = 16
RECORD_BYTES = 8
#: The kind's byte in the header (a quantizer pipeline's value quantizer, or the compressor),
#: kind -> code, for the built-in kinds: each kind's class carries its own ``wire_code``
#: (:func:`~gradcomp.compression.registry.kind_codes` also has the kinds registered later).
KIND_CODES = kind_codes()


class AgreedFactError(WireFormatError):
    """The bytes were made under another agreed fact than the receiver's: ``fact`` is
    ``"layout"``, ``"spec"`` or ``"seed/user/round"``."""

    def __init__(self, fact: str, message: str):
        self.fact = fact
        super().__init__("header", fact, message)


class NonFiniteDecodeError(WireFormatError):
    """Bytes that decode to NaN or infinite values (no sender writes them: a finite update
    decodes finite or is refused before encoding); ``count`` of the record's values."""

    def __init__(self, where: str, field: str, count: int, total: int):
        self.count = count
        super().__init__(
            where, field, f"{count} of {total} decoded values are NaN or infinite: refused"
        )


def check_finite(values: Any, where: str, field: str = "values") -> None:
    """Raise :class:`NonFiniteDecodeError` naming ``where`` and ``field`` unless every entry
    of ``values`` (a tensor or an array) is finite."""
    t = values if isinstance(values, torch.Tensor) else torch.as_tensor(values)
    if t.is_floating_point() and t.numel():
        finite = torch.isfinite(t)
        if not bool(finite.all()):
            raise NonFiniteDecodeError(where, field, int((~finite).sum()), t.numel())


#: Spec keys a receiver need not share with the sender: the seed is checked with the user and
#: round (``Agreed.facts``), the name only labels runs.
_NOT_AGREED = ("seed", "name")


#: Bytes of each agreed-fact check in the header (spec, then seed/user/round).
CHECK_BYTES = 4


def _check32(text: str) -> int:
    return zlib.crc32(text.encode())


@dataclass(frozen=True)
class Agreed:
    """The header's checks of what a receiver must know before the bytes arrive (32 bits
    each, a CRC-32): ``spec``, of the checked compressor spec's keys and
    values but its seed and name (as sorted JSON), and ``facts``, of the seed the spec
    carries (the user's compressor seed, ``1000 seed + user``) and the update's index.

    >>> a = Agreed.of({"quantizer": "uniform", "rate": 2, "seed": 1000, "name": "u"}, rnd=0)
    >>> a == Agreed.of({"quantizer": "uniform", "rate": 2, "seed": 1000, "name": "v"}, rnd=0)
    True
    >>> a.spec == Agreed.of({"quantizer": "uniform", "rate": 3, "seed": 1000}, rnd=0).spec
    False
    """

    spec: int
    facts: int

    @classmethod
    def of(cls, spec: Mapping[str, Any], rnd: int) -> Agreed:
        items = {k: v for k, v in spec.items() if k not in _NOT_AGREED}
        text = json.dumps(items, sort_keys=True, default=str)
        return cls(_check32(text), _check32(f"{spec.get('seed')}:{int(rnd)}"))


def sender_agreed(compressor: Any) -> Agreed:
    """The :class:`Agreed` checks of the update a built-in compressor just compressed: its
    spec (set by :func:`~gradcomp.compression.build.build_compressor`) and its update index
    (``step``, counted by its ``compress``, less one)."""
    spec = getattr(compressor, "wire_spec", None)
    if spec is None:
        raise TypeError(
            f"{type(compressor).__name__} has no spec to bind into its bytes: build it with "
            "gradcomp.compression.build_compressor(spec)"
        )
    return Agreed.of(spec, compressor.step - 1)


@dataclass(frozen=True)
class UpdateLayout:
    """What a receiver knows of an update before the first round: the tensors' ``names``,
    ``shapes`` and ``dtypes``, in the update's order."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[torch.dtype, ...]

    def __post_init__(self) -> None:
        if not len(self.names) == len(self.shapes) == len(self.dtypes):
            raise ValueError("a layout needs one shape and one dtype per name")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"a layout's names must be distinct: {self.names}")
        for name, dtype in zip(self.names, self.dtypes, strict=True):
            if not isinstance(dtype, torch.dtype):
                raise AgreedValueError(
                    "layout", f"entry {name!r}: dtype {dtype!r} is not a torch.dtype "
                    "(e.g. torch.float32, not the string)"
                )  # fmt: skip
            if not dtype.is_floating_point:
                raise ValueError(f"update entry {name!r} is not floating point ({dtype})")

    @classmethod
    def of(cls, update: Mapping[str, torch.Tensor]) -> UpdateLayout:
        """The layout of an update (name -> tensor)."""
        return cls.from_items((n, t.shape, t.dtype) for n, t in update.items())

    @classmethod
    def from_items(cls, items: Iterable[tuple[str, Any, torch.dtype]]) -> UpdateLayout:
        """From (name, shape, dtype) triples."""
        rows = [(str(n), tuple(int(d) for d in shape), dtype) for n, shape, dtype in items]
        return cls(*(tuple(col) for col in zip(*rows, strict=True))) if rows else cls((), (), ())

    def __iter__(self):
        return iter(zip(self.names, self.shapes, self.dtypes, strict=True))

    def numel(self, name: str) -> int:
        return math.prod(self.shapes[self.names.index(name)])

    def fingerprint(self) -> int:
        """CRC-32 of the names, shapes and dtypes (the header's check)."""
        text = ";".join(f"{n}:{list(s)}:{d}" for n, s, d in self)
        return zlib.crc32(text.encode())


def write_records(
    kind: Any, layout: UpdateLayout, records: Iterable[bytes], agreed: Agreed
) -> bytes:
    """Header and framed records (see the module doc); ``kind``: the kind's class or object
    (its ``wire_code``)."""
    head = (
        MAGIC
        + bytes([FORMAT_VERSION, kind.wire_code])
        + layout.fingerprint().to_bytes(4, "little")
        + agreed.spec.to_bytes(CHECK_BYTES, "little")
        + agreed.facts.to_bytes(CHECK_BYTES, "little")
    )
    parts = [head]
    for body in records:
        parts += [len(body).to_bytes(4, "little"), zlib.crc32(body).to_bytes(4, "little"), body]
    return b"".join(parts)


def read_records(
    data: bytes | bytearray | memoryview,
    kind: Any,
    layout: UpdateLayout,
    wheres: list[str],
    agreed: Agreed,
) -> list[FieldReader]:
    """Check the header (the agreed facts: :class:`AgreedFactError`) and each record's
    length and CRC; one reader per record, named by ``wheres`` (the record's tensor or
    sketch). ``kind``: the class or object of the kind the receiver expects."""
    head = FieldReader(data, "header")
    magic = bytes(head.take(2, "magic"))
    if magic != MAGIC:
        raise head.error("magic", f"{magic!r} is not {MAGIC!r}: not an update in this format")
    version = head.u8("version")
    if version != FORMAT_VERSION:
        raise head.error(
            "version", f"format version {version}, this receiver reads {FORMAT_VERSION}"
        )
    code = head.u8("kind")
    if code != kind.wire_code:
        names = {c: k for k, c in kind_codes().items()}
        raise head.error("kind", f"{names.get(code, code)!r} bytes, the spec says {kind.kind!r}")
    if head.u32("layout") != layout.fingerprint():
        raise AgreedFactError(
            "layout", "the update's tensor names, shapes or dtypes differ from this receiver's"
        )
    spec_check, facts_check = (
        int.from_bytes(head.take(CHECK_BYTES, f), "little") for f in ("spec", "facts")
    )
    if spec_check != agreed.spec:
        raise AgreedFactError(
            "spec",
            "the sender's compressor spec (kind, rate, M, options, sparsifier and fraction, "
            "min_entries, ...) differs from this receiver's",
        )
    if facts_check != agreed.facts:
        raise AgreedFactError(
            "seed/user/round",
            "the sender's seed, user or update index differs from this receiver's",
        )
    readers = []
    for where in wheres:
        if head.left < RECORD_BYTES:
            raise WireFormatError(where, "record", f"missing ({head.left} bytes left: truncated?)")
        length, crc = head.u32("length"), head.u32("checksum")
        if length > head.left:
            raise WireFormatError(
                where, "record", f"needs {length} bytes, {head.left} left (truncated?)"
            )
        body = head.take(length, "record")
        if zlib.crc32(body) != crc:
            raise WireFormatError(where, "checksum", "CRC-32 mismatch: the record is corrupted")
        readers.append(FieldReader(body, where))
    if head.left:
        raise head.error("end", f"{head.left} bytes after the last record")
    return readers
