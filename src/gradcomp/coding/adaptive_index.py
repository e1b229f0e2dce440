"""An adaptive binary arithmetic code of integer indices in ``[0, L)``, on the integer range
coder and adaptive counters of :mod:`gradcomp.coding.binary_rc`: no code table, and below
one bit per index when the indices are predictable (a Huffman code spends at least one).

Binarisation: each index is coded as the path to its leaf in the binary tree of ``[0, L)``,
its ``D = bit_length(L - 1)`` bits most significant first; the node of a prefix (heap
numbering: root 1, children ``2j`` and ``2j + 1``) has one adaptive counter, starting at
P(1) = 1/2, so the encoder and the decoder learn the same probabilities from the indices
already coded. A bit whose 1-branch holds no index below L is not coded (it is 0). Why a
tree and not a zero flag, sign and magnitude: the product of the nodes' conditional
probabilities is any pmf over ``[0, L)``, so the code follows whatever shape the indices
have (an asymmetric design's zero cell, which need not sit in the middle of the alphabet,
its one-sided tails) without knowing where zero is; what it costs over the indices'
entropy is the counters' learning and, on a node whose branch is all but certain, the
12-bit probability floor of ``log2(4096/4095)`` = 0.00035 bits (at most ``D`` of them per
index: 0.003 bits at L = 256).

Stream (``encode``; nothing for no indices): the byte length ``m >= 1`` of the range
coder's bytes as an unsigned LEB128 varint (7 bits a byte, low first, the high bit set on
every byte but the last; the shortest form only), then those m bytes. The decoder reads
exactly them (0xFF past their end, as :func:`~gradcomp.coding.binary_rc.rc_decode_bit`)
and never a byte of the next field, checks that decoding the n indices consumed exactly m
bytes, and that the stream is the encoding of the indices it decoded (re-encoded: about as
fast as decoding), so that a stream cut or changed inside is refused even where it decodes
to as many bytes: a length beyond the buffer, a longer varint, or a mismatch raise
``ValueError``. Every byte is counted: ``len(encode(x))`` is 8 (varint + m) bits.
"""

from __future__ import annotations

import numpy as np
from bitarray import bitarray

from gradcomp.coding.binary_rc import (
    counter_learn,
    counter_rates,
    njit,
    rc_bytes,
    rc_code_bit,
    rc_decoder,
    rc_encoder,
)

__all__ = ["MAX_ALPHABET", "AdaptiveIndexCode", "read_varint", "varint"]

#: The largest alphabet (2^24 symbols: 64 MiB of counters).
MAX_ALPHABET = 1 << 24
_VARINT_BYTES = 5  # a length below 2^35
#: The counters' window: the indices of one tensor are drawn alike, so the estimate runs
#: on for the longest count a counter holds (1023 updates; binary_rc's 127 costs about
#: 0.003 bits more per coded decision, 0.01-0.02 bits per index measured)
WINDOW = 1023
_RATES = counter_rates(WINDOW)
_HALF = np.uint32(1 << 31)  # a counter at P(1) = 1/2 (22-bit probability << 10), count 0


@njit
def _code(sym, n_symbols, depth, ctr, rates, rc, buf, dec):
    """Code (``dec`` False) or decode into ``sym`` the indices, each as its tree path."""
    for i in range(sym.size):
        s = 0 if dec else sym[i]
        node = 1
        prefix = 0
        for k in range(depth - 1, -1, -1):
            if (prefix | (1 << k)) >= n_symbols:  # the 1-branch is empty: a 0, not coded
                node = 2 * node
                continue
            p = max(np.int64(ctr[node]) >> 20, 1)
            bit = rc_code_bit(rc, buf, (s >> k) & 1, p, dec)
            counter_learn(ctr, node, bit, rates)
            node = 2 * node + bit
            prefix |= bit << k
        if dec:
            sym[i] = prefix


def varint(m: int) -> bytes:
    """``m >= 0`` as an unsigned LEB128 varint."""
    out = bytearray()
    while True:
        byte, m = m & 0x7F, m >> 7
        out.append(byte | (0x80 if m else 0))
        if not m:
            return bytes(out)


def read_varint(buf: np.ndarray) -> tuple[int, int]:
    """(value, bytes read) of the varint at the start of ``buf`` (uint8); ``ValueError`` when
    it ends with the buffer, runs past :data:`_VARINT_BYTES` bytes or is not the shortest."""
    value = 0
    for k in range(min(int(buf.size), _VARINT_BYTES)):
        byte = int(buf[k])
        value |= (byte & 0x7F) << (7 * k)
        if not byte & 0x80:
            if k and not byte:
                raise ValueError("adaptive code length is not a shortest varint")
            return value, k + 1
    if buf.size < _VARINT_BYTES:
        raise ValueError("adaptive code stream ends inside its length")
    raise ValueError(f"adaptive code length runs past {_VARINT_BYTES} bytes")


class AdaptiveIndexCode:
    """The adaptive binary arithmetic code of indices in ``[0, n_symbols)`` (module doc):
    ``encode``, ``decode``, ``decode_prefix`` as the pipeline's entropy codes; no table
    (:meth:`side_info_bits` 0), both ends knowing ``n_symbols``."""

    def __init__(self, n_symbols: int):
        n_symbols = int(n_symbols)
        if not 1 <= n_symbols <= MAX_ALPHABET:
            raise ValueError(f"alphabet of {n_symbols} symbols (1..{MAX_ALPHABET})")
        self.n_symbols = n_symbols
        self.depth = (n_symbols - 1).bit_length()

    def __repr__(self) -> str:
        return f"AdaptiveIndexCode(n_symbols={self.n_symbols})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AdaptiveIndexCode) and other.n_symbols == self.n_symbols

    __hash__ = None  # type: ignore[assignment]

    def side_info_bits(self) -> int:
        return 0

    def _counters(self) -> np.ndarray:
        return np.full(1 << self.depth, _HALF, dtype=np.uint32)

    def encode_bytes(self, indices) -> bytes:
        """The stream (module doc) of ``indices`` (integers in ``[0, n_symbols)``, any shape,
        C order) as bytes."""
        sym = np.ascontiguousarray(np.asarray(indices).ravel())
        if sym.size == 0:
            return b""
        if not np.issubdtype(sym.dtype, np.integer):
            raise TypeError(f"indices must be integers, got dtype {sym.dtype}")
        sym = sym.astype(np.int64, copy=False)
        lo, hi = int(sym.min()), int(sym.max())
        if lo < 0 or hi >= self.n_symbols:
            raise ValueError(f"index {lo if lo < 0 else hi} outside [0, {self.n_symbols})")
        # a coded bit costs at most 12 bits and a rounding (its probability is at least
        # 1/4096, of a range of at least 2^24): 13 bits each leave room for all of them
        rc, buf = rc_encoder((13 * self.depth * sym.size >> 3) + 16)
        _code(sym, self.n_symbols, self.depth, self._counters(), _RATES, rc, buf, False)
        body = rc_bytes(rc, buf)
        return varint(len(body)) + body

    def encode(self, indices) -> bitarray:
        """:meth:`encode_bytes` as a big-endian bitarray (whole bytes)."""
        out = bitarray(endian="big")
        out.frombytes(self.encode_bytes(indices))
        return out

    def decode_prefix(self, buf, n: int) -> tuple[np.ndarray, int]:
        """The ``n`` indices (int64) of the stream at the start of the bytes ``buf`` (uint8)
        and its length in bits; ``ValueError`` when the stream is malformed (module doc)."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if n == 0:
            return np.zeros(0, dtype=np.int64), 0
        buf = np.asarray(buf, dtype=np.uint8).ravel()
        m, head = read_varint(buf)
        if m < 1:
            raise ValueError("adaptive code stream of 0 bytes for a non-empty tensor")
        if m > buf.size - head:
            raise ValueError(f"adaptive code stream of {m} bytes, {buf.size - head} left")
        rc, src = rc_decoder(buf[head : head + m].tobytes())
        sym = np.zeros(int(n), dtype=np.int64)
        _code(sym, self.n_symbols, self.depth, self._counters(), _RATES, rc, src, True)
        # the decoder reads 4 bytes ahead of the encoder's shifted-out bytes, which end with
        # the one flushed byte: 3 past the stream's end, exactly
        if int(rc[3]) != m + 3:
            raise ValueError(f"adaptive code stream of {m} bytes decoded from {int(rc[3]) - 3}")
        # and the bytes are the encoding of what they decode to (a stream cut or changed
        # inside may still decode to as many bytes): nothing else is accepted
        if self.encode_bytes(sym) != buf[: head + m].tobytes():
            raise ValueError(f"adaptive code stream of {m} bytes: not the encoding of its indices")
        return sym, 8 * (head + m)

    def decode(self, bits: bitarray, n: int) -> np.ndarray:
        """The ``n`` indices (int64) of an :meth:`encode` stream."""
        big = bits if bits.endian == "big" else bitarray(bits, endian="big")
        return self.decode_prefix(np.frombuffer(big.tobytes(), dtype=np.uint8), n)[0]
