"""Lossless coding of quantized gradients: Huffman, entropy, ANS, LZ78, general compressors.

Units: every ``*_bits`` function returns a number of bits; ``entropy_bits`` and friends are
bits per symbol.  Symbols are non-negative integers (``np.int64`` arrays) indexing an
alphabet of size L.

Huffman codes are canonical: a code is fully described by its codeword lengths (symbols of
equal length get consecutive codewords in increasing symbol order), which is what the
container stores and what :meth:`HuffmanCode.side_info_bits` charges.

Container layout (big-endian; see :func:`pack`)::

    magic "GCMP" | version u8 | total length u64 | header fields | payload | CRC32 u32

The CRC covers everything before it.  :func:`unpack` checks magic, version, length and CRC
before parsing, and raises :class:`CorruptStreamError` with the reason.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from typing import Any

import constriction
import numpy as np
from bitarray import bitarray, decodetree, frozenbitarray
from bitarray.util import canonical_huffman, int2ba, zeros

from gradcomp.quantizers import GRIDS, GridQuantizer, as_numpy, get_grid

try:  # optional: only used for the zstd entry of general_purpose_bits
    import zstandard
except ImportError:  # pragma: no cover - depends on the environment
    zstandard = None

__all__ = [
    "CONTAINER_VERSION",
    "CorruptStreamError",
    "HuffmanCode",
    "ans_bits",
    "ans_decode",
    "ans_encode",
    "container_side_info_bits",
    "cross_entropy_bits",
    "decode_tensor",
    "encode_tensor",
    "entropy_bits",
    "general_purpose_bits",
    "lz78_bits",
    "lz78_decode",
    "lz78_encode",
    "pack",
    "rate_bits_per_entry",
    "unpack",
]


class CorruptStreamError(ValueError):
    """A coded stream is malformed: wrong magic, truncated, CRC mismatch or undecodable."""


# ---------------------------------------------------------------------------------------
# entropy
# ---------------------------------------------------------------------------------------


def _normalised(p: Any, what: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64).ravel()
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"{what} must be finite and non-negative")
    total = p.sum()
    if total <= 0:
        raise ValueError(f"{what} sums to zero")
    return p / total


def entropy_bits(pmf: Any) -> float:
    """Shannon entropy of ``pmf`` (normalised first), bits per symbol; ``0 log 0 = 0``."""
    p = _normalised(pmf, "pmf")
    nz = p[p > 0]
    return float(-(nz * np.log2(nz)).sum())


def cross_entropy_bits(p_data: Any, q_model: Any) -> float:
    """``-sum p log2 q`` in bits per symbol (both normalised first).

    This is the ideal rate of coding data distributed as ``p_data`` with a code designed for
    ``q_model``; ``inf`` when ``q == 0`` for some symbol with ``p > 0``.
    """
    p = _normalised(p_data, "p_data")
    q = _normalised(q_model, "q_model")
    if p.shape != q.shape:
        raise ValueError(f"shape mismatch: {p.shape} vs {q.shape}")
    used = p > 0
    if np.any(q[used] == 0):
        return float("inf")
    return float(-(p[used] * np.log2(q[used])).sum())


# ---------------------------------------------------------------------------------------
# Huffman
# ---------------------------------------------------------------------------------------

_CHUNK = 1 << 16  # symbols per vectorised encode step (its temporaries stay in cache)
_U6, _U63, _U64 = np.uint64(6), np.uint64(63), np.uint64(64)


def _symbols(symbols: Any) -> np.ndarray:
    s = as_numpy(symbols)
    if s.size and not np.issubdtype(s.dtype, np.integer):
        raise TypeError(f"symbols must be integers, got dtype {s.dtype}")
    return s.astype(np.int64, copy=False).ravel()


class HuffmanCode:
    """Canonical prefix code over the alphabet ``0 .. L-1``.

    Build it with :meth:`from_pmf` (Huffman lengths via ``bitarray.util.canonical_huffman``)
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
        self._codewords: dict[int, frozenbitarray] | None = None
        self._tree: decodetree | None = None

    # ---- construction ------------------------------------------------------------------

    @classmethod
    def from_pmf(cls, pmf: Any) -> HuffmanCode:
        """Huffman code for probabilities (or counts) ``pmf`` of shape (L,).

        Only symbols with ``pmf > 0`` get codewords; floor the pmf first
        (:func:`gradcomp.pmf.floor_and_renormalise`) when every observed symbol must be codable.
        """
        p = np.asarray(pmf, dtype=np.float64)
        if p.ndim != 1 or not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError("pmf must be a 1-D array of finite non-negative values")
        support = np.flatnonzero(p > 0)
        if support.size == 0:
            raise ValueError("pmf has no positive entry")
        code, _, _ = canonical_huffman(
            dict(zip(support.tolist(), p[support].tolist(), strict=True))
        )
        lengths = np.zeros(p.size, dtype=np.int64)
        for sym, word in code.items():
            lengths[sym] = len(word)
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
        p = self._check_counts(_normalised(pmf, "pmf"))
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
        """Bits to describe this canonical code to a decoder that knows L (from the grid).

        Convention: an 8-bit field giving the width ``w = bit_length(max_length)`` followed by
        the L codeword lengths written with ``w`` bits each: ``8 + L * w`` bits.
        """
        return 8 + self.n_symbols * self.length_width

    def to_bytes(self) -> bytes:
        """Serialised code table: ``L`` (u32) | ``w`` (u8) | L lengths of w bits, zero-padded."""
        w = self.length_width
        shifts = np.arange(w - 1, -1, -1, dtype=np.int64)
        bits = ((self.lengths[:, None] >> shifts) & 1).astype(np.uint8).ravel()
        return struct.pack(">IB", self.n_symbols, w) + np.packbits(bits).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> HuffmanCode:
        """Inverse of :meth:`to_bytes` (raises ``CorruptStreamError`` on malformed input)."""
        if len(data) < 5:
            raise CorruptStreamError("code table truncated")
        n_sym, w = struct.unpack_from(">IB", data)
        if not 1 <= w <= 16 or n_sym == 0 or len(data) != 5 + -(-n_sym * w // 8):
            raise CorruptStreamError("malformed code table")
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8, offset=5))[: n_sym * w]
        weights = 1 << np.arange(w - 1, -1, -1, dtype=np.int64)
        try:
            return cls(bits.reshape(n_sym, w).astype(np.int64) @ weights)
        except ValueError as exc:
            raise CorruptStreamError(f"invalid code table: {exc}") from None

    # ---- encode / decode ---------------------------------------------------------------

    def bit_length(self, symbols: Any) -> int:
        """Number of bits :meth:`encode` produces for ``symbols``."""
        s = _symbols(symbols)
        return int(self.lengths[s].sum()) if s.size else 0

    def encode(self, symbols: Any) -> bitarray:
        """Encode integer symbols (any shape, C order) into a big-endian ``bitarray``.

        The result has exactly ``counts . lengths`` bits.  Raises ``ValueError`` for a symbol
        outside ``[0, L)`` or without a codeword.
        """
        s = _symbols(symbols)
        if s.size == 0:
            return bitarray(endian="big")
        if s.min() < 0:
            raise ValueError(f"symbols must be >= 0, got {s.min()}")
        counts = np.bincount(s)
        if counts.size > self.n_symbols:
            raise ValueError(f"symbol {counts.size - 1} outside the alphabet of {self.n_symbols}")
        counts = np.pad(counts, (0, self.n_symbols - counts.size))
        total = self.charged_bits(counts)
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
        out.frombytes(words.astype(">u8").view(np.uint8)[: (total + 7) >> 3])
        del out[total:]
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
        bits.encode(self.codewords, chunk.tolist())
        bits.extend(zeros(-len(bits) % 64, "big"))
        part = np.frombuffer(bits.tobytes(), dtype=">u8")
        words[(start >> 6) : (start >> 6) + part.size] |= part

    def _decodetree(self) -> decodetree:
        if self._tree is None:
            self._tree = decodetree(self.codewords)
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


# ---------------------------------------------------------------------------------------
# ANS (reference entropy coder)
# ---------------------------------------------------------------------------------------


def _categorical(pmf: Any) -> Any:
    p = _normalised(pmf, "pmf")
    # constriction gives every symbol at least its smallest representable probability, so
    # symbols with pmf 0 remain codable (at a high cost).
    return constriction.stream.model.Categorical(p, perfect=False)


def ans_encode(symbols: Any, pmf: Any) -> np.ndarray:
    """ANS-encode i.i.d. symbols with a categorical model; returns uint32 words (constriction
    ``AnsCoder``, its native word order)."""
    s = _symbols(symbols)
    if s.size and (s.min() < 0 or s.max() >= np.asarray(pmf).size):
        raise ValueError("symbols outside the alphabet of the pmf")
    coder = constriction.stream.stack.AnsCoder()
    if s.size:
        coder.encode_reverse(s.astype(np.int32), _categorical(pmf))
    return np.asarray(coder.get_compressed(), dtype=np.uint32)


def ans_decode(words: Any, n: int, pmf: Any) -> np.ndarray:
    """Inverse of :func:`ans_encode`: the first ``n`` symbols, int64 (n,)."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    coder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
    try:
        out = coder.decode(_categorical(pmf), n)
    except Exception as exc:  # constriction raises its own error types
        raise CorruptStreamError(f"ANS decode failed: {exc}") from None
    return np.asarray(out, dtype=np.int64)


def ans_bits(symbols: Any, pmf: Any) -> int:
    """Size of the ANS stream in bits (32 per uint32 word actually produced)."""
    return 32 * int(ans_encode(symbols, pmf).size)


# ---------------------------------------------------------------------------------------
# LZ78
# ---------------------------------------------------------------------------------------


def _lz78_parse(data: bytes) -> tuple[list[int], int]:
    """LZ78 parse: ``(keys, tail)``.

    Phrase k (1-based) extends dictionary entry ``i`` (0 = empty phrase) by byte ``b`` and is
    recorded as ``key = i << 8 | b``.  ``tail`` is the dictionary entry matched by the
    unfinished last phrase (0 if the data ends on a phrase boundary).
    """
    trie: dict[int, int] = {}
    get = trie.get
    keys: list[int] = []
    emit = keys.append
    node = 0
    next_id = 1
    for byte in data:
        key = (node << 8) | byte
        child = get(key)
        if child is None:
            trie[key] = next_id
            next_id += 1
            emit(key)
            node = 0
        else:
            node = child
    return keys, node


def _index_bits(n_phrases: int) -> int:
    """``sum_{k=1..n} ceil(log2 k)``: phrase k's index is one of k dictionary entries."""
    total, width = 0, 1
    while (1 << (width - 1)) < n_phrases:  # indices j in [2^(w-1), 2^w) need w bits
        lo, hi = 1 << (width - 1), min(1 << width, n_phrases)
        total += (hi - lo) * width
        width += 1
    return total


def lz78_bits(data: bytes) -> int:
    """LZ78 code length of ``data`` in bits.

    Each complete phrase costs ``ceil(log2 k)`` bits for the index of its longest known prefix
    (the k-th phrase chooses among k dictionary entries, including the empty phrase; the first
    costs 0 bits) plus 8 bits for the next byte.  If the data ends inside a phrase, that final
    partial phrase is sent as an index only (``ceil(log2(P+1))`` bits after P complete
    phrases, no byte); the decoder knows the data length from the container header.
    """
    keys, tail = _lz78_parse(bytes(data))
    n_phrases = len(keys) + (tail != 0)
    return _index_bits(n_phrases) + 8 * len(keys)


def lz78_encode(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """LZ78 parse as ``(indices int64 (P',), next_bytes uint8 (P,))``.

    ``P' = P + 1`` when the data ends inside a phrase (the last index has no byte).
    """
    keys, tail = _lz78_parse(bytes(data))
    k = np.asarray(keys, dtype=np.int64)
    indices = k >> 8
    if tail:
        indices = np.append(indices, tail)
    return indices, (k & 0xFF).astype(np.uint8)


def lz78_decode(indices: Any, next_bytes: Any) -> bytes:
    """Inverse of :func:`lz78_encode`."""
    idx = np.asarray(indices, dtype=np.int64).tolist()
    if isinstance(next_bytes, bytes | bytearray | memoryview):
        nxt = bytes(next_bytes)
    else:
        nxt = np.asarray(next_bytes, dtype=np.uint8).tobytes()
    if not len(nxt) <= len(idx) <= len(nxt) + 1:
        raise CorruptStreamError("LZ78: index and byte counts do not match")
    phrases = [b""]
    out = []
    for k, i in enumerate(idx):
        if not 0 <= i < len(phrases):
            raise CorruptStreamError(f"LZ78: phrase {k + 1} refers to unknown entry {i}")
        if k < len(nxt):
            phrase = phrases[i] + nxt[k : k + 1]
            phrases.append(phrase)
        else:
            phrase = phrases[i]
        out.append(phrase)
    return b"".join(out)


# ---------------------------------------------------------------------------------------
# general-purpose compressors
# ---------------------------------------------------------------------------------------

ZLIB_LEVEL, BZ2_LEVEL, LZMA_PRESET, ZSTD_LEVEL = 9, 9, 6, 19


def general_purpose_bits(data: bytes) -> dict[str, int]:
    """Compressed size in bits of ``data`` under zlib (level 9), bz2 (9), lzma (preset 6,
    xz container) and zstd (level 19, only if ``zstandard`` is importable)."""
    data = bytes(data)
    out = {
        "zlib": len(zlib.compress(data, ZLIB_LEVEL)),
        "bz2": len(bz2.compress(data, BZ2_LEVEL)),
        "lzma": len(lzma.compress(data, preset=LZMA_PRESET)),
    }
    if zstandard is not None:
        out["zstd"] = len(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data))
    return {k: 8 * v for k, v in out.items()}


def rate_bits_per_entry(payload_bits: float, side_bits: float, n: int) -> float:
    """``(payload_bits + side_bits) / n``: the rate charged per tensor entry, side info
    (model parameters, code table, header) included."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    return (payload_bits + side_bits) / n


# ---------------------------------------------------------------------------------------
# container
# ---------------------------------------------------------------------------------------

MAGIC = b"GCMP"
CONTAINER_VERSION = 1
_PREFIX = struct.Struct(">4sBQ")  # magic, version, total length in bytes (CRC included)


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def put(self, fmt: str, *values: Any) -> None:
        self.parts.append(struct.pack(">" + fmt, *values))

    def text(self, s: str) -> None:
        raw = s.encode()
        if len(raw) > 255:
            raise ValueError(f"string too long for the container: {s[:40]!r}...")
        self.put("B", len(raw))
        self.parts.append(raw)

    def blob(self, b: bytes) -> None:
        self.put("I", len(b))
        self.parts.append(bytes(b))

    def floats(self, d: dict[str, float]) -> None:
        if len(d) > 255:
            raise ValueError("too many parameters")
        self.put("B", len(d))
        for k, v in d.items():
            self.text(str(k))
            self.put("d", float(v))


class _Reader:
    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos

    def get(self, fmt: str) -> tuple[Any, ...]:
        s = struct.Struct(">" + fmt)
        if self.pos + s.size > len(self.buf):
            raise CorruptStreamError("header truncated")
        out = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return out

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise CorruptStreamError("header truncated")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def text(self) -> str:
        try:
            return self.raw(self.get("B")[0]).decode()
        except UnicodeDecodeError:
            raise CorruptStreamError("header string is not UTF-8") from None

    def blob(self) -> bytes:
        return self.raw(self.get("I")[0])

    def floats(self) -> dict[str, float]:
        return {self.text(): self.get("d")[0] for _ in range(self.get("B")[0])}


def pack(
    payload: bytes | bitarray,
    *,
    codec: str,
    grid: str = "",
    n: int,
    shape: Any = None,
    params: dict[str, float] | None = None,
    grid_params: dict[str, float] | None = None,
    levels: Any = None,
    code: HuffmanCode | None = None,
    payload_bits: int | None = None,
    extra: bytes = b"",
) -> bytes:
    """Wrap a coded payload with a header and a CRC32.

    Args:
        payload: the coded bits (``bitarray``, big-endian) or bytes.
        codec: codec name, e.g. ``"huffman"``, ``"huffman_sm"`` (sign-magnitude), ``"lz78"``.
        grid, grid_params: ``get_grid(grid, **grid_params)`` rebuilds the quantizer; ``""``
            when the grid is given by ``levels`` (float64 (L,), data units) instead.
        n, shape: number of entries and tensor shape (``prod(shape) == n``; default ``(n,)``).
        params: model parameters (e.g. GenNorm beta, loc, scale), stored as float64.
        code: the Huffman code (stored as its canonical length table).
        payload_bits: payload length in bits; default ``len(payload)`` for a bitarray, else
            ``8 * len(payload)``.
        extra: opaque bytes for other codecs (e.g. an LZ78 dictionary size).

    Returns:
        The container bytes; its side information is :func:`container_side_info_bits`.
    """
    if isinstance(payload, bitarray):
        bits = payload if payload.endian == "big" else bitarray(payload, endian="big")
        body = bits.tobytes()
        nbits = len(bits) if payload_bits is None else payload_bits
    else:
        body = bytes(payload)
        nbits = 8 * len(body) if payload_bits is None else payload_bits
    if not 0 <= nbits <= 8 * len(body) or (nbits + 7) // 8 != len(body):
        raise ValueError(f"payload_bits={nbits} does not match a {len(body)}-byte payload")
    shape = (int(n),) if shape is None else tuple(int(d) for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != n:
        raise ValueError(f"shape {shape} does not hold n={n} entries")
    lv = np.zeros(0) if levels is None else np.asarray(levels, dtype=">f8").ravel()
    w = _Writer()
    w.text(codec)
    w.text(grid)
    w.floats(grid_params or {})
    w.floats(params or {})
    w.put("Q", int(n))
    w.put("B", len(shape))
    w.put(f"{len(shape)}Q", *shape)
    w.put("Q", nbits)
    w.blob(lv.astype(">f8").tobytes())
    w.blob(code.to_bytes() if code is not None else b"")
    w.blob(extra)
    fields = b"".join(w.parts)
    total = _PREFIX.size + len(fields) + len(body) + 4
    head = _PREFIX.pack(MAGIC, CONTAINER_VERSION, total) + fields
    crc = zlib.crc32(body, zlib.crc32(head))
    return head + body + struct.pack(">I", crc)


def unpack(blob: bytes) -> tuple[dict[str, Any], bitarray]:
    """Check and parse a container made by :func:`pack`.

    Returns:
        ``(header, payload)``: ``payload`` is a big-endian ``bitarray`` of exactly
        ``header["payload_bits"]`` bits; ``header`` has keys ``version, codec, grid,
        grid_params, params, n, shape, payload_bits, levels`` (ndarray or None), ``code``
        (HuffmanCode or None), ``extra`` (bytes), ``header_bytes``, ``total_bytes``.

    Raises:
        CorruptStreamError: wrong magic or version, truncated or over-long stream, CRC
        mismatch, or inconsistent header fields.
    """
    blob = bytes(blob)
    if len(blob) < _PREFIX.size + 4:
        raise CorruptStreamError(
            f"stream truncated: {len(blob)} bytes is shorter than any container"
        )
    magic, version, total = _PREFIX.unpack_from(blob)
    if magic != MAGIC:
        raise CorruptStreamError(f"wrong magic {magic!r}, expected {MAGIC!r}")
    if version != CONTAINER_VERSION:
        raise CorruptStreamError(f"unsupported container version {version}")
    if len(blob) < total:
        raise CorruptStreamError(f"stream truncated: {len(blob)} of {total} bytes")
    if len(blob) > total:
        raise CorruptStreamError(f"{len(blob) - total} trailing bytes after the stream")
    (crc,) = struct.unpack_from(">I", blob, total - 4)
    if zlib.crc32(blob[:-4]) != crc:
        raise CorruptStreamError("CRC mismatch: stream corrupted")
    r = _Reader(blob[:-4], _PREFIX.size)
    hdr: dict[str, Any] = {
        "version": version,
        "codec": r.text(),
        "grid": r.text(),
        "grid_params": r.floats(),
        "params": r.floats(),
    }
    hdr["n"] = r.get("Q")[0]
    ndim = r.get("B")[0]
    hdr["shape"] = tuple(r.get(f"{ndim}Q"))
    hdr["payload_bits"] = nbits = r.get("Q")[0]
    lv = r.blob()
    hdr["levels"] = np.frombuffer(lv, dtype=">f8").astype(np.float64) if lv else None
    table = r.blob()
    hdr["code"] = HuffmanCode.from_bytes(table) if table else None
    hdr["extra"] = r.blob()
    hdr["header_bytes"] = r.pos
    hdr["total_bytes"] = total
    if total - 4 - r.pos != (nbits + 7) // 8:
        raise CorruptStreamError("payload length does not match the header")
    payload = bitarray(endian="big")
    payload.frombytes(blob[r.pos : total - 4])
    del payload[nbits:]
    return hdr, payload


def container_side_info_bits(blob: bytes) -> int:
    """Bits of a container that are not payload: header, CRC and final byte padding."""
    hdr, _ = unpack(blob)
    return 8 * hdr["total_bytes"] - hdr["payload_bits"]


def _grid_spec(quantizer: GridQuantizer) -> dict[str, Any]:
    if quantizer.name in GRIDS:
        return {"grid": quantizer.name, "grid_params": quantizer.params}
    return {"grid": "", "levels": quantizer.levels}


def encode_tensor(
    x: Any, quantizer: GridQuantizer, code: HuffmanCode, *, params: dict[str, float] | None = None
) -> bytes:
    """Quantize ``x`` and Huffman-code it into a container.

    The coding mode follows the code's alphabet: ``code.n_symbols == quantizer.n_levels``
    codes signed symbols (codec ``"huffman"``); ``== quantizer.n_magnitudes`` codes
    magnitudes followed by one sign bit (1 = negative) per non-zero magnitude (codec
    ``"huffman_sm"``, paper L).  Saturated entries are coded as the extreme level.

    Args:
        x: array or torch tensor, any shape, data units.
        quantizer: the grid.
        code: Huffman code over the signed or magnitude alphabet.
        params: model parameters to record as side information.
    """
    arr = as_numpy(x)
    symbols, _ = quantizer.encode(arr)
    if code.n_symbols == quantizer.n_levels:
        codec, payload = "huffman", code.encode(symbols)
    elif quantizer.is_symmetric and code.n_symbols == quantizer.n_magnitudes:
        mags, signs = quantizer.signed_to_magnitude(symbols)
        payload = code.encode(mags)
        payload.pack(signs.astype(np.uint8).tobytes())
        codec = "huffman_sm"
    else:
        raise ValueError(
            f"code alphabet {code.n_symbols} fits neither the {quantizer.n_levels} "
            "levels nor the magnitudes of the grid"
        )
    return pack(
        payload,
        codec=codec,
        n=int(arr.size),
        shape=arr.shape,
        params=params,
        code=code,
        **_grid_spec(quantizer),
    )


def decode_tensor(blob: bytes) -> np.ndarray:
    """Inverse of :func:`encode_tensor`: the quantized values, float64, original shape."""
    hdr, payload = unpack(blob)
    code: HuffmanCode | None = hdr["code"]
    if hdr["codec"] not in ("huffman", "huffman_sm") or code is None:
        raise CorruptStreamError(f"not a Huffman tensor stream (codec {hdr['codec']!r})")
    if hdr["grid"]:
        try:
            quantizer = get_grid(hdr["grid"], **hdr["grid_params"])
        except (TypeError, ValueError) as exc:
            raise CorruptStreamError(f"cannot rebuild grid {hdr['grid']!r}: {exc}") from None
    elif hdr["levels"] is not None:
        quantizer = GridQuantizer(hdr["levels"])
    else:
        raise CorruptStreamError("stream names no grid and stores no levels")
    n = hdr["n"]
    symbols = code.decode(payload, n)
    used = int(code.lengths[symbols].sum())
    if hdr["codec"] == "huffman":
        if used != len(payload):
            raise CorruptStreamError(f"{len(payload) - used} unexplained payload bits")
        if code.n_symbols != quantizer.n_levels:
            raise CorruptStreamError("code alphabet does not match the grid")
        values = quantizer.decode(symbols)
    else:
        if code.n_symbols != quantizer.n_magnitudes:
            raise CorruptStreamError("code alphabet does not match the grid magnitudes")
        signs = np.frombuffer(payload[used:].unpack(), dtype=np.uint8).astype(bool)
        try:
            values = quantizer.decode_magnitude(symbols, signs)
        except ValueError as exc:
            raise CorruptStreamError(f"sign bits do not match: {exc}") from None
    return values.reshape(hdr["shape"])
