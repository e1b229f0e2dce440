"""Canonical Huffman codes with real bitstreams (bitarray), over integer alphabets.

A code is fully described by its codeword lengths (symbols of equal length get consecutive
codewords in increasing symbol order), which is what :meth:`HuffmanCode.side_info_bits`
charges. Units: every ``*_bits`` method returns a number of bits; symbols are non-negative
integers (``np.int64`` arrays) indexing an alphabet of size L.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from bitarray import bitarray, decodetree, frozenbitarray
from bitarray.util import int2ba, zeros

from gradcomp.coding.huffman_lengths import huffman_lengths
from gradcomp.coding.pmf import normalised
from gradcomp.quantization.grids import as_numpy

__all__ = ["CorruptStreamError", "HuffmanCode", "symbols_array"]


class CorruptStreamError(ValueError):
    """A coded stream is malformed: wrong magic, truncated, CRC mismatch or undecodable."""


_CHUNK = 1 << 16  # symbols per vectorised encode step (its temporaries stay in cache)
_U6, _U63, _U64 = np.uint64(6), np.uint64(63), np.uint64(64)
_FIXED_MAX = 8  # longest codeword of the fixed-width fast path


def symbols_array(symbols: Any) -> np.ndarray:
    s = as_numpy(symbols)
    if s.size and not np.issubdtype(s.dtype, np.integer):
        raise TypeError(f"symbols must be integers, got dtype {s.dtype}")
    return s.astype(np.int64, copy=False).ravel()


class HuffmanCode:
    """Canonical prefix code over the alphabet ``0 .. L-1``.

    Build it with :meth:`from_pmf` (Huffman lengths, :func:`huffman_lengths`)
    or :meth:`from_lengths`.  Symbols of probability 0 get no codeword (length 0); coding
    them raises ``ValueError``.  A pmf with a single non-zero symbol gives it the 1-bit
    codeword ``0``.

    Encoding is vectorised numpy (left-aligned 64-bit codewords OR-ed into 64-bit words);
    chunks holding a codeword longer than 64 bits fall back to ``bitarray.encode``.  Decoding
    drains a ``bitarray.decodetree`` (bit-serial C) with ``np.fromiter``.  (Decoding pairs
    of codewords per step was tried: with model-designed codes the pair tree is large and
    deep, and it was not faster.)

    Attributes:
        lengths: int64 (L,), codeword length in bits of each symbol, 0 = no codeword.
    """

    def __init__(self, lengths: Any) -> None:
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or lengths.size == 0:
            raise ValueError("lengths must be a non-empty 1-D array")
        if not np.issubdtype(lengths.dtype, np.integer) or np.any(lengths < 0):
            raise ValueError("lengths must be non-negative integers")
        self.lengths = lengths.astype(np.int64)
        used = np.flatnonzero(self.lengths)
        if used.size == 0:
            raise ValueError("a code needs at least one codeword")
        # canonical order: by length, then by symbol
        self._order = used[np.argsort(self.lengths[used], kind="stable")]
        codes: dict[int, int] = {}
        code, prev = 0, 0
        for sym in self._order.tolist():
            n_bits = int(self.lengths[sym])
            code <<= n_bits - prev
            prev = n_bits
            if code >> n_bits:
                raise ValueError("code lengths violate the Kraft inequality")
            codes[sym] = code
            code += 1
        self._codes = codes
        self.max_length = int(self.lengths.max())
        # codewords left-aligned in 64 bits for the vectorised encoder (0 for longer ones)
        self._left = np.zeros(self.lengths.size, dtype=np.uint64)
        for sym, c in codes.items():
            if self.lengths[sym] <= 64:
                self._left[sym] = c << (64 - int(self.lengths[sym]))
        self._long = self.lengths > 64
        self._len_u64 = self.lengths.astype(np.uint64)
        # a code whose codewords all have one length w <= 8 (a 2-symbol code has w = 1) is
        # fixed-width: packed and unpacked as w-bit fields, without the general machinery
        width = np.unique(self.lengths[used])
        self._width = int(width[0]) if width.size == 1 and width[0] <= _FIXED_MAX else 0
        if self._width:
            self._value = np.zeros(self.lengths.size, dtype=np.uint8)  # symbol -> codeword
            self._symbol = np.full(1 << self._width, -1, dtype=np.int64)  # codeword -> symbol
            for sym, c in codes.items():
                self._value[sym] = c
                self._symbol[c] = sym
        self._codewords: dict[int, frozenbitarray] | None = None
        self._tree: decodetree | None = None

    # ---- construction ------------------------------------------------------------------

    @classmethod
    def from_pmf(cls, pmf: Any) -> HuffmanCode:
        """Huffman code for probabilities (or counts) ``pmf`` of shape (L,).

        Only symbols with ``pmf > 0`` get codewords; floor the pmf first
        (:func:`gradcomp.coding.pmf.floor_and_renormalise`) when every observed symbol must
        be codable.
        """
        p = np.asarray(pmf, dtype=np.float64)
        if p.ndim != 1 or not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError("pmf must be a 1-D array of finite non-negative values")
        if not np.any(p > 0):
            raise ValueError("pmf has no positive entry")
        lengths = huffman_lengths(p)
        return cls(lengths)

    @classmethod
    def from_lengths(cls, lengths: Any) -> HuffmanCode:
        """Canonical code with the given codeword lengths (int (L,), 0 = no codeword)."""
        return cls(lengths)

    def __repr__(self) -> str:
        return (
            f"HuffmanCode(n_symbols={self.n_symbols}, used={self._order.size}, "
            f"max_length={self.max_length})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HuffmanCode) and np.array_equal(self.lengths, other.lengths)

    __hash__ = None  # type: ignore[assignment]

    @property
    def n_symbols(self) -> int:
        """Alphabet size L."""
        return int(self.lengths.size)

    @property
    def codewords(self) -> dict[int, frozenbitarray]:
        """Symbol -> codeword (big-endian ``frozenbitarray``), symbols with a codeword only."""
        if self._codewords is None:
            self._codewords = {
                s: frozenbitarray(int2ba(c, int(self.lengths[s]), "big"))
                for s, c in self._codes.items()
            }
        return self._codewords

    # ---- rates -------------------------------------------------------------------------

    def _check_counts(self, counts: Any) -> np.ndarray:
        c = np.asarray(counts)
        if c.shape != self.lengths.shape:
            raise ValueError(f"counts shape {c.shape} != alphabet shape {self.lengths.shape}")
        missing = np.flatnonzero((c > 0) & (self.lengths == 0))
        if missing.size:
            raise ValueError(
                f"symbols {missing[:10].tolist()} occur but have no codeword "
                "(floor the design pmf so that every observed symbol is covered)"
            )
        return c

    def expected_length(self, pmf: Any) -> float:
        """Mean codeword length under ``pmf`` (normalised first), bits per symbol."""
        p = self._check_counts(normalised(pmf, "pmf"))
        return float(p @ self.lengths)

    def charged_bits(self, counts: Any) -> int:
        """Payload bits for symbol ``counts`` (int (L,)): ``counts . lengths``."""
        c = self._check_counts(counts)
        return int(np.dot(c.astype(np.int64), self.lengths))

    @property
    def length_width(self) -> int:
        """Bits used to write one codeword length in the code table."""
        return max(1, self.max_length.bit_length())

    def side_info_bits(self) -> int:
        """Bits to describe this canonical code to a decoder that knows L (from the grid):
        :meth:`table_bits` of its lengths."""
        return self.table_bits(self.lengths)

    @staticmethod
    def table_bits(lengths: np.ndarray) -> int:
        """Bits of the code table of the codeword ``lengths`` (int (L,)): an 8-bit field
        giving the width ``w = bit_length(max length)`` followed by the L lengths written
        with ``w`` bits each, ``8 + L * w``."""
        return 8 + int(np.size(lengths)) * max(1, int(np.max(lengths)).bit_length())

    # ---- encode / decode ---------------------------------------------------------------

    def bit_length(self, symbols: Any) -> int:
        """Number of bits :meth:`encode` produces for ``symbols``."""
        s = symbols_array(symbols)
        return int(self.lengths[s].sum()) if s.size else 0

    def encode(self, symbols: Any) -> bitarray:
        """Encode integer symbols (any shape, C order) into a big-endian ``bitarray``.

        The result has exactly ``counts . lengths`` bits.  Raises ``ValueError`` for a symbol
        outside ``[0, L)`` or without a codeword.
        """
        s = symbols_array(symbols)
        if s.size == 0:
            return bitarray(endian="big")
        if s.min() < 0:
            raise ValueError(f"symbols must be >= 0, got {s.min()}")
        counts = np.bincount(s)
        if counts.size > self.n_symbols:
            raise ValueError(f"symbol {counts.size - 1} outside the alphabet of {self.n_symbols}")
        counts = np.pad(counts, (0, self.n_symbols - counts.size))
        total = self.charged_bits(counts)
        if self._width:
            return self._encode_fixed(s, total)
        any_long = bool(counts[self._long].any())
        words = np.zeros((total >> 6) + 2, dtype=np.uint64)
        base = np.uint64(0)
        for i in range(0, s.size, _CHUNK):
            chunk = s[i : i + _CHUNK]
            n_bits = self._len_u64[chunk]
            end = np.cumsum(n_bits)
            end += base
            if any_long and self._long[chunk].any():
                self._encode_chunk_bitarray(chunk, int(base), words)
            else:
                self._encode_chunk_numpy(chunk, end - n_bits, words)
            base = end[-1]
        out = bitarray(endian="big")
        # bitarray's stub takes bytes only; any buffer (this uint8 array) works
        out.frombytes(words.astype(">u8").view(np.uint8)[: (total + 7) >> 3])  # type: ignore[arg-type]
        del out[total:]
        return out

    def _fields(self) -> np.ndarray:
        """The bit weights of one codeword, most significant first: uint8 (w,)."""
        return (1 << np.arange(self._width - 1, -1, -1)).astype(np.uint8)

    def _encode_fixed(self, s: np.ndarray, total: int) -> bitarray:
        """:meth:`encode` of a fixed-width code (``total = w * s.size`` bits)."""
        values = self._value[s]
        if self._width == 1:
            bits = values
        else:
            bits = ((values[:, None] & self._fields()) != 0).astype(np.uint8).reshape(-1)
        out = bitarray(endian="big")
        out.frombytes(np.packbits(bits).tobytes())
        del out[total:]
        return out

    def _decode_fixed(self, bits: bitarray, n: int) -> np.ndarray:
        """:meth:`decode` of a fixed-width code."""
        w = self._width
        if len(bits) < n * w:
            raise CorruptStreamError(
                f"cannot decode {n} symbols from {len(bits)} bits: they end early"
            )
        raw = np.unpackbits(np.frombuffer(bits[: n * w].tobytes(), dtype=np.uint8))[: n * w]
        if w == 1:
            codewords = raw
        else:
            codewords = raw.reshape(n, w) @ self._fields().astype(np.int64)
        out = self._symbol[codewords]
        if out.min() < 0:
            bad = int(np.flatnonzero(out < 0)[0])
            raise CorruptStreamError(
                f"cannot decode {n} symbols: symbol {bad} is no codeword of the code"
            )
        return out

    def _encode_chunk_numpy(self, chunk: np.ndarray, start: np.ndarray, words: np.ndarray) -> None:
        """OR the codewords of ``chunk`` (all <= 64 bits) into ``words`` at bit ``start``."""
        left = self._left[chunk]
        word = start >> _U6
        shift = start & _U63
        # a codeword straddles at most two words: its head lands in `word`, its tail (when
        # shift + length > 64) in `word + 1`; numpy defines x << 64 == 0
        head = left >> shift
        tail = left << (_U64 - shift)
        seg = np.flatnonzero(word[1:] != word[:-1])
        seg += 1
        seg = np.concatenate(([0], seg))
        first = word[seg]
        words[first] |= np.bitwise_or.reduceat(head, seg)
        words[first + np.uint64(1)] |= np.bitwise_or.reduceat(tail, seg)

    def _encode_chunk_bitarray(self, chunk: np.ndarray, start: int, words: np.ndarray) -> None:
        """Same for chunks holding codewords longer than 64 bits, via ``bitarray.encode``."""
        bits = zeros(start & 63, "big")
        # the stub wants dict[Any, bitarray] (invariant); frozenbitarray is a bitarray
        bits.encode(self.codewords, chunk.tolist())  # type: ignore[arg-type]
        bits.extend(zeros(-len(bits) % 64, "big"))
        part = np.frombuffer(bits.tobytes(), dtype=">u8")
        words[(start >> 6) : (start >> 6) + part.size] |= part

    def _decodetree(self) -> decodetree:
        if self._tree is None:
            self._tree = decodetree(self.codewords)  # type: ignore[arg-type]  # as in encode
        return self._tree

    def decode(self, bits: bitarray, n: int) -> np.ndarray:
        """Decode the first ``n`` symbols of ``bits``; int64 (n,).

        Bits after the n-th codeword are ignored.  Raises ``CorruptStreamError`` when the
        bits end early or contain a sequence that is no codeword.
        """
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if bits.endian != "big":
            bits = bitarray(bits, endian="big")
        if self._width:
            return self._decode_fixed(bits, n)
        if self.max_length <= 62:
            from gradcomp.coding.bit_kernels import read_canonical

            buf = np.frombuffer(bits.tobytes(), dtype=np.uint8)
            try:
                return read_canonical(buf, len(bits), n, self.lengths, self._order)[0]
            except ValueError as exc:
                raise CorruptStreamError(
                    f"cannot decode {n} symbols from {len(bits)} bits: {exc}"
                ) from None
        # fromiter into the narrowest dtype is measurably faster than into int64
        narrow = (
            np.uint8
            if self.n_symbols <= 256
            else np.uint16
            if self.n_symbols <= 65536
            else np.int64
        )
        try:
            out = np.fromiter(bits.decode(self._decodetree()), narrow, count=n)
            return out.astype(np.int64)
        except ValueError as exc:
            raise CorruptStreamError(
                f"cannot decode {n} symbols from {len(bits)} bits: {exc}"
            ) from None
