"""The fields of the uplink's byte format (:mod:`gradcomp.wire`): written one after another,
each a whole number of bytes, and read back with errors that name the field. Below the
compressor kinds (each value quantizer writes and reads its side information with them) and
the wire package (its header and records).

Numbers are little-endian (``u8``, ``u32``, float16 / float32 / float64 arrays). A bit field
(a bitmap, fixed-width integers, Elias-gamma codes, a Huffman stream) is MSB first and
zero-padded to a whole byte; :attr:`FieldWriter.padding_bits` counts those padding bits, the
only bits of a field that carry nothing. Fixed-width integers and gamma codes are packed and
unpacked without a per-entry Python loop (numpy, or the compiled
:mod:`gradcomp.coding.bit_kernels`).

:class:`WireFormatError` is the one error of bytes that do not decode (truncated, corrupted
or foreign); its message names where (a tensor, or the update's header) and the field.
"""

from __future__ import annotations

import numpy as np
from bitarray import bitarray

__all__ = ["FieldReader", "FieldWriter", "WireFormatError"]

_SHIFTS = {w: np.arange(w - 1, -1, -1, dtype=np.uint64) for w in range(1, 65)}


class WireFormatError(ValueError):
    """Bytes that do not decode: ``where`` (a tensor, a sketch or the header), ``field``."""

    def __init__(self, where: str, field: str, message: str):
        self.where, self.field = where, field
        super().__init__(f"{where}, field {field!r}: {message}")


def _pack_uints(values: np.ndarray, width: int) -> bytes:
    v = np.asarray(values).astype(np.uint64, copy=False).ravel()
    if width == 8:
        return v.astype(np.uint8).tobytes()
    bits = ((v[:, None] >> _SHIFTS[width]) & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits.ravel()).tobytes()


class FieldWriter:
    """One record's fields, in order (see the module doc)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.padding_bits = 0

    def u8(self, value: int) -> None:
        self._parts.append(int(value).to_bytes(1, "little"))

    def u32(self, value: int) -> None:
        self._parts.append(int(value).to_bytes(4, "little"))

    def array(self, values, dtype: str) -> None:
        """``values`` as little-endian ``dtype`` (``"f2"``, ``"f4"``, ``"f8"``, ``"i1"``);
        values of another dtype are refused rather than rounded here (the sender rounds them
        first, so that what it uses is what is sent)."""
        a = np.asarray(values)
        if a.dtype != np.dtype(dtype):
            raise TypeError(f"a {dtype} field got {a.dtype} values")
        self._parts.append(a.astype("<" + dtype, copy=False).tobytes())

    def _bit_field(self, data: bytes, n_bits: int) -> None:
        self._parts.append(data)
        self.padding_bits += 8 * len(data) - n_bits

    def bits(self, bits: bitarray) -> None:
        """A bitstream (e.g. Huffman's), padded to a byte."""
        big = bits if bits.endian == "big" else bitarray(bits, endian="big")
        self._bit_field(big.tobytes(), len(big))

    def uints(self, values, width: int) -> None:
        """Non-negative integers of ``width`` bits (1..64) each, packed."""
        self._bit_field(_pack_uints(values, width), np.size(values) * width)

    def packed(self, data: np.ndarray, n_bits: int) -> None:
        """Bits already packed MSB first (:func:`gradcomp.coding.bit_kernels.pack_bits`)."""
        self._bit_field(np.asarray(data, np.uint8).tobytes(), n_bits)

    def gammas(self, values) -> None:
        """Elias-gamma codes of positive integers."""
        from gradcomp.coding.bit_kernels import pack_bits
        from gradcomp.coding.elias import gamma_widths

        v = np.asarray(values, dtype=np.int64)
        self.packed(*pack_bits(v, gamma_widths(v)))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


class FieldReader:
    """Reads one record's fields front to back; every error names ``where`` and the field."""

    def __init__(self, data: bytes | bytearray | memoryview, where: str):
        self._data = memoryview(data).cast("B")
        self._pos = 0
        self.where = where

    def error(self, field: str, message: str) -> WireFormatError:
        return WireFormatError(self.where, field, message)

    @property
    def left(self) -> int:
        """Bytes not read yet."""
        return len(self._data) - self._pos

    def take(self, n: int, field: str) -> memoryview:
        if n < 0 or n > self.left:
            raise self.error(field, f"needs {n} bytes, {self.left} left (truncated?)")
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out

    def u8(self, field: str) -> int:
        return self.take(1, field)[0]

    def u32(self, field: str) -> int:
        return int.from_bytes(self.take(4, field), "little")

    def array(self, dtype: str, count: int, field: str) -> np.ndarray:
        """``count`` little-endian ``dtype`` numbers (see :meth:`FieldWriter.array`), as a
        native array of that dtype."""
        size = np.dtype(dtype).itemsize
        raw = self.take(size * int(count), field)
        return np.frombuffer(raw, dtype="<" + dtype).astype(dtype)

    def uints(self, count: int, width: int, field: str) -> np.ndarray:
        """``count`` integers of ``width`` bits (int64)."""
        raw = np.frombuffer(self.take((count * width + 7) >> 3, field), dtype=np.uint8)
        if width == 8:
            return raw.astype(np.int64)
        bits = np.unpackbits(raw, count=count * width).reshape(count, width)
        return (bits.astype(np.uint64) << _SHIFTS[width]).sum(axis=1).astype(np.int64)

    def rest(self) -> np.ndarray:
        """The unread bytes as uint8 (nothing consumed: :meth:`skip_bits` after decoding)."""
        return np.frombuffer(self._data[self._pos :], dtype=np.uint8)

    def rest_bits(self) -> bitarray:
        out = bitarray(endian="big")
        out.frombytes(self._data[self._pos :].tobytes())
        return out

    def skip_bits(self, n_bits: int, field: str) -> None:
        """Consume the whole bytes that ``n_bits`` bits of a bit field occupy."""
        self.take((n_bits + 7) >> 3, field)

    def gammas(self, count: int, field: str) -> np.ndarray:
        """``count`` Elias-gamma codes (int64 >= 1)."""
        from gradcomp.coding.bit_kernels import read_gammas

        try:
            values, end = read_gammas(self.rest(), 0, count)
        except ValueError as exc:
            raise self.error(field, str(exc)) from None
        self.skip_bits(end, field)
        return values

    def finish(self) -> None:
        """Every byte read: bytes left over mean the sender wrote a different layout."""
        if self.left:
            raise self.error("end", f"{self.left} bytes left over after the last field")
